"""What a node's NVUE declares beyond twin's tenants, as kernel steps keyed like the plane's extras
(`Plane.extras`: day 2 takes one node's extras to another's, `plane.extras_delta`):

- ports of the platform no cable reaches: every port NVUE configures exists, as on a switch, with no
  carrier (a veth whose peer stays down in the node's namespace of such peers, `UNCABLED`);
- plain L3 VRFs (no EVPN): a VRF of the lab's backend (a namespace, or a VRF device) holding their
  routed ports and SVIs; their static routes and BGP are FRR's (`frr.py`);
- VLANs outside a tenant: in the default VRF (routed in the underlay, with their VRR, a VXLAN device
  where a VNI maps the VLAN) or in a plain VRF: a bridge named as NVUE names the SVI (`vlan10`)
  holding its access ports and addresses, or (no SVI) the VLAN's ports alone;
- routed ports' addresses.

The management VRF (`mgmt`) is the node's management network: nothing is made for it here.
"""

from __future__ import annotations

import hashlib
import ipaddress
from typing import Iterator

from twin import kinds
from twin.config import VRF_TABLE_BASE
from twin.config.backend import NETNS, Backend
from twin.config.steps import Step
from twin.kinds import MGMT_NS, MGMT_PORT
from twin.nvue import hostname as nvue_hostname
from twin.nvue import lldp as nvue_lldp
from twin.nvue.model import MGMT, NodeConf, Svi
from twin.topology import port_range, port_ranges
from twin.topology.model import Fabric

UNCABLED = "twin-uncabled"  # the node's namespace of its uncabled ports' peers ('twin...': no VRF's name)
PORT_INDEX = 3 << 24  # + 2 x the port's place in the platform's list: its index (the peer's: + 1)
PLAIN_TABLE = VRF_TABLE_BASE + 500  # + n: the routing table of the n-th plain VRF (device backend)
BRIDGE_MTU = 9000
Keyed = Iterator[tuple[tuple, Step]]


def platform(fabric: Fabric, node: str) -> list[str]:
    """The ports node `node`'s platform has, cabled or not: the topology's list, else its kind's."""
    n = fabric.nodes[node]
    if n.platform_ports:
        return list(n.platform_ports)
    default = kinds.of(n).platform_ports
    return port_range(default) if default else []


def port_dev(fabric: Fabric, node: str, name: str) -> str | None:
    """The kernel device of port `name` of the node's platform, cabled or not: the port itself, or for HBN's
    name the BlueField's (p0_if is p0); None: the node has no such port."""
    known = set(platform(fabric, node)) | set(fabric.nodes[node].ports_by_name)
    if name in known:
        return name
    return name[:-3] if name.endswith("_if") and name[:-3] in known else None


def next_hop_problems(conf: NodeConf, fabric: Fabric, node: str) -> list[tuple[tuple, str]]:
    """A static route through an interface the node has not (no port of its platform, no interface its
    NVUE declares): FRR would hold it inactive for good. The management VRF's: `mgmt_problems`."""
    mine = {*conf.ports, "lo"}
    out = []
    for vrf, statics in [("default", conf.statics)] + [(n, v.statics) for n, v in conf.vrfs.items() if n != MGMT]:
        for s in statics:
            if s.interface is None or s.interface in mine or port_dev(fabric, node, s.interface):
                continue
            at = (
                ("vrf", vrf, "router", "static", s.prefix)
                + (("distance", str(s.distance)) if s.distance else ())
                + ("via", s.via, "interface")
            )
            others = ", ".join(sorted(mine - {n for n in mine if port_dev(fabric, node, n)}))
            out.append(
                (
                    at,
                    f"{node} has no interface {s.interface}: its ports are "
                    f"{port_ranges(platform(fabric, node) or list(fabric.nodes[node].ports_by_name))}, "
                    f"its other interfaces {others}",
                )
            )
    return out


def uncabled(fabric: Fabric, node: str, devs: list[str]) -> Keyed:
    """The uncabled ports among `devs` (kernel names), made once each."""
    places = {p: i for i, p in enumerate(platform(fabric, node))}
    if devs:
        yield ("ns", UNCABLED), Step("netns-once", UNCABLED)
    for dev in devs:
        i = places[dev]
        yield (
            ("port", dev),
            Step(
                "port",
                dev,
                args={
                    "index": PORT_INDEX + 2 * i,
                    "mac": _mac(fabric, node, dev, 0),
                    "peer_index": PORT_INDEX + 2 * i + 1,
                    "peer_mac": _mac(fabric, node, dev, 1),
                    "netns": UNCABLED,
                },
            ),
        )


def plain_vrfs(names: dict[str, str], backend: Backend) -> Keyed:
    """The plain VRFs (`names`: NVUE VRF -> kernel name), each made once."""
    for i, k in enumerate(sorted(names.values())):
        if backend == NETNS:
            yield ("vrf", k), Step("netns", k)  # waited for on day 2, until zebra -n adopts it
            yield ("vrf-lo", k), Step("up", "lo", k)
        else:
            yield ("vrf", k), Step("vrf", k, args={"table": PLAIN_TABLE + i + 1})
            yield ("vrf-up", k), Step("up", k)


def into(dev: str, k: str, backend: Backend) -> Keyed:
    """Port `dev` of the node into plain VRF `k` (a namespace: moved; a VRF device: enslaved)."""
    if not k:
        return
    if backend == NETNS:
        yield ("in", dev), Step("move", dev, args={"to": k})
    else:
        yield ("in", dev), Step("master", dev, args={"master": k})


def routed_ports(conf: NodeConf, devices: dict[str, str], kernel: dict[str, str], backend: Backend) -> Keyed:
    """Routed ports: into their plain VRF, their addresses, up."""
    for name, (vrf, addrs) in sorted(conf.routed.items()):
        dev, k = devices.get(name), kernel.get(vrf or "", "")
        if dev is None:
            continue
        yield from into(dev, k, backend)
        ns = k if backend == NETNS else ""
        for a in addrs:
            yield ("addr", dev, a), Step("addr", dev, ns, {"cidr": a})
        yield ("up", dev), Step("up", dev, ns)


def vlans(
    conf: NodeConf,
    devices: dict[str, str],
    kernel: dict[str, str],
    backend: Backend,
    vtep: str | None,
    tenant_vlans: set[int],
) -> Keyed:
    """The VLANs outside a tenant: a bridge each (the SVI's name), its access ports, addresses, VRR, VXLAN."""
    for vlan in sorted(set(conf.vlans) | set(conf.access.values())):
        if vlan in tenant_vlans:
            continue
        svi = conf.svis.get(vlan)
        br = svi.name if svi else f"vlan{vlan}"
        k = kernel.get(svi.vrf or "", "") if svi else ""
        ns = k if backend == NETNS else ""
        args = {"mtu": BRIDGE_MTU, **({"mac": _vrr_mac(conf, svi)} if svi and svi.vrr else {})}
        yield ("bridge", br), Step("bridge", br, ns, args)
        if k and backend != NETNS:
            yield ("in", br), Step("master", br, args={"master": k})
        for port in sorted(p for p, v in conf.access.items() if v == vlan and p in devices):
            yield from into(devices[port], k, backend)
            yield ("brport", devices[port]), Step("master", devices[port], ns, {"master": br})
            yield ("up", devices[port]), Step("up", devices[port], ns)
        vnis = conf.vlans.get(vlan, [])
        if vnis and vtep and conf.vxlan and not k:
            vx = f"vxlan{vnis[0]}"
            yield ("vxlan", vx), Step("vxlan", vx, args={"vni": vnis[0], "local": vtep, "mtu": BRIDGE_MTU - 50})
            yield ("vxlan-br", vx), Step("master", vx, args={"master": br})
            yield ("vxlan-port", vx), Step("brport", vx, args={"learning": False, "neigh_suppress": conf.suppress})
            yield ("up", vx), Step("up", vx)
        for a in (svi.addresses + [x for x in svi.vrr if x not in svi.addresses]) if svi else []:
            yield ("addr", br, a), Step("addr", br, ns, {"cidr": a})
        yield ("up", br), Step("up", br, ns)


def mgmt_routes(conf: NodeConf, fabric: Fabric, node: str) -> Keyed:
    """The management VRF's static routes (issue 44): the kernel's, in the node's management namespace,
    out of eth0 (FRR never sees that namespace, `twin.config.mgmt`); none where the node has no
    management network. Their next hops are on it (`mgmt_problems`)."""
    v = conf.vrfs.get(MGMT)
    if v is None or fabric.mgmt is None or not fabric.nodes[node].mgmt:
        return
    for s in v.statics:
        dst = str(ipaddress.ip_network(s.prefix, strict=False))
        yield (
            ("mgmt-route", dst, s.via),
            Step("route", MGMT_PORT, MGMT_NS, {"dst": dst, "via": s.via, **({"onlink": True} if s.onlink else {})}),
        )


def mgmt_problems(conf: NodeConf, fabric: Fabric) -> list[tuple[tuple, str]]:
    """What of the management VRF's static routes the kernel cannot take: a next hop that is no address
    on the management network (unless onlink), another interface than eth0, a distance or tag."""
    v, subnet = conf.vrfs.get(MGMT), fabric.mgmt.subnet if fabric.mgmt else None
    out = []
    for s in v.statics if v else []:
        at = (
            ("vrf", MGMT, "router", "static", s.prefix)
            + (("distance", str(s.distance)) if s.distance else ())
            + ("via", s.via)
        )
        try:
            on = subnet is None or s.onlink or ipaddress.ip_address(s.via) in ipaddress.ip_network(subnet)
        except ValueError:
            out.append(
                (
                    at,
                    "a route of the management VRF goes through an address on the management network, "
                    "not a blackhole or reject (the kernel's, in the management namespace)",
                )
            )
            continue
        if not on:
            out.append((at, f"{s.via} is not on the management network ({subnet}): eth0 cannot reach it"))
        if s.interface not in (None, MGMT_PORT) or s.distance or s.tag:
            out.append(
                (at, "a route of the management VRF is the kernel's, out of eth0: no other interface, distance or tag")
            )
    return out


def undo(s: Step) -> Step | None:
    """The step that takes an extra away again (None: it stays, as a switch's port or a VRF's namespace)."""
    if s.op == "route":  # a management VRF's static route gone (issue 44)
        return Step("unroute", s.dev, s.ns, s.args)
    if s.op == "addr":
        return Step("unaddr", s.dev, s.ns, s.args)
    if s.op in ("bridge", "vxlan", "vrf", "bond"):
        return Step("del", s.dev, s.ns)
    if s.op == "master":
        return Step("nomaster", s.dev, s.ns)
    if s.op == "move":
        return Step("release", s.dev, s.args["to"])
    if s.op == "mtu" and "was" in s.args:  # NVUE's link.mtu gone: the MTU the plane made (twin.nvue.mtu)
        return Step("mtu", s.dev, s.ns, {"mtu": s.args["was"]})
    if s.op == "tc-batch":  # a port's traffic classes (twin.nvue.qos): its root is never taken away (a frame
        return None  # lost); a port a workload's rate limit comes to has it replaced by the TBF already
    if s.op == "hostname":  # NVUE's system hostname gone: the node's own name (twin.nvue.hostname)
        return nvue_hostname.undo(s)
    if s.op == "lldp":  # NVUE's LLDP gone: lldpd's timers and name as it starts (twin.nvue.lldp)
        return nvue_lldp.undo()
    if s.op == "nft" and s.dev.startswith("acl"):  # NVUE's ACLs gone from a namespace (twin.nvue.aclbind)
        return Step("nft-delete", s.args.get("table", "netdev twin_acl"), s.ns)
    return None


def plain_names(conf: NodeConf, tenants: set[str]) -> dict[str, str]:
    """NVUE VRF -> kernel name of the plain VRFs: no EVPN, no tenant of the topology, not mgmt."""
    return {v.name: v.name for v in conf.vrfs.values() if v.plain and v.name not in tenants and v.name != MGMT}


def _vrr_mac(conf: NodeConf, svi: Svi) -> str:
    return (svi.vrr_mac or conf.fabric_mac or "00:00:5e:00:01:01").lower()


def _mac(fabric: Fabric, node: str, dev: str, end: int) -> str:
    """A locally administered MAC of its own for each end of an uncabled port, stable per lab."""
    h = hashlib.sha256(f"{fabric.name}/{node}/{dev}/{end}".encode()).digest()
    return ":".join(f"{b:02x}" for b in (0x02, *h[:5]))
