"""Control-plane checks from intent: BGP sessions, VNIs with their VTEPs, VRF contents; and, on
routers running the user's own config, its daemons and every adjacency it declares.

Each VRF on a VTEP must hold exactly what `twin.intent` says: its local segments
(connected), a /32 to every remote host (type-2) and its remote-only segments
(type-5), each via the VTEPs that own them. Anything else, above all a prefix or
next hop that belongs to another tenant, is a leak. Overlapping address spaces
make prefixes alone ambiguous, so routes are compared as prefix -> next-hop VTEPs.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from twin.base import timeouts
from twin.base.errors import TwinError
from twin.intent import GenericIntent, NodeIntent
from twin.lifecycle import generic
from twin.lifecycle.context import LabContext
from twin.runtime import (
    FRR_NO_EVPN,
    FRR_RIB,
    FRR_ROUTES,
    FRR_SUMMARY_ALL,
    FRR_VNIS,
    carried,
    evpn_table,
    normalize_vni,
    unexpected_peers,
    vni_states,
    vrf_routes,
    vrf_routes_cmd,
)
from twin.verify import rts
from twin.verify.jsoncmp import subset
from twin.verify.result import Check

GROUP = "control"


def compare(
    expected: dict[str, frozenset[str]], actual: dict[str, frozenset[str]], owner: dict[str, str] | None = None
) -> list[str]:
    """Readable differences: missing routes, wrong next hops, routes that should not be there."""
    owner = owner or {}
    diffs = []
    for p, hops in sorted(expected.items()):
        if p not in actual:
            diffs.append(f"missing {p} via {', '.join(sorted(hops))}")
        elif actual[p] != hops:
            diffs.append(f"{p} via {', '.join(sorted(actual[p]))}, expected via {', '.join(sorted(hops))}")
    for p in sorted(set(actual) - set(expected)):
        diffs.append(f"unexpected {p} via {', '.join(sorted(actual[p]))}" + (f" ({owner[p]})" if p in owner else ""))
    return diffs


def check_node(ctx: LabContext, n: NodeIntent) -> list[Check]:
    ex = ctx.exec(n.node)
    try:
        summary, rib = ex.vtysh_json(FRR_SUMMARY_ALL, FRR_RIB, timeout=timeouts.VTYSH)
        diffs = subset(n.bgp_summary(), summary) + n.hostname_diffs(summary)
        extra = unexpected_peers(summary.get("ipv4Unicast", {}), [s.port for s in n.sessions])
        diffs += [f"FRR has neighbor {p}, on no link of the topology" for p in extra] if diffs else []
        routes = vrf_routes(rib)
        lost = [f"no route to {peer}'s loopback {p}" for peer, p in sorted(n.loopbacks.items()) if p not in routes]
    except TwinError as e:
        diffs = lost = [f"cannot read BGP state: {e}"]
    checks = [
        Check(GROUP, f"bgp {n.node}", not diffs, "; ".join(diffs), {"expected_sessions": [str(s) for s in n.sessions]}),
        Check(GROUP, f"loopbacks {n.node}", not lost, "; ".join(lost), {"expected": n.loopbacks}),
    ]
    if not n.vtep:
        return checks
    checks += evpn_checks(ctx, n)
    try:  # a separate call: FRR 8.4 prints nothing at all here once EVPN is off on the node
        (vni_doc,) = ex.vtysh_json(FRR_VNIS, timeout=timeouts.VTYSH)
    except TwinError as e:
        vni_doc = {}
        checks.append(Check(GROUP, f"vnis {n.node}", False, f"cannot read VNI state: {e}"))
    have = vni_states(vni_doc)
    why = f" ({FRR_NO_EVPN})" if not have else ""
    for t in n.tenants:
        for vni, want in t.vni_entries().items():
            diffs = (
                [f"VNI {vni} missing{why}"] if vni not in have else subset(want, normalize_vni(have[vni]), f"vni {vni}")
            )
            checks.append(Check(GROUP, f"vni {n.node} {vni}", not diffs, "; ".join(diffs), {"expected": want}))
    owner = ctx.intent.owner_of()
    for t in n.tenants:
        try:
            (doc,) = ex.vtysh_json(vrf_routes_cmd(t.vrf), timeout=timeouts.VTYSH)
            actual = vrf_routes(doc)
        except TwinError as e:
            checks.append(Check(GROUP, f"vrf {n.node} {t.vrf}", False, f"cannot read VRF {t.vrf}: {e}"))
            continue
        diffs = compare(t.routes, actual, {p: f"of tenant {o}" for p, o in owner.items() if o != t.tenant})
        checks.append(
            Check(
                GROUP,
                f"vrf {n.node} {t.vrf}",
                not diffs,
                "; ".join(diffs),
                {
                    "expected": {p: sorted(h) for p, h in t.routes.items()},
                    "actual": {p: sorted(h) for p, h in actual.items()},
                },
            )
        )
    return checks


def evpn_checks(ctx: LabContext, n: NodeIntent) -> list[Check]:
    """Per tenant of VTEP `n`: its EVPN table holds exactly the tenant's routes, from the VTEPs
    that originate them, with the tenant's route targets (`twin.intent.tenants.evpn_routes`)."""
    try:
        (doc,) = ctx.exec(n.node).vtysh_json(FRR_ROUTES, timeout=timeouts.VTYSH)
        table = set(evpn_table(doc))
    except TwinError as e:
        return [Check(GROUP, f"evpn {n.node} {t.tenant}", False, f"cannot read EVPN routes: {e}") for t in n.tenants]
    known = {v for t in ctx.fabric.tenants.values() for v in [t.l3vni, *(s.l2vni for s in t.segments.values())]}
    who = {ctx.fabric.nodes[v].loopback: v for v in ctx.fabric.vteps()}
    checks = []
    for t in n.tenants:
        want = ctx.intent.evpn_routes(t.tenant)
        mine = {t.l3vni} | {s.l2vni for s in ctx.fabric.tenants[t.tenant].segments.values()}
        diffs = []
        for (key, vnis), what in want.items():
            if (key, vnis) in table:
                continue
            foreign = sorted({v for k, vs in table if k == key and not vs & known for v in vs})
            diffs.append(
                f"no {what}"
                + (
                    f" with {t.tenant}'s route targets (VNI {', '.join(map(str, sorted(vnis)))})"
                    f"; one with route targets of VNI {', '.join(map(str, foreign))}"
                    if foreign
                    else ""
                )
            )
        diffs += [
            f"unexpected type-{k[0]} {k[1]} from {who.get(k[2], k[2])} (VNI {', '.join(map(str, sorted(vs)))})"
            for k, vs in sorted(table, key=str)
            if vs & mine and (k, vs) not in want
        ]
        checks.append(
            Check(
                GROUP,
                f"evpn {n.node} {t.tenant}",
                not diffs,
                "; ".join(diffs),
                {"expected": len(want), "routes": sum(1 for _, vs in table if vs & mine)},
            )
        )
    return checks


def check_router(ctx: LabContext, gi: GenericIntent) -> list[Check]:
    """A router running the user's config: its daemons run, and every adjacency its config declares is up."""
    missing = generic.daemons_missing(gi, ctx.pid(gi.node))
    checks = [Check(GROUP, f"daemons {gi.node}", not missing, "; ".join(missing), {"expected": list(gi.daemons)})]
    try:
        states = generic.states(ctx.exec(gi.node), gi)
    except TwinError as e:
        return checks + [Check(GROUP, f"adjacencies {gi.node}", False, f"cannot read FRR's state: {e}")]
    for a, st in states.items():
        up = generic.is_up(a, st)
        checks.append(
            Check(
                GROUP,
                f"{a.protocol} {gi.node} {a.where}",
                up,
                "" if up else f"{a}: {st}" + (f" ({'; '.join(gi.notes)})" if gi.notes else ""),
                {"state": st, "peer": a.peer, "vrf": a.vrf},
            )
        )
    if gi.vnis:
        down = generic.vnis_missing(ctx.exec(gi.node), gi)
        checks.append(Check(GROUP, f"vnis {gi.node}", not down, "; ".join(down), {"expected": gi.vnis}))
    if gi.routes:
        lost = generic.routes_missing(ctx.exec(gi.node), gi)
        checks.append(
            Check(GROUP, f"routes {gi.node}", not lost, "; ".join(lost), {"expected": [str(r) for r in gi.routes]})
        )
    return checks


def run(ctx: LabContext) -> list[Check]:
    with ThreadPoolExecutor(8) as pool:
        checks = [c for cs in pool.map(carried(lambda n: check_node(ctx, n)), ctx.intent.nodes.values()) for c in cs]
        checks += [
            c for cs in pool.map(carried(lambda g: check_router(ctx, g)), ctx.intent.generic.values()) for c in cs
        ]
    return checks + rts.run(ctx)
