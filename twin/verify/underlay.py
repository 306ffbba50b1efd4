"""Underlay evidence: what tenant traffic looks like on fabric links.

For each tenant, RoCE flows between hosts behind different VTEPs (one pair on a
stretched segment, one routed between segments), 16 flows each with their own
UDP source port. Captured on the sending VTEP's uplinks and on every spine port:
- every VXLAN frame carries the sending tenant's VNI (the segment's L2VNI when
  bridged, the tenant's L3VNI when routed), never another tenant's;
- the outer DSCP equals the inner one (`tos inherit`);
- the flows spread over all of the VTEP's uplinks, and over all spines when the
  path crosses them (ECMP entropy from the VXLAN source port);
- a drained node (BGP graceful shutdown) carries none of them when the fabric has
  a way around it: that is the proof the drain works. Uplinks to it and spines
  that are drained are then left out of the ECMP expectations.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from twin import kinds
from twin.lifecycle.context import LabContext
from twin.topology.model import Fabric
from twin.traffic import flows as F
from twin.traffic.engine import Tap
from twin.traffic.roce import encapsulated
from twin.verify.result import Check

GROUP = "underlay"
FLOWS = 16


def pairs(ctx: LabContext) -> list[tuple[str, str, str]]:
    """(tenant, src, dst) per tenant: a stretched pair and a routed pair across VTEPs, if it
    has them; the VTEPs farthest apart, so the flows cross the spines where the fabric allows."""
    out = []
    dist = {v: ctx.fabric.hops(v) for v in ctx.fabric.vteps()}
    for t in ctx.fabric.tenants.values():
        for same in (True, False):
            cands = [(a, b) for a in t.attachments for b in t.attachments
                     if a.vtep != b.vtep and (a.segment == b.segment) == same]
            if cands:
                a, b = max(cands, key=lambda ab: dist[ab[0].vtep].get(ab[1].vtep, 0))
                out.append((t.name, a.host, b.host))
    return out


@dataclass
class Seen:
    """What the taps saw of one pair's flows."""

    vnis: Counter = field(default_factory=Counter)
    tos_bad: int = 0
    uplinks: Counter = field(default_factory=Counter)
    spines: Counter = field(default_factory=Counter)
    drained: Counter = field(default_factory=Counter)


def spines(fabric: Fabric) -> list[str]:
    """The transit-only tier (spines): flows between VTEPs under different leafs cross it."""
    return [n.name for n in fabric.nodes.values() if kinds.of(n).transit]


def run(ctx: LabContext) -> list[Check]:
    fabric = ctx.fabric
    todo = pairs(ctx)
    if not todo:
        return []
    flows, expect = [], {}
    for tenant, src, dst in todo:
        for i in range(FLOWS):
            f = F.flow(fabric, src, dst, len(flows) + 1, count=2, payload=512, sport=40000 + len(flows),
                       dscp=26, ecn=0b10)
            flows.append(f)
            expect[f.flow_id] = True
    vteps = sorted({fabric.attachment_of(s)[1].vtep for _, s, _ in todo})
    tapped = dict.fromkeys(vteps + spines(fabric) + fabric.drained())  # each node once, in this order
    taps = [Tap(f"{n}:{p.name}", ctx.netns(n), p.name) for n in tapped for p in fabric.nodes[n].fabric_ports]
    results, raw = F.run_with_taps(ctx, flows, expect, check_icrc=False, taps=taps)
    frames = {tap: [(e, sent) for f, sent in got if (e := encapsulated(f))] for tap, got in raw.items()}
    checks = []
    for tenant, src, dst in todo:
        mine = {f.flow_id for f in flows if f.src == src and f.dst == dst}
        seen = _seen(fabric, src, dst, mine, frames)
        checks.append(_judge(fabric, tenant, src, dst, seen, sum(results[i].received for i in mine)))
    return checks


def _seen(fabric: Fabric, src: str, dst: str, mine: set[int], frames: dict[str, list]) -> Seen:
    """Count one pair's VXLAN frames: on the sending VTEP's uplinks as sent, elsewhere as they enter a node."""
    sa, da = fabric.attachment_of(src)[1], fabric.attachment_of(dst)[1]
    lo = {n.loopback: n.name for n in fabric.routers()}
    avoid, spine_set = set(_avoidable(fabric, sa.vtep, da.vtep)), set(spines(fabric))
    seen = Seen()
    for tap, captured in frames.items():
        node = tap.split(":")[0]
        for e, sent in captured:
            if e.flow_id not in mine:
                continue
            if node == sa.vtep:
                if sent:
                    seen.uplinks[tap] += 1
                    seen.vnis[e.vni] += 1
                    seen.tos_bad += e.outer_dscp != e.inner_dscp
                continue
            if sent or lo.get(e.outer_src) != sa.vtep:
                continue  # frames counted once, where they enter a node
            if node in spine_set:
                seen.spines[node] += 1
                seen.vnis[e.vni] += 1
            if node in avoid:
                seen.drained[node] += 1
    return seen


def _judge(fabric: Fabric, tenant: str, src: str, dst: str, seen: Seen, delivered: int) -> Check:
    t = fabric.tenants[tenant]
    sa, da = fabric.attachment_of(src)[1], fabric.attachment_of(dst)[1]
    want_vni = t.segments[sa.segment].l2vni if sa.segment == da.segment else t.l3vni
    avoid = _avoidable(fabric, sa.vtep, da.vtep)
    problems = []
    if not seen.vnis:
        problems.append("no VXLAN frame of these flows seen on the fabric")
    elif set(seen.vnis) != {want_vni}:
        problems.append(f"VNIs seen {dict(seen.vnis)}, expected only {want_vni}")
    if seen.tos_bad:
        problems.append(f"{seen.tos_bad} frames whose outer DSCP differs from the inner one")
    idle = [f"{sa.vtep}:{p.name}" for p in fabric.nodes[sa.vtep].fabric_ports
            if p.peer_node not in avoid and not seen.uplinks[f"{sa.vtep}:{p.name}"]]
    if idle:
        problems.append(f"{FLOWS} flows never used uplink(s) {', '.join(idle)}")
    if not (set(_leafs(fabric, sa.vtep)) & set(_leafs(fabric, da.vtep))):   # the path crosses the spines
        unused = [s for s in spines(fabric) if s not in avoid and not seen.spines[s]]
        if unused:
            problems.append(f"flows never crossed spine(s) {', '.join(unused)}")
    carried = [f"{d} ({seen.drained[d]})" for d in avoid if seen.drained[d]]
    if carried:
        problems.append(f"drained node(s) still carried frames of these flows: {', '.join(carried)}")
    # the proof a drain works, reported with the check even when it passes
    proof = [f"drained {', '.join(avoid)} carried 0 frames"] if avoid and seen.vnis and not carried else []
    how = "bridged" if sa.segment == da.segment else "routed"
    return Check(GROUP, f"{tenant} {src} -> {dst} ({how}, VNI {want_vni})", not problems, "; ".join(problems + proof),
                 {"vnis": dict(seen.vnis), "packets_per_uplink": dict(seen.uplinks),
                  "packets_per_spine": dict(seen.spines), "packets_per_drained_node": {d: seen.drained[d] for d in avoid},
                  "flows": FLOWS, "delivered": delivered})


def _leafs(fabric: Fabric, vtep: str) -> list[str]:
    """The edge nodes a VTEP's traffic enters the fabric through: its uplink peers (a DPU's
    leafs), or itself when its uplinks lead straight to the transit tier (a leaf VTEP)."""
    ups = [p.peer_node for p in fabric.nodes[vtep].fabric_ports if not kinds.of(fabric.nodes[p.peer_node]).transit]
    return ups or [vtep]


def _avoidable(fabric: Fabric, src: str, dst: str) -> list[str]:
    """Drained nodes that flows from VTEP `src` to VTEP `dst` must not cross: every drained
    router other than the two VTEPs, if some fabric path joins them without crossing one.
    Without such a path BGP still uses the drained paths (at LOCAL_PREF 0): nothing to avoid."""
    drained = set(fabric.drained()) - {src, dst}
    return sorted(drained) if drained and dst in fabric.hops(src, drained) else []
