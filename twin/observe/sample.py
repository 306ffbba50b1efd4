"""One round of readings of a running lab, into a `Snapshot`.

Per namespace of every node (its own, and each tenant's with the netns VRF backend):
netlink link stats and carrier of its ports, and its IPv4 routes per VRF (one dump
each, handles kept open by the caller); the RoCE counter table (`roce`, netlink dumps
of its sets); and, on FRR nodes and a slower cadence, one vtysh call for BGP
sessions, VNIs and EVPN routes per VNI.
"""
from __future__ import annotations

import socket
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from pyroute2 import IPRoute

from twin import kinds
from twin.lifecycle.context import LabContext
from twin.observe import roce
from twin.observe.nftnl import NftSocket
from twin.runtime import frr
from twin.runtime.exec import NodeExec

STATS = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_dropped", "tx_dropped", "rx_errors", "tx_errors")
CONTROL = ("show bgp vrf all summary json", "show evpn vni json", frr.ROUTES)


@dataclass
class Snapshot:
    time: float
    ports: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)   # node -> port -> stats, oper
    roce: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)    # node -> port -> counters
    routes: dict[str, dict[str, list[str]]] = field(default_factory=dict)       # node -> VRF -> prefixes
    sessions: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # node -> "afi port" -> state
    vnis: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)    # node -> VNI -> counts
    nodes: dict[str, str] = field(default_factory=dict)                         # node -> running / why not
    control_time: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def namespaces(ctx: LabContext, node: str) -> list[str]:
    """The node's own namespace and, with the netns VRF backend, its tenants'."""
    if ctx.backend != "netns":
        return [""]
    return [""] + sorted({t.vrf for t in ctx.fabric.tenants_on(node)})


def links(ipr: IPRoute, wanted: set[str]) -> tuple[dict[str, dict[str, Any]], dict[int, str], dict[int, str]]:
    """(port -> stats and state for `wanted` ports, ifindex -> name, VRF table -> VRF name)."""
    ports, names, vrfs = {}, {}, {}
    for link in ipr.get_links():
        name = link.get("ifname")
        names[link["index"]] = name
        info = link.get("IFLA_LINKINFO")
        if info is not None and info.get("IFLA_INFO_KIND") == "vrf":
            data = info.get("IFLA_INFO_DATA")
            if data is not None and data.get("IFLA_VRF_TABLE"):
                vrfs[data.get("IFLA_VRF_TABLE")] = name
        if name in wanted:
            stats = link.get("stats64") or link.get("IFLA_STATS64") or {}
            ports[name] = {"oper": "up" if link.get("carrier") == 1 and link.get("operstate") in ("UP", "UNKNOWN")
                           else "down", "admin": "up" if link["flags"] & 1 else "down",
                           **{k: stats.get(k, 0) for k in STATS}}
    return ports, names, vrfs


def routes(ipr: IPRoute, ns: str, vrfs: dict[int, str]) -> dict[str, list[str]]:
    """IPv4 prefixes per VRF in one namespace (its main table is the tenant's, with netns VRFs)."""
    out: dict[str, set[str]] = {}
    for r in ipr.route("dump", family=socket.AF_INET):
        table = r.get("table") or r.get("RTA_TABLE")
        if table == 255 or r.get("type") not in (1, None):   # local table; unicast routes only
            continue
        vrf = (ns or "default") if table == 254 else vrfs.get(table)
        if vrf is None:
            continue
        out.setdefault(vrf, set()).add(f"{r.get('dst') or '0.0.0.0'}/{r['dst_len']}")
    return {v: sorted(p) for v, p in out.items()}


def roce_of(ctx: LabContext, ex: NodeExec, node: str, ports_in: dict[str, list[str]],
            socks: dict[str, NftSocket]) -> dict[str, dict[str, Any]]:
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


def control(ex: NodeExec, vnis_of: dict[int, str]) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(sessions, VNIs) of an FRR node from one vtysh call."""
    summary, vni_doc, evpn = ex.vtysh_json(*CONTROL)
    sessions: dict[str, dict[str, Any]] = {}
    for vrf, afis in (summary or {}).items():
        for afi, body in (afis or {}).items():
            for peer, p in ((body or {}).get("peers") or {}).items() if isinstance(body, dict) else []:
                key = f"{afi} {peer}" if vrf == "default" else f"{vrf} {afi} {peer}"
                sessions[key] = {"vrf": vrf, "afi": afi, "port": peer, "peer": p.get("hostname", ""),
                                 "state": p.get("state", "?"), "up": p.get("state") == "Established",
                                 "prefixes": p.get("pfxRcd", 0)}
    vnis: dict[str, dict[str, Any]] = {}
    for key, v in (vni_doc or {}).items():
        if not isinstance(v, dict) or "vni" not in v:
            continue
        counts = frr.route_counts(evpn or {}, {int(v["vni"])})
        remote = v.get("numRemoteVteps")
        vnis[str(v["vni"])] = {"type": v.get("type", "?"), "vrf": v.get("tenantVrf", ""),
                               "macs": v.get("numMacs", 0), "arp_nd": v.get("numArpNd", 0),
                               "remote_vteps": remote if isinstance(remote, int) else None,
                               "tenant": vnis_of.get(int(v["vni"]), ""), **counts}
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
