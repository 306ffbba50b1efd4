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


def expected_routes(fabric: Fabric, node: str, t: Tenant) -> dict[str, frozenset[str]]:
    """prefix -> next hops ("connected" or remote VTEP loopbacks) that VTEP `node` must have in `t`'s VRF.

    A subnet several VTEPs announce (type-5) is multipath over the nearest of them:
    BGP keeps the shortest AS paths only. Drains come first: graceful shutdown gives
    every path through a drained node LOCAL_PREF 0, which loses before AS-path length
    counts, so owners reached around every drained node (and not drained) win. A
    drained `node` itself gives everything it receives LOCAL_PREF 0: nothing changes."""
    lo = {n: fabric.nodes[n].loopback for n in t.vteps()}
    drained = set() if fabric.nodes[node].drain else set(fabric.drained()) - {node}
    near = fabric.hops(node)                  # BGP hops = AS-path length of what they originate
    around = fabric.hops(node, drained) if drained else near
    rank = {v: (0, around[v]) if v in around else (1, near.get(v, 99)) for v in t.vteps()}
    local = {s.name for s in t.segments_on(node)}
    out: dict[str, frozenset[str]] = {s.subnet: frozenset({CONNECTED}) for s in t.segments_on(node)}
    for a in t.attachments:
        if a.vtep != node:
            out[a.address.split("/")[0] + "/32"] = frozenset({lo[a.vtep]})
    for s in t.segments.values():
        owners = t.segment_vteps(s.name)
        if s.name not in local and owners:
            best = min(rank[v] for v in owners)
            out[s.subnet] = frozenset(lo[v] for v in owners if rank[v] == best)
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
