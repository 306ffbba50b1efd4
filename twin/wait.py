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
"""
from __future__ import annotations

import time
from concurrent.futures import Executor
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass
from typing import Callable, Iterable, TypeVar

from tenacity import RetryCallState, RetryError, Retrying, retry_if_result, wait_exponential

from twin.errors import ConvergenceTimeout

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
    took = [0.0]

    def timed() -> list[str]:
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
