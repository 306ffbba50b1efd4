"""One round of readings of a running lab, into a `Snapshot`.

Per namespace of every node (its own, and each tenant's with the netns VRF backend):
link stats and carrier of its ports (`linkstats`: a raw netlink dump), and its IPv4
routes per VRF (netlink, on the slower rounds; sockets and handles kept open by the
caller); the RoCE counter table (`roce`, netlink dumps of its sets); and, on FRR nodes
and a slower cadence, one vtysh call for BGP sessions, VNIs and EVPN routes per VNI.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from twin import kinds
from twin.base import timeouts
from twin.config.backend import NETNS
from twin.lifecycle.context import LabContext
from twin.observe import linkstats, roce
from twin.observe.linkstats import LinkSocket
from twin.observe.nftnl import NftSocket
from twin.runtime import FRR_ROUTES, Netlink, NodeExec, route_counts, vrf_prefixes

STATS = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_dropped", "tx_dropped", "rx_errors", "tx_errors")
CONTROL = ("show bgp vrf all summary json", "show evpn vni json", FRR_ROUTES)


@dataclass
class Snapshot:
    time: float
    ports: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # node -> port -> stats, oper
    roce: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # node -> port -> counters
    routes: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # node -> VRF -> prefixes
    sessions: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # node -> "afi port" -> state
    vnis: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # node -> VNI -> counts
    nodes: dict[str, str] = field(default_factory=dict)  # node -> running / why not
    control_time: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def namespaces(ctx: LabContext, node: str) -> list[str]:
    """The node's own namespace and, with the netns VRF backend, its tenants'."""
    if ctx.backend != NETNS:
        return [""]
    return [""] + sorted({t.vrf for t in ctx.fabric.tenants_on(node)})


def links(sock: LinkSocket, wanted: set[str]) -> tuple[dict[str, dict[str, Any]], dict[int, str], dict[int, str]]:
    """(port -> stats and state for `wanted` ports, ifindex -> name, VRF table -> VRF name)."""
    ports, names, vrfs = {}, {}, {}
    for link in sock.dump():
        name = link["name"]
        names[link["index"]] = name
        if "vrf_table" in link:
            vrfs[link["vrf_table"]] = name
        if name in wanted:
            up = link["carrier"] == 1 and link["oper"] in (linkstats.OPER_UP, linkstats.OPER_UNKNOWN)
            ports[name] = {
                "oper": "up" if up and link["admin_up"] else "down",
                "admin": "up" if link["admin_up"] else "down",
                **{k: link.get(k, 0) for k in STATS},
            }
    return ports, names, vrfs


def routes(ipr: Netlink, ns: str, vrfs: dict[int, str]) -> dict[str, list[str]]:
    """IPv4 prefixes per VRF in one namespace (its main table is the tenant's, with netns VRFs)."""
    return vrf_prefixes(ipr, ns, vrfs)


def roce_of(
    ctx: LabContext, ex: NodeExec, node: str, ports_in: dict[str, list[str]], socks: dict[str, NftSocket]
) -> dict[str, dict[str, Any]]:
    """RoCE counters of the node's ports, installing the table in a namespace that lacks it
    (or hooks other ports than it has now)."""
    out: dict[str, dict[str, Any]] = {}
    for ns, ports in ports_in.items():
        if not ports:
            continue
        got = roce.read(socks[ns], ctx.name)
        counters, hooked = got if got else ({}, set())
        if got is None or hooked != set(ports):
            roce.install(ex, ctx.pid(node), ctx.netns(node, ns), ns, ctx.name, ports)
            counters = {}
        for p in ports:
            out[p] = counters.get(p, roce.PortRoce()).to_dict()
    return out


def vtysh_json(ex: NodeExec, pid: int, commands: tuple[str, ...]) -> list[Any]:
    """One vtysh call, a JSON document per command, through the node's exec seam (nsenter: no
    docker exec, dockerd or containerd, on every poll)."""
    return ex.vtysh_json(*commands, timeout=timeouts.VTYSH)


def control(
    ex: NodeExec, pid: int, vnis_of: dict[int, str]
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(sessions, VNIs) of an FRR node from one vtysh call."""
    summary, vni_doc, evpn = vtysh_json(ex, pid, CONTROL)
    sessions: dict[str, dict[str, Any]] = {}
    for vrf, afis in (summary or {}).items():
        for afi, body in (afis or {}).items():
            for peer, p in ((body or {}).get("peers") or {}).items() if isinstance(body, dict) else []:
                key = f"{afi} {peer}" if vrf == "default" else f"{vrf} {afi} {peer}"
                sessions[key] = {
                    "vrf": vrf,
                    "afi": afi,
                    "port": peer,
                    "peer": p.get("hostname", ""),
                    "state": p.get("state", "?"),
                    "up": p.get("state") == "Established",
                    "prefixes": p.get("pfxRcd", 0),
                }
    vnis: dict[str, dict[str, Any]] = {}
    for v in (vni_doc or {}).values():
        if not isinstance(v, dict) or "vni" not in v:
            continue
        counts = route_counts(evpn or {}, {int(v["vni"])})
        remote = v.get("numRemoteVteps")
        vnis[str(v["vni"])] = {
            "type": v.get("type", "?"),
            "vrf": v.get("tenantVrf", ""),
            "macs": v.get("numMacs", 0),
            "arp_nd": v.get("numArpNd", 0),
            "remote_vteps": remote if isinstance(remote, int) else None,
            "tenant": vnis_of.get(int(v["vni"]), ""),
            **counts,
        }
    return sessions, vnis


def vni_tenants(ctx: LabContext) -> dict[int, str]:
    out = {}
    for t in ctx.fabric.tenants.values():
        out[t.l3vni] = t.name
        for s in t.segments.values():
            out[s.l2vni] = t.name
    return out


def runs_frr(ctx: LabContext, node: str) -> bool:
    return kinds.of(ctx.fabric.nodes[node]).runs_frr


def now() -> float:
    return round(time.time(), 3)
