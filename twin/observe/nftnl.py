"""The RoCE counter tables read over netlink (nf_tables), in-process: no fork per read.

One NETLINK_NETFILTER socket per namespace, opened inside it (`twin.runtime.netns.inside`), dumps
the elements of the table's dynamic sets (NFT_MSG_GETSETELEM) with their counters, and
once, the devices its chains hook (NFT_MSG_GETCHAIN). Keys are the sets' concatenations
as the kernel stores them: each part padded to 4 bytes (ifname 16, dscp 4, ecn 4).
"""

from __future__ import annotations

import errno
import socket
import struct

from twin.observe import nflog
from twin.runtime import netlink_socket, nl_attr, nl_attrs, nl_attrs_all

NFNL_SUBSYS_NFTABLES = 10
GETCHAIN, NEWCHAIN, GETSETELEM, NEWSETELEM = 4, 3, 13, 12
NFPROTO_NETDEV = 5
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
# attributes
LIST_TABLE, LIST_SET, LIST_ELEMENTS, LIST_ELEM = 1, 2, 3, 1
ELEM_KEY, ELEM_EXPR, ELEM_EXPRESSIONS, DATA_VALUE = 1, 7, 11, 1
EXPR_NAME, EXPR_DATA, COUNTER_BYTES, COUNTER_PACKETS = 1, 2, 1, 2
CHAIN_TABLE, CHAIN_HOOK, HOOK_DEV, HOOK_DEVS, DEVICE_NAME = 1, 4, 3, 4, 1
ECN = {0: "not-ect", 1: "ect1", 2: "ect0", 3: "ce"}


def _text(b: bytes) -> str:
    return b.split(b"\0", 1)[0].decode(errors="replace")


def counter_of(elem: dict[int, bytes]) -> tuple[int, int]:
    """(packets, bytes) of a set element's counter expression."""
    exprs = [elem[ELEM_EXPR]] if ELEM_EXPR in elem else [v for _, v in nl_attrs_all(elem.get(ELEM_EXPRESSIONS, b""))]
    for e in exprs:
        a = nl_attrs(e)
        if _text(a.get(EXPR_NAME, b"")) == "counter":
            d = nl_attrs(a.get(EXPR_DATA, b""))
            return struct.unpack("!Q", d[COUNTER_PACKETS])[0], struct.unpack("!Q", d[COUNTER_BYTES])[0]
    return 0, 0


def key_of(value: bytes) -> tuple:
    """A set key: (ifname,) or (ifname, dscp, ecn name)."""
    name = _text(value[:16])
    if len(value) >= 24:
        return name, value[16] & 0x3F, ECN[value[20] & 3]
    return (name,)


def elements(messages: list[bytes]) -> list[tuple[tuple, int, int]]:
    """(key, packets, bytes) of every element in NEWSETELEM message bodies."""
    out = []
    for body in messages:
        a = nl_attrs(body[4:])
        for _, elem in nl_attrs_all(a.get(LIST_ELEMENTS, b"")):
            e = nl_attrs(elem)
            key = nl_attrs(e.get(ELEM_KEY, b"")).get(DATA_VALUE, b"")
            out.append((key_of(key), *counter_of(e)))
    return out


def hooked(messages: list[bytes]) -> set[str]:
    """The devices the chains of NEWCHAIN message bodies hook."""
    devs: set[str] = set()
    for body in messages:
        hook = nl_attrs(nl_attrs(body[4:]).get(CHAIN_HOOK, b""))
        if HOOK_DEV in hook:
            devs.add(_text(hook[HOOK_DEV]))
        devs |= {_text(v) for k, v in nl_attrs_all(hook.get(HOOK_DEVS, b"")) if k == DEVICE_NAME}
    return devs


class NftSocket:
    """Dumps of one table in the namespace at `netns` ("" = this process's). A dump not answered
    within its deadline (`timeouts.NETLINK`, TimeoutError) is abandoned with its socket: the next
    dump opens a new one, where no half-read answer is left."""

    def __init__(self, netns: str):
        self.netns = netns
        self.sock: socket.socket | None = netlink_socket(netns, nflog.NETLINK_NETFILTER)
        self.seq = 0

    def _dump(self, msg: int, attrs: bytes) -> list[bytes] | None:
        """Message bodies of a dump; None when the table or set does not exist."""
        self.seq += 1
        sock = self.sock = self.sock or netlink_socket(self.netns, nflog.NETLINK_NETFILTER)
        try:
            return self._answer(sock, msg, attrs)
        except OSError:
            self.close()
            raise

    def _answer(self, sock: socket.socket, msg: int, attrs: bytes) -> list[bytes] | None:
        body = struct.pack("!BBH", NFPROTO_NETDEV, 0, 0) + attrs
        sock.send(
            struct.pack(
                "=IHHII", 16 + len(body), (NFNL_SUBSYS_NFTABLES << 8) | msg, NLM_F_REQUEST | NLM_F_DUMP, self.seq, 0
            )
            + body
        )
        out: list[bytes] = []
        while True:
            data = sock.recv(1 << 20)
            pos = 0
            while pos + 16 <= len(data):
                length, kind, _, seq, _ = struct.unpack_from("=IHHII", data, pos)
                if length < 16:
                    break
                payload = data[pos + 16 : pos + length]
                pos += (length + 3) & ~3
                if seq != self.seq:
                    continue
                if kind == NLMSG_DONE:
                    return out
                if kind == NLMSG_ERROR:
                    (err,) = struct.unpack_from("=i", payload)
                    if -err in (errno.ENOENT,):
                        return None
                    if err:
                        raise OSError(-err, f"nf_tables dump: {errno.errorcode.get(-err, -err)}")
                    return out
                out.append(payload)

    def elements(self, table: str, set_name: str) -> list[tuple[tuple, int, int]] | None:
        msgs = self._dump(
            GETSETELEM, nl_attr(LIST_TABLE, table.encode() + b"\0") + nl_attr(LIST_SET, set_name.encode() + b"\0")
        )
        return None if msgs is None else elements(msgs)

    def hooked(self, table: str) -> set[str] | None:
        msgs = self._dump(GETCHAIN, nl_attr(CHAIN_TABLE, table.encode() + b"\0"))
        return None if msgs is None else hooked(msgs)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
