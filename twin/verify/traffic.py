"""RoCEv2 between every pair of hosts of a tenant: delivered, intact, in order.

Per ordered same-tenant pair: a flow of RoCE frames of the pair's path MTU (a 4 KiB payload in a
jumbo fabric, else the largest InfiniBand MTU both hosts' ports carry: `flows.roce_payload`) marked
DSCP 26 / ECT(0), and a CNP back. Checks: all sent
frames received, ICRC valid on arrival, DSCP unchanged and ECN unchanged but for
congestion marks (CE, from a congestion point on the way), no PSN gaps,
duplicates or reordering. Each receiver answers CE marks with CNPs as a DCQCN
NIC does (`twin.traffic.dcqcn`): every CNP must reach the sender, as many as the
pacing rule allows. CE marks and CNPs per flow are in each check's data and, for
the flows that were marked, in the report (`traffic.congestion`).
"""

from __future__ import annotations

from twin.lifecycle.context import LabContext
from twin.traffic import dcqcn
from twin.traffic import flows as F
from twin.traffic.roce import Flow
from twin.verify.result import Check

GROUP = "traffic"
COUNT = 16
PAYLOAD = 4096


def run(ctx: LabContext, count: int = COUNT, payload: int = PAYLOAD) -> tuple[list[Check], dict]:
    fabric = ctx.fabric
    hosts = F.hosts(fabric)
    flows: list[Flow] = []
    expect: dict[int, bool] = {}
    for s in hosts:
        for d in hosts:
            if s != d and F.same_tenant(fabric, s, d):
                data = F.flow(
                    fabric,
                    s,
                    d,
                    len(flows) + 1,
                    count=count,
                    payload=F.roce_payload(fabric, s, d, payload),
                    sport=49152 + len(flows),
                    dqp=0x100 + len(flows),
                    psn=1000,
                )
                cnp = F.flow(
                    fabric, d, s, len(flows) + 2, count=1, cnp=True, sport=49152 + len(flows), dqp=0x100 + len(flows)
                )
                flows += [data, cnp]
                expect[data.flow_id] = expect[cnp.flow_id] = True
    if not flows:
        return [], {}
    results = F.run(ctx, flows, expect, cnps=True)
    checks, congestion = [], []
    for r in results.values():
        f = r.flow
        kind = "CNP" if f.cnp else f"RoCE {f.count} x {f.payload} B"
        problems = []
        if r.received < r.sent:
            problems.append(f"{r.sent - r.received}/{r.sent} frames lost")
        if r.icrc_bad:
            problems.append(f"{r.icrc_bad} with a bad ICRC")
        if r.tos_changed:
            problems.append(f"{r.tos_changed} with DSCP/ECN changed (sent tos {f.tos:#04x})")
        allowed = dcqcn.expected_cnps(r.ce_times)
        if r.ce and r.cnps_received < r.cnps_sent:
            problems.append(f"{r.cnps_sent - r.cnps_received} of {r.cnps_sent} CNPs never reached {f.src}")
        if r.cnps_sent != allowed:
            problems.append(f"{r.cnps_sent} CNPs for {r.ce} CE marks, the pacing rule allows {allowed}")
        if r.gaps and r.received:
            problems.append(f"{r.gaps} PSN gaps")
        if r.duplicates:
            problems.append(f"{r.duplicates} duplicates")
        if r.reordered:
            problems.append(f"{r.reordered} reordered")
        tenant = fabric.attachment(f.src)[0].name
        checks.append(
            Check(
                GROUP,
                f"{tenant} {f.src} -> {f.dst} ({kind})",
                not problems,
                "; ".join(problems),
                {
                    "sent": r.sent,
                    "received": r.received,
                    "icrc_bad": r.icrc_bad,
                    "tos_changed": r.tos_changed,
                    "gaps": r.gaps,
                    "duplicates": r.duplicates,
                    "reordered": r.reordered,
                    "dscp": f.dscp,
                    "ecn": f.ecn,
                    "payload": f.payload,
                    "ce": r.ce,
                    "cnps_sent": r.cnps_sent,
                    "cnps_received": r.cnps_received,
                },
            )
        )
        if r.ce:
            congestion.append(
                {
                    "flow": f"{tenant} {f.src} -> {f.dst}",
                    "sent": r.sent,
                    "ce": r.ce,
                    "cnps_sent": r.cnps_sent,
                    "cnps_received": r.cnps_received,
                    "cnps_allowed": allowed,
                }
            )
    return checks, {"congestion": congestion, "cnp_interval_us": dcqcn.CNP_INTERVAL_NS // 1000}
