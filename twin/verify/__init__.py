"""`twin verify`: a lab's real behaviour judged against its topology.

    report = twin.verify.run(lab)                  # everything
    report = twin.verify.run(lab, only=["isolation"])
    assert report.passed, report.failures()

Groups: control (BGP, VNIs, VRF contents), traffic (RoCEv2 quality between
same-tenant hosts), isolation (the all-pairs matrix), underlay (VNIs, DSCP and
ECMP on fabric links), zerotrust (spoofing and VXLAN injection attempts).
"""
from __future__ import annotations

import time
from typing import Callable

from twin.errors import TwinError
from twin.lifecycle.context import context_of
from twin.verify import control, isolation, traffic, underlay, zerotrust
from twin.verify.result import Check, Report

GROUPS: dict[str, Callable] = {
    "control": control.run,
    "traffic": traffic.run,
    "isolation": isolation.run,
    "underlay": underlay.run,
    "zerotrust": zerotrust.run,
}


def run(lab, only: list[str] | None = None) -> Report:
    """Judge a running lab (a `twin.Lab` or its context) against its intent."""
    unknown = sorted(set(only or []) - set(GROUPS))
    if unknown:
        raise TwinError(f"unknown check group(s) {', '.join(unknown)}; groups: {', '.join(GROUPS)}")
    ctx = context_of(lab)
    report = Report(ctx.name)
    for name, fn in GROUPS.items():
        if only and name not in only:
            continue
        if name != "control" and not ctx.fabric.tenants:
            continue  # traffic checks need tenant endpoints
        t0 = time.monotonic()
        try:
            out = fn(ctx)
        except TwinError as e:
            out = [Check(name, name, False, f"could not run: {e}")]
        if isinstance(out, tuple):
            out, extra = out
            report.extra[name] = extra
        report.checks += out
        report.seconds[name] = round(time.monotonic() - t0, 3)
    return report


__all__ = ["run", "Report", "Check", "GROUPS"]
