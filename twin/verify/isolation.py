"""The tenant-isolation matrix: every ordered pair of host endpoints, all at once.

Expectation from the topology: same tenant -> deliver, different tenants -> never.
A cross-tenant flow is addressed as its source would address that IP (so with
overlapping address spaces it targets the source tenant's own host at that
address): it must not reach the other tenant's host. Any frame seen at a host
of another tenant than its sender's is a leak, reported with where it was seen. A VRF
holding another's routes (an import) is one too, read from the RIBs (`twin.verify.routeleaks`).
"""

from __future__ import annotations

from twin.lifecycle.context import LabContext
from twin.traffic import flows as F
from twin.traffic.roce import Flow
from twin.verify import routeleaks
from twin.verify.result import Check

GROUP = "isolation"
COUNT = 2


def run(ctx: LabContext, count: int = COUNT) -> tuple[list[Check], dict]:
    fabric = ctx.fabric
    hosts = F.hosts(fabric)
    tenant = {h: fabric.attachment(h)[0].name for h in hosts}
    flows: list[Flow] = []
    expect: dict[int, bool] = {}
    for s in hosts:
        for d in hosts:
            if s != d:
                f = F.flow(fabric, s, d, len(flows) + 1, count=count, payload=64, sport=50000 + len(flows))
                flows.append(f)
                expect[f.flow_id] = tenant[s] == tenant[d]
    results = F.run(ctx, flows, expect, check_icrc=False)
    checks: list[Check] = []
    matrix: dict[str, dict[str, str]] = {s: {} for s in hosts}
    for r in results.values():
        f = r.flow
        should = expect[f.flow_id]
        leaks = {h: n for h, n in r.seen_at.items() if tenant[h] != tenant[f.src]}
        if should:
            ok = r.received == r.sent and not leaks
            msg = (
                ""
                if ok
                else "; ".join(
                    ([f"{r.received}/{r.sent} delivered"] if r.received < r.sent else [])
                    + [f"leaked to {h} ({tenant[h]}): {n} frames" for h, n in leaks.items()]
                )
            )
            cell = "ok" if ok else ("LEAK" if leaks else "LOSS")
        else:
            ok = r.received == 0 and not leaks
            msg = (
                ""
                if ok
                else "; ".join(
                    [
                        f"LEAK: {f.src} ({tenant[f.src]}) -> {f.dst_ip} seen at {h} ({tenant[h]}): {n} frames"
                        for h, n in leaks.items()
                    ]
                )
            )
            cell = "blocked" if ok else "LEAK"
        matrix[f.src][f.dst] = cell
        checks.append(
            Check(
                GROUP,
                f"{f.src} ({tenant[f.src]}) -> {f.dst} ({tenant[f.dst]}) {f.dst_ip}",
                ok,
                msg,
                {
                    "expect": "deliver" if should else "never",
                    "sent": r.sent,
                    "received": r.received,
                    "seen_at": r.seen_at,
                },
            )
        )
    checks += routeleaks.run(ctx)  # what the RIBs say: a VRF importing another's routes (issue 44)
    return checks, {"hosts": hosts, "tenants": tenant, "matrix": matrix}
