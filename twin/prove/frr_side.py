"""Elements of FRR's configuration: route targets, `advertise-all-vni`, type-5 advertisement,
the L3VNI of each VRF, the underlay sessions, loopback advertisement, ECMP.

Each is a line (or a setting) of the frr.conf the node runs (twin's rendering, or the one its
NVUE renders, or the user's), broken by typing its opposite into vtysh and restored by
`frr-reload.py` of that file; a VTEP's workload bindings are made again after it (zebra forgets
them when EVPN goes and comes), those of the tenants as the node runs them (`kernel_side.views`).
"""
from __future__ import annotations

import re

from twin import kinds
from twin.intent import frrconf, paths
from twin.lifecycle import state
from twin.lifecycle.context import LabContext
from twin.prove.element import Element, Exempt, Kernel, Reload, Vtysh, ZebraVni
from twin.prove.kernel_side import View, rebind, views
from twin.topology.model import Node

FOREIGN_RT = "65535:1"   # a route target no tenant uses (ASN 65535 is reserved)
# a route target to break: (VNI, the block it is in, the sub-block in that, what verify says of its import gone)
RouteTarget = tuple[int, str, tuple[str, ...], tuple[str, ...]]


def _restore(ctx: LabContext, node: str, seen: dict[str, View] | None = None) -> tuple:
    """The frr.conf the node runs, then (on a VTEP, once zebra holds its VNIs again) its workloads'
    bindings made again."""
    seen = views(ctx) if seen is None else seen
    f = seen[node][0] if node in seen else ctx.fabric
    again = tuple(s for t in f.tenants_on(node) for s in rebind(f, node, ctx.backend, t))
    vnis = [vni for t in f.tenants_on(node) for vni in [t.l3vni, *(s.l2vni for s in t.segments_on(node))]]
    return (Reload(node),) + ((*(ZebraVni(node, v) for v in vnis), Kernel(node, again)) if again else ())


def evpn_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """Per VTEP: `advertise-all-vni`; per tenant the L3VNI of its VRF, type-5 advertisement
    (`advertise ipv4 unicast`, `redistribute connected`), and every route target, import and
    export, of its L3VNI and of each L2VNI shared with another VTEP (auto-derived: broken by
    setting a foreign one)."""
    out, exempt, seen = [], [], views(ctx)
    for v, (f, _) in seen.items():
        asn, back = f.nodes[v].asn, _restore(ctx, v, seen)
        out.append(Element(f"advertise-all-vni {v}", "advertise-all-vni", v, f"advertise-all-vni on {v}", ("control",),
                           (rf"^control: (evpn|vni) {v} ",),
                           (Vtysh(v, (f"router bgp {asn}", "address-family l2vpn evpn",
                                      "no advertise-all-vni")),), back))
        for t in f.tenants_on(v):
            vrf, tn = f"router bgp {asn} vrf {t.vrf}", re.escape(t.name)
            evpn = rf"^control: evpn {v} {tn}: "
            out.append(Element(f"l3vni {v} {t.vrf}", "L3VNI of a VRF", v, f"vrf {t.vrf} / vni {t.l3vni} on {v}",
                               ("control",), (rf"^control: vni {v} {t.l3vni}: ", evpn),
                               (Vtysh(v, (f"vrf {t.vrf}", f"no vni {t.l3vni}")),), back))
            for line, af in (("advertise ipv4 unicast", "l2vpn evpn"), ("redistribute connected", "ipv4 unicast")):
                out.append(Element(f"{'type5' if 'advertise' in line else 'redistribute'} {v} {t.vrf}",
                                   "type-5 advertisement", v, f"{line} in {vrf}", ("control",), (evpn + ".*type-5",),
                                   (Vtysh(v, (vrf, f"address-family {af}", f"no {line}")),), back))
            rts: list[RouteTarget] = [(t.l3vni, vrf, (), (rf"^control: vrf {v} {re.escape(t.vrf)}: .*missing",))]
            for s in t.segments_on(v):
                if len(t.segment_vteps(s.name)) < 2:
                    exempt.append(Exempt("route targets", f"{v} VNI {s.l2vni}",
                                         f"{t.name} {s.name} is on no other VTEP"))
                else:
                    rts.append((s.l2vni, f"router bgp {asn}", (f"vni {s.l2vni}",),
                                (rf"^control: vni {v} {s.l2vni}: .*remoteVteps",)))
            if len(t.vteps()) < 2:
                exempt.append(Exempt("route targets", f"{v} VNI {t.l3vni}", f"{t.name} is on no other VTEP"))
                rts = rts[1:]
            for vni, head, block, imported in rts:
                for way, expect in (("import", imported), ("export", (evpn + ".*route targets",))):
                    out.append(Element(f"rt-{way} {v} {vni}", f"route-target {way}", v,
                                       f"route-target {way} (auto) of VNI {vni} ({t.name}) on {v}",
                                       ("control",), expect,
                                       (Vtysh(v, (head, "address-family l2vpn evpn", *block,
                                                  f"route-target {way} {FOREIGN_RT}")),), back))
    return out, exempt


def underlay_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """Each underlay BGP session (its neighbor line, on the end farther from the spines), each
    router's loopback advertisement, and ECMP (`maximum-paths`, `as-path multipath-relax`) on
    every router that spreads tenant paths over several ports."""
    f, out, exempt, seen = ctx.fabric, [], [], views(ctx)
    done = set()
    for n in f.routers():
        for p in n.fabric_ports:
            peer = f.nodes[p.peer_node]
            if (peer.name, p.peer_port) in done:
                continue
            done.add((n.name, p.name))
            node, port, other = (n, p.name, peer) if kinds.of(n).tier >= kinds.of(peer).tier else \
                (peer, p.peer_port, n)
            out.append(Element(f"session {node.name}:{port}", "underlay BGP session", node.name,
                               f"neighbor {port} ({node.name} - {other.name})", ("control",),
                               (rf"^control: bgp {node.name}: .*\.{re.escape(port)}\b",),
                               (Vtysh(node.name, (f"router bgp {node.asn}", f"no neighbor {port}")),),
                               _restore(ctx, node.name, seen)))
        runs = seen[n.name][0].nodes[n.name] if n.name in seen else n    # its loopback as it runs it (NVUE's)
        els, ex = _loopback(ctx, runs, _restore(ctx, n.name, seen))
        out += els
        exempt += ex
    branching = paths.branching(f)
    for n in f.routers():
        if n.name not in branching:
            exempt.append(Exempt("ECMP", n.name, "no choice of equal-cost ports on tenant paths"))
            continue
        spread = rf"^underlay: .*never left {re.escape(n.name)} by"
        out.append(Element(f"maximum-paths {n.name}", "ECMP maximum-paths", n.name,
                           f"maximum-paths (the default, 64 here) on {n.name}", ("underlay",), (spread,),
                           (Vtysh(n.name, (f"router bgp {n.asn}", "address-family ipv4 unicast", "maximum-paths 1")),),
                           _restore(ctx, n.name, seen)))
        if _relax_needed(ctx, n.name, branching[n.name]):
            out.append(Element(f"multipath-relax {n.name}", "ECMP as-path multipath-relax", n.name,
                               f"bgp bestpath as-path multipath-relax on {n.name}", ("underlay",), (spread,),
                               (Vtysh(n.name, (f"router bgp {n.asn}", "no bgp bestpath as-path multipath-relax")),),
                               _restore(ctx, n.name, seen)))
        else:
            exempt.append(Exempt("ECMP as-path multipath-relax", n.name,
                                 "its equal-cost paths come from peers of one AS (no relax needed)"))
    return out, exempt


def _loopback(ctx: LabContext, n: Node, back: tuple) -> tuple[list[Element], list[Exempt]]:
    """The router's loopback advertisement, as the frr.conf it runs makes it: its `network LO/32`,
    else `redistribute connected` (as NVUE renders it); exempt when it makes it neither way."""
    conf = frrconf.parse(state.read_files(ctx.dir, n.name, ["frr.conf"]).get("frr.conf", ""))
    bgp, lo = conf.default_bgp(), f"{n.loopback}/32"
    if bgp is None or (lo not in bgp.networks and "connected" not in bgp.redistribute):
        return [], [Exempt("loopback advertisement", n.name, f"the frr.conf {n.name} runs advertises {lo} neither "
                                                             "by network nor by redistribute connected")]
    line = f"network {lo}" if lo in bgp.networks else "redistribute connected"
    expect = (rf"^control: loopbacks \S+: .*{re.escape(n.loopback)}/32",)
    return [Element(f"loopback {n.name}", "loopback advertisement", n.name, f"{line} ({lo}) on {n.name}", ("control",),
                    expect, (Vtysh(n.name, (f"router bgp {bgp.asn}", "address-family ipv4 unicast", f"no {line}")),),
                    back)], []


def _relax_needed(ctx: LabContext, node: str, pairs: set[tuple[str, str]]) -> bool:
    """Do `node`'s equal-cost ports for some VTEP pair lead to peers of different ASes (so their
    AS paths differ, and only `as-path multipath-relax` makes them multipath)?"""
    f = ctx.fabric
    ports = f.nodes[node].ports_by_name
    for a, b in pairs:
        hops = paths.next_hops(f, a, b)[node]
        if len({f.nodes[ports[p].peer_node].asn for p in hops}) > 1:
            return True
    return False
