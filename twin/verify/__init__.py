"""`twin verify`: a lab's real behaviour judged against its topology.

    report = twin.verify.run(lab)                  # everything
    report = twin.verify.run(lab, only=["isolation"])
    assert report.passed, report.failures()

Groups: checks (the user's own: a checks file, the topology's `checks:`),
control (BGP, loopbacks, EVPN routes, VNIs, route targets, VRF contents), traffic
(RoCEv2 quality between same-tenant hosts), isolation (the all-pairs matrix),
underlay (VNIs, DSCP, MTU and ECMP on fabric links), mtu (every link's
two ends' MTU against the largest frame it must carry, full-size frames across), zerotrust (every spoofing and
injection attempt each port rule stops), arp (gateways and remote peers answered
by the host's VTEP), gateway (internet access through the VTEPs' NAT, where tenants
have it), performance (every rate limit held, and against a noisy neighbour, where
workloads have them), congestion (every congestion point's CE marks, by what comes out
of it), protocols (what a node's config dialect declares beyond intent: NVUE's BFD sessions Up, BGP
timers as set, OSPF adjacencies Full, static routes installed), lldp (NVUE's: every link of an NVUE node's
LLDP neighbours as the topology cables them). `twin.prove` proves that these
notice every element broken. Safeguards of the lab's services a run did not exercise (a group
not run, a limit no flood can drive, a check not judged) are listed in the report (`not_exercised`).
Commands run on nodes are recorded under their group's name (a user's check:
`checks: NAME`) inside `twin.runtime.exec.recording()`. A failing check that a lint finding of
the lab's configs explains (recorded by `twin up` and `twin apply`, `twin.lint`) names it:
`...; see dpu1/startup.yaml:146 (bridge vlan 20 -> VNI 10202)`.

Also here: the behaviour baseline (`baseline`: record, `compare`: against the
lab now, with allowed differences) and Markdown summaries (`markdown`).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

from twin.base.errors import TwinError
from twin.config.dialect import dialects
from twin.lifecycle import state
from twin.lifecycle.context import LabContext, LabLike, context_of
from twin.lint import Finding
from twin.runtime import Recorder, carried, labelled, recording
from twin.topology.model import Fabric
from twin.topology.schema import CheckSpec
from twin.verify import (
    arp,
    congestion,
    control,
    coverage,
    gateway,
    isolation,
    mtu,
    performance,
    traffic,
    underlay,
    zerotrust,
)
from twin.verify import checks as user_checks
from twin.verify.baseline_file import load_baseline
from twin.verify.compare import Comparison
from twin.verify.gateway_probes import edges
from twin.verify.jsoncmp import subset
from twin.verify.markdown import comparison_md, evidence_doc, report_md, show
from twin.verify.result import Check, Report

GROUPS: dict[str, Callable] = {
    "checks": user_checks.run,
    "control": control.run,
    "traffic": traffic.run,
    "isolation": isolation.run,
    "underlay": underlay.run,
    "mtu": mtu.run,  # issue 44: every link's MTU in the kernel, full-size frames across
    "zerotrust": zerotrust.run,
    "arp": arp.run,
    "gateway": gateway.run,
    "performance": performance.run,
    "congestion": congestion.run,
}
WHEN: dict[str, Callable] = {
    "gateway": gateway.applies,  # groups that judge only labs that have what they check
    "performance": performance.applies,
    "congestion": congestion.applies,
}
# flood the lab, or need a congestion point's bucket to themselves: run after the others, each by itself
ALONE = ("performance", "congestion")


def all_groups() -> dict[str, Callable]:
    """twin's groups, then those the dialects bring (`Dialect.groups`: NVUE's protocols, acl, qos); a
    group brought twice runs both parts, in that order."""
    out = dict(GROUPS)
    for d in dialects():
        for name, f in d.groups.items():
            out[name] = _both(out[name], f) if name in out else f
    return out


def _both(first: Callable, then: Callable) -> Callable:
    def run(ctx: LabContext) -> list[Check] | tuple[list[Check], dict]:
        a, b = first(ctx), then(ctx)
        (ca, ea), (cb, eb) = (x if isinstance(x, tuple) else (x, None) for x in (a, b))
        return (ca + cb, {**(ea or {}), **(eb or {})}) if ea or eb else ca + cb

    return run


def known(groups: Sequence[str] | None) -> None:
    """Refuse names that are not check groups, naming the groups there are."""
    unknown = sorted(set(groups or []) - set(all_groups()))
    if unknown:
        raise TwinError(f"unknown check group(s) {', '.join(unknown)}; groups: {', '.join(all_groups())}")


def run(lab: LabLike, only: list[str] | None = None, checks: Sequence[CheckSpec] | None = None) -> Report:
    """Judge a running lab (a `twin.Lab` or its context) against its intent and the user's checks
    (`checks`; default: the `checks:` of its topology; `twin.topology.checks` loads and merges files).
    The groups run at once: each reads the lab's state or sends its own frames (told apart by a run
    id of its own), so they do not see each other; their results come back in the order of GROUPS."""
    known(only)
    ctx = context_of(lab)
    mine = tuple(ctx.fabric.checks if checks is None else checks)
    if only and "checks" in only and not mine:
        raise TwinError(
            f"lab {ctx.name!r} has no checks to run: give --checks FILE, or a checks: section in its topology"
        )
    ctx.pids()  # resolved once, before the groups share the context
    names = [n for n in all_groups() if _wanted(n, only, ctx.fabric, mine)]
    report = Report(ctx.name)
    together = [n for n in names if n not in ALONE]
    with ThreadPoolExecutor(len(together) or 1) as pool:
        outcomes = list(pool.map(carried(lambda n: _group(ctx, n, mine)), together))
    outcomes += [_group(ctx, n, mine) for n in names if n in ALONE]
    for name, (out, extra, seconds) in zip(together + [n for n in names if n in ALONE], outcomes):
        if extra is not None:
            report.extra[name] = extra
        report.checks += out
        report.seconds[name] = seconds
    unexercised = coverage.not_exercised(ctx.fabric, names, report)
    if unexercised:  # services' safeguards this run did not exercise
        report.extra["not_exercised"] = unexercised
    st = state.load(ctx.dir)[0]
    report.explain([Finding.of(f) for f in (st.lint if st else [])])  # the configs' lint findings, as causes
    for d in dialects():  # a dialect's part: NVUE's, what of a node's startup.yaml twin keeps but does not run
        report.extra.update(d.verify(ctx))
    return report


def _wanted(name: str, only: list[str] | None, fabric: Fabric, mine: tuple) -> bool:
    """A group asked for by name runs (and says so if the lab has nothing for it); otherwise
    each group runs where the lab has what it checks (the user's checks: where there are some)."""
    if name == "checks":
        return bool(mine) and (not only or name in only)
    if name not in ("control", "protocols") and not fabric.tenants:  # traffic groups need tenant hosts
        return False
    return name in only if only else WHEN.get(name, lambda f: True)(fabric)


def _group(ctx: LabContext, name: str, mine: tuple[CheckSpec, ...]) -> tuple[list[Check], dict | None, float]:
    t0 = time.monotonic()
    try:
        with labelled(name):  # the commands of a group are recorded under its name
            out = GROUPS[name](ctx, mine) if name == "checks" else all_groups()[name](ctx)
    except TwinError as e:
        out = [Check(name, name, False, f"could not run: {e}")]
    out, extra = out if isinstance(out, tuple) else (out, None)
    return out, extra, round(time.monotonic() - t0, 3)


__all__ = [
    "Recorder",
    "recording",
    "labelled",
    "run",
    "Report",
    "Check",
    "GROUPS",
    "baseline",
    "checks",
    "compare",
    "Comparison",
    "comparison_md",
    "congestion",
    "edges",
    "evidence_doc",
    "limits",
    "load_baseline",
    "markdown",
    "mtu",
    "performance",
    "report_md",
    "show",
    "subset",
]
