"""A node's NVUE configuration on its topology: the same Fabric, per-node configs and kernel
steps twin renders for its own designs, built from what NVUE declares.

The topology gives the cabling (which port leads where, which host sits on it, with its
MAC and address) and the intent `twin verify` judges against; the NVUE tree gives
everything the node runs. `build` makes the node's own Fabric (`Plane.fabric`): the
topology with this node's tenants as NVUE declares them (a VRF with its L3VNI, an SVI's
VLAN with its VNI, subnet and gateway, the access ports in it and the hosts on them), so
the kernel plane is `twin.config.overlay.plan` of that Fabric, the steps twin already
applies, shows in interfaces.sh and reconciles on day 2.

Names, decided once:
- an NVUE VRF is the topology's tenant whose VRF (or name) it matches without regard to
  case (RED is tenant red); it runs under the tenant's VRF name, which is what twin's
  checks look for. A VRF no tenant matches runs under its own name; nothing judges it.
- HBN's interface names are the BlueField ports of twin's DPUs: p0_if is p0, pf0vf1_if
  is pf0vf1 (a node whose port is named p0_if keeps that name).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Final, Literal

from twin import kinds
from twin.base.errors import TopologyError
from twin.config import overlay
from twin.config.overlay import DEFAULT_SHAPING, Backend, Shaping
from twin.config.steps import Step
from twin.intent.tenants import bridge_name, vxlan_name
from twin.kinds import MGMT_PORT
from twin.nvue import aclbind as nvue_aclbind
from twin.nvue import beyond, routed
from twin.nvue import bonds as bonds_
from twin.nvue import hostname as nvue_hostname
from twin.nvue import lldp as nvue_lldp
from twin.nvue.load import NvueFile
from twin.nvue.model import MGMT, NodeConf, Svi
from twin.nvue.tree import get
from twin.topology import port_ranges
from twin.topology.model import Attachment, Fabric, Segment, Tenant
from twin.topology.problems import listing

PER_VNI: Final = "per-vni"
VLAN_AWARE: Final = "vlan-aware"
Layout = Literal["per-vni", "vlan-aware"]  # the kernel layout of a lab's NVUE nodes
DEFAULT_VRR_MAC = "00:00:5e:00:01:01"  # NVUE's VRR MAC with the default fabric id (1)
PORT_TYPES = ("swp",)  # interfaces that are ports of the node
NOT_EMULATED_TYPES = {
    "eth": "twin's nodes have one management port, eth0",
    "bond": "bonds are not made here",
    "sub": "subinterfaces are not emulated",
    "peerlink": "MLAG's peer link: MLAG is not emulated",
    "tunnel": "GRE tunnels are not emulated",
}


@dataclass
class Plane:
    """What one NVUE node runs, in twin's terms."""

    node: str
    conf: NodeConf
    fabric: Fabric  # the topology, with this node's tenants as NVUE declares them
    devices: dict[str, str]  # NVUE interface name -> kernel device
    vrfs: dict[str, str]  # NVUE VRF -> kernel VRF (its tenant's)
    steps: list[Step] = field(default_factory=list)  # the kernel plane, before FRR starts
    bindings: list[Step] = field(default_factory=list)  # once zebra knows the VNIs
    layout: str = PER_VNI
    notes: list[str] = field(default_factory=list)
    # what NVUE says beyond twin's design, by what it sets (day 2 compares two planes' extras):
    # ("lo", cidr), ("svi", bridge, cidr): addresses; ("suppress", vxlan), ("link", port): a state
    extras: dict[tuple, Step] = field(default_factory=dict)
    uncabled: list[str] = field(default_factory=list)  # ports of the platform no cable reaches (kernel names)
    plain: dict[str, str] = field(default_factory=dict)  # plain L3 VRFs: NVUE name -> kernel name
    bonds: set[str] = field(default_factory=set)  # the bonds it makes (`twin.nvue.bonds`)
    first: list[Step] = field(default_factory=list)  # made before all else, either layout: ports, bonds
    acls: nvue_aclbind.Acls = field(
        default_factory=nvue_aclbind.Acls
    )  # its ACLs and their bindings (twin.nvue.aclbind)
    qos: object = None  # its RoCE QoS (twin.nvue.qos.Qos), None: off
    kfiles: dict[str, str] = field(default_factory=dict)  # the files its ACLs and QoS run from

    @property
    def vnis(self) -> set[int]:
        """The VNIs zebra will know (none without VXLAN devices, or with EVPN off)."""
        if not (self.conf.vxlan and self.conf.evpn):
            return set()
        return {
            v
            for t in self.fabric.tenants_on(self.node)
            for v in [t.l3vni] + [s.l2vni for s in t.segments_on(self.node)]
        }

    @property
    def per_vni(self) -> bool:
        """Its tenants on twin's per-VNI devices (a bridge and a VXLAN device per VNI), not Cumulus's
        VLAN-aware layout: the kernel elements the proof breaks are these devices."""
        return self.layout == PER_VNI

    def as_run(self, fabric: Fabric) -> Fabric:
        """The lab's fabric as this node runs it (`as_run`)."""
        return as_run(fabric, self)


def build(
    nf: NvueFile,
    fabric: Fabric,
    node: str,
    backend: Backend,
    shaping: Shaping = DEFAULT_SHAPING,
    bonds: bool = False,
    steps: bool = True,
    red: bool = False,
) -> Plane:
    """The node's plane in the per-VNI layout (the VLAN-aware one: `twin.nvue.vlanaware`), with Linux
    bonds where `bonds` (the lab makes them); TopologyError with every problem of the file on this
    node (file, line, NVUE path). `steps=False`: without its kernel steps (what `twin lint` needs: the
    problems, and the node's tenants as NVUE declares them)."""
    conf = NodeConf.of(nf.tree)
    problems: list = []
    notes: list[str] = []
    devices, unc = _devices(nf, conf, fabric, node, problems, notes, bonds_.made(conf, bonds, backend))
    vrfs, tenants = _tenants(nf, conf, fabric, node, devices, problems, notes)
    plain = routed.plain_names(conf, {v for v, k in vrfs.items() if tenant_of(fabric, v)})
    problems += [
        nf.problem(at, why)
        for at, why in beyond.problems(conf, nf.tree)
        + routed.mgmt_problems(conf, fabric)
        + routed.next_hop_problems(conf, fabric, node)
        + nvue_hostname.problems(nf.tree)
    ]
    if problems:
        raise TopologyError(problems)
    me = fabric.nodes[node]
    vtep_ip = conf.source or next((a.split("/")[0] for a in conf.loopbacks), me.loopback)
    nfab = fabric.model_copy(
        update={"nodes": {**fabric.nodes, node: me.model_copy(update={"loopback": vtep_ip})}, "tenants": tenants}
    )
    plane = Plane(
        node,
        conf,
        nfab,
        devices,
        vrfs,
        notes=notes,
        uncabled=unc,
        plain=plain,
        bonds={b for b in conf.bonds if b in devices},
    )
    if steps:
        plane.steps = _steps(plane, backend, shaping)
        plane.bindings = overlay.bindings(nfab, node, backend)
    nvue_aclbind.attach(plane, nf, backend, steps, red)  # MTUs, ACLs and RoCE QoS the node runs (issue 44)
    if steps:
        nvue_hostname.attach(plane, nf.tree)  # its host name: the UTS name FRR shows, /etc/hostname
        nvue_lldp.attach(plane, nf.tree)  # its lldpd's timers and system name (issue 44)
    return plane


def as_run(fabric: Fabric, plane: Plane) -> Fabric:
    """The lab's fabric as `plane.node` runs it: each tenant with the node's segments, hosts, L3VNI
    and VRF as its NVUE declares them, and the other VTEPs' as the topology has them (`plane.fabric`
    knows only the node's side of a tenant). What the proof breaks on the node and puts back."""
    node, tenants = plane.node, dict(fabric.tenants)
    for name, mine in plane.fabric.tenants.items():
        top = fabric.tenants.get(name)
        if top is None:
            tenants[name] = mine
            continue
        tenants[name] = top.model_copy(
            update={
                "vrf": mine.vrf,
                "l3vni": mine.l3vni,
                "segments": {**top.segments, **mine.segments},
                "attachments": tuple(a for a in top.attachments if a.vtep != node)
                + tuple(a for a in mine.attachments if a.vtep == node),
            }
        )
    return fabric.model_copy(update={"tenants": tenants, "nodes": plane.fabric.nodes})


def tenant_of(fabric: Fabric, vrf: str) -> Tenant | None:
    """The topology's tenant an NVUE VRF stands for: its VRF name, else its name, case aside."""
    low = vrf.lower()
    return next((t for t in fabric.tenants.values() if t.vrf.lower() == low), None) or next(
        (t for t in fabric.tenants.values() if t.name.lower() == low), None
    )


def _devices(
    nf: NvueFile,
    conf: NodeConf,
    fabric: Fabric,
    node: str,
    problems: list,
    notes: list[str],
    bonds: tuple[set[str], dict[str, str]],
) -> tuple[dict[str, str], list[str]]:
    """NVUE port name -> kernel device (a bond made: itself, and its members), and the devices of the
    platform no cable reaches (made)."""
    cabled = fabric.nodes[node].ports_by_name
    known = dict.fromkeys(routed.platform(fabric, node) + list(cabled))
    dev = lambda n: routed.port_dev(fabric, node, n)  # noqa: E731
    members = {m for b in conf.bonds.values() for m in b.members}
    problems += [nf.problem(at, why) for at, why in bonds_.problems(conf, {m for m in members if dev(m)})]
    made, kept = bonds
    out: dict[str, str] = {m: d for b in sorted(made) for m in conf.bonds[b].members if (d := dev(m))}
    names = list(conf.ports) + [
        n
        for v in [conf.bgp, *[x.bgp for x in conf.vrfs.values() if x.bgp]]
        for n in v.neighbors
        if v.neighbors[n].unnumbered
    ]
    for name in dict.fromkeys(names):
        kind = conf.ports.get(name, "swp")
        if name == MGMT_PORT:
            problems += _mgmt_port(nf, fabric, node, notes)
            continue
        if name in made:
            out[name] = name
        elif kind in NOT_EMULATED_TYPES:
            notes.append(
                f"{nf.source}: interface {name} ({kind}): stored, not emulated: "
                f"{kept.get(name) or NOT_EMULATED_TYPES[kind]}"
            )
        if kind not in PORT_TYPES:
            continue
        if dev(name) is None:
            where = ("interface", name) if name in conf.ports else ("vrf", "default", "router", "bgp", "neighbor", name)
            problems.append(nf.problem(where, f"{node} has no port {name}; its ports: {port_ranges(list(known))}"))
        else:
            out[name] = dev(name) or name
    return out, sorted({d for d in out.values() if d in known and d not in cabled}, key=list(known).index)


def _mgmt_port(nf: NvueFile, fabric: Fabric, node: str, notes: list[str]) -> list:
    """NVUE's eth0 is the node's management port (`twin.config.mgmt`): in VRF mgmt, at the address
    the management network gives it (NVUE's `dhcp`, or that very address)."""
    ip = get(nf.tree, ("interface", MGMT_PORT, "ip"), {})
    n, out = fabric.nodes[node], []
    if ip.get("vrf") not in (None, MGMT):
        out.append(
            nf.problem(("interface", MGMT_PORT, "ip", "vrf"), f"eth0 is in VRF {MGMT}: the node's management network")
        )
    if fabric.mgmt is None or not kinds.of(n).mgmt:
        notes.append(f"{nf.source}: interface eth0: stored, not emulated: {node} has no management network here")
        return out
    given = [a for a in ip.get("address", {}) if a != "dhcp"]
    mine = f"{n.mgmt}/{fabric.mgmt.prefixlen}" if n.mgmt else None
    if mine and any(a != mine for a in given):
        out.append(
            nf.problem(
                ("interface", MGMT_PORT, "ip", "address"),
                f"{node}'s management address is {mine}: "
                "the management network gives it (the topology's mgmt_ipv4 pins it; NVUE's dhcp "
                "takes it)",
            )
        )
    return out


def _tenants(
    nf: NvueFile, conf: NodeConf, fabric: Fabric, node: str, devices: dict[str, str], problems: list, notes: list[str]
) -> tuple[dict[str, str], dict[str, Tenant]]:
    """NVUE VRF -> kernel VRF, and the Fabric's tenants as this node sees them."""
    here = {(a.vtep, a.port): (t, a) for t in fabric.tenants.values() for a in t.attachments}
    vrfs: dict[str, str] = {}
    mine: dict[str, Tenant] = {}
    for v in conf.vrfs.values():
        t = tenant_of(fabric, v.name)
        if v.name == MGMT or (t is None and v.plain):
            continue  # the management network's, or a plain L3 VRF (twin.nvue.routed)
        if t is None:
            notes.append(
                f"{nf.source}: VRF {v.name} matches no tenant of the topology "
                f"({listing(list(fabric.tenants)) or 'none'}): it runs as {v.name}; "
                "twin verify does not judge it"
            )
        elif t.name in mine:
            problems.append(
                nf.problem(
                    ("vrf", v.name),
                    f"VRF {v.name} and VRF "
                    f"{next(k for k, x in vrfs.items() if x == t.vrf)} "
                    f"both stand for tenant {t.name}",
                )
            )
            continue
        vrfs[v.name] = t.vrf if t else v.name
        built = _tenant(nf, conf, v.name, t, vrfs[v.name], node, devices, here, problems, notes)
        if built is not None:
            mine[built.name] = built
    _svi_checks(nf, conf, problems)
    _unplaced(nf, conf, fabric, node, devices, notes)
    others = {
        n: t.model_copy(update={"attachments": tuple(a for a in t.attachments if a.vtep != node)})
        for n, t in fabric.tenants.items()
        if n not in mine
    }
    return vrfs, {**{n: mine.get(n, t) for n, t in others.items()}, **{n: t for n, t in mine.items()}}


def _tenant(
    nf: NvueFile,
    conf: NodeConf,
    vrf: str,
    top: Tenant | None,
    kernel: str,
    node: str,
    devices: dict[str, str],
    here: dict,
    problems: list,
    notes: list[str],
) -> Tenant | None:
    v = conf.vrfs[vrf]
    if v.l3vni is None:
        problems.append(
            nf.problem(
                ("vrf", vrf, "evpn", "vni"),
                f"VRF {vrf} has no L3VNI: twin's tenants route between VTEPs over one (symmetric IRB)",
            )
        )
        return None
    segments: dict[str, Segment] = {}
    attachments: list[Attachment] = []
    for svi in (s for s in conf.svis.values() if s.vrf == vrf):
        seg = _segment(nf, conf, svi, problems)
        if seg is None:
            continue
        same = [s.name for s in (top.segments.values() if top else ()) if s.subnet == seg.subnet]
        seg = seg.model_copy(update={"name": same[0]}) if same else seg  # the tenant's segment it is (services)
        found = []
        for p in (p for p, vlan in conf.access.items() if vlan == svi.vlan and p in devices):
            ends = bonds_.hosts_of(p, conf, devices) if p in conf.bonds else [devices[p]]
            hit = [here[(node, e)][1] for e in ends if (node, e) in here]  # a bond: the host on its members
            if len(hit) > 1:
                problems.append(
                    nf.problem(
                        ("interface", p, "bond", "member"),
                        f"bond {p} reaches {len(hit)} hosts ({', '.join(a.host for a in hit)}); a bond leads to one",
                    )
                )
            found += [a.model_copy(update={"port": devices[p]}) for a in hit[:1]]
        attachments += [a.model_copy(update={"segment": seg.name}) for a in found]
        if found:
            segments[seg.name] = seg
        else:
            notes.append(
                f"{nf.source}: {svi.name} (VLAN {svi.vlan}, VNI {seg.l2vni}) has no host of the topology on "
                f"{node}: it is not made there, as twin makes a segment only where a host is"
            )
    if not attachments:
        notes.append(
            f"{nf.source}: VRF {vrf} has no host of the topology on {node}: it is not made there, as "
            "twin makes a tenant's VRF only on its hosts' VTEPs"
        )
    return Tenant(
        name=top.name if top else vrf,
        vrf=kernel,
        l3vni=v.l3vni,
        segments=segments,
        attachments=tuple(attachments),
        internet=top.internet if top else None,
    )


def _segment(nf: NvueFile, conf: NodeConf, svi: Svi, problems: list) -> Segment | None:
    vnis = conf.vlans.get(svi.vlan)
    gw = svi.gateway
    if not vnis:
        problems.append(
            nf.problem(
                ("interface", svi.name),
                f"VLAN {svi.vlan} is mapped to no VNI "
                f"(bridge.domain.br_default.vlan.{svi.vlan}.vni): "
                "twin's segments are VXLAN segments",
            )
        )
        return None
    if gw is None:
        problems.append(
            nf.problem(
                ("interface", svi.name, "ip"),
                f"{svi.name} has no IPv4 address (ip.address or ip.vrr.address): its hosts have no gateway",
            )
        )
        return None
    iface = ipaddress.ip_interface(gw)
    mac = svi.vrr_mac or conf.fabric_mac or DEFAULT_VRR_MAC if svi.vrr else ""
    return Segment(name=svi.name, subnet=str(iface.network), l2vni=vnis[0], gateway=str(iface.ip), mac=mac.lower())


def _svi_checks(nf: NvueFile, conf: NodeConf, problems: list) -> None:
    """What NVUE itself refuses, and what twin's per-VNI layout cannot make."""
    vni_of: dict[int, str] = {}
    for vlan, vnis in conf.vlans.items():
        where = ("bridge", "domain", "br_default", "vlan", str(vlan), "vni")
        if len(vnis) > 1:
            problems.append(nf.problem(where, f"VLAN {vlan} is mapped to {len(vnis)} VNIs; a VLAN maps to one"))
        for vni in vnis:
            if vni in vni_of:
                problems.append(nf.problem(where, f"VNI {vni} is mapped twice: {vni_of[vni]} and VLAN {vlan}"))
            vni_of[vni] = f"VLAN {vlan}"
    for v in conf.vrfs.values():
        if v.l3vni is None:
            continue
        if v.l3vni in vni_of:
            problems.append(
                nf.problem(
                    ("vrf", v.name, "evpn", "vni"), f"VNI {v.l3vni} is VRF {v.name}'s L3VNI and {vni_of[v.l3vni]}'s too"
                )
            )
        vni_of[v.l3vni] = f"VRF {v.name}"
    for port, vlan in conf.access.items():
        if vlan not in conf.vlans:
            problems.append(
                nf.problem(
                    ("interface", port, "bridge", "domain", "br_default", "access"),
                    f"VLAN {vlan} is not in bridge domain br_default (bridge.domain.br_default.vlan)",
                )
            )


def _unplaced(
    nf: NvueFile, conf: NodeConf, fabric: Fabric, node: str, devices: dict[str, str], notes: list[str]
) -> None:
    """Hosts the topology cables to the node that NVUE puts in no VLAN, said once each."""
    in_vlan = {
        d
        for p in conf.access
        if p in devices
        for d in (bonds_.hosts_of(p, conf, devices) if p in conf.bonds else [devices[p]])
    }
    for t in fabric.tenants.values():
        for a in t.attachments:
            if a.vtep == node and a.port not in in_vlan:
                notes.append(
                    f"{nf.source}: {a.host} (tenant {t.name}) is cabled to {node}:{a.port}, which NVUE puts "
                    "in no VLAN (interface ... bridge.domain.br_default.access): it reaches no one"
                )


def _steps(plane: Plane, backend: Backend, shaping: Shaping) -> list[Step]:
    """overlay.plan of the node's Fabric, with what NVUE says beyond twin's design: the loopback
    addresses (the kernel's, as ifupdown2 sets them), an SVI's own address beside its gateway,
    ARP suppression, VXLAN off, ports down; and beyond its tenants (`twin.nvue.routed`): the
    uncabled ports first, the plain VRFs, routed ports and VLANs outside a tenant last."""
    conf, nfab, node = plane.conf, plane.fabric, plane.node
    first, last = _beyond(plane, backend)
    steps = [Step("addr", "lo", args={"cidr": a}) for a in conf.loopbacks]
    plane.extras.update({("lo", s.args["cidr"]): s for s in steps})
    steps = first + steps
    extra = {
        bridge_name(s.l2vni): [a for a in svi_of(conf, s.l2vni)[1].addresses if a != s.gateway_cidr]
        for t in nfab.tenants_on(node)
        for s in t.segments_on(node)
    }
    l2 = {vxlan_name(s.l2vni) for t in nfab.tenants_on(node) for s in t.segments_on(node)}
    for s in overlay.plan(nfab, node, backend, shaping):
        if s.op == "addr" and s.dev == "lo":
            continue  # NVUE's loopback addresses instead
        if not conf.vxlan and s.dev.startswith("vxlan") and s.dev[5:].isdigit():
            continue  # nve.vxlan off: no VXLAN device
        if s.op == "brport" and s.dev in l2:
            plane.extras[("suppress", s.dev)] = Step("brport", s.dev, s.ns, {"neigh_suppress": conf.suppress})
            if not conf.suppress:
                s = Step("brport", s.dev, s.ns, {k: v for k, v in s.args.items() if k != "neigh_suppress"})
        steps.append(s)
        if s.op == "addr" and s.dev in extra:
            more = [Step("addr", s.dev, s.ns, {"cidr": a}) for a in extra.pop(s.dev)]
            plane.extras.update({("svi", m.dev, m.args["cidr"]): m for m in more})
            steps += more
    steps += last
    moved = {s.dev: s.args["to"] for s in last if s.op == "move"}
    for name, dev in sorted(plane.devices.items()):
        state = Step(
            "down" if name in conf.down else "up", dev, moved.get(dev) or overlay.port_ns(nfab, node, dev, backend)
        )
        plane.extras[("link", dev)] = state
        if name in conf.down or (dev in plane.uncabled and ("up", dev) not in plane.extras):
            steps.append(state)  # a port is up once cabled (links); an uncabled one, up here
    if conf.vrfs.get(MGMT) and conf.vrfs[MGMT].statics and not nfab.nodes[node].mgmt:
        plane.notes.append(f"{node}: vrf.mgmt.router.static: kept, not run: {node} has no management network here")
    if not conf.vxlan and nfab.tenants_on(node):
        plane.notes.append(f"{node}: nve.vxlan is off (no enable, no source address): no VXLAN device is made")
    if kinds.of(nfab.nodes[node]).runs_frr and not conf.loopbacks:
        plane.notes.append(f"{node}: interface lo has no address in NVUE: the node has no loopback address")
    return steps


def _beyond(plane: Plane, backend: Backend) -> tuple[list[Step], list[Step]]:
    """(first, last) of what NVUE declares beyond the tenants (`twin.nvue.routed`), noted as extras."""
    conf, node = plane.conf, plane.node
    first = dict(routed.uncabled(plane.fabric, node, plane.uncabled)) | dict(
        bonds_.steps(conf, plane.bonds, plane.devices)
    )
    plane.first = list(first.values())
    in_tenants = {v for v, s in conf.svis.items() if s.vrf in plane.vrfs and s.vrf not in plane.plain}
    last = dict(routed.plain_vrfs(plane.plain, backend))
    last.update(routed.routed_ports(conf, plane.devices, plane.plain, backend))
    last.update(routed.mgmt_routes(conf, plane.fabric, node))  # the management VRF's static routes (issue 44)
    last.update(routed.vlans(conf, plane.devices, plane.plain, backend, plane.fabric.nodes[node].loopback, in_tenants))
    plane.extras.update(first | last)
    return list(first.values()), list(last.values())


def extras_delta(
    old: dict[tuple, Step], new: dict[tuple, Step], remade: set[str], gone: set[str]
) -> tuple[list[Step], list[Step]]:
    """(steps to add, steps to remove) that take one plane's extras to another's: what differs,
    and the extras of devices the change makes again (`remade`: they lost theirs); nothing is
    taken off a device the change deletes (`gone`); what goes, in the reverse of its making."""
    add = [s for k, s in new.items() if old.get(k) != s or s.dev in remade]
    remove = [
        u
        for k, s in reversed(list(old.items()))
        if k not in new and s.dev not in gone and (u := routed.undo(s)) is not None
    ]
    return add, remove


def svi_of(conf: NodeConf, l2vni: int) -> tuple[int, Svi]:
    """The VLAN mapped to an L2VNI, and its SVI."""
    vlan = next(v for v, vnis in conf.vlans.items() if vnis[:1] == [l2vni] and v in conf.svis)
    return vlan, conf.svis[vlan]
