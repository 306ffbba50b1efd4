"""Underlay evidence: what tenant traffic looks like on fabric links.

Jumbo RoCE flows (4 KiB payload) between hosts behind different VTEPs, captured as
they enter every router (each fabric port, received frames):

- every VXLAN device that sends: per tenant and VTEP, a flow set over each local
  segment stretched to another VTEP (bridged, its L2VNI) and one routed to another
  segment behind another VTEP (its L3VNI). Each VXLAN frame carries that VNI and
  never another tenant's, its outer DSCP equals the inner one (`tos inherit`), and
  every frame arrives;
- every path: flows between a few VTEP pairs whose shortest paths together cross
  every link tenant traffic may use, each way, and every router that chooses
  between ports (`twin.intent.paths.cover`), 64 flows each with their own UDP
  source port. Every frame arrives whole (an outer VXLAN packet fragmented on its
  way means an MTU short of the frame), and every router spreads them over each of
  its equal-cost ports (ECMP entropy from the VXLAN source port: multipath,
  `maximum-paths`, the 5-tuple hash);
- a drained node (BGP graceful shutdown) carries none of them when the fabric has
  a way around it: that is the proof the drain works. Paths then go around it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from twin.intent import paths
from twin.lifecycle.context import LabContext
from twin.topology.model import Fabric
from twin.traffic import flows as F
from twin.traffic import roce
from twin.traffic.engine import Tap
from twin.traffic.roce import encapsulated
from twin.verify.result import Check

GROUP = "underlay"
VNI_FLOWS = 4  # per sending VXLAN device
PATH_FLOWS = 64  # per covering pair: a 2-way choice two tiers down gets no frame once in ~2^31
PAYLOAD = 4096


@dataclass(frozen=True)
class Probe:
    """Flows from host `src` to host `dst` (behind another VTEP), and what they prove."""

    kind: str  # bridged, routed (a VXLAN device and its VNI), paths (every link and ECMP choice)
    tenant: str
    src: str
    dst: str
    flows: int


def probes(fabric: Fabric) -> list[Probe]:
    """Every sending VXLAN device of every VTEP, then the covering VTEP pairs."""
    out = []
    for t in fabric.tenants.values():
        for v in t.vteps():
            dist = fabric.hops(v)
            local = [a for a in t.attachments if a.vtep == v]
            for seg in t.segments_on(v):
                far = [b for b in t.attachments if b.segment == seg.name and b.vtep != v]
                if far:
                    a = next(a for a in local if a.segment == seg.name)
                    b = max(far, key=lambda b: (dist.get(b.vtep, 0), b.host))
                    out.append(Probe("bridged", t.name, a.host, b.host, VNI_FLOWS))
            routed = [(a, b) for a in local for b in t.attachments if b.vtep != v and b.segment != a.segment]
            if routed:
                a, b = max(routed, key=lambda ab: (dist.get(ab[1].vtep, 0), ab[0].host, ab[1].host))
                out.append(Probe("routed", t.name, a.host, b.host, VNI_FLOWS))
    for va, vb in paths.cover(fabric):
        t = next(t for t in fabric.tenants.values() if va in t.vteps() and vb in t.vteps())
        here = [x for x in t.attachments if x.vtep == va]
        there = [x for x in t.attachments if x.vtep == vb]
        src, dst = min(
            ((x, y) for x in here for y in there),
            key=lambda xy: (xy[0].segment != xy[1].segment, xy[0].host, xy[1].host),
        )
        out.append(Probe("paths", t.name, src.host, dst.host, PATH_FLOWS))
    return out


@dataclass
class Seen:
    """What the taps saw of one probe's frames, as they entered routers."""

    vnis: Counter = field(default_factory=Counter)
    tos_bad: int = 0
    fragments: int = 0
    ports: Counter = field(default_factory=Counter)  # "node:port" it was received on
    drained: Counter = field(default_factory=Counter)


def run(ctx: LabContext) -> list[Check]:
    fabric = ctx.fabric
    todo = probes(fabric)
    if not todo:
        return []
    flows: list[roce.Flow] = []
    mine: list[set[int]] = []  # each probe's flow ids
    for p in todo:
        ids = set()
        for _ in range(p.flows):
            f = F.flow(
                fabric,
                p.src,
                p.dst,
                len(flows) + 1,
                count=2 if p.kind != "paths" else 1,
                payload=F.roce_payload(fabric, p.src, p.dst, PAYLOAD),
                sport=40000 + len(flows),
                dscp=26,
                ecn=0b10,
            )
            flows.append(f)
            ids.add(f.flow_id)
        mine.append(ids)
    taps = [Tap(f"{n.name}:{p.name}", ctx.netns(n.name), p.name) for n in fabric.routers() for p in n.fabric_ports]
    results, raw = F.run_with_taps(ctx, flows, {f.flow_id: True for f in flows}, check_icrc=False, taps=taps)
    frames = {tap: [e for fr in got if (e := encapsulated(fr))] for tap, got in raw.items()}
    lo = {n.loopback: n.name for n in fabric.routers() if n.loopback}
    checks = []
    for p, ids in zip(todo, mine):
        seen = _seen(fabric, p, ids, frames, lo)
        sent = sum(results[i].sent for i in ids)
        checks.append(_judge(fabric, p, seen, sent, sum(results[i].received for i in ids)))
    return checks


def _seen(fabric: Fabric, p: Probe, ids: set[int], frames: dict[str, list], lo: dict[str, str]) -> Seen:
    sa, da = fabric.attachment(p.src)[1], fabric.attachment(p.dst)[1]
    avoid = set(paths.avoidable(fabric, sa.vtep, da.vtep))
    seen = Seen()
    for tap, captured in frames.items():
        node = tap.split(":")[0]
        for e in captured:
            if e.flow_id not in ids or lo.get(e.outer_src) != sa.vtep:
                continue
            seen.ports[tap] += 1
            seen.vnis[e.vni] += 1
            seen.tos_bad += e.outer_dscp != e.inner_dscp
            seen.fragments += e.fragment
            if node in avoid:
                seen.drained[node] += 1
    return seen


def _judge(fabric: Fabric, p: Probe, seen: Seen, sent: int, delivered: int) -> Check:
    t = fabric.tenants[p.tenant]
    sa, da = fabric.attachment(p.src)[1], fabric.attachment(p.dst)[1]
    want_vni = t.segments[sa.segment].l2vni if sa.segment == da.segment else t.l3vni
    avoid = paths.avoidable(fabric, sa.vtep, da.vtep)
    payload = F.roce_payload(fabric, p.src, p.dst, PAYLOAD)
    problems = []
    if delivered < sent:
        problems.append(f"{sent - delivered}/{sent} frames of {payload} B lost")
    if not seen.vnis:
        problems.append("no VXLAN frame of these flows seen on the fabric")
    elif set(seen.vnis) != {want_vni}:
        problems.append(f"VNIs seen {dict(seen.vnis)}, expected only {want_vni}")
    if seen.tos_bad:
        problems.append(f"{seen.tos_bad} frames whose outer DSCP differs from the inner one")
    if seen.fragments:
        problems.append(f"{seen.fragments} VXLAN frames fragmented on the fabric (an MTU below {payload} B + headers)")
    if p.kind == "paths":
        problems += _unused(fabric, sa.vtep, da.vtep, seen, p.flows)
    carried = [f"{d} ({seen.drained[d]})" for d in avoid if seen.drained[d]]
    if carried:
        problems.append(f"drained node(s) still carried frames of these flows: {', '.join(carried)}")
    # the proof a drain works, reported with the check even when it passes
    proof = [f"drained {', '.join(avoid)} carried 0 frames"] if avoid and seen.vnis and not carried else []
    how = f"{p.kind}, VNI {want_vni}" if p.kind != "paths" else f"every path {sa.vtep} -> {da.vtep}, VNI {want_vni}"
    return Check(
        GROUP,
        f"{p.tenant} {p.src} -> {p.dst} ({how})",
        not problems,
        "; ".join(problems + proof),
        {
            "vnis": dict(seen.vnis),
            "packets_per_port": dict(seen.ports),
            "packets_per_drained_node": {d: seen.drained[d] for d in avoid},
            "flows": p.flows,
            "sent": sent,
            "delivered": delivered,
            "fragments": seen.fragments,
        },
    )


def _unused(fabric: Fabric, src: str, dst: str, seen: Seen, flows: int) -> list[str]:
    """Equal-cost ports no frame left by: a router that does not spread (ECMP) over its paths."""
    idle = []
    for node, ports in paths.next_hops(fabric, src, dst).items():
        if len(ports) < 2:
            continue
        by_name = fabric.nodes[node].ports_by_name
        idle += [
            f"{node} by {p} (to {by_name[p].peer_node})"
            for p in ports
            if not seen.ports[f"{by_name[p].peer_node}:{by_name[p].peer_port}"]
        ]
    return [f"{flows} flows never left {', '.join(idle)}"] if idle else []
