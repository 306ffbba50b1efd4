"""A router solicitation on a node's ports, sent from the host: its neighbours' FRR answers at once.

BGP unnumbered finds a peer's address in its router advertisements: each side's zebra sends a few at
once when bgpd asks for them on a port, then one every 10 s (`BGP_UNNUM_DEFAULT_RA_INTERVAL`); a
session is taken only from a peer whose address is known (FRR's `bgp_accept`), so a node whose FRR
came up after its neighbour's first advertisements ended waited up to 10 s for the next (issue 46:
one session of 80 on a 24-node Clos). A solicitation (RFC 4861, ICMPv6 type 133, to all routers)
once the node's FRR is up makes each neighbour's zebra advertise at once (`rtadv_process_solicit`:
immediately while fast retransmits are on, FRR's default). Sent from a thread in the node's namespace
(`twin.runtime.netns.inside`), no process in the node; the kernel fills in the source address and the
checksum.
"""

from __future__ import annotations

import logging
import socket

from twin.runtime import netns

log = logging.getLogger(__name__)
ALL_ROUTERS = "ff02::2"
SOLICITATION = bytes([133, 0, 0, 0, 0, 0, 0, 0])  # type, code, checksum (the kernel's), reserved
HOPS = 255  # what a receiver of neighbour discovery checks it was not forwarded


def solicit(pid: int, ports: list[str]) -> list[str]:
    """A router solicitation on each of `ports` of the node of `pid`; returns the ports it could not be
    sent on, each with why (a port gone or down meanwhile: the neighbour's next advertisement serves)."""

    def send() -> list[str]:
        failed = []
        with socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6) as s:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, HOPS)
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, HOPS)
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 0)  # not to its own zebra
            for port in ports:
                try:
                    s.sendto(SOLICITATION, (ALL_ROUTERS, 0, 0, socket.if_nametoindex(port)))
                except OSError as e:
                    failed.append(f"{port}: {e.strerror or e}")
        return failed

    failed = netns.inside(netns.netns_path(pid), send)
    if failed:
        log.debug("router solicitation not sent on %s", "; ".join(failed))
    return failed
