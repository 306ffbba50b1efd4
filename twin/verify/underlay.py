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
from typing import TYPE_CHECKING

from scapy.layers.inet import IP
from scapy.layers.l2 import Ether
from scapy.layers.vxlan import VXLAN

from twin.runtime.links import netns_path
from twin.traffic import flows as F
from twin.traffic.engine import Tap
from twin.verify.result import Check

if TYPE_CHECKING:
    from twin.lab import Lab

GROUP = "underlay"
FLOWS = 16


def pairs(lab: "Lab") -> list[tuple[str, str, str]]:
    """(tenant, src, dst) per tenant: a stretched pair and a routed pair across VTEPs, if it
    has them; the VTEPs farthest apart, so the flows cross the spines where the fabric allows."""
    out = []
    dist = {v: lab.fabric.hops(v) for v in lab.fabric.vteps()}
    for t in lab.fabric.tenants.values():
        for same in (True, False):
            cands = [(a, b) for a in t.attachments for b in t.attachments
                     if a.vtep != b.vtep and (a.segment == b.segment) == same]
            if cands:
                a, b = max(cands, key=lambda ab: dist[ab[0].vtep].get(ab[1].vtep, 0))
                out.append((t.name, a.host, b.host))
    return out


def run(lab: "Lab") -> list[Check]:
    fabric = lab.fabric
    pids = lab.pids()
    todo = pairs(lab)
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
    spines = [n.name for n in fabric.nodes.values() if n.kind == "spine"]
    tapped = dict.fromkeys(vteps + spines + fabric.drained())  # each node once, in this order
    taps = [Tap(f"{n}:{p.name}", netns_path(pids[n]), p.name) for n in tapped for p in fabric.nodes[n].fabric_ports]
    results, frames = F.run_with_taps(lab, flows, expect, check_icrc=False, taps=taps)
    lo = {n.loopback: n.name for n in fabric.routers()}

    checks = []
    for tenant, src, dst in todo:
        t = fabric.tenants[tenant]
        sa, da = fabric.attachment_of(src)[1], fabric.attachment_of(dst)[1]
        want_vni = t.segments[sa.segment].l2vni if sa.segment == da.segment else t.l3vni
        mine = {f.flow_id for f in flows if f.src == src and f.dst == dst}
        avoid = _avoidable(fabric, sa.vtep, da.vtep)
        vnis, tos_bad, uplinks, spine_hits, drained_hits = Counter(), 0, Counter(), Counter(), Counter()
        for tap, captured in frames.items():
            node, port = tap.split(":")
            for raw, sent in captured:
                p = Ether(raw)
                if VXLAN not in p or IP not in p[VXLAN].payload:
                    continue
                inner = p[VXLAN].payload[IP]
                tag = bytes(inner.payload)
                fid = int.from_bytes(tag[28:32], "big") if len(tag) >= 32 else -1  # UDP, BTH, magic, run, flow
                if fid not in mine:
                    continue
                if node == sa.vtep:
                    if sent:
                        uplinks[tap] += 1
                        vnis[p[VXLAN].vni] += 1
                        tos_bad += (p[IP].tos >> 2) != (inner.tos >> 2)
                    continue
                if sent or lo.get(p[IP].src) != sa.vtep:
                    continue  # frames counted once, where they enter a node
                if node in spines:
                    spine_hits[node] += 1
                    vnis[p[VXLAN].vni] += 1
                if node in avoid:
                    drained_hits[node] += 1
        problems = []
        if not vnis:
            problems.append("no VXLAN frame of these flows seen on the fabric")
        elif set(vnis) != {want_vni}:
            problems.append(f"VNIs seen {dict(vnis)}, expected only {want_vni}")
        if tos_bad:
            problems.append(f"{tos_bad} frames whose outer DSCP differs from the inner one")
        idle = [f"{sa.vtep}:{p.name}" for p in fabric.nodes[sa.vtep].fabric_ports
                if p.peer_node not in avoid and not uplinks[f"{sa.vtep}:{p.name}"]]
        if idle:
            problems.append(f"{FLOWS} flows never used uplink(s) {', '.join(idle)}")
        via_spines = not (set(_leafs(fabric, sa.vtep)) & set(_leafs(fabric, da.vtep)))
        if via_spines and spines:
            unused = [s for s in spines if s not in avoid and not spine_hits[s]]
            if unused:
                problems.append(f"flows never crossed spine(s) {', '.join(unused)}")
        carried = [f"{d} ({drained_hits[d]})" for d in avoid if drained_hits[d]]
        if carried:
            problems.append(f"drained node(s) still carried frames of these flows: {', '.join(carried)}")
        # the proof a drain works, reported with the check even when it passes
        proof = [f"drained {', '.join(avoid)} carried 0 frames"] if avoid and vnis and not carried else []
        how = "bridged" if sa.segment == da.segment else "routed"
        checks.append(Check(GROUP, f"{tenant} {src} -> {dst} ({how}, VNI {want_vni})", not problems,
                            "; ".join(problems + proof), {"vnis": dict(vnis), "packets_per_uplink": dict(uplinks),
                                      "packets_per_spine": dict(spine_hits),
                                      "packets_per_drained_node": {d: drained_hits[d] for d in avoid},
                                      "flows": FLOWS, "delivered": sum(results[i].received for i in mine)}))
    return checks


def _leafs(fabric, vtep: str) -> list[str]:
    """The nodes a VTEP's uplinks lead to (itself when it is a leaf)."""
    node = fabric.nodes[vtep]
    return [vtep] if node.kind == "leaf" else [p.peer_node for p in node.fabric_ports]


def _avoidable(fabric, src: str, dst: str) -> list[str]:
    """Drained nodes that flows from VTEP `src` to VTEP `dst` must not cross: every drained
    router other than the two VTEPs, if some fabric path joins them without crossing one.
    Without such a path BGP still uses the drained paths (at LOCAL_PREF 0): nothing to avoid."""
    drained = set(fabric.drained()) - {src, dst}
    return sorted(drained) if drained and dst in fabric.hops(src, drained) else []
