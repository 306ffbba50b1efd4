"""NFLOG over raw netlink: the packets twin's nftables `log group` statements hand to userspace.

pyroute2 has no NFLOG family, so this is a small reader of NETLINK_NETFILTER
(subsystem NFNL_SUBSYS_ULOG): a socket per network namespace, opened inside that
namespace (setns on a short-lived thread: a socket keeps the namespace it was made
in), bound to one log group, in copy-packet mode. Each message becomes a `Logged`:
time, prefix, input/output ifindex, hook, family and the packet's first bytes.
"""

from __future__ import annotations

import os
import socket
import struct
from dataclasses import dataclass

from twin.runtime import netlink_socket, nl_attr, nl_attrs

NETLINK_NETFILTER = 12
NFNL_SUBSYS_ULOG = 4
NFULNL_MSG_PACKET, NFULNL_MSG_CONFIG = 0, 1
NLM_F_REQUEST, NLM_F_ACK = 0x1, 0x4
NLMSG_ERROR = 2
# NFULA_* attributes of a logged packet
PACKET_HDR, TIMESTAMP, INDEV, OUTDEV, PHYSINDEV, PHYSOUTDEV, HWADDR, PAYLOAD, PREFIX = 1, 3, 4, 5, 6, 7, 8, 9, 10
HWHEADER = 16
# NFULA_CFG_* attributes and values of a config message
CFG_CMD, CFG_MODE, CFG_TIMEOUT, CFG_QTHRESH = 1, 2, 4, 5
CMD_BIND = 1
COPY_PACKET = 2
COPY_RANGE = 160  # enough for outer IPv4/UDP/VXLAN + inner Ethernet/IPv4/UDP/BTH headers


@dataclass(frozen=True)
class Logged:
    """One packet a `log group` rule handed over."""

    time: float
    prefix: str
    family: int  # NFPROTO_*: 7 bridge, 5 netdev, 2 ipv4
    hook: int
    hw_protocol: int  # ethertype
    indev: int | None  # the device (a bridge, on the bridge family)
    outdev: int | None
    physindev: int | None  # the bridge port, on the bridge family
    physoutdev: int | None
    hwaddr: str  # source MAC, when the kernel knows it
    payload: bytes  # from the network header (the link header first on a netdev egress hook)
    hwheader: bytes = b""


def _nlmsg(msg_type: int, flags: int, family: int, res_id: int, attrs: bytes) -> bytes:
    body = struct.pack("!BBH", family, 0, res_id)[:2] + struct.pack("!H", res_id) + attrs
    return struct.pack("=IHHII", 16 + len(body), msg_type, flags, 0, 0) + body


class NflogSocket:
    """One NFLOG socket bound to `group` in the namespace at `netns` ("" = this process's)."""

    def __init__(self, netns: str, group: int):
        self.netns, self.group = netns, group
        self.sock = netlink_socket(netns, NETLINK_NETFILTER)  # its config answers read with a deadline
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            self._config(nl_attr(CFG_CMD, struct.pack("B", CMD_BIND)))
            self._config(nl_attr(CFG_MODE, struct.pack("!IBB", COPY_RANGE, COPY_PACKET, 0)))
            self._config(nl_attr(CFG_QTHRESH, struct.pack("!I", 32)) + nl_attr(CFG_TIMEOUT, struct.pack("!I", 10)))
        except BaseException:
            self.sock.close()
            raise
        self.sock.setblocking(False)

    def _config(self, attrs: bytes) -> None:
        self.sock.send(
            _nlmsg(
                (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG,
                NLM_F_REQUEST | NLM_F_ACK,
                socket.AF_UNSPEC,
                self.group,
                attrs,
            )
        )
        reply = self.sock.recv(4096)
        _, kind, _, _, _ = struct.unpack_from("=IHHII", reply)
        if kind == NLMSG_ERROR:
            (err,) = struct.unpack_from("=i", reply, 16)
            if err:
                raise OSError(-err, f"NFLOG group {self.group} in {self.netns or 'host'}: {os.strerror(-err)}")

    def fileno(self) -> int:
        return self.sock.fileno()

    def read(self) -> list[Logged]:
        """Every packet waiting on the socket (none: an empty list)."""
        out: list[Logged] = []
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                return out
            except OSError as e:  # ENOBUFS: the kernel dropped messages we were too slow for
                if e.errno == 105:
                    continue
                raise
            out += parse(data)

    def close(self) -> None:
        self.sock.close()


def parse(data: bytes) -> list[Logged]:
    """The NFULNL_MSG_PACKET messages of one netlink datagram."""
    out, pos = [], 0
    while pos + 16 <= len(data):
        length, kind, _, _, _ = struct.unpack_from("=IHHII", data, pos)
        if length < 16:
            break
        if kind == (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET:
            out.append(_packet(data[pos + 16 : pos + length]))
        pos += (length + 3) & ~3
    return out


def _packet(body: bytes) -> Logged:
    family = body[0]
    a = nl_attrs(body[4:])
    hw_protocol, hook = struct.unpack_from("!HB", a[PACKET_HDR]) if PACKET_HDR in a else (0, 0)
    if TIMESTAMP in a:
        sec, usec = struct.unpack_from("!QQ", a[TIMESTAMP])
        when = sec + usec / 1e6
    else:
        import time

        when = time.time()
    hwaddr = ""
    if HWADDR in a:
        (n,) = struct.unpack_from("!H", a[HWADDR])
        hwaddr = ":".join(f"{b:02x}" for b in a[HWADDR][4 : 4 + min(n, 8)])
    dev = lambda k: struct.unpack("!I", a[k])[0] if k in a else None  # noqa: E731
    return Logged(
        when,
        a.get(PREFIX, b"").rstrip(b"\0").decode(errors="replace"),
        family,
        hook,
        hw_protocol,
        dev(INDEV),
        dev(OUTDEV),
        dev(PHYSINDEV),
        dev(PHYSOUTDEV),
        hwaddr,
        a.get(PAYLOAD, b""),
        a.get(HWHEADER, b""),
    )
