"""Link stats and state of a namespace from one raw RTM_GETLINK dump, parsed with struct.

pyroute2 decodes every attribute of every link (~4 ms a namespace, most of the
collector's CPU); the collector needs five of them, every second, in every namespace.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from twin.runtime import netlink_socket, nl_attrs

RTM_NEWLINK, RTM_GETLINK = 16, 18
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
IFLA_IFNAME, IFLA_OPERSTATE, IFLA_LINKINFO, IFLA_STATS64, IFLA_CARRIER = 3, 16, 18, 23, 33
IFLA_INFO_KIND, IFLA_INFO_DATA, IFLA_VRF_TABLE = 1, 2, 1
OPER_UP, OPER_UNKNOWN = 6, 0
STATS = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped")


def parse(data: bytes, seq: int) -> tuple[list[dict[str, Any]], bool]:
    """(links of the RTM_NEWLINK messages of request `seq` in one datagram, whether its dump is done);
    the rest of an earlier dump given up at its deadline is skipped."""
    out: list[dict[str, Any]] = []
    pos = 0
    while pos + 16 <= len(data):
        length, kind, _, got = struct.unpack_from("=IHHI", data, pos)
        if length < 16:
            break
        body = data[pos + 16 : pos + length]
        pos += (length + 3) & ~3
        if got != seq:
            continue
        if kind in (NLMSG_DONE, NLMSG_ERROR):
            return out, True
        if kind != RTM_NEWLINK or len(body) < 16:
            continue
        _, _, index, flags, _ = struct.unpack_from("=BxHiII", body)
        a = nl_attrs(body[16:])
        link: dict[str, Any] = {
            "index": index,
            "name": a.get(IFLA_IFNAME, b"").split(b"\0", 1)[0].decode(),
            "admin_up": bool(flags & 1),
            "oper": a.get(IFLA_OPERSTATE, b"\0")[0],
            "carrier": a.get(IFLA_CARRIER, b"\0")[0],
        }
        if IFLA_STATS64 in a and len(a[IFLA_STATS64]) >= 64:
            link.update(zip(STATS, struct.unpack_from("=8Q", a[IFLA_STATS64])))
        info = nl_attrs(a.get(IFLA_LINKINFO, b""))
        if info.get(IFLA_INFO_KIND, b"").split(b"\0", 1)[0] == b"vrf":
            table = nl_attrs(info.get(IFLA_INFO_DATA, b"")).get(IFLA_VRF_TABLE)
            if table:
                link["vrf_table"] = struct.unpack("=I", table[:4])[0]
        out.append(link)
    return out, False


class LinkSocket:
    """RTM_GETLINK dumps in the namespace at `netns` ("" = this process's). A dump not answered
    within its deadline (`timeouts.NETLINK`, TimeoutError) is abandoned with its socket: the next
    dump opens a new one, where no half-read answer is left."""

    def __init__(self, netns: str):
        self.netns = netns
        self.sock: socket.socket | None = netlink_socket(netns, socket.NETLINK_ROUTE)
        self.seq = 0

    def dump(self) -> list[dict[str, Any]]:
        self.seq += 1
        sock = self.sock = self.sock or netlink_socket(self.netns, socket.NETLINK_ROUTE)
        req = struct.pack("=BxHiII", socket.AF_UNSPEC, 0, 0, 0, 0)
        try:
            sock.send(struct.pack("=IHHII", 16 + len(req), RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, self.seq, 0) + req)
            links, done = [], False
            while not done:
                got, done = parse(sock.recv(1 << 20), self.seq)
                links += got
        except OSError:
            self.close()
            raise
        return links

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
