"""The one deadline-based wait of `twin`, on tenacity.

`until(probe, timeout, what)` calls `probe()` until it returns an empty list of
missing things, or the deadline passes; then it raises ConvergenceTimeout naming
what is still missing. Polling backs off from `first` to `cap` seconds so a
large lab is not hammered while it settles.

The deadline is a point in time fixed once (`since + timeout`, `since` the command's
start when the caller gives it): no probe starts after it (the last one starts at it, at
the latest), and a probe whose reads have deadlines of their own (`Deadline.within`) ends
by it, so the wait ends by it whatever a probe meets. `each` runs one call per item on a
pool for as long as a deadline allows.

A command's own deadline (an explicit `--timeout`, from its start) reaches every call its stages
make through a `Bound`: `with bounded(b):` in each thread doing the stage's work (a pool's worker
does it itself: a thread starts without one), and within it every call that has a deadline of its
own (a Docker request, a netlink request, a command in a node, `until`) takes `cut(own)`, its own
cut to what is left of the command's, or `DeadlinePassed` when nothing is. `doing(who, what)` says
what a unit of the work (a node, a link) waits for now, so a deadline that passes names it.
What runs after a failure (removing what was made) runs with `bounded(None)`: its own deadlines.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Executor
from concurrent.futures import wait as futures_wait
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, TypeVar

from tenacity import RetryCallState, RetryError, Retrying, retry_if_result, wait_exponential

from twin.base import interrupt
from twin.base.errors import ConvergenceTimeout, DeadlinePassed, StageTimeout

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Deadline:
    """A point in time (time.monotonic()) fixed at `start`, the start of what it bounds."""

    start: float
    end: float

    @classmethod
    def after(cls, seconds: float, since: float | None = None) -> "Deadline":
        start = time.monotonic() if since is None else since
        return cls(start, start + seconds)

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def passed(self) -> bool:
        return time.monotonic() >= self.end

    def within(self, seconds: float) -> float:
        """A call's own deadline, `seconds`, cut to what is left of this one."""
        return min(seconds, self.left())

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def earlier(self, seconds: float) -> "Deadline":
        """The same start, `seconds` earlier an end (a share kept for what follows the wait)."""
        return Deadline(self.start, self.end - seconds)


def until(
    probe: Callable[[], list[str]],
    timeout: float,
    what: str,
    first: float = 0.25,
    cap: float = 2.0,
    diagnose: Callable[[], list[str]] | None = None,
    since: float | None = None,
    pace: float = 0.0,
    pace_max: float = 10.0,
) -> float:
    """Wait until `probe()` reports nothing missing; return the seconds it took (from `since`).

    The deadline is `timeout` after `since` (time.monotonic(); default now): no probe starts
    after it (the wait before the last one is cut short to start it at the deadline). `pace`:
    the wait between probes is at least `pace` times what the last probe took, up to `pace_max`.
    On the deadline, `diagnose()` (if given) supplies the detailed list of what
    is missing, for probes that keep their rounds cheap.
    """
    deadline = Deadline.after(timeout, since)
    b = _BOUND.get()
    if b is not None and b.deadline.end < deadline.end:  # the command's deadline comes first
        deadline = Deadline(deadline.start, b.deadline.end)
    took = [0.0]

    def timed() -> list[str]:
        interrupt.check()  # a Ctrl-C Python swallowed comes out here
        t = time.monotonic()
        try:
            return probe()
        finally:
            took[0] = time.monotonic() - t

    backoff = wait_exponential(multiplier=first, exp_base=1.5, max=cap) if first else (lambda _: cap)

    def pause(state: RetryCallState) -> float:
        return min(max(backoff(state), min(pace * took[0], pace_max)), deadline.left())

    retrying = Retrying(retry=retry_if_result(bool), stop=lambda _: deadline.passed(), wait=pause, reraise=False)
    try:
        retrying(timed)
    except RetryError as e:
        missing = e.last_attempt.result()
        raise ConvergenceTimeout(what, deadline.elapsed(), (diagnose() if diagnose else None) or missing) from None
    return deadline.elapsed()


def each(pool: Executor, fn: Callable[[T], R], items: Iterable[T], deadline: Deadline) -> tuple[dict[T, R], list[T]]:
    """`fn(item)` for every item on `pool`, waited for until `deadline`: (results of the calls that
    ended, items whose call had not ended; those calls are left to end by their own deadlines)."""
    futures = {pool.submit(fn, i): i for i in items}
    done, pending = futures_wait(futures, timeout=deadline.left())
    for f in pending:
        f.cancel()
    return {futures[f]: f.result() for f in done}, [futures[f] for f in futures if f in pending]


# --- a command's deadline over the calls of its stages -------------------------------------------
@dataclass
class Bound:
    """A command's deadline over the work of its stages, and what each unit of that work (a node,
    a link) waits for now. `name` says whose deadline it is in an error ("--timeout 600s")."""

    deadline: Deadline
    name: str
    stage: str = "preparing"  # the command's stage now, for an error that is not a stage's own (`named`)
    _doing: dict[int, tuple[str, str, float]] = field(default_factory=dict, repr=False)
    _late: dict[str, tuple[str, float]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _n: int = field(default=0, repr=False)

    @classmethod
    def command(cls, timeout: float | None, start: float) -> "Bound | None":
        """A command's explicit `--timeout` from its `start` (time.monotonic()); None without one."""
        if timeout is None:
            return None
        return cls(Deadline.after(timeout, start), f"the deadline of --timeout {timeout:g}s (from the command's start)")

    def passed(self, slack: float = 0.0) -> bool:
        """Passed, or within `slack` of it (a call cut to the deadline that failed just before it)."""
        return self.deadline.left() <= slack

    @contextmanager
    def doing(self, who: str, what: str) -> Iterator[None]:
        """`who` waits for `what` within the block; a step still under way at the deadline (one cut
        by it, ending with it) is kept for naming."""
        with self._lock:
            self._n += 1
            key, t0 = self._n, time.monotonic()
            self._doing[key] = (who, what, t0)
        try:
            yield
        finally:
            with self._lock:
                self._doing.pop(key, None)
                if time.monotonic() >= self.deadline.end - LATE and t0 < self.deadline.end and who not in self._late:
                    self._late[who] = (what, t0)

    def waiting(self) -> list[str]:
        """Every unit under way (or at the deadline) as `who: what (for Ns)`, its latest step, the
        longest waiting first."""
        now = min(time.monotonic(), self.deadline.end)
        with self._lock:
            steps = {who: (what, t0) for who, (what, t0) in self._late.items()}
            for who, what, t0 in sorted(self._doing.values(), key=lambda s: s[2]):
                steps[who] = (what, t0)  # a unit's latest step
        ordered = sorted(steps.items(), key=lambda s: s[1][1])
        return [f"{who}: {what} (for {max(0.0, now - t0):.0f}s)" for who, (what, t0) in ordered]

    def timeout(self, stage: str, progress: str, said: str = "") -> StageTimeout:
        """The deadline, passed in `stage` (`progress`: how far it got); with nothing under way, what the
        call cut by it `said`."""
        return StageTimeout(
            self.name, self.deadline.elapsed(), stage, progress, self.waiting() or ([said] if said else [])
        )


_BOUND: ContextVar[Bound | None] = ContextVar("twin_bound", default=None)
SLACK = 1.0  # a call cut to the deadline that failed this close to it failed by the deadline
LATE = 0.1  # a step that ended this close to the deadline (or after) was under way at it


@contextmanager
def bounded(bound: Bound | None) -> Iterator[None]:
    """Calls made in this thread within the block are cut to `bound`'s deadline (None: their own)."""
    token = _BOUND.set(bound)
    try:
        yield
    finally:
        _BOUND.reset(token)


def current() -> Bound | None:
    return _BOUND.get()


def cut(seconds: float, what: str = "") -> float:
    """A call's own deadline, `seconds`, cut to what is left of the command's (if this thread has
    one); DeadlinePassed, naming `what`, when nothing is left: the call is not begun."""
    b = _BOUND.get()
    if b is None:
        return seconds
    left = b.deadline.left()
    if left <= 0:
        raise DeadlinePassed(f"{b.name} had passed" + (f": {what} not begun" if what else ""))
    return min(seconds, left)


def left() -> float | None:
    """Seconds left of this thread's command deadline (None: it has none)."""
    b = _BOUND.get()
    return None if b is None else b.deadline.left()


@contextmanager
def doing(who: str, what: str) -> Iterator[None]:
    """`who` (a node, a link) waits for `what` within the block, as a deadline that passes will say."""
    b = _BOUND.get()
    if b is None:
        yield
        return
    with b.doing(who, what):
        yield


@contextmanager
def named(progress: str = "nothing created yet") -> Iterator[None]:
    """An error of the block that came at the command's deadline (a call cut to it) is the deadline:
    StageTimeout naming the command's stage (`Bound.stage`), `progress` and what was under way. A
    ConvergenceTimeout (a stage's own, naming it, or the barrier's) is raised as it is."""
    try:
        yield
    except Exception as e:
        b = _BOUND.get()
        if b is None or not b.passed(SLACK) or isinstance(e, ConvergenceTimeout):
            raise
        raise b.timeout(b.stage, progress, (str(e).splitlines() or [type(e).__name__])[0]) from None
