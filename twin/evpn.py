"""Reading FRR's EVPN state per tenant (pure functions over `show ... json`)."""
from __future__ import annotations

import re

from twin.topology.model import Tenant

ROUTES = "show bgp l2vpn evpn route json"
VNIS = "show evpn vni detail json"
_RT = re.compile(r"RT:[0-9.]+:(\d+)")


def routes(doc: dict) -> list[tuple[int, str, set[int]]]:
    """Every EVPN route of `show bgp l2vpn evpn route json`: (type, prefix, VNIs in its route targets)."""
    out = []
    for rd, table in doc.items():
        if not isinstance(table, dict):
            continue
        for prefix, entry in table.items():
            if not prefix.startswith("["):
                continue
            paths = entry.get("paths", []) if isinstance(entry, dict) else entry
            vnis: set[int] = set()
            for p in paths:
                for path in (p if isinstance(p, list) else [p]):
                    comm = (path.get("extendedCommunity") or {}).get("string", "")
                    vnis |= {int(v) for v in _RT.findall(comm)}
            out.append((int(prefix[1]), prefix, vnis))
    return out


def tenant_vnis(t: Tenant) -> set[int]:
    return {t.l3vni} | {s.l2vni for s in t.segments.values()}


def route_counts(doc: dict, t: Tenant) -> dict[str, int]:
    """Type-2/3/5 routes in one node's EVPN table that belong to tenant `t` (by route target)."""
    mine = tenant_vnis(t)
    counts = {"type2": 0, "type3": 0, "type5": 0}
    for rtype, _, vnis in routes(doc):
        if vnis & mine and f"type{rtype}" in counts:
            counts[f"type{rtype}"] += 1
    return counts


def vni_states(doc) -> dict[int, dict]:
    """`show evpn vni detail json` -> {vni: entry} (FRR prints a list, or a dict for one VNI)."""
    entries = doc if isinstance(doc, list) else list(doc.values()) if isinstance(doc, dict) else []
    return {int(e["vni"]): e for e in entries if isinstance(e, dict) and "vni" in e}


def normalize_vni(entry: dict) -> dict:
    """One VNI of `show evpn vni detail json` in the same shape on FRR 8.4 and 10:
    `vrf` (10 says `tenantVrf`) and `remoteVteps` as a sorted list of IPs (8.4 lists
    them under `numRemoteVteps`; 10 gives objects with an `ip`)."""
    got = dict(entry)
    if "tenantVrf" in got and "vrf" not in got:
        got["vrf"] = got["tenantVrf"]
    remotes = got.get("remoteVteps")
    if isinstance(remotes, list):
        got["remoteVteps"] = sorted(r["ip"] if isinstance(r, dict) else r for r in remotes)
    elif isinstance(got.get("numRemoteVteps"), list):
        got["remoteVteps"] = sorted(got["numRemoteVteps"])
    elif got.get("type") == "L2":
        got["remoteVteps"] = []
    return got
