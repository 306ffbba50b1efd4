"""`twin verify`: a lab's real behaviour judged against its topology.

    report = twin.verify.run(lab)                  # everything
    report = twin.verify.run(lab, only=["isolation"])
    assert report.passed, report.failures()

Groups: checks (the user's own: a checks file, the topology's `checks:`),
control (BGP, VNIs, VRF contents), traffic (RoCEv2 quality between
same-tenant hosts), isolation (the all-pairs matrix), underlay (VNIs, DSCP and
ECMP on fabric links), zerotrust (spoofing and VXLAN injection attempts).
Commands run on nodes are recorded under their group's name (a user's check:
`checks: NAME`) inside `twin.runtime.exec.recording()`.

Also here: the behaviour baseline (`baseline`: record, `compare`: against the
lab now, with allowed differences) and Markdown summaries (`markdown`).
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

from twin.errors import TwinError
from twin.lifecycle.context import context_of
from twin.runtime.exec import labelled
from twin.topology.schema import CheckSpec
from twin.verify import checks as user_checks
from twin.verify import control, isolation, traffic, underlay, zerotrust
from twin.verify.result import Check, Report

GROUPS: dict[str, Callable] = {
    "checks": user_checks.run,
    "control": control.run,
    "traffic": traffic.run,
    "isolation": isolation.run,
    "underlay": underlay.run,
    "zerotrust": zerotrust.run,
}


def run(lab, only: list[str] | None = None, checks: Sequence[CheckSpec] | None = None) -> Report:
    """Judge a running lab (a `twin.Lab` or its context) against its intent and the user's checks
    (`checks`; default: the `checks:` of its topology; `twin.topology.checks` loads and merges files)."""
    unknown = sorted(set(only or []) - set(GROUPS))
    if unknown:
        raise TwinError(f"unknown check group(s) {', '.join(unknown)}; groups: {', '.join(GROUPS)}")
    ctx = context_of(lab)
    mine = tuple(ctx.fabric.checks if checks is None else checks)
    if only and "checks" in only and not mine:
        raise TwinError(f"lab {ctx.name!r} has no checks to run: give --checks FILE, or a checks: section "
                        "in its topology")
    report = Report(ctx.name)
    for name, fn in GROUPS.items():
        if only and name not in only or name == "checks" and not mine:
            continue
        if name not in ("control", "checks") and not ctx.fabric.tenants:
            continue  # traffic checks need tenant endpoints
        t0 = time.monotonic()
        try:
            with labelled(name):
                out = fn(ctx, mine) if name == "checks" else fn(ctx)
        except TwinError as e:
            out = [Check(name, name, False, f"could not run: {e}")]
        if isinstance(out, tuple):
            out, extra = out
            report.extra[name] = extra
        report.checks += out
        report.seconds[name] = round(time.monotonic() - t0, 3)
    return report


__all__ = ["run", "Report", "Check", "GROUPS"]
