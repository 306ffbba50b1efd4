"""Elements of FRR's configuration: route targets, `advertise-all-vni`, type-5 advertisement,
the L3VNI of each VRF, the underlay sessions, loopback advertisement, ECMP.

Each is a line (or a setting) of the frr.conf the node runs, read back from the lab directory
(the file `frr-reload.py` restores): twin's rendering, or on a node whose own configuration
makes it (a dialect's: NVUE's applied revision) the one that renders (`running`). It is broken
by typing its opposite into vtysh and restored by `frr-reload.py` of that very file; a VTEP's workload bindings are made
again after it (zebra forgets them when EVPN goes and comes), those of the tenants as the node
runs them (`kernel_side.views`, or its own configuration's plane). A line twin's design implies that the file
does not hold is exempt, saying so (the lab then fails verify, and the proof does not start).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from twin import kinds
from twin.config import overlay
from twin.config.steps import Step
from twin.intent import frrconf, paths
from twin.lifecycle import state
from twin.lifecycle.context import LabContext
from twin.prove.element import Action, Element, Exempt, Kernel, Reload, Vtysh, ZebraVni
from twin.prove.kernel_side import views
from twin.topology.model import Fabric, Node, Port, Tenant

FOREIGN_RT = "65535:1"  # a route target no tenant uses (ASN 65535 is reserved)
# a route target to break: (VNI, the block it is in, the sub-block in that, what verify says of its import
# gone, the route targets the file sets there: "import"/"export"/"both" -> RTs, none when auto-derived)
RouteTarget = tuple[int, str, tuple[str, ...], tuple[str, ...], dict[str, list[str]]]


@dataclass(frozen=True)
class Runs:
    """What one router runs: its fabric (its tenants as it runs them), its frr.conf, and what puts
    an element of that file back (a reload of it, then its workloads' bindings)."""

    fabric: Fabric
    conf: frrconf.FrrConfig
    back: tuple[Action, ...]

    def bgp(self) -> frrconf.Bgp | None:
        return self.conf.default_bgp()


def running(ctx: LabContext) -> dict[str, Runs]:
    """Each router as it runs: a node whose own configuration makes its plane (a dialect's: NVUE's,
    either kernel layout) from that plane, a VTEP of twin's rendering as `kernel_side.views` has it,
    any other router from the topology."""
    runs, seen, out = ctx.planes(), views(ctx), {}
    for n in ctx.fabric.routers():
        conf = frrconf.parse(state.read_files(ctx.dir, n.name, ["frr.conf"]).get("frr.conf", ""))
        if n.name in runs:
            p = runs[n.name]
            out[n.name] = Runs(p.as_run(ctx.fabric), conf, back(n.name, p.vnis, p.bindings))
        else:
            f = seen[n.name][0] if n.name in seen else ctx.fabric
            vnis = {v for t in f.tenants_on(n.name) for v in [t.l3vni, *(s.l2vni for s in t.segments_on(n.name))]}
            out[n.name] = Runs(f, conf, back(n.name, vnis, overlay.bindings(f, n.name, ctx.backend)))
    return out


def back(node: str, vnis: set[int], bindings: list[Step]) -> tuple[Action, ...]:
    """The frr.conf the node runs, then (on a VTEP, once zebra holds its VNIs again) its workloads'
    bindings deleted and made again (zebra reads a binding when it changes)."""
    again = tuple(Step("unneigh", s.dev, s.ns, {"ip": s.args["ip"]}) for s in bindings) + tuple(bindings)
    return (Reload(node),) + ((*(ZebraVni(node, v) for v in sorted(vnis)), Kernel(node, again)) if again else ())


def evpn_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """Per VTEP: `advertise-all-vni`; per tenant the L3VNI of its VRF, type-5 advertisement
    (`advertise ipv4 unicast`, `redistribute connected`), and every route target, import and
    export, of its L3VNI and of each L2VNI shared with another VTEP (auto-derived: broken by
    setting a foreign one; set by the file: replaced by a foreign one)."""
    out, exempt = [], []
    for v, r in running(ctx).items():
        b, f = r.bgp(), r.fabric
        if not f.tenants_on(v):
            continue
        if b is None or not b.advertise_all_vni:
            exempt.append(Exempt("advertise-all-vni", v, "the frr.conf it runs has none"))
        else:
            out.append(
                Element(
                    f"advertise-all-vni {v}",
                    "advertise-all-vni",
                    v,
                    f"advertise-all-vni on {v}",
                    ("control",),
                    (rf"^control: (evpn|vni) {v} ",),
                    (Vtysh(v, (f"router bgp {b.asn}", "address-family l2vpn evpn", "no advertise-all-vni")),),
                    r.back,
                )
            )
        judged = {t.tenant for t in ctx.intent.nodes[v].tenants} if v in ctx.intent.nodes else set()
        for t in f.tenants_on(v):
            if t.name not in judged:
                exempt.append(
                    Exempt(
                        "EVPN of a tenant",
                        f"{v} {t.name}",
                        f"the topology puts no host of {t.name} behind {v}: verify judges none there",
                    )
                )
            elif b is not None:
                els, ex = _tenant(v, r, b, t)
                out += els
                exempt += ex
    return out, exempt


def _tenant(v: str, r: Runs, b: frrconf.Bgp, t: Tenant) -> tuple[list[Element], list[Exempt]]:
    out, exempt = [], []
    inst = next((x for x in r.conf.bgp if x.vrf == t.vrf), None)
    vrf, tn = f"router bgp {inst.asn if inst else b.asn} vrf {t.vrf}", re.escape(t.name)
    evpn = rf"^control: evpn {v} {tn}: "
    if r.conf.vrfs.get(t.vrf) == t.l3vni:
        out.append(
            Element(
                f"l3vni {v} {t.vrf}",
                "L3VNI of a VRF",
                v,
                f"vrf {t.vrf} / vni {t.l3vni} on {v}",
                ("control",),
                (rf"^control: vni {v} {t.l3vni}: ", evpn),
                (Vtysh(v, (f"vrf {t.vrf}", f"no vni {t.l3vni}")),),
                r.back,
            )
        )
    else:
        exempt.append(
            Exempt("L3VNI of a VRF", f"{v} {t.vrf}", f"the frr.conf it runs has no vrf {t.vrf} / vni {t.l3vni}")
        )
    for line, af, has in (
        ("advertise ipv4 unicast", "l2vpn evpn", inst and "ipv4 unicast" in inst.advertise),
        ("redistribute connected", "ipv4 unicast", inst and "connected" in inst.redistribute),
    ):
        kind = "type5" if "advertise" in line else "redistribute"
        if not has:
            exempt.append(
                Exempt("type-5 advertisement", f"{v} {t.vrf}", f"the frr.conf it runs has no {line} in {vrf}")
            )
            continue
        out.append(
            Element(
                f"{kind} {v} {t.vrf}",
                "type-5 advertisement",
                v,
                f"{line} in {vrf}",
                ("control",),
                (evpn + ".*type-5",),
                (Vtysh(v, (vrf, f"address-family {af}", f"no {line}")),),
                r.back,
            )
        )
    rts: list[RouteTarget] = [
        (t.l3vni, vrf, (), (rf"^control: vrf {v} {re.escape(t.vrf)}: .*missing",), inst.rts if inst else {})
    ]
    for s in t.segments_on(v):
        if len(t.segment_vteps(s.name)) < 2:
            exempt.append(Exempt("route targets", f"{v} VNI {s.l2vni}", f"{t.name} {s.name} is on no other VTEP"))
        else:
            rts.append(
                (
                    s.l2vni,
                    f"router bgp {b.asn}",
                    (f"vni {s.l2vni}",),
                    (rf"^control: vni {v} {s.l2vni}: .*remoteVteps",),
                    b.vni_rts.get(s.l2vni, {}),
                )
            )
    if len(t.vteps()) < 2:
        exempt.append(Exempt("route targets", f"{v} VNI {t.l3vni}", f"{t.name} is on no other VTEP"))
        rts = rts[1:]
    for vni, head, block, imported, given in rts:
        for way, expect in (("import", imported), ("export", (evpn + ".*route targets",))):
            mine = given.get(way, []) + given.get("both", [])
            out.append(
                Element(
                    f"rt-{way} {v} {vni}",
                    f"route-target {way}",
                    v,
                    f"route-target {way} ({', '.join(mine) or 'auto'}) of VNI {vni} ({t.name}) on {v}",
                    ("control",),
                    expect,
                    (Vtysh(v, (head, "address-family l2vpn evpn", *block, *_foreign(given, way))),),
                    r.back,
                )
            )
    return out, exempt


def _foreign(given: dict[str, list[str]], way: str) -> tuple[str, ...]:
    """vtysh lines that leave `way` (import or export) with a foreign route target alone: the ones the
    file sets taken away (one it sets both ways kept the other way), then the foreign one set."""
    other = "export" if way == "import" else "import"
    both = given.get("both", [])
    return (
        *(f"no route-target {way} {x}" for x in given.get(way, [])),
        *(f"no route-target both {x}" for x in both),
        *(f"route-target {other} {x}" for x in both),
        f"route-target {way} {FOREIGN_RT}",
    )


def session_end(f: Fabric, n: Node, p: Port) -> tuple[Node, str, Node]:
    """The end of the link on `n`'s port `p` whose neighbor line the proof takes away: the one farther
    from the spines (node, port, the other node)."""
    peer = f.nodes[p.peer_node]
    return (n, p.name, peer) if kinds.of(n).tier >= kinds.of(peer).tier else (peer, p.peer_port, n)


def underlay_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """Each underlay BGP session (its neighbor line, on the end farther from the spines), each
    router's loopback advertisement, and ECMP (`maximum-paths`, `as-path multipath-relax`) on
    every router that spreads tenant paths over several ports."""
    f, out, exempt, runs = ctx.fabric, [], [], running(ctx)
    done = set()
    for n in f.routers():
        for p in n.fabric_ports:
            node, port, other = session_end(f, n, p)
            if (node.name, port) in done:
                continue
            done.add((node.name, port))
            r = runs[node.name]
            b = r.bgp()
            if b is None or port not in {x.name for x in b.active()}:
                exempt.append(
                    Exempt(
                        "underlay BGP session",
                        f"{node.name}:{port}",
                        f"the frr.conf {node.name} runs has no neighbor {port} (to {other.name})",
                    )
                )
                continue
            out.append(
                Element(
                    f"session {node.name}:{port}",
                    "underlay BGP session",
                    node.name,
                    f"neighbor {port} ({node.name} - {other.name})",
                    ("control",),
                    # the peer named as a key (`.swp51`), or inside what is missing (a node of one uplink)
                    (rf"^control: bgp {node.name}: .*(\.{re.escape(port)}\b|'{re.escape(port)}')",),
                    (Vtysh(node.name, (f"router bgp {b.asn}", f"no neighbor {port}")),),
                    r.back,
                )
            )
        els, ex = _loopback(runs[n.name].fabric.nodes[n.name], runs[n.name])  # its loopback as it runs it
        out += els
        exempt += ex
    els, ex = _ecmp(ctx, runs)
    return out + els, exempt + ex


def _ecmp(ctx: LabContext, runs: dict[str, Runs]) -> tuple[list[Element], list[Exempt]]:
    out, exempt = [], []
    branching = paths.branching(ctx.fabric)
    for n in ctx.fabric.routers():
        b = runs[n.name].bgp()
        if n.name not in branching or b is None:
            exempt.append(
                Exempt(
                    "ECMP",
                    n.name,
                    "no choice of equal-cost ports on tenant paths" if b else "the frr.conf it runs has no router bgp",
                )
            )
            continue
        spread = rf"^underlay: .*never left {re.escape(n.name)} by"
        out.append(
            Element(
                f"maximum-paths {n.name}",
                "ECMP maximum-paths",
                n.name,
                f"maximum-paths (the default, 64 here) on {n.name}",
                ("underlay",),
                (spread,),
                (Vtysh(n.name, (f"router bgp {b.asn}", "address-family ipv4 unicast", "maximum-paths 1")),),
                runs[n.name].back,
            )
        )
        if paths.uneven(ctx.fabric, n.name) is None:
            exempt.append(
                Exempt(
                    "ECMP as-path multipath-relax",
                    n.name,
                    "its equal-cost paths come from peers of one AS (no relax needed)",
                )
            )
        elif not b.multipath_relax:
            exempt.append(Exempt("ECMP as-path multipath-relax", n.name, "the frr.conf it runs has none"))
        else:
            out.append(
                Element(
                    f"multipath-relax {n.name}",
                    "ECMP as-path multipath-relax",
                    n.name,
                    f"bgp bestpath as-path multipath-relax on {n.name}",
                    ("underlay",),
                    (spread,),
                    (Vtysh(n.name, (f"router bgp {b.asn}", "no bgp bestpath as-path multipath-relax")),),
                    runs[n.name].back,
                )
            )
    return out, exempt


def _loopback(n: Node, r: Runs) -> tuple[list[Element], list[Exempt]]:
    """The router's loopback advertisement, as the frr.conf it runs makes it: its `network LO/32`,
    else `redistribute connected` (as NVUE renders it); exempt when it makes it neither way."""
    bgp, lo = r.bgp(), f"{n.loopback}/32"
    if bgp is None or (lo not in bgp.networks and "connected" not in bgp.redistribute):
        return [], [
            Exempt(
                "loopback advertisement",
                n.name,
                f"the frr.conf {n.name} runs advertises {lo} neither by network nor by redistribute connected",
            )
        ]
    line = f"network {lo}" if lo in bgp.networks else "redistribute connected"
    expect = (rf"^control: loopbacks \S+: .*{re.escape(lo)}",)
    return [
        Element(
            f"loopback {n.name}",
            "loopback advertisement",
            n.name,
            f"{line} ({lo}) on {n.name}",
            ("control",),
            expect,
            (Vtysh(n.name, (f"router bgp {bgp.asn}", "address-family ipv4 unicast", f"no {line}")),),
            r.back,
        )
    ], []
