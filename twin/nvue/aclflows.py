"""What a node's NVUE ACLs meet of what the topology says must pass, decided on the packets' fields (pure;
`twin.nvue.kernelcheck` judges it on the running node):

- tenant flows (RoCEv2 as twin sends it: UDP 4791, DSCP 26): through a port or bond, those of the host on
  it; through an SVI, those it routes (from a host in its VLAN on the node to one in another segment of the
  tenant: inbound; to a host in its VLAN on the node from one in another segment: outbound), never those
  its VLAN bridges;
- the node's BGP sessions (TCP 179 over the IPv6 link-local addresses of each fabric port: twin's underlay
  is unnumbered) and, where NVUE turns it on for a neighbor, BFD (UDP 3784): through the port's own
  bindings and the control plane's. Each packet meets the bindings on its way in order (a port's ingress,
  then the control plane's input; the control plane's output, then the port's egress), and the first rule
  that drops it is what cuts it. A BGP session opens from either end, so it is cut when both ways are (a
  rule that drops TCP to port 179 from the peer leaves the node's own connection to it); BFD runs both
  ways at once, so it is cut when either is.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from twin.nvue.acl import Headers, Rule
from twin.nvue.aclbind import CONTROL_PLANE, Acls, Binding
from twin.topology.model import Fabric

ROCE = (17, 49152, 4791, 26)  # protocol, source port, destination port, DSCP of twin's RoCE flows
ROCE_ECN = 2  # and their ECN codepoint: ECT(0), as RoCEv2 NICs send (twin.traffic.roce)
# the TCP flags of a connection's packets each way (SYN, ACK, data): the side that opens it, the side that answers
OPENS, ANSWERS = (0x02, 0x10, 0x18), (0x12, 0x10, 0x18)
BGP, BFD = 179, 3784
CS6 = 48  # the DSCP FRR's bgpd and bfdd mark their packets with
EPHEMERAL = range(32768, 61000)  # the kernel's local ports (a connection's, BFD's source port)
LINK_LOCAL = ("fe80::1", "fe80::2")  # the node's and the peer's, where no rule looks at addresses


def svi_segment(plane: Any, fabric: Fabric, b: Binding) -> tuple[str, str] | None:
    """(tenant, segment) of the SVI `b` is bound to, None: `b` is not an SVI's."""
    svi = next((s for s in plane.conf.svis.values() if s.name == b.port), None)
    vni = (plane.conf.vlans.get(svi.vlan) or [None])[0] if svi else None
    for t in fabric.tenants.values():
        for name, s in t.segments.items():
            if vni is not None and s.l2vni == vni:
                return t.name, name
    return None


def crossing(fabric: Fabric, node: str, plane: Any, b: Binding, r: Rule) -> list[tuple[str, str]]:
    """(source host, destination host) of the tenant flows crossing `b` its way that its ACL decides with
    rule `r`; `fabric` as the node runs it (`Plane.as_run`: a host's port is its bond)."""
    if b.cp:
        return []
    seg = svi_segment(plane, fabric, b)
    out = []
    for t in fabric.tenants.values():
        for a in t.attachments:
            here = (t.name, a.segment) == seg if seg else a.port == b.dev  # its VLAN's hosts, or the port's
            if a.vtep != node or not here:
                continue
            for o in t.attachments:
                if o.host == a.host or (seg and o.segment == a.segment):
                    continue  # an SVI meets what it routes, not what its VLAN bridges
                s, d = (a, o) if b.inbound else (o, a)
                smac, dmac = _macs(t, s, d, bridged=not seg and o.segment == a.segment, inbound=b.inbound)
                h = Headers(s.ip, d.ip, *ROCE, ecn=ROCE_ECN, smac=smac, dmac=dmac)
                if plane.acls.acls[b.acl].decide(h) == r:
                    out.append((s.host, d.host))
    return out


def _macs(t: Any, s: Any, d: Any, bridged: bool, inbound: bool) -> tuple[str, str]:
    """(source MAC, destination MAC) of a tenant flow's frames from host `s` to host `d` where a
    binding meets them: in from `s` (inbound) or out to `d`. Bridged in one segment, host to host; routed, a
    host's frames are to its gateway (its segment's anycast MAC) and come to the other from its own."""
    if bridged:
        return s.mac, d.mac
    if inbound:
        return s.mac, t.segments[s.segment].mac
    return t.segments[d.segment].mac, d.mac


@dataclass(frozen=True)
class Packet:
    """One kind of packet of a session through the node: its way, ports, and what it is in words."""

    way: str  # inbound or outbound
    proto: int
    sport: int
    dport: int
    what: str
    flags: tuple[int, ...] = (0,)  # the TCP flags its packets carry (a way is cut when one of them is dropped)


@dataclass
class Session:
    """A BGP or BFD session of the node on a port, and what its ACLs do to it."""

    kind: str  # BGP or BFD
    port: str
    peer: str
    cut: bool = False  # no way to open or keep it remains
    drops: list[tuple[Binding, Rule, Packet]] = field(default_factory=list)  # the first rule dropping each packet

    @property
    def named(self) -> str:
        return f"{self.kind} with {self.peer} on {self.port}"


def path(acls: Acls, dev: str, ns: str, way: str) -> list[Binding]:
    """The bindings a packet of port `dev` (in namespace `ns`) meets its way, in order."""
    port = [b for b in acls.bindings if not b.cp and b.way == way and b.dev == dev and b.ns == ns]
    cp = [
        b for b in acls.bindings if b.cp and b.way == way and b.ns == ns and (b.port == CONTROL_PLANE or b.dev == dev)
    ]
    return port + cp if way == "inbound" else cp + port


def ephemeral(acls: Acls) -> int:
    """A local port no rule of the node names: what a connection's or BFD's own end stands for."""
    named = {p for a in acls.acls.values() for r in a.rules for p in r.ports}
    return next(p for p in EPHEMERAL if p not in named)


def _ways(kind: str, node: str, peer: str, e: int) -> list[list[Packet]]:
    """The packets of each way a session opens and runs (a way is cut when one of its packets is)."""
    if kind == "BFD":
        return [
            [
                Packet("inbound", 17, e, BFD, f"BFD from {peer} (UDP to port {BFD})"),
                Packet("outbound", 17, e, BFD, f"BFD to {peer} (UDP to port {BFD})"),
            ]
        ]
    return [
        [  # the node connects to the peer's port 179
            Packet("outbound", 6, e, BGP, f"BGP to {peer} (TCP to port {BGP})", OPENS),
            Packet("inbound", 6, BGP, e, f"BGP from {peer} (TCP from port {BGP})", ANSWERS),
        ],
        [  # the peer connects to the node's
            Packet("inbound", 6, e, BGP, f"BGP from {peer} (TCP to port {BGP})", OPENS),
            Packet("outbound", 6, BGP, e, f"BGP to {peer} (TCP from port {BGP})", ANSWERS),
        ],
    ]


def sessions(
    fabric: Fabric, node: str, plane: Any, addresses: dict[str, tuple[str, str]] | None = None
) -> list[Session]:
    """The node's BGP sessions (and BFD, where NVUE turns it on) with what its ACLs drop of each: `addresses`
    port -> (the node's, the peer's) IPv6 link-local address (LINK_LOCAL where not given)."""
    acls, out = plane.acls, []
    e = ephemeral(acls)
    bfd = bfd_ports(plane)
    for s in fabric.sessions(node):
        for kind in ("BGP", "BFD") if s.port in bfd else ("BGP",):
            me, peer = (addresses or {}).get(s.port, LINK_LOCAL)
            got = Session(kind, s.port, s.peer)
            blocked = []
            for way in _ways(kind, node, s.peer, e):
                hit = []
                for p in way:
                    src, dst = (peer, me) if p.way == "inbound" else (me, peer)
                    hit += _dropped(acls, path(acls, s.port, "", p.way), src, dst, p)[:1]
                got.drops += hit
                blocked.append(bool(hit))
            got.cut = all(blocked) if kind == "BGP" else any(blocked)
            out.append(got)
    return out


def _dropped(acls: Acls, chains: list[Binding], src: str, dst: str, p: Packet) -> list[tuple[Binding, Rule, Packet]]:
    """Where each of packet kind `p`'s packets (one per TCP flags it carries) is dropped on its way through
    `chains` (in order: a packet dropped in one is seen by no later one). Its frames are IPv6 between the
    two ports, whose MACs are those of their EUI-64 link-local addresses (else not known)."""
    out = []
    for flags in p.flags:
        h = Headers(src, dst, p.proto, p.sport, p.dport, CS6, flags, smac=eui64(src), dmac=eui64(dst), ethertype=0x86DD)
        for b in chains:
            r = acls.acls[b.acl].decide(h)
            if r is not None and r.drops:
                out.append((b, r, p))
                break
    return out


def bfd_ports(plane: Any) -> set[str]:
    """The kernel ports whose BGP neighbor NVUE gives BFD (its own, or its peer group's)."""
    b = plane.conf.bgp
    if b is None:
        return set()
    on = {
        n
        for n, p in b.neighbors.items()
        if p.bfd or (p.peer_group in b.peer_groups and b.peer_groups[p.peer_group].bfd)
    }
    return {plane.devices.get(n, n) for n in on}


def needs_addresses(acls: Acls) -> bool:
    """Whether a rule that drops looks at IPv6 addresses or MACs (the sessions' link-local ones must be read)."""
    return any(
        r.drops and ((r.v == 6 and (r.src or r.dst)) or (r.v == 0 and (r.smac or r.dmac)))
        for a in acls.acls.values()
        for r in a.rules
    )


def eui64(address: str) -> str:
    """The MAC an EUI-64 IPv6 link-local address is made from ("": another kind of address)."""
    try:
        b = ipaddress.IPv6Address(address).packed[8:]
    except ValueError:
        return ""
    if b[3:5] != b"\xff\xfe":
        return ""
    mac = bytes([b[0] ^ 0x02]) + b[1:3] + b[5:]
    return ":".join(f"{x:02x}" for x in mac)
