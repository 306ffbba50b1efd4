"""Tenant VRF contents, derived from intent and read from FRR.

Each VRF on a VTEP must hold exactly: its local segments (connected), a /32 to
every remote host of the tenant (type-2 MAC/IP, symmetric IRB) and its remote-
only segments (type-5), each via the VTEPs that own them. Anything else, above
all a prefix or next hop that belongs to another tenant, is a leak. Overlapping
address spaces make prefixes alone ambiguous, so routes are compared as
prefix -> next-hop VTEPs.
"""
from __future__ import annotations

from twin.runtime.exec import NodeExec
from twin.topology.model import Fabric, Tenant

CONNECTED = "connected"


def hops(fabric: Fabric, node: str) -> dict[str, int]:
    """BGP hops from `node` to every router: the AS-path length of what they originate."""
    dist, todo = {node: 0}, [node]
    while todo:
        nxt = []
        for n in todo:
            for p in fabric.nodes[n].fabric_ports:
                if p.peer_node not in dist:
                    dist[p.peer_node] = dist[n] + 1
                    nxt.append(p.peer_node)
        todo = nxt
    return dist


def expected_routes(fabric: Fabric, node: str, t: Tenant) -> dict[str, frozenset[str]]:
    """prefix -> next hops ("connected" or remote VTEP loopbacks) that VTEP `node` must have in `t`'s VRF.

    A subnet several VTEPs announce (type-5) is multipath over the nearest of them:
    BGP keeps the shortest AS paths only."""
    lo = {n: fabric.nodes[n].loopback for n in t.vteps()}
    dist = hops(fabric, node)
    local = {s.name for s in t.segments_on(node)}
    out: dict[str, frozenset[str]] = {fabric_seg.subnet: frozenset({CONNECTED})
                                      for fabric_seg in t.segments_on(node)}
    for a in t.attachments:
        if a.vtep != node:
            out[a.address.split("/")[0] + "/32"] = frozenset({lo[a.vtep]})
    for s in t.segments.values():
        owners = t.segment_vteps(s.name)
        if s.name not in local and owners:
            near = min(dist.get(v, 99) for v in owners)
            out[s.subnet] = frozenset(lo[v] for v in owners if dist.get(v, 99) == near)
    return out


def actual_routes(doc: dict) -> dict[str, frozenset[str]]:
    """`show ip route vrf X json` -> prefix -> next hops of its selected route."""
    out = {}
    for prefix, entries in doc.items():
        for r in entries:
            # FRR 10 lists the VTEP's own addresses as "local" /32s: not routes of the tenant's
            if not r.get("selected") or r.get("protocol") == "local":
                continue
            hops = set()
            for nh in r.get("nexthops", []):
                hops.add(CONNECTED if nh.get("directlyConnected") or r.get("protocol") == "connected"
                         else nh.get("ip", nh.get("interfaceName", "?")))
            out[prefix] = frozenset(hops)
    return out


def vrf_routes(ex: NodeExec, vrf: str) -> dict[str, frozenset[str]]:
    (doc,) = ex.vtysh_json(f"show ip route vrf {vrf} json")
    return actual_routes(doc)


def compare(expected: dict[str, frozenset[str]], actual: dict[str, frozenset[str]],
            owner: dict[str, str] | None = None) -> list[str]:
    """Readable differences: missing routes, wrong next hops, routes that should not be there."""
    owner = owner or {}
    diffs = []
    for p, hops in sorted(expected.items()):
        if p not in actual:
            diffs.append(f"missing {p} via {', '.join(sorted(hops))}")
        elif actual[p] != hops:
            diffs.append(f"{p} via {', '.join(sorted(actual[p]))}, expected via {', '.join(sorted(hops))}")
    for p in sorted(set(actual) - set(expected)):
        diffs.append(f"unexpected {p} via {', '.join(sorted(actual[p]))}" + (f" ({owner[p]})" if p in owner else ""))
    return diffs
