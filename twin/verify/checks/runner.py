"""Judging checks: positive ones until they hold, negative ones after convergence over a window."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from twin.base import timeouts, wait
from twin.base.errors import ConvergenceTimeout, TwinError
from twin.lifecycle import barrier
from twin.lifecycle.context import LabContext
from twin.runtime import carried, labelled
from twin.topology.schema import CheckSpec
from twin.verify.checks.probes import PROBES, Outcome
from twin.verify.result import Check

GROUP = "checks"
PARALLEL = 8
FAILURES = (TwinError, OSError)  # NetlinkFailed, RuntimeFailed, NodeGone: twin's (`twin.runtime.failures`)


class Gate:
    """The convergence barrier, waited for once by every negative check of a run."""

    def __init__(self, ctx: LabContext, timeout: float):
        self.ctx, self.timeout = ctx, timeout
        self._lock = threading.Lock()
        self._done: tuple[float | None, str] | None = None

    def wait(self) -> tuple[float | None, str]:
        """(seconds it took, "") once converged, or (None, what was still missing at the deadline)."""
        with self._lock:
            if self._done is None:
                try:
                    self._done = (round(barrier.converge(self.ctx, self.timeout), 2), "")
                except ConvergenceTimeout as e:
                    first = (e.causes or e.missing or [str(e)])[0]
                    self._done = (
                        None,
                        f"the lab had not converged after {self.timeout:g}s ({len(e.missing)} missing, e.g. {first})",
                    )
        return self._done


def look(ctx: LabContext, spec: CheckSpec) -> Outcome:
    """One probe; a node that cannot be read is what was seen, never a pass."""
    try:
        return PROBES[type(spec)](ctx, spec)
    except FAILURES as e:
        return Outcome(
            False, f"could not look: {(str(e).strip().splitlines() or [type(e).__name__])[0]}", {"error": str(e)}
        )


def positive(ctx: LabContext, spec: CheckSpec) -> tuple[Outcome, dict]:
    limit = spec.timeout or timeouts.CHECK
    seen: list[Outcome] = []

    def probe() -> list[str]:
        seen.append(look(ctx, spec))
        return [] if seen[-1].holds else [seen[-1].seen]

    t0 = time.monotonic()
    try:
        wait.until(probe, limit, spec.name, first=0.25, cap=2.0)
    except ConvergenceTimeout:
        last = seen[-1]
        return Outcome(False, f"{last.seen} (still so after {limit:g}s, {len(seen)} looks)", last.data), {
            "looks": len(seen)
        }
    return seen[-1], {"looks": len(seen), "held_after_s": round(time.monotonic() - t0, 2)}


def negative(ctx: LabContext, spec: CheckSpec, gate: Gate) -> tuple[Outcome, dict]:
    converged, why = gate.wait()
    if converged is None:
        o = look(ctx, spec)
        return Outcome(False, (f"{o.seen}; and " if not o.holds else f"cannot judge ({o.seen} now): ") + why, o.data), {
            "looks": 1
        }
    window = spec.window or timeouts.CHECK_WINDOW
    start = time.monotonic()
    looks = 0
    while True:
        o = look(ctx, spec)
        looks += 1
        elapsed = time.monotonic() - start
        if not o.holds:
            return Outcome(False, f"{o.seen} ({elapsed:.1f}s into the {window:g}s window after convergence)", o.data), {
                "looks": looks,
                "converged_after_s": converged,
            }
        if elapsed >= window:
            return Outcome(True, f"{o.seen}; held for {window:g}s after convergence ({looks} looks)", o.data), {
                "looks": looks,
                "converged_after_s": converged,
            }
        time.sleep(min(timeouts.CHECK_POLL, window - elapsed))  # the window's sampling, not a wait for state


def judge(ctx: LabContext, spec: CheckSpec, gate: Gate) -> Check:
    t0 = time.monotonic()
    with labelled(label(spec)):
        outcome, how = negative(ctx, spec, gate) if spec.negative else positive(ctx, spec)
    data = {
        "type": spec.type,
        "negative": spec.negative,
        "seconds": round(time.monotonic() - t0, 2),
        **how,
        "spec": spec.model_dump(by_alias=True, exclude_defaults=True, mode="json"),
        "observed": outcome.data,
    }
    return Check(GROUP, spec.name, outcome.holds, outcome.seen, data)


def label(spec: CheckSpec) -> str:
    """The evidence label of a check's commands."""
    return f"{GROUP}: {spec.name}"


def run(ctx: LabContext, checks: Sequence[CheckSpec]) -> list[Check]:
    """Judge every check (concurrently); results in the order given."""
    negatives = [c for c in checks if c.negative]
    limit = max((c.timeout or timeouts.converge(len(ctx.intent.nodes)) for c in negatives), default=0.0)
    gate = Gate(ctx, limit)
    with ThreadPoolExecutor(PARALLEL) as pool:
        return list(pool.map(carried(lambda c: judge(ctx, c, gate)), checks))
