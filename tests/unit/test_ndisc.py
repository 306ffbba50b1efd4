"""A router solicitation sent into a node's namespace reaches its neighbour as neighbour discovery wants it
(issue 46: FRR's zebra answers one with a router advertisement at once, and BGP unnumbered learns its
peer's address from that)."""

from __future__ import annotations

import os
import socket
import subprocess

from twin.base import wait
from twin.runtime import in_namespace, solicit_routers


def test_a_solicitation_goes_to_all_routers_on_each_port_with_hop_limit_255():
    own = os.stat("/proc/self/ns/net").st_ino
    node = subprocess.Popen(["unshare", "--net", "sleep", "30"])  # a node: a process with a namespace of its own
    try:
        wait.until(
            lambda: [] if os.stat(f"/proc/{node.pid}/ns/net").st_ino != own else ["unshared"],
            5,
            "unshare",
            first=0.01,
            cap=0.05,
        )
        ns = f"/proc/{node.pid}/ns/net"
        steps = (  # no duplicate address detection: its link-local address is usable at once (a port of a lab's
            # is up seconds before its FRR, which asks for the solicitation)
            "ip link add swp1 type veth peer name peer1",
            "sysctl -qw net.ipv6.conf.swp1.accept_dad=0",
            "ip link set swp1 up",
            "ip link set peer1 up",
        )
        for cmd in steps:
            subprocess.run(["nsenter", f"--net={ns}", *cmd.split()], check=True)

        def listener() -> socket.socket:
            s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"peer1")
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVHOPLIMIT, 1)
            mreq = socket.inet_pton(socket.AF_INET6, "ff02::2") + socket.if_nametoindex("peer1").to_bytes(4, "little")
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, mreq)
            return s

        with in_namespace(ns, listener) as s:
            s.settimeout(5)
            assert solicit_routers(node.pid, ["swp1", "swp9"]) == ["swp9: no interface with this name"]
            while True:  # the kernel's own neighbour discovery may come first
                data, anc, _, sender = s.recvmsg(512, socket.CMSG_SPACE(4))
                if data[:1] == bytes([133]):
                    break
            hops = next(int.from_bytes(d[:4], "little") for lvl, kind, d in anc if kind == socket.IPV6_HOPLIMIT)
            assert (data, hops) == (bytes([133, *data[1:4], 0, 0, 0, 0]), 255), "RFC 4861: type 133, hop limit 255"
    finally:
        node.kill()
        node.wait()
