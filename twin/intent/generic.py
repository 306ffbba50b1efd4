"""What a node whose intent twin does not derive (a router) must hold: what its own config declares.

Converged, for such a node, means:
- every daemon its `daemons` file enables runs (zebra always);
- every adjacency its frr.conf declares is up: each BGP neighbor (not shut down) Established;
  each OSPF, OSPFv3 and IS-IS interface (not passive) on a link whose far end runs the same
  protocol (not passive either, by that node's config) has a Full / Up neighbour;
- its static routes are in its RIB, and so is every prefix its IGPs learn from the other routers
  of its domain; with EVPN on (`advertise-all-vni`), the L3VNI of each of its VRFs is up in zebra;
- its routes stopped changing for a short quiet period (the barrier's business: a moment, not a
  state a config declares).

Pure: (fabric, each node's files) in, frozen data out. The far end of a link is the topology's;
a BGP neighbor given by address is named after the node whose config holds that address.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field, replace
from typing import Mapping

from twin import kinds
from twin.intent import frrconf
from twin.topology.model import Fabric

PROTOCOLS = {"bgp": "BGP", "ospf": "OSPF", "ospf6": "OSPFv3", "isis": "IS-IS"}
DAEMON_OF = {"bgp": "bgpd", "ospf": "ospfd", "ospf6": "ospf6d", "isis": "isisd"}
# what a config's `router X` (and static routes) need running: a daemons file made for a config
ROUTER_DAEMONS = {
    "bgp": "bgpd",
    "ospf": "ospfd",
    "ospf6": "ospf6d",
    "isis": "isisd",
    "rip": "ripd",
    "ripng": "ripngd",
    "eigrp": "eigrpd",
    "babel": "babeld",
    "openfabric": "fabricd",
    "pim": "pimd",
}
_ENABLED = re.compile(r"^\s*(\w+d)=yes\b", re.M)


@dataclass(frozen=True)
class Adjacency:
    """One adjacency a node's config declares: a BGP neighbor, or an IGP interface."""

    node: str
    protocol: str  # bgp, ospf, ospf6, isis
    where: str  # bgp: the neighbor (an address or an interface); IGPs: the interface
    vrf: str = frrconf.DEFAULT_VRF
    peer: str = ""  # "node:port" of the far end, where it is known

    def __str__(self) -> str:
        what = "neighbor" if self.protocol == "bgp" else "on"
        vrf = f" (VRF {self.vrf})" if self.vrf != frrconf.DEFAULT_VRF else ""
        return f"{self.node}: {PROTOCOLS[self.protocol]} {what} {self.where}{vrf}" + (
            f" to {self.peer}" if self.peer else ""
        )


@dataclass(frozen=True)
class Route:
    """A route a router must hold: a static one its config declares, or one its IGP learns from
    another router of its domain (an OSPF, OSPFv3 or IS-IS interface of that router, passive too)."""

    node: str
    prefix: str
    vrf: str
    protocol: str  # static, ospf, ospf6, isis
    origin: str = ""  # "node:interface" it is learned from (the first, where several have it)
    origins: tuple[str, ...] = ()  # every "node:interface" of the domain that has the prefix

    def __str__(self) -> str:
        vrf = f" in VRF {self.vrf}" if self.vrf != frrconf.DEFAULT_VRF else ""
        if self.protocol == "static":
            return f"{self.node}: static route {self.prefix}{vrf}"
        return f"{self.node}: route to {self.prefix}{vrf} ({PROTOCOLS[self.protocol]}, {self.origin}'s)"


@dataclass(frozen=True)
class GenericIntent:
    node: str
    daemons: tuple[str, ...]  # every daemon that must run
    adjacencies: tuple[Adjacency, ...]
    notes: tuple[str, ...] = ()  # what in its files can never come up, said once
    routes: tuple[Route, ...] = ()  # its static routes, and what its IGPs learn from its domain
    vnis: dict[int, str] = field(default_factory=dict)  # L3VNI -> VRF (`vrf X` / `vni N`, EVPN on): up in zebra

    def protocols(self) -> set[str]:
        return {a.protocol for a in self.adjacencies}


def daemons_enabled(daemons_file: str) -> list[str]:
    """Daemons a daemons file enables (`xd=yes`), and zebra, which always runs."""
    return sorted({"zebra", *_ENABLED.findall(daemons_file)})


def daemons_for(config: frrconf.FrrConfig) -> list[str]:
    """The daemons a config needs: one per `router X` it has, staticd for static routes."""
    out = {ROUTER_DAEMONS[r] for r in config.routers if r in ROUTER_DAEMONS}
    return sorted(out | ({"staticd"} if config.static else set()))


def generic_intents(fabric: Fabric, files: Mapping[str, Mapping[str, str]]) -> dict[str, GenericIntent]:
    """The intent of every node of a kind twin derives none for, from each node's files
    (`files[node]["frr.conf"]`, `["daemons"]`: what the nodes run)."""
    configs = {n: frrconf.parse(f.get("frr.conf", "")) for n, f in files.items()}
    owners = {addr: f"{n}:{iface}" for n, c in configs.items() for addr, iface in c.addresses().items()}
    out = {}
    for name, node in fabric.nodes.items():
        if not kinds.of(node).user_config:
            continue
        cfg = configs.get(name, frrconf.FrrConfig())
        enabled = daemons_enabled(files.get(name, {}).get("daemons", ""))
        adj = _bgp(name, cfg, fabric, owners) + _igps(name, cfg, fabric, configs)
        notes = tuple(
            f"{name}: its frr.conf has {PROTOCOLS[p]} ({', '.join(a.where for a in adj if a.protocol == p)}) "
            f"but its daemons file does not enable {DAEMON_OF[p]}"
            for p in sorted({a.protocol for a in adj})
            if DAEMON_OF[p] not in enabled
        )
        statics = [Route(name, network(st.prefix), st.vrf, "static") for st in cfg.statics]
        evpn = (bgp := cfg.default_bgp()) is not None and bgp.advertise_all_vni
        vnis = {vni: vrf for vrf, vni in cfg.vrfs.items() if vni} if evpn else {}
        out[name] = GenericIntent(name, tuple(enabled), tuple(adj), notes, tuple(statics), vnis)
    learned = _learned(out, configs)
    return {n: replace(g, routes=g.routes + tuple(learned.get(n, ()))) for n, g in out.items()}


def network(prefix: str) -> str:
    """A prefix as FRR shows it (host bits cleared), or as given when it is none."""
    try:
        return str(ipaddress.ip_network(prefix, strict=False))
    except ValueError:
        return prefix


def _learned(intents: dict[str, GenericIntent], configs: dict[str, frrconf.FrrConfig]) -> dict[str, list[Route]]:
    """Per router, the IGP prefixes of the other routers of its domain (the routers its adjacencies of
    that protocol and VRF join, transitively) that it has no address in itself."""
    out: dict[str, list[Route]] = {}
    for proto in ("ospf", "ospf6", "isis"):
        for vrf, members in _domains(intents, proto).items():
            for group in members:
                origins: dict[str, list[str]] = {}
                for m in sorted(group):
                    for (iface, v), prefixes in sorted(configs[m].igp_prefixes(proto).items()):
                        for p in prefixes if v == vrf else ():
                            origins.setdefault(p, []).append(f"{m}:{iface}")
                for n in sorted(group):
                    own = {p for (_, v), ps in configs[n].igp_prefixes(proto).items() if v == vrf for p in ps}
                    own |= _connected(configs[n], vrf)
                    out.setdefault(n, []).extend(
                        Route(n, p, vrf, proto, o[0], tuple(o)) for p, o in origins.items() if p not in own
                    )
    return out


def _connected(cfg: frrconf.FrrConfig, vrf: str) -> set[str]:
    return {
        str(ipaddress.ip_interface(a).network)
        for (_, v), i in cfg.interfaces.items()
        if v == vrf
        for a in i.addresses
        if frrconf.is_cidr(a)
    }


def _domains(intents: dict[str, GenericIntent], proto: str) -> dict[str, list[set[str]]]:
    """VRF -> the groups of routers joined by adjacencies of `proto` (each at least two)."""
    groups: dict[str, list[set[str]]] = {}
    for g in intents.values():
        for a in g.adjacencies:
            far = a.peer.split(":")[0]
            if a.protocol != proto or far not in intents:
                continue
            mine = groups.setdefault(a.vrf, [])
            joined = [x for x in mine if a.node in x or far in x]
            merged = set().union({a.node, far}, *joined)
            groups[a.vrf] = [x for x in mine if x not in joined] + [merged]
    return groups


def _bgp(name: str, cfg: frrconf.FrrConfig, fabric: Fabric, owners: dict[str, str]) -> list[Adjacency]:
    ports = fabric.nodes[name].ports_by_name
    out = []
    for inst in cfg.bgp:
        for n in inst.active():
            if n.interface:
                p = ports.get(n.name)
                peer = f"{p.peer_node}:{p.peer_port}" if p else ""
            else:
                peer = owners.get(n.name, "")
            out.append(Adjacency(name, "bgp", n.name, inst.vrf, peer))
    return out


def _igps(name: str, cfg: frrconf.FrrConfig, fabric: Fabric, configs: dict[str, frrconf.FrrConfig]) -> list[Adjacency]:
    """IGP interfaces of `name` whose link's far end runs the same protocol, neither side passive."""
    readers = {
        "ospf": frrconf.FrrConfig.ospf_interfaces,
        "ospf6": frrconf.FrrConfig.ospf6_interfaces,
        "isis": frrconf.FrrConfig.isis_interfaces,
    }
    ports = fabric.nodes[name].ports_by_name
    out = []
    for proto, read in readers.items():
        mine = read(cfg)
        for (iface, vrf), passive in sorted(mine.items()):
            port = ports.get(iface)
            if passive or port is None or port.peer_node not in configs:
                continue
            theirs = read(configs[port.peer_node])
            far = next((p for (i, _), p in theirs.items() if i == port.peer_port), None)
            if far is False:  # enabled there, and not passive
                out.append(Adjacency(name, proto, iface, vrf, f"{port.peer_node}:{port.peer_port}"))
    return out
