"""FRR in a node: the commands twin reads it with, and pure readers of their JSON.

Every `show ... json` twin runs is named here, with the function that turns its
output into what the rest of twin compares against intent; FRR 8.4 and 10
print some of these differently, and that difference is absorbed here. The
reload commands (frr-reload.py) and the "is FRR running its file?" test too.
"""

from __future__ import annotations

import re
from typing import Iterator

from twin.base import timeouts, wait
from twin.config.steps import Step
from twin.intent.tenants import CONNECTED
from twin.runtime import frrboot, kernel, nodefs, ospfdif
from twin.runtime.exec import NodeExec

SUMMARY = "show bgp ipv4 unicast summary json"  # underlay sessions
SUMMARY_ALL = "show bgp summary json"  # every AFI (EVPN too)
ROUTES = "show bgp l2vpn evpn route json"
RIB = "show ip route json"  # the default VRF: loopbacks
VNIS = "show evpn vni detail json"
BGP_IPV4 = "show bgp ipv4 unicast json"  # the underlay's BGP table (public prefixes, default)
FRR_CONF = "frr.conf"
RELOAD = ["/usr/lib/frr/frr-reload.py", "--reload", "--stdout", f"/etc/frr/{FRR_CONF}"]
RESTART = ["/usr/lib/frr/frrinit.sh", "restart"]
# what it means when zebra knows no VNI at all
NO_EVPN = (
    "zebra knows no VNI at all: EVPN is off; `advertise-all-vni` under `address-family l2vpn evpn` "
    "of the default `router bgp` turns it on"
)
_RT = re.compile(r"RT:[0-9.]+:(\d+)")
_EVPN = re.compile(r"\[(\d)\]:\[\d+\]:\[(\d+)\]:\[([^\]]+)\](?::\[\d+\]:\[([^\]]+)\])?")


# what a router's own config declares (twin.intent.generic), read per protocol
ADJACENCIES = {
    "bgp": "show bgp vrf all neighbors json",
    "ospf": "show ip ospf vrf all neighbor json",
    "ospf6": "show ipv6 ospf6 neighbor json",
    "isis": "show isis neighbor json",
}
UP_STATE = {"bgp": "Established", "ospf": "Full", "ospf6": "Full", "isis": "Up"}


def adjacency_states(protocol: str, doc: object) -> dict[tuple[str, str], str]:
    """(VRF, neighbor or interface) -> state, from the protocol's `ADJACENCIES` JSON. An interface
    with several neighbours keeps the best (up) one."""
    out: dict[tuple[str, str], str] = {}

    def put(key: tuple[str, str], st: str) -> None:
        if not out.get(key, "").startswith(UP_STATE[protocol]):
            out[key] = st

    for vrf, key, st in _adjacencies(protocol, doc if isinstance(doc, dict) else {}):
        put((vrf, key), st)
    return out


def _adjacencies(protocol: str, doc: dict) -> Iterator[tuple[str, str, str]]:
    if protocol == "bgp":
        for vrf, peers in doc.items():
            for name, p in peers.items() if isinstance(peers, dict) else ():
                if isinstance(p, dict) and "bgpState" in p:
                    yield vrf, name, p["bgpState"]
    elif protocol == "ospf":
        per_vrf = doc if "neighbors" not in doc else {"default": doc}
        for vrf, d in per_vrf.items():
            for nbrs in ((d or {}).get("neighbors") or {}).values() if isinstance(d, dict) else ():
                for n in nbrs if isinstance(nbrs, list) else [nbrs]:
                    yield vrf, str(n.get("ifaceName", "")).split(":")[0], str(n.get("nbrState", "?"))
    elif protocol == "ospf6":
        for n in doc.get("neighbors") or []:
            yield "default", n.get("interfaceName", ""), str(n.get("state", "?"))
    elif protocol == "isis":
        for area in doc.get("areas") or []:
            for c in area.get("circuits") or []:
                if "interface" in c:
                    yield "default", c["interface"], str(c.get("state", "?"))


def vrf_routes_cmd(vrf: str) -> str:
    return f"show ip route vrf {vrf} json"


def session_states(summary: dict, ports: list[str]) -> dict[str, str]:
    """State of the session on each of `ports`, from `show bgp ipv4 unicast summary json`."""
    peers = summary.get("peers", {}) if isinstance(summary, dict) else {}
    return {p: peers.get(p, {}).get("state", "absent") for p in ports}


def flaps(summary: dict, ports: list[str]) -> dict[str, tuple[int, int, str]]:
    """Sessions on `ports` that went down after they had been Established: port -> (times
    re-established, times dropped, state now), from FRR's connectionsEstablished/Dropped counters."""
    peers = summary.get("peers", {}) if isinstance(summary, dict) else {}
    out = {}
    for p in ports:
        peer = peers.get(p) if isinstance(peers.get(p), dict) else {}
        up, dropped = int(peer.get("connectionsEstablished") or 0), int(peer.get("connectionsDropped") or 0)
        if dropped:
            out[p] = (max(0, up - 1), dropped, str(peer.get("state", "?")))
    return out


def never_started(summary: dict, ports: list[str]) -> bool:
    """Every session on `ports` Idle and never Established: bgpd holds them (not one tried)."""
    peers = summary.get("peers", {}) if isinstance(summary, dict) else {}
    return all(
        isinstance(peers.get(p), dict)
        and peers[p].get("state") == "Idle"
        and not peers[p].get("connectionsEstablished")
        for p in ports
    )


def unexpected_peers(summary: dict, ports: list[str]) -> list[str]:
    """Neighbors FRR has (in `show bgp ... summary json`) that are none of the expected `ports`."""
    peers = summary.get("peers", {}) if isinstance(summary, dict) else {}
    return sorted(p for p in peers if p not in ports)


def evpn_routes(doc: dict) -> list[tuple[int, str, set[int]]]:
    """Every EVPN route of `show bgp l2vpn evpn route json`: (type, prefix, VNIs in its route targets)."""
    out = []
    for table in doc.values():
        if not isinstance(table, dict):
            continue
        for prefix, entry in table.items():
            if not prefix.startswith("["):
                continue
            paths = entry.get("paths", []) if isinstance(entry, dict) else entry
            vnis: set[int] = set()
            for p in paths:
                for path in p if isinstance(p, list) else [p]:
                    comm = (path.get("extendedCommunity") or {}).get("string", "")
                    vnis |= {int(v) for v in _RT.findall(comm)}
            out.append((int(prefix[1]), prefix, vnis))
    return out


def evpn_table(doc: dict) -> list[tuple[tuple[int, str, str], frozenset[int]]]:
    """Every EVPN route of `show bgp l2vpn evpn route json` as ((type, what, originating VTEP),
    VNIs of its route targets): what is a MAC, "MAC IP" (type-2), the VTEP (type-3) or the
    prefix (type-5); the originator is the route's next hop (VTEPs keep theirs end to end)."""
    out = []
    for table in doc.values():
        if not isinstance(table, dict):
            continue
        for prefix, entry in table.items():
            m = _EVPN.fullmatch(prefix)
            if not m:
                continue
            rtype, length, first, ip = int(m[1]), m[2], m[3], m[4]
            what = {2: f"{first} {ip}" if ip else first, 5: f"{first}/{length}"}.get(rtype, first)
            hops, vnis = set(), set()
            for p in entry.get("paths", []) if isinstance(entry, dict) else entry:
                for path in p if isinstance(p, list) else [p]:
                    vnis |= {int(v) for v in _RT.findall((path.get("extendedCommunity") or {}).get("string", ""))}
                    hops |= {nh.get("ip") for nh in path.get("nexthops", []) if nh.get("ip")}
            out += [((rtype, what, hop), frozenset(vnis)) for hop in sorted(hops)]
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


def vni_states(doc: object) -> dict[int, dict]:
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
        got["remoteVteps"] = sorted(str(r.get("ip", r) if isinstance(r, dict) else r) for r in remotes)
    elif isinstance(got.get("numRemoteVteps"), list):
        got["remoteVteps"] = sorted(str(r) for r in got["numRemoteVteps"])
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
                hops.add(
                    CONNECTED
                    if nh.get("directlyConnected") or r.get("protocol") == "connected"
                    else nh.get("ip", nh.get("interfaceName", "?"))
                )
            out[prefix] = frozenset(hops)
    return out


def await_bridge(ex: NodeExec, port: str, bridge: str) -> None:
    """Until zebra holds `port` in `bridge`. zebra (FRR 10.3) applies a port's new master in its
    dataplane thread but reads the port's MACs at once, and drops a MAC of a port it holds for no
    bridge: a static MAC written before then is never advertised (no type-2 route)."""

    def missing() -> list[str]:
        doc = ex.vtysh_json(f"show interface {port} vrf all json", timeout=timeouts.VTYSH)[0]
        got = doc.get(port, {}).get("masterInterface")
        return [] if got == bridge else [f"{ex.where}: {port} in {bridge} (zebra has it in {got or 'none'})"]

    wait.until(missing, timeouts.ZEBRA_PORT, "zebra knowing the port's bridge", first=0.05, cap=0.5)


def apply_live(steps: list[Step], pid: int, ex: NodeExec, tolerant: bool = False) -> list[str]:
    """`kernel.apply` on a node whose zebra runs: a static MAC written (or deleted) on a port that
    these steps put in a bridge waits until zebra holds the port there (`await_bridge`)."""
    skipped, start, masters = [], 0, {}
    for i, s in enumerate(steps):
        if s.op == "master":
            masters[s.dev] = s.args["master"]
        elif s.op in ("fdb", "unfdb") and s.dev in masters:
            skipped += kernel.apply(steps[start:i], pid, ex, tolerant)
            await_bridge(ex, s.dev, masters.pop(s.dev))
            start = i
    return skipped + kernel.apply(steps[start:], pid, ex, tolerant)


# FRR runs the host name its daemons took from the system at start, whatever frr.conf's `hostname` says
# (10.3's vtysh keeps that line to itself): frr-reload "deletes" the running name at every reload, never
# done (a day-2 `system hostname` waited FRR_RELOAD's 120 s and was rolled back). Set apart here.
HOSTNAME_LINE = re.compile(r"^(no )?hostname( |$)")


def pending(ex: NodeExec) -> list[str]:
    """What FRR runs that its config file no longer has: the "Lines To Delete" of
    `frr-reload.py --test` (its lines to add are not looked at: a file may spell out
    defaults, which FRR does not show), but the host name (`HOSTNAME_LINE`)."""
    return to_delete(ex.check([RELOAD[0], "--test", "--stdout", RELOAD[-1]], timeouts.FRR_RELOAD).stdout)


def to_delete(out: str) -> list[str]:
    """The lines of `frr-reload.py --test`'s output that FRR must still let go (`pending`)."""
    section, lines = "", []
    for line in out.splitlines():
        if line.startswith("Lines To "):
            section = line
        elif section == "Lines To Delete" and line.strip() and not line.startswith("===") and " INFO: " not in line:
            lines.append(line.strip())
    return [line for line in lines if line != "exit" and not HOSTNAME_LINE.match(line)]


# Lines zebra applies by writing /proc/sys, which a container holds read-only: zebra refuses them
# whatever their value (a user's `no ipv6 forwarding`); the node got that value as its sysctl
# (`twin.config.userconf.forwarding_sysctls`), so only these refused lines do not fail a reload.
SYSCTL_LINES = re.compile(r"^(no )?(ip|ipv6) forwarding$")
# A list entry whose value changed at the same seq: frr-reload adds the new one (which takes the seq's place)
# before it deletes the old one, which bgpd then no longer has and refuses; `take` checks nothing old is left.
REPLACED_LINES = re.compile(r"^no bgp (as-path access-list|community-list|large-community-list) \S+ seq \d+ ")
_REFUSED = re.compile(r"Failure to communicate\[\d+\] to \S+, line: (.+)")


def reload(ex: NodeExec) -> None:
    """`frr-reload.py` of the node's frr.conf; CommandError unless it took every line but the ones
    a container cannot apply (`SYSCTL_LINES`) and the deletes of list entries already replaced."""
    res = ex.run(RELOAD, timeouts.FRR_RELOAD)
    refused = [line.strip() for line in _REFUSED.findall(res.stdout + res.stderr)]
    if not res.ok and not (refused and all(SYSCTL_LINES.match(line) or REPLACED_LINES.match(line) for line in refused)):
        res.check()


def take(ex: NodeExec, restart: bool = False, removes: bool = True) -> None:
    """FRR in the node runs /etc/frr/frr.conf: `frr-reload.py` (only the difference, no
    restart), or a restart where its daemons changed (in twin's node image its boot in order, watched:
    `twin.runtime.frrboot`); done when FRR holds nothing the file
    does not have. bgpd may refuse to delete a tenant's `router bgp ASN vrf X` while it
    still knows the VRF's L3VNI, which zebra tells it a moment later: what is left is
    reloaded again (only the difference). The same for a change and for its rollback. A config
    that only adds lines (`removes` False) leaves nothing to take away: no check is needed, unless
    the node keeps ospfd's interface settings (`twin.runtime.ospfdif`): ospfd runs that file's too."""
    wanted = ospfdif.read(ex)  # ospfd's interface settings, sent to ospfd alone (None: the node keeps none)
    if restart and nodefs.exists(ex.pid, frrboot.FIFO, ex.where):  # twin's node image boots FRR itself
        frrboot.reboot(ex.where, ex.pid)
    elif restart:  # an image of the user's: FRR's own init script (the daemons it starts belong to the node)
        ex.start(RESTART, timeouts.FRR_RELOAD).check()
    else:
        ospfdif.around(ex, wanted, lambda: reload(ex))
    if not removes and not restart and wanted is None:
        return

    def left() -> list[str]:
        lines = pending(ex)
        ospfd = ospfdif.left(ospfdif.running(ex), wanted) if wanted is not None else []
        if lines or ospfd:
            ospfdif.around(ex, wanted, lambda: ex.run(RELOAD, timeouts.FRR_RELOAD))
        return [f"{ex.where}: FRR still runs, not in {FRR_CONF}: {line}" for line in lines] + [
            f"{ex.where}: {line}" for line in ospfd
        ]

    wait.until(left, timeouts.FRR_RELOAD, f"{ex.where}: FRR running {FRR_CONF}", first=0.2, cap=1.0)


# --- readers for the user's checks and the behaviour baseline --------------------------------------
AFI_KEYS = {"ipv4": "ipv4Unicast", "ipv6": "ipv6Unicast", "evpn": "l2VpnEvpn"}  # keys of `summary json`
SUMMARY_VRFS = "show bgp vrf all summary json"
ROUTES_V4_VRFS = "show ip route vrf all json"
ROUTES_V6_VRFS = "show ipv6 route vrf all json"


def summary_cmd(vrf: str = "default") -> str:
    return f"show bgp vrf {vrf} summary json"


def route_cmd(vrf: str, prefix: str) -> str:
    """The routing table of `vrf` holding `prefix` (IPv4 or IPv6)."""
    return f"show {'ipv6' if ':' in prefix else 'ip'} route vrf {vrf} json"


def bgp_table_cmd(vrf: str, afi: str) -> str:
    return ROUTES if afi == "evpn" else f"show bgp vrf {vrf} {afi} unicast json"


def peers(summary: dict, afi: str) -> dict[str, dict]:
    """Peers of one AFI in `show bgp [vrf X] summary json` (`afi`: ipv4, ipv6, evpn)."""
    table = summary.get(AFI_KEYS[afi]) if isinstance(summary, dict) else None
    got = table.get("peers") if isinstance(table, dict) else None
    return got if isinstance(got, dict) else {}


def peer_state(summary: dict, afi: str, key: str) -> str:
    """Established, Idle, ... of one peer (FRR's key: interface or address), or `absent`."""
    return str(peers(summary, afi).get(key, {}).get("state", "absent"))


def bgp_table_size(doc: dict, afi: str) -> int:
    """Prefixes in a BGP table (`bgp_table_cmd`)."""
    if afi == "evpn":
        return len(evpn_routes(doc))
    routes = doc.get("routes") if isinstance(doc, dict) else None
    return len(routes) if isinstance(routes, dict) else 0


def hop(nh: dict) -> str:
    """One next hop in words: its address, or its interface (link-local next hops of BGP
    unnumbered change with every MAC, the interface does not), `connected` on an interface."""
    ip, dev = nh.get("ip"), nh.get("interfaceName")
    if nh.get("directlyConnected"):
        return dev or "connected"
    if ip and not ip.lower().startswith("fe80:"):
        return ip
    return dev or ip or "?"


def route_entries(doc: dict, prefix: str) -> list[dict]:
    """Entries of `prefix` in `show ip route vrf X json`: {protocol, selected, nexthops: [hop], names:
    [[every name of each next hop: hop, address, interface]]}."""
    entries = doc.get(prefix, []) if isinstance(doc, dict) else []
    return [
        {
            "protocol": e.get("protocol", "?"),
            "selected": bool(e.get("selected")),
            "nexthops": sorted({hop(nh) for nh in e.get("nexthops", [])}),
            "names": [
                sorted({hop(nh), *(nh[k] for k in ("ip", "interfaceName") if k in nh)}) for nh in e.get("nexthops", [])
            ],
        }
        for e in entries
        if isinstance(e, dict)
    ]
