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
    """prefix -> next hops ("connected" or remote VTEP loopbacks) that VTEP `node` must have in `t`'s VRF."""
    lo = {n: fabric.nodes[n].loopback for n in t.vteps()}
    local = {s.name for s in t.segments_on(node)}
    out: dict[str, frozenset[str]] = {fabric_seg.subnet: frozenset({CONNECTED})
                                      for fabric_seg in t.segments_on(node)}
    for a in t.attachments:
        if a.vtep != node:
            out[a.address.split("/")[0] + "/32"] = frozenset({lo[a.vtep]})
    for s in t.segments.values():
        if s.name not in local and t.segment_vteps(s.name):
            out[s.subnet] = frozenset(lo[v] for v in t.segment_vteps(s.name))
    return out


def actual_routes(doc: dict) -> dict[str, frozenset[str]]:
    """`show ip route vrf X json` -> prefix -> next hops of its selected route."""
    out = {}
    for prefix, entries in doc.items():
        for r in entries:
            if not r.get("selected"):
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
