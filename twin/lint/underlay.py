"""The underlay a node's config declares, against the intent: a BGP neighbor on every fabric link
(up, activated for IPv4 and, where the fabric has tenants, for EVPN, with the right remote AS),
ASNs (eBGP needs the two ends of a link, and a router and those whose loopback it must learn,
distinct), its loopback advertised, ECMP where tenant traffic has equal-cost ports to choose
between, the drain, and MTUs along its links."""

from __future__ import annotations

import re
from dataclasses import replace

from twin.intent import paths
from twin.lint.declared import At, Declared, Peer
from twin.lint.findings import Finding
from twin.lint.scope import Scope, control, peer_of, route_checks, session_checks


def neighbors(s: Scope, d: Declared) -> list[Finding]:
    me = s.node(d.node)
    ports = me.fabric_ports
    if d.bgp is None:
        far = ", ".join(sorted({p.peer_node for p in ports})) or "none"
        every = tuple(x for p in ports for x in session_checks(s.fabric, d.node, p.name))
        return (
            [
                Finding(
                    d.node,
                    "neighbor",
                    d.at(None, "no BGP"),
                    f"{d.node} runs no BGP (no router bgp, or it is "
                    f"off): its sessions to {far} never come up, and nothing reaches it",
                    every + route_checks(me.loopback),
                )
            ]
            if ports
            else []
        )
    out = []
    stray = "; the config has " + ", ".join(a.text for a in d.stray) + ", on no link" if d.stray else ""
    for p in ports:
        peer, far = d.peers.get(p.name), peer_of(s.fabric, d.node, p.name)
        explains = session_checks(s.fabric, d.node, p.name)
        session = f"the session {d.node} - {p.peer_node} ({d.node}:{p.name} - {far})"
        if p.name in d.down:
            out.append(
                Finding(
                    d.node,
                    "neighbor",
                    d.down[p.name],
                    f"{p.name} is the link to {far}: set down, {session} never comes up",
                    explains,
                )
            )
        if peer is None:
            out.append(
                Finding(
                    d.node,
                    "neighbor",
                    _at(d.neighbors_at or d.bgp, f"no BGP neighbor on {p.name}"),
                    f"{p.name} is the link to {far}: without a neighbor on it {session} never comes up{stray}",
                    explains,
                )
            )
        elif peer.shutdown:
            out.append(Finding(d.node, "neighbor", peer.at, f"shut down: {session} stays down", explains))
        elif not peer.ipv4:
            out.append(
                Finding(
                    d.node,
                    "neighbor",
                    peer.at,
                    f"not activated for IPv4 unicast: {session} carries no underlay route (loopbacks, VTEP addresses)",
                    explains,
                )
            )
        else:
            out += _remote_as(s, d, p.peer_node, far, peer, explains)
    return out


def _remote_as(s: Scope, d: Declared, other: str, far: str, peer: Peer, explains: tuple[str, ...]) -> list[Finding]:
    mine, theirs = s.asn.get(d.node), s.asn.get(other)
    given = peer.remote_as
    if given == "internal" and mine != theirs:
        why = (
            f"{far} is {other}, AS {theirs}; iBGP needs the same AS ({d.node} is AS {mine}): the session never "
            "comes up (the fabric is eBGP: remote-as external)"
        )
    elif given and given.isdigit() and int(given) != theirs:
        why = f"{far} is {other}, whose AS is {theirs}: the session never comes up"
    else:
        return []
    return [Finding(d.node, "neighbor", peer.at, f"remote-as {given}: {why}", explains)]


def asns(s: Scope, d: Declared) -> list[Finding]:
    """An ASN other than the topology's that some router it must learn routes from (or peer with)
    runs too: eBGP refuses the session, and drops every route that carries its own ASN."""
    me = s.node(d.node)
    if d.bgp is None or d.asn is None or d.asn == me.asn:
        return []
    learns = set(s.wants(d.node).loopbacks)
    clash = [n for n, a in s.asn.items() if n != d.node and a == d.asn and s.node(n).asn != me.asn]
    hurt = [n for n in clash if n in learns or d.node in s.wants(n).loopbacks]
    if not hurt:
        return []
    peers = {p.peer_node: p for p in me.fabric_ports}
    linked = [n for n in hurt if n in peers]
    owner = ", ".join(hurt)
    ends = ", ".join(f"{d.node}:{peers[n].name}" for n in linked)
    why = (
        f"{d.asn} is {owner}'s ASN (the topology gives {d.node} {me.asn}); "
        + (
            f"{d.node} and {', '.join(linked)} peer over eBGP ({ends}), which needs distinct ASNs: that session "
            "never comes up; "
            if linked
            else ""
        )
        + f"eBGP drops every route carrying its own ASN, so {d.node} learns none of {owner}'s routes "
        f"(its loopback among them) and {owner} none of {d.node}'s"
    )
    explains = tuple(
        x
        for n in [d.node, *hurt]
        for x in (control("bgp", n), control("loopbacks", n)) + route_checks(s.node(n).loopback)
    )
    return [Finding(d.node, "asn", d.asn_at or d.at(d.bgp.line, f"router bgp {d.asn}"), why, explains)]


def loopback(s: Scope, d: Declared) -> list[Finding]:
    """The node's loopback on lo (where the config owns lo) and advertised (a network, or connected)."""
    me = s.node(d.node)
    lo = f"{me.loopback}/32"
    out = []
    if d.loopbacks is not None and lo not in d.loopbacks:
        have = ", ".join(d.loopbacks) or "no address"
        at = next(iter(d.loopbacks.values()), d.at(None, "interface lo"))
        out.append(
            Finding(
                d.node,
                "loopback",
                at,
                f"lo has {have}, not {lo}: {d.node}'s loopback (the topology's) "
                "is what its peers route to, and its VTEP address",
                route_checks(me.loopback),
            )
        )
    if d.bgp is not None and lo not in d.networks and d.connected is None:
        vtep = " (and it is its VTEP address: the other VTEPs' VXLAN tunnels end there)" if s.wants(d.node).vtep else ""
        out.append(
            Finding(
                d.node,
                "loopback",
                _at(d.networks_at or d.bgp, f"{lo} not advertised"),
                f"{d.node}'s loopback (the topology's) is neither a network nor a connected route it "
                f"redistributes: no router learns it{vtep}",
                route_checks(me.loopback),
            )
        )
    return out


def ecmp(s: Scope, d: Declared) -> list[Finding]:
    """Where tenant traffic has equal-cost ports to choose between at this node: more than one path
    kept (maximum-paths), and multipath-relax where those ports lead to different ASes."""
    if d.node not in s.branching or d.bgp is None:
        return []
    explains = (rf"^underlay: .*never left {re.escape(d.node)} by",)
    a, b = sorted(s.branching[d.node])[0]
    spread = paths.next_hops(s.fabric, a, b)[d.node]
    out = []
    if d.maximum_paths is not None and d.maximum_paths[0] < 2:
        out.append(
            Finding(
                d.node,
                "ecmp",
                d.maximum_paths[1],
                f"{d.node} spreads tenant traffic over equal-cost "
                f"ports ({a} to {b} by {', '.join(spread)}): with one path kept it sends all of it by one",
                explains,
            )
        )
    odd = paths.uneven(s.fabric, d.node)
    if odd and d.multipath_relax is not None and not d.multipath_relax.on:
        x, y, hops = odd
        ports = s.node(d.node).ports_by_name
        via = " and ".join(f"{ports[p].peer_node} (AS {s.node(ports[p].peer_node).asn})" for p in hops)
        out.append(
            Finding(
                d.node,
                "ecmp",
                d.multipath_relax.at,
                f"{d.node}'s equal-cost paths from {x} to {y} lead "
                f"through {via}: their AS paths differ, so without as-path multipath-relax BGP keeps one "
                f"and {d.node} sends every VXLAN frame by one port",
                explains,
            )
        )
    return out


def mtus(s: Scope, d: Declared) -> list[Finding]:
    me = s.node(d.node)
    out = []
    for port, (mtu, at) in sorted(d.mtus.items()):
        p = me.ports_by_name.get(port)
        if p is None or p.role == "plain" or mtu == p.mtu:
            continue
        far = peer_of(s.fabric, d.node, port)
        size = "larger frames are dropped" if mtu < p.mtu else f"{far} drops the frames larger than {p.mtu}"
        out.append(
            Finding(
                d.node,
                "mtu",
                at,
                f"the topology gives the link {d.node}:{port} - {far} MTU {p.mtu} "
                f"(tenant frames and their VXLAN headers are sized for it): {size}",
                (rf"^underlay: .*\b({re.escape(d.node)}|{re.escape(p.peer_node)})\b",),
            )
        )
    return out


def drain(s: Scope, d: Declared) -> list[Finding]:
    me = s.node(d.node)
    g = d.graceful_shutdown
    if g is None or g.on == me.drain:
        return []
    why = (
        f"{d.node} is not drained in the topology: graceful shutdown gives every path through it LOCAL_PREF 0, "
        "so traffic goes around it where it can"
        if g.on
        else f"{d.node} is drained in the topology (drain: true): without graceful shutdown traffic still crosses it"
    )
    return [Finding(d.node, "drain", g.at, why, (rf"^(underlay|control): .*\b{re.escape(d.node)}\b",))]


def evpn_peers(s: Scope, d: Declared) -> list[Finding]:
    """EVPN rides the underlay sessions: every fabric session (but those to the internet) carries it
    where the fabric has tenants."""
    want = s.wants(d.node)
    if not want.evpn or want.edge:
        return []
    out = []
    for p in s.node(d.node).fabric_ports:
        peer = d.peers.get(p.name)
        if peer is None or peer.evpn or peer.shutdown or p.name in want.edge_ports:
            continue
        tenants = ", ".join(s.fabric.tenants)
        out.append(
            Finding(
                d.node,
                "evpn",
                peer.at,
                f"not activated for l2vpn evpn: EVPN rides the underlay sessions "
                f"and the fabric has tenants ({tenants}): no EVPN route crosses {d.node} - {p.peer_node}",
                (control("bgp", d.node), control("bgp", p.peer_node), r"^control: (vni|evpn|vrf) "),
            )
        )
    return out


def _at(at: At, text: str) -> At:
    """Where a missing fact would be said: `at`'s place, with words for what is missing."""
    return replace(at, text=text)
