"""`twin lint`: the user's configs checked against the topology's intent before anything starts.

Pure and quick (no Docker): each node's files are read by their dialect's reader (`readers`:
NVUE's startup.yaml, FRR's frr.conf, each registered by its dialect) into one model of what
the configs declare (`declared`), which the rules compare with what every node must hold
(`twin.intent`): the underlay (`underlay`: neighbors, ASNs, loopbacks, ECMP, MTUs, the drain)
and the tenants (`overlay`: VLANs and VNIs, SVIs, L3VNIs, EVPN, the VTEP's source, leaks).

    report = lint(fabric, {"dpu1": {"startup.yaml": text}}, {"dpu1": {"startup.yaml": "cfg/dpu1/startup.yaml"}})
    for f in report.findings: print(f)   # cfg/dpu1/startup.yaml:146: bridge vlan 20 -> VNI 10202: VLAN 20 carries...
    explain("control", "vni dpu1 10102", "VNI 10102 missing", report.findings)   # the findings behind a failure

`twin up`, `twin plan`, `twin apply` lint the configs they are given (warnings; errors with
--strict), and record the findings in the lab, so `twin verify` names the cause of a failing
check (`see cfg/dpu1/startup.yaml:146`).
"""

from __future__ import annotations

import time
from typing import Callable, Mapping

from twin import kinds
from twin.base.errors import Problem, TopologyError, TwinError
from twin.lint import overlay, underlay
from twin.lint.declared import At, Declared, Peer, Rt, Switch, Vlan, Vrf
from twin.lint.findings import Finding, Report, explain
from twin.lint.readers import IGNORED, READERS, Reader, Source, register
from twin.lint.scope import Scope
from twin.topology.model import Fabric

# every comparison, in the order findings are given: the underlay first, then the tenants
RULES: dict[str, Callable[[Scope, Declared], list[Finding]]] = {
    "neighbors": underlay.neighbors,
    "asns": underlay.asns,
    "loopback": underlay.loopback,
    "evpn-peers": underlay.evpn_peers,
    "ecmp": underlay.ecmp,
    "mtus": underlay.mtus,
    "drain": underlay.drain,
    "vtep": overlay.vtep,
    "vrfs": overlay.vrfs,
    "vlans": overlay.vlans,
    "leaks": overlay.leaks,
}


def lint(
    fabric: Fabric,
    files: Mapping[str, Mapping[str, str]],
    paths: Mapping[str, Mapping[str, str]] | None = None,
    topology: str | None = None,
) -> Report:
    """Every node's files (node -> file name -> text; `paths`: where each came from, for messages)
    read and compared with `fabric`'s intent. A file that cannot be read, or that twin refuses to
    run on this topology, is a problem of the report (the rules skip its node)."""
    start = time.monotonic()
    report = Report(topology or fabric.source)
    declared: dict[str, Declared] = {}
    for node, fs in sorted(files.items()):
        if node not in fabric.nodes or not kinds.of(fabric.nodes[node]).runs_frr:
            continue  # a node the fabric lacks, or one that runs no FRR: the config directory's check says so
        for name, text in sorted(fs.items()):
            path = (paths or {}).get(node, {}).get(name, f"{node}/{name}")
            if name in IGNORED:
                continue
            report.files.append(path)
            reader = READERS.get(name)
            if reader is None:
                report.problems.append(
                    Problem(
                        path, "", f"no reader of {name} is registered (readers: {', '.join(sorted(READERS)) or 'none'})"
                    )
                )
                continue
            try:
                declared[node] = reader(Source(node, name, path, text, fabric))
            except TopologyError as e:
                report.problems += e.problems
    scope = Scope(fabric, declared)
    for d in scope.judged():
        for rule in RULES.values():
            report.findings += rule(scope, d)
    report.seconds = time.monotonic() - start
    return report


class LintFailed(TopologyError):
    """The configs' problems, or (`--strict`) their findings, are errors: nothing was made or changed."""

    def __init__(self, report: Report):
        self.report = report
        super().__init__(
            list(report.problems)
            + [
                Problem(f.at.file, "", f"{f.at.text}: {f.why}" if f.at.text else f.why, f.at.line)
                for f in report.findings
            ]
        )
        n = len(self.problems)
        TwinError.__init__(
            self,
            f"twin lint: {n} error{'s' if n != 1 else ''} in your configs (--strict makes "
            "findings errors); nothing was made or changed:\n" + "\n".join(f"  {p}" for p in self.problems),
        )


def gate(report: Report, strict: bool = False, warn: Callable[[Report], None] = lambda _: None) -> Report:
    """`warn` is told of the report first; then LintFailed when its problems, or (`strict`) its findings,
    are errors. Returns the report."""
    warn(report)
    if not report.passed(strict):
        raise LintFailed(report)
    return report


__all__ = [
    "lint",
    "gate",
    "LintFailed",
    "Report",
    "Finding",
    "explain",
    "register",
    "READERS",
    "Reader",
    "Source",
    "RULES",
    "At",
    "Declared",
    "Peer",
    "Rt",
    "Switch",
    "Vlan",
    "Vrf",
    "Scope",
    "declared",
    "findings",
    "overlay",
    "readers",
    "scope",
    "underlay",
]
