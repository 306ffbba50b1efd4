"""Elements on the kernel side of a lab: VXLAN devices and their VNIs, anycast gateways, ARP
suppression, `tos inherit`, MTUs, host ports' tenant membership, the multipath hash.

Each is taken from the kernel steps the node runs (`views`: twin's rendering,
`twin.config.overlay.plan`, or on a node whose own configuration makes it its plane, on the lab's fabric
as that node runs it), broken by a step of the same table and restored by re-applying those. A VTEP's IP/MAC
bindings are made again with them (deleted and re-added: zebra reads a binding when it
changes), since the kernel drops them with a gateway's MAC or address, and zebra forgets
them with a VNI.
"""

from __future__ import annotations

import re

from twin import kinds
from twin.config import overlay
from twin.config.backend import Backend
from twin.config.dialect import NodePlane
from twin.config.steps import Step
from twin.intent import paths
from twin.intent.tenants import bridge_name, vxlan_name
from twin.kinds.base import HASH_FIELDS, HASH_POLICY, HASH_SEED
from twin.lifecycle.context import LabContext
from twin.prove.element import Element, Exempt, Kernel, ZebraVni, alt
from twin.topology.model import Attachment, Fabric, Segment, Tenant

SMALL_MTU = 1500  # a jumbo RoCE frame (4 KiB) does not fit
STRANGE_MAC = "02:de:ad:be:ef:01"  # a gateway MAC no host expects
View = tuple[Fabric, list[Step]]  # a VTEP's fabric and kernel steps, as it runs them


def views(ctx: LabContext) -> dict[str, View]:
    """Each VTEP's fabric and kernel steps as it runs them: a node whose own configuration makes its
    plane (a dialect's: NVUE's) its own (the lab's fabric with its tenants as it says, `as_run`, and its
    plane's steps), any other the topology's rendering. A node not on twin's per-VNI devices (NVUE's
    VLAN-aware layout) has none: its devices are not the ones the kernel elements break (`vni_elements`
    says so)."""
    runs, f = ctx.planes(), ctx.fabric
    return {
        v: ((runs[v].as_run(f), runs[v].steps) if v in runs else (f, overlay.plan(f, v, ctx.backend)))
        for v in f.vteps()
        if v not in runs or runs[v].per_vni
    }


def rebind(fabric: Fabric, node: str, backend: Backend, t: Tenant, seg: Segment | None = None) -> tuple[Step, ...]:
    """The VTEP's own workloads' bindings (of a segment, or of the whole tenant), deleted and made again."""
    mine = [
        overlay.binding_step(t, a, backend)
        for a in t.attachments
        if a.vtep == node and (seg is None or a.segment == seg.name)
    ]
    return tuple(Step("unneigh", s.dev, s.ns, {"ip": s.args["ip"]}) for s in mine) + tuple(mine)


def routed_out(t: Tenant, v: str) -> bool:
    """Does routed traffic of `t` leave VTEP `v` (a local host, a remote one on another segment)?"""
    return any(a.vtep == v and b.vtep != v and a.segment != b.segment for a in t.attachments for b in t.attachments)


def local(t: Tenant, v: str, seg: Segment | None = None) -> list[Attachment]:
    return [a for a in t.attachments if a.vtep == v and (seg is None or a.segment == seg.name)]


def vni_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """Each VXLAN device (deleted) and its VNI (the device made again with another one)."""
    be, out, seen = ctx.backend, [], views(ctx)
    exempt = [
        Exempt(
            "kernel elements",
            v,
            "its configuration's layout (NVUE's VLAN-aware one) has not the per-VNI devices they break",
        )
        for v in ctx.fabric.vteps()
        if v not in seen
    ]
    for v, (f, plan) in seen.items():
        for t in f.tenants_on(v):
            ns = overlay.tenant_ns(t, be)
            for vni, seg in [(t.l3vni, None), *((s.l2vni, s) for s in t.segments_on(v))]:
                vx, layer = vxlan_name(vni), "L3VNI" if seg is None else "L2VNI"
                made = tuple(s for s in plan if s.dev == vx)
                back = (Kernel(v, made), ZebraVni(v, vni), Kernel(v, rebind(f, v, be, t, seg)))
                wrong = vni + 4_000_000 if vni < 12_000_000 else vni - 4_000_000
                remade = tuple(
                    Step(s.op, s.dev, s.ns, {**s.args, "vni": wrong}) if s.op == "vxlan" else s for s in made
                )
                what = f"{vx} of {t.name}" + (f" {seg.name}" if seg else "") + f" on {v}"
                expect = (rf"^control: vni {v} {vni}: ",) + (
                    (rf"^control: vrf {v} {re.escape(t.vrf)}: ",) if seg is None else ()
                )
                out.append(
                    Element(
                        f"{layer.lower()}-device {v} {vni}",
                        f"{layer} device",
                        v,
                        what,
                        ("control",),
                        expect,
                        (Kernel(v, (Step("del", vx, ns),)),),
                        back,
                    )
                )
                out.append(
                    Element(
                        f"{layer.lower()}-vni {v} {vni}",
                        f"{layer} VNI",
                        v,
                        f"VNI {vni} of {what}",
                        ("control",),
                        expect,
                        (Kernel(v, (Step("del", vx, ns),) + remade),),
                        (Kernel(v, (Step("del", vx, ns),)),) + back,
                    )
                )
    return out, exempt


def gateway_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """Each segment's anycast gateway on each VTEP: its MAC and its address; and ARP suppression
    on the segment's VXLAN port where the segment reaches other VTEPs."""
    be, out, exempt = ctx.backend, [], []
    for v, (f, plan) in views(ctx).items():
        for t in f.tenants_on(v):
            ns = overlay.tenant_ns(t, be)
            for seg in t.segments_on(v):
                br, vx, hosts = bridge_name(seg.l2vni), vxlan_name(seg.l2vni), alt(a.host for a in local(t, v, seg))
                gw = re.escape(seg.gateway)
                again = rebind(f, v, be, t, seg)
                out.append(
                    Element(
                        f"gateway-mac {v} {br}",
                        "anycast gateway MAC",
                        v,
                        f"{seg.mac} on {br} ({t.name} {seg.name})",
                        ("arp",),
                        (rf"^arp: {hosts} resolves {gw} ",),
                        (Kernel(v, (Step("mac", br, ns, {"mac": STRANGE_MAC}),)),),
                        (Kernel(v, (Step("mac", br, ns, {"mac": seg.mac}),) + again),),
                    )
                )
                # the kernel takes an address's secondaries with it (an NVUE SVI's own address): all back
                addrs = tuple(x for x in plan if x.op == "addr" and x.dev == br) or (
                    Step("addr", br, ns, {"cidr": seg.gateway_cidr}),
                )
                out.append(
                    Element(
                        f"gateway-address {v} {br}",
                        "anycast gateway address",
                        v,
                        f"{seg.gateway_cidr} on {br} ({t.name} {seg.name})",
                        ("control", "arp"),
                        (
                            rf"^control: vrf {v} {re.escape(t.vrf)}: .*{re.escape(seg.subnet)}",
                            rf"^arp: {hosts} resolves {gw} ",
                        ),
                        (Kernel(v, (Step("unaddr", br, ns, {"cidr": seg.gateway_cidr}),)),),
                        (Kernel(v, addrs + again),),
                    )
                )
                if len(t.segment_vteps(seg.name)) < 2:
                    exempt.append(Exempt("ARP suppression", f"{v} {vx}", f"{t.name} {seg.name} is on no other VTEP"))
                    continue
                on = next(s for s in plan if s.op == "brport" and s.dev == vx)
                if not on.args.get("neigh_suppress"):
                    exempt.append(Exempt("ARP suppression", f"{v} {vx}", f"{v} runs {vx} without it"))
                    continue
                out.append(
                    Element(
                        f"arp-suppression {v} {vx}",
                        "ARP suppression",
                        v,
                        f"neigh_suppress on {vx} ({t.name} {seg.name})",
                        ("arp",),
                        (rf"^arp: {hosts} resolves .*ARP suppression",),
                        (Kernel(v, (Step("brport", vx, ns, {"neigh_suppress": False}),)),),
                        (Kernel(v, (on,)),),
                    )
                )
    return out, exempt


def _senders(t: Tenant, v: str, vni: int) -> list[Attachment] | None:
    """Hosts behind `v` whose traffic a VXLAN device of `t` on `v` sends to other VTEPs (None: none)."""
    if vni == t.l3vni:
        return local(t, v) if routed_out(t, v) else None
    seg = next(s for s in t.segments.values() if s.l2vni == vni)
    return local(t, v, seg) if len(t.segment_vteps(seg.name)) > 1 else None


def vxlan_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """`tos inherit` and the MTU of each VXLAN device that sends to other VTEPs; the MTU of each bridge
    that routed traffic leaves by (a segment's towards its hosts, the L3VNI's towards other VTEPs)."""
    be, out, exempt = ctx.backend, [], []
    for v, (f, steps) in views(ctx).items():
        plan = {(s.op, s.dev): s for s in steps}
        for t in f.tenants_on(v):
            ns = overlay.tenant_ns(t, be)
            for vni in [t.l3vni] + [s.l2vni for s in t.segments_on(v)]:
                vx, br = vxlan_name(vni), bridge_name(vni)
                senders = _senders(t, v, vni)
                if senders is None:
                    exempt += [
                        Exempt(k, f"{v} {vx}", f"no traffic of {t.name} leaves {v} by VNI {vni}")
                        for k in ("tos inherit", "VXLAN MTU")
                    ] + (
                        [Exempt("bridge MTU", f"{v} {br}", f"no routed traffic of {t.name} leaves {v}")]
                        if vni == t.l3vni
                        else []
                    )
                else:
                    src = rf"^(traffic|underlay): {re.escape(t.name)} {alt(a.host for a in senders)} -> "
                    out.append(
                        Element(
                            f"tos {v} {vx}",
                            "tos inherit",
                            v,
                            f"tos inherit on {vx} ({t.name})",
                            ("underlay",),
                            (
                                rf"^underlay: {re.escape(t.name)} {alt(a.host for a in senders)} -> "
                                rf".*VNI {vni}\): .*outer DSCP",
                            ),
                            (Kernel(v, (Step("vxlan-tos", vx, ns, {"tos": 0}),)),),
                            (Kernel(v, (Step("vxlan-tos", vx, ns, {"tos": 1}),)),),
                        )
                    )
                    out.append(
                        _mtu(
                            v,
                            vx,
                            ns,
                            plan[("vxlan", vx)].args["mtu"],
                            "VXLAN MTU",
                            ("traffic", "underlay"),
                            (src + r".*lost",),
                            f"{vx} ({t.name})",
                        )
                    )
                    if vni == t.l3vni:
                        out.append(
                            _mtu(
                                v,
                                br,
                                ns,
                                plan[("bridge", br)].args["mtu"],
                                "bridge MTU",
                                ("traffic", "underlay"),
                                (src + r".*lost",),
                                f"{br}, the L3 SVI of {t.name}",
                            )
                        )
            for seg in t.segments_on(v):
                br = bridge_name(seg.l2vni)
                if not any(a.segment != seg.name for a in t.attachments):
                    exempt.append(Exempt("bridge MTU", f"{v} {br}", f"{t.name} has no other segment to route from"))
                    continue
                dst = rf"^traffic: {re.escape(t.name)} \S+ -> {alt(a.host for a in local(t, v, seg))} .*lost"
                out.append(
                    _mtu(
                        v,
                        br,
                        ns,
                        plan[("bridge", br)].args["mtu"],
                        "bridge MTU",
                        ("traffic",),
                        (dst,),
                        f"{br}, the gateway of {t.name} {seg.name}",
                    )
                )
    return out, exempt


def _mtu(
    node: str, dev: str, ns: str, mtu: int, kind: str, groups: tuple[str, ...], expect: tuple[str, ...], what: str
) -> Element:
    return Element(
        f"mtu {node} {dev}",
        kind,
        node,
        f"MTU {mtu} of {what} on {node}",
        groups,
        expect,
        (Kernel(node, (Step("mtu", dev, ns, {"mtu": SMALL_MTU}),)),),
        (Kernel(node, (Step("mtu", dev, ns, {"mtu": mtu}),)),),
    )


def link_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """The MTU of each port tenant traffic crosses: fabric ports on the paths between VTEPs (frames
    arriving there are dropped, frames leaving fragmented), and both ends of each host link."""
    f, be, out, exempt = ctx.fabric, ctx.backend, [], []
    carried, runs = paths.carried(f), ctx.planes()
    for n in f.routers():
        for p in n.fabric_ports:
            if (n.name, p.name) in carried or (p.peer_node, p.peer_port) in carried:
                out.append(
                    _mtu(
                        n.name,
                        p.name,
                        "",
                        runs_mtu(runs, n.name, p.name, p.mtu),
                        "fabric MTU",
                        ("underlay",),
                        (r"^underlay: .*(fragmented|lost)",),
                        f"{n.name}:{p.name} (to {p.peer_node})",
                    )
                )
            else:
                exempt.append(Exempt("fabric MTU", f"{n.name}:{p.name}", "no tenant path crosses it"))
    for t, a, _ in _attachments(ctx):
        if not [b for b in t.attachments if b.host != a.host]:
            exempt.append(Exempt("host link MTU", a.host, f"the only host of {t.name}: no RoCE traffic"))
            continue
        flows = (rf"^traffic: {re.escape(t.name)} ({re.escape(a.host)} -> |\S+ -> {re.escape(a.host)} ).*lost",)
        mtu = runs_mtu(runs, a.vtep, a.port, f.nodes[a.vtep].ports_by_name[a.port].mtu)
        out.append(
            _mtu(
                a.vtep,
                a.port,
                overlay.tenant_ns(t, be),
                mtu,
                "host link MTU",
                ("traffic",),
                flows,
                f"{a.vtep}:{a.port} (to {a.host})",
            )
        )
        out.append(
            _mtu(
                a.host,
                a.host_port,
                "",
                f.nodes[a.host].ports_by_name[a.host_port].mtu,
                "host link MTU",
                ("traffic",),
                flows,
                f"{a.host}:{a.host_port}",
            )
        )
    return out, exempt


def runs_mtu(runs: dict[str, NodePlane], node: str, dev: str, mtu: int) -> int:
    """The MTU `node` runs port `dev` at: the last its own configuration's plane sets (NVUE's `link.mtu`),
    else the topology's `mtu`. What an element puts back."""
    steps = runs[node].steps if node in runs else []
    return next((s.args["mtu"] for s in reversed(steps) if s.op == "mtu" and s.dev == dev), mtu)


def _attachments(ctx: LabContext) -> list[tuple[Tenant, Attachment, Fabric]]:
    """Every host of every tenant, in the topology's order, as its VTEP runs it (`views`): its
    tenant and attachment there, and that VTEP's fabric (a host its own configuration puts nowhere is left out)."""
    vs, out = views(ctx), []
    for t in ctx.fabric.tenants.values():
        for a in t.attachments:
            if a.vtep not in vs:
                continue  # a VTEP not on the per-VNI devices (`views`)
            f = vs[a.vtep][0]
            mine = f.tenants.get(t.name)
            run = next((x for x in mine.attachments if x.host == a.host and x.vtep == a.vtep), None) if mine else None
            if mine is not None and run is not None:
                out.append((mine, run, f))
    return out


def port_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """Each host port's membership of its tenant's segment (its bridge)."""
    be, out = ctx.backend, []
    for t, a, f in _attachments(ctx):
        ns, seg = overlay.tenant_ns(t, be), t.segments[a.segment]
        # the neighbour the tenant's namespace learned on the port while it was out of its bridge
        # (it answers ARP there) deleted; back in the bridge, the host's static MAC deleted and
        # made again (zebra reads a MAC when it changes; `apply_live` writes it once zebra
        # holds the port in the bridge) and its bindings
        br = bridge_name(seg.l2vni)
        back = (
            Kernel(
                a.vtep,
                (
                    Step("unneigh", a.port, ns, {"ip": a.ip}),
                    Step("master", a.port, ns, {"master": br}),
                    Step("up", a.port, ns),
                    Step("unfdb", a.port, ns, {"mac": a.mac}),
                    overlay.fdb_step(t, a, be),
                )
                + rebind(f, a.vtep, be, t, seg),
            ),
        )
        out.append(
            Element(
                f"membership {a.vtep}:{a.port}",
                "host port membership",
                a.vtep,
                f"{a.vtep}:{a.port} ({a.host}) in {bridge_name(seg.l2vni)} ({t.name} {seg.name})",
                ("arp",),
                (rf"^arp: {re.escape(a.host)} resolves ",),
                (Kernel(a.vtep, (Step("nomaster", a.port, ns),)),),
                back,
            )
        )
    return out, []


def hash_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """The 5-tuple multipath hash (policy and fields) of each router that spreads tenant paths over
    several ports; and the routers' own hash seeds, where a path chooses twice (else one kernel's
    seed makes a second chooser repeat the first one's choice)."""
    f, out, exempt = ctx.fabric, [], []
    branching = paths.branching(f)
    for n in f.routers():
        mine = kinds.of(n).sysctls
        if HASH_POLICY not in mine:
            continue
        if n.name not in branching:
            exempt.append(Exempt("multipath hash", n.name, "no choice of equal-cost ports on tenant paths"))
            continue
        spread = (rf"^underlay: .*never left {re.escape(n.name)} by",)
        for key, name, kind, wrong in (
            (HASH_POLICY, "hash-policy", "multipath hash policy", 0),
            (HASH_FIELDS, "hash-fields", "multipath hash fields", "0x0007"),
        ):
            out.append(
                Element(
                    f"{name} {n.name}",
                    kind,
                    n.name,
                    f"{key}={mine[key]} on {n.name}",
                    ("underlay",),
                    spread,
                    (Kernel(n.name, (Step("sysctl", key, "", {"value": wrong}),)),),
                    (Kernel(n.name, (Step("sysctl", key, "", {"value": mine[key]}),)),),
                )
            )
    seeded = [n for n in f.routers() if HASH_POLICY in kinds.of(n).sysctls]
    if not paths.chooses_twice(f):
        exempt.append(Exempt("multipath hash seeds", "every router", "no tenant path chooses between ports twice"))
    elif seeded:
        out.append(
            Element(
                "hash-seeds",
                "multipath hash seeds",
                seeded[0].name,
                f"a {HASH_SEED} of its own on each of {len(seeded)} routers",
                ("underlay",),
                (r"^underlay: .*never left \S+ by",),
                tuple(Kernel(n.name, (Step("sysctl", HASH_SEED, "", {"value": 0}),)) for n in seeded),
                tuple(
                    Kernel(
                        n.name, (Step("sysctl", HASH_SEED, "", {"value": kinds.of(n).sysctls_of(n.name)[HASH_SEED]}),)
                    )
                    for n in seeded
                ),
            )
        )
    return out, exempt
