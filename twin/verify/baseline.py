"""A behaviour baseline: what every FRR node of a lab holds, recorded to compare against later.

    doc = record(lab)          # JSON-ready; `twin baseline record LAB -o baseline.json`

Per node: every BGP session (per VRF and AFI) with its state and prefix counts
(accepted from the peer, sent to it), every VRF's selected routes (tenant VRFs
included) with protocol and next hops, every VNI with its VRF, remote VTEPs and
MAC/neighbour counts; on routers of the user's own configs, every OSPF, OSPFv3 and
IS-IS adjacency with its state. Next hops are addresses, or interfaces where BGP
unnumbered uses link-local addresses (those change with every MAC), so a lab
made again from the same topology records the same baseline. Nothing that
changes by itself (uptimes, message counters, router MACs) is kept.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from ipaddress import ip_network
from typing import Any, Sequence

from twin import kinds
from twin.base import timeouts
from twin.base.errors import TwinError
from twin.lifecycle.context import LabLike, context_of
from twin.runtime import (
    FRR_ADJACENCIES,
    FRR_AFI_KEYS,
    FRR_ROUTES_V4_VRFS,
    FRR_ROUTES_V6_VRFS,
    FRR_SUMMARY_VRFS,
    FRR_VNIS,
    NodeExec,
    adjacency_states,
    bgp_peers,
    carried,
    normalize_vni,
    route_entries,
    vni_states,
)

FORMAT = "twin-baseline/1"
SECTIONS = ("sessions", "routes", "vnis", "adjacencies")
IGPS = ("ospf", "ospf6", "isis")  # adjacencies recorded besides BGP sessions (routers of the user's configs)


def record(lab: LabLike) -> dict[str, Any]:
    """The baseline of a running lab (a `twin.Lab` or its context): every node that runs FRR, twin's
    and the routers of the user's own configs alike."""
    ctx = context_of(lab)
    running = set(ctx.refresh().running())
    nodes = [n for n, node in ctx.fabric.nodes.items() if kinds.of(node).runs_frr and n in running]
    mine = ctx.intent.generic
    igps = {n: sorted(g.protocols() & set(IGPS)) for n, g in mine.items()}
    bgp = {n: n not in mine or "bgpd" in mine[n].daemons for n in nodes}  # a router's daemons file says
    with ThreadPoolExecutor(8) as pool:
        per_node = dict(
            zip(nodes, pool.map(carried(lambda n: node_state(ctx.exec(n), igps.get(n, []), bgp[n])), nodes))
        )
    return {
        "format": FORMAT,
        "lab": ctx.name,
        "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "nodes": per_node,
    }


def node_state(ex: NodeExec, igps: Sequence[str] = (), bgp: bool = True) -> dict[str, Any]:
    """One node's sessions (where it runs bgpd), routes and VNIs; and the adjacencies of the IGPs
    it runs (`igps`)."""
    v4, v6 = ex.vtysh_json(FRR_ROUTES_V4_VRFS, FRR_ROUTES_V6_VRFS, timeout=timeouts.VTYSH)
    (summary,) = ex.vtysh_json(FRR_SUMMARY_VRFS, timeout=timeouts.VTYSH) if bgp else ({},)
    try:  # a separate call: FRR 8.4 prints nothing at all here once EVPN is off on the node
        (vni_doc,) = ex.vtysh_json(FRR_VNIS, timeout=timeouts.VTYSH)
    except TwinError:
        vni_doc = {}
    out = {"sessions": sessions(summary), "routes": routes(v4, v6), "vnis": vnis(vni_doc)}
    if igps:
        docs = ex.vtysh_json(*(FRR_ADJACENCIES[p] for p in igps), timeout=timeouts.VTYSH)
        out["adjacencies"] = adjacencies(dict(zip(igps, docs)))
    return out


def adjacencies(docs: dict[str, Any]) -> dict[str, dict[str, str]]:
    """VRF -> "PROTOCOL INTERFACE" -> its neighbour's state, as FRR words it without the DR role
    (Full, not Full/DR: the election's outcome is no behaviour of the network)."""
    out: dict[str, dict[str, str]] = {}
    for proto, doc in sorted(docs.items()):
        for (vrf, where), st in sorted(adjacency_states(proto, doc).items()):
            out.setdefault(vrf, {})[f"{proto} {where}"] = st.split("/")[0]
    return out


def sessions(summary: dict) -> dict[str, dict[str, dict]]:
    """VRF -> "AFI PEER" -> {state, accepted, sent}, from `show bgp vrf all summary json`."""
    out: dict[str, dict[str, dict]] = {}
    for vrf, doc in sorted((summary or {}).items()):
        for afi in FRR_AFI_KEYS:
            for peer, p in sorted(bgp_peers(doc, afi).items()):
                out.setdefault(vrf, {})[f"{afi} {peer}"] = {
                    "state": p.get("state", "?"),
                    "accepted": p.get("pfxRcd"),
                    "sent": p.get("pfxSnt"),
                }
    return out


def routes(*docs: dict) -> dict[str, dict[str, dict]]:
    """VRF -> prefix -> {protocol, nexthops}: the selected route of every prefix (not FRR 10's
    `local` host routes of the node's own addresses, nor IPv6 link-local and multicast ones)."""
    out: dict[str, dict[str, dict]] = {}
    for doc in docs:
        for vrf, table in sorted((doc or {}).items()):
            if not isinstance(table, dict):
                continue
            out.setdefault(vrf, {})
            for prefix in sorted(table):
                if _ignored(prefix):
                    continue
                chosen = [e for e in route_entries(table, prefix) if e["selected"] and e["protocol"] != "local"]
                if chosen:
                    out[vrf][prefix] = {"protocol": chosen[0]["protocol"], "nexthops": chosen[0]["nexthops"]}
    return out


def vnis(doc: Any) -> dict[str, dict]:
    """VNI -> {type, vrf, remote_vteps, macs, neighbours} (L3 VNIs: type, vrf, state)."""
    out = {}
    for vni, entry in sorted(vni_states(doc).items()):
        e = normalize_vni(entry)
        if e.get("type") == "L3":
            out[str(vni)] = {"type": "L3", "vrf": e.get("vrf"), "state": e.get("state")}
        else:
            out[str(vni)] = {
                "type": e.get("type"),
                "vrf": e.get("vrf"),
                "remote_vteps": e.get("remoteVteps", []),
                "macs": e.get("numMacs"),
                "neighbours": e.get("numArpNd"),
            }
    return out


def _ignored(prefix: str) -> bool:
    try:
        net = ip_network(prefix)
    except ValueError:
        return False
    return net.version == 6 and (net.is_link_local or net.is_multicast)


def items(doc: dict[str, Any]) -> dict[tuple[str, str, str, str], Any]:
    """A baseline flattened: (node, vrf, what, key) -> value, what being session, prefixes, route or vni."""
    out: dict[tuple[str, str, str, str], Any] = {}
    for node, state in (doc.get("nodes") or {}).items():
        for vrf, peers in (state.get("sessions") or {}).items():
            for key, s in peers.items():
                out[(node, vrf, "session", key)] = s.get("state")
                out[(node, vrf, "prefixes", key)] = {"accepted": s.get("accepted"), "sent": s.get("sent")}
        for vrf, table in (state.get("routes") or {}).items():
            for prefix, r in table.items():
                out[(node, vrf, "route", prefix)] = (
                    f"{r.get('protocol')} via {', '.join(r.get('nexthops') or []) or '-'}"
                )
        for vni, v in (state.get("vnis") or {}).items():
            out[(node, v.get("vrf") or "-", "vni", vni)] = {k: v[k] for k in v if k != "vrf"}
        for vrf, adj in (state.get("adjacencies") or {}).items():
            for key, st in adj.items():
                out[(node, vrf, "adjacency", key)] = st
    return out
