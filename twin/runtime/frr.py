"""FRR in a node: the commands twin reads it with, and pure readers of their JSON.

Every `show ... json` twin runs is named here, with the function that turns its
output into what the rest of twin compares against intent; FRR 8.4 and 10
print some of these differently, and that difference is absorbed here. The
reload commands (frr-reload.py) and the "is FRR running its file?" test too.
"""
from __future__ import annotations

import re

from twin import timeouts, wait
from twin.intent.tenants import CONNECTED
from twin.runtime.exec import NodeExec

SUMMARY = "show bgp ipv4 unicast summary json"   # underlay sessions
SUMMARY_ALL = "show bgp summary json"            # every AFI (EVPN too)
ROUTES = "show bgp l2vpn evpn route json"
VNIS = "show evpn vni detail json"
BGP_IPV4 = "show bgp ipv4 unicast json"           # the underlay's BGP table (public prefixes, default)
FRR_CONF = "frr.conf"
RELOAD = ["/usr/lib/frr/frr-reload.py", "--reload", "--stdout", f"/etc/frr/{FRR_CONF}"]
RESTART = ["/usr/lib/frr/frrinit.sh", "restart"]
_RT = re.compile(r"RT:[0-9.]+:(\d+)")


def vrf_routes_cmd(vrf: str) -> str:
    return f"show ip route vrf {vrf} json"


def session_states(summary: dict, ports: list[str]) -> dict[str, str]:
    """State of the session on each of `ports`, from `show bgp ipv4 unicast summary json`."""
    peers = summary.get("peers", {}) if isinstance(summary, dict) else {}
    return {p: peers.get(p, {}).get("state", "absent") for p in ports}


def evpn_routes(doc: dict) -> list[tuple[int, str, set[int]]]:
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


def route_counts(doc: dict, vnis: set[int]) -> dict[str, int]:
    """Type-2/3/5 routes in one node's EVPN table whose route targets carry one of `vnis`."""
    counts = {"type2": 0, "type3": 0, "type5": 0}
    for rtype, _, rt_vnis in evpn_routes(doc):
        if rt_vnis & vnis and f"type{rtype}" in counts:
            counts[f"type{rtype}"] += 1
    return counts


def bgp_origins(doc: dict) -> dict[str, set[int]]:
    """`show bgp ipv4 unicast json` -> prefix -> the ASN that originated each valid path
    (the last of its AS path; 0 for the node's own)."""
    out: dict[str, set[int]] = {}
    for prefix, paths in (doc.get("routes") or {}).items() if isinstance(doc, dict) else ():
        for p in paths if isinstance(paths, list) else []:
            if not p.get("valid"):
                continue
            path = p.get("path")
            if path is None:
                path = (p.get("aspath") or {}).get("string", "")
            asns = [int(a) for a in str(path).split() if a.isdigit()]
            out.setdefault(prefix, set()).add(asns[-1] if asns else 0)
    return out


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


def vrf_routes(doc: dict) -> dict[str, frozenset[str]]:
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


def pending(ex: NodeExec) -> list[str]:
    """What FRR runs that its config file no longer has: the "Lines To Delete" of
    `frr-reload.py --test` (its lines to add are not looked at: a file may spell out
    defaults, which FRR does not show)."""
    out = ex.check([RELOAD[0], "--test", "--stdout", RELOAD[-1]], timeouts.FRR_RELOAD).stdout
    section, lines = "", []
    for line in out.splitlines():
        if line.startswith("Lines To "):
            section = line
        elif section == "Lines To Delete" and line.strip() and not line.startswith("===") and " INFO: " not in line:
            lines.append(line.strip())
    return [line for line in lines if line != "exit"]


def take(ex: NodeExec, restart: bool = False) -> None:
    """FRR in the node runs /etc/frr/frr.conf: `frr-reload.py` (only the difference, no
    restart), or a restart where its daemons changed; done when FRR holds nothing the file
    does not have. bgpd may refuse to delete a tenant's `router bgp ASN vrf X` while it
    still knows the VRF's L3VNI, which zebra tells it a moment later: what is left is
    reloaded again (only the difference). The same for a change and for its rollback."""
    if restart:
        ex.start(RESTART, timeouts.FRR_RELOAD).check()   # the daemons it starts belong to the node
    else:
        ex.check(RELOAD, timeouts.FRR_RELOAD)

    def left() -> list[str]:
        lines = pending(ex)
        if lines:
            ex.run(RELOAD, timeouts.FRR_RELOAD)
        return [f"{ex.where}: FRR still runs, not in {FRR_CONF}: {line}" for line in lines]

    wait.until(left, timeouts.FRR_RELOAD, f"{ex.where}: FRR running {FRR_CONF}", first=0.2, cap=1.0)
