"""A namespace's routes, VXLAN forwarding entries and port names from raw rtnetlink dumps,
parsed with struct, each dump with a deadline of its own: what the convergence barrier polls.

pyroute2 decodes every attribute of every message, and its sync handle waits for a dump's end
with no deadline at all: a dump that was never answered held `twin up` past its deadline on a
256-router lab (issue 35). Here a dump reads only the attributes the barrier needs, the kernel
filters routes by table (NETLINK_GET_STRICT_CHK), and the whole dump (not each read) ends by
`timeouts.NETLINK`: then the socket is closed and the dump is `NetlinkTimeout`, what it would
have read not known yet; the next dump opens a new socket. One socket per namespace, used by one
thread at a time (a lock); a reply to an earlier, abandoned request is skipped by its sequence.
"""

from __future__ import annotations

import math
import resource
import socket
import struct
import threading
import time

from twin.base import timeouts
from twin.base.errors import NetlinkFailed, NetlinkTimeout, NodeGone
from twin.runtime import nlattr
from twin.runtime.failures import namespace_gone
from twin.runtime.netns import netlink, path

RTM_GETLINK, RTM_NEWLINK, RTM_GETROUTE, RTM_NEWROUTE, RTM_GETNEIGH, RTM_NEWNEIGH = 18, 16, 26, 24, 30, 28
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
SOL_NETLINK, NETLINK_GET_STRICT_CHK = 270, 12
RTA_DST, RTA_OIF, RTA_MULTIPATH, RTA_TABLE = 1, 4, 9, 15
NDA_DST, NDA_LLADDR = 1, 2
IFLA_IFNAME = 3
AF_BRIDGE = 7
RTMSG, NDMSG, IFINFOMSG = struct.Struct("=BBBBBBBBI"), struct.Struct("=BxxxiHBB"), struct.Struct("=BxHiII")
HEADER, NEXTHOP = struct.Struct("=IHHII"), struct.Struct("=HBBi")
READ = 1 << 16  # a dump's datagrams are at most 32 KiB


def _text(b: bytes) -> str:
    return b.split(b"\0", 1)[0].decode(errors="replace")


def _addr(b: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET if len(b) == 4 else socket.AF_INET6, b)


def _hops(a: dict[int, bytes]) -> list[int]:
    """The output ports of a route: its RTA_OIF, or each next hop's of RTA_MULTIPATH."""
    mp, out, pos = a.get(RTA_MULTIPATH), [], 0
    if mp is None:
        return [struct.unpack("=i", a[RTA_OIF][:4])[0]] if RTA_OIF in a else []
    while pos + NEXTHOP.size <= len(mp):
        length, _, _, index = NEXTHOP.unpack_from(mp, pos)
        if length < NEXTHOP.size:
            break
        out.append(index)
        pos += (length + 3) & ~3
    return out


def parse_routes(bodies: list[bytes], table: int, host_only: bool) -> dict[str, list[int]]:
    """RTM_NEWROUTE bodies of one table -> {prefix: output port indexes} (the default route
    as 0.0.0.0/0); with `host_only`, /32s only, the others skipped before their attributes are read."""
    out: dict[str, list[int]] = {}
    for body in bodies:
        _, dst_len, _, _, tb, _, _, _, _ = RTMSG.unpack_from(body)
        if host_only and dst_len != 32:
            continue
        a = nlattr.attrs(body[RTMSG.size :])
        if RTA_TABLE in a:
            tb = struct.unpack("=I", a[RTA_TABLE][:4])[0]
        if tb != table or (dst_len and RTA_DST not in a):
            continue
        dst = _addr(a[RTA_DST]) if dst_len else "0.0.0.0"
        out[f"{dst}/{dst_len}"] = _hops(a)
    return out


class Dumper:
    """Dumps in one namespace (`netns.path`: a node's, or a tenant namespace in it)."""

    def __init__(self, ns_path: str, timeout: float = timeouts.NETLINK):
        self.path, self.timeout = ns_path, timeout
        self.lock = threading.Lock()
        self.sock: socket.socket | None = None
        self.seq = 0
        self.names: dict[int, str] = {}

    def _socket(self) -> socket.socket:
        if self.sock is None:
            try:
                self.sock = netlink(self.path, socket.NETLINK_ROUTE)
            except OSError as e:
                gone = namespace_gone(e, self.path)
                raise gone if isinstance(gone, NodeGone) else NetlinkFailed(e.errno or 0, f"{self.path}: {e}") from None
            self.sock.setsockopt(SOL_NETLINK, NETLINK_GET_STRICT_CHK, 1)
        return self.sock

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def dump(self, kind: int, request: bytes, what: str, until: float | None = None) -> list[bytes]:
        """The bodies of every message answering one dump; NetlinkTimeout when it has not ended
        within the Dumper's timeout, or by `until` (time.monotonic()) if sooner (the socket closed:
        the next dump opens another)."""
        with self.lock:
            deadline = min(time.monotonic() + self.timeout, until if until is not None else math.inf)
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                raise NetlinkTimeout(f"{self.path}: no time left for a dump of {what}")
            sock = self._socket()
            self.seq += 1
            try:
                sock.send(
                    HEADER.pack(HEADER.size + len(request), kind, NLM_F_REQUEST | NLM_F_DUMP, self.seq, 0) + request
                )
                return self._answer(sock, deadline)
            except (TimeoutError, NetlinkTimeout):
                self.close()
                raise NetlinkTimeout(
                    f"{self.path}: no answer to a dump of {what} within {timeout:.1f}s (abandoned)"
                ) from None
            except OSError as e:  # ENOBUFS: the socket lost part of the answer; start afresh
                self.close()
                raise NetlinkFailed(e.errno or 0, f"{self.path}: dump of {what}: {e.strerror or e}") from None

    def _answer(self, sock: socket.socket, deadline: float) -> list[bytes]:
        out: list[bytes] = []
        while True:  # at the deadline, what is queued is still read (a thread kept off the CPU is not late)
            sock.settimeout(max(0.0, deadline - time.monotonic()))
            try:
                data = sock.recv(READ)
            except BlockingIOError:
                raise NetlinkTimeout("deadline") from None
            pos = 0
            while pos + HEADER.size <= len(data):
                length, kind, _, seq, _ = HEADER.unpack_from(data, pos)
                if length < HEADER.size:
                    break
                if seq == self.seq:
                    if kind == NLMSG_DONE or kind == NLMSG_ERROR:
                        code = struct.unpack_from("=i", data, pos + HEADER.size)[0] if length >= 20 else 0
                        if code < 0:
                            raise NetlinkFailed(-code, f"{self.path}: the kernel refused a dump (errno {-code})")
                        return out
                    out.append(data[pos + HEADER.size : pos + length])
                pos += (length + 3) & ~3

    # --- what the barrier reads -------------------------------------------------------------
    def link_names(self, until: float | None = None) -> dict[int, str]:
        bodies = self.dump(RTM_GETLINK, IFINFOMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0), "links", until)
        self.names = {
            IFINFOMSG.unpack_from(b)[2]: _text(nlattr.attrs(b[IFINFOMSG.size :]).get(IFLA_IFNAME, b"")) for b in bodies
        }
        return self.names

    def _names(self, indexes: set[int], until: float | None) -> dict[int, str]:
        if indexes - self.names.keys():
            self.link_names(until)  # a port made since the last look
        return {i: self.names.get(i, str(i)) for i in indexes}

    def routes(self, table: int = 254, host_only: bool = True, until: float | None = None) -> dict[str, set[str]]:
        """IPv4 routes of `table` (host routes only by default; the default route as 0.0.0.0/0):
        prefix -> names of the next-hop ports (what `twin.runtime.observe.routes` reads)."""
        request = RTMSG.pack(socket.AF_INET, 0, 0, 0, table if table < 256 else 0, 0, 0, 0, 0) + nlattr.attr(
            RTA_TABLE, struct.pack("=I", table)
        )
        got = parse_routes(self.dump(RTM_GETROUTE, request, f"table {table}'s routes", until), table, host_only)
        names = self._names({h for hops in got.values() for h in hops if h}, until)
        return {prefix: {names[h] for h in hops if h} for prefix, hops in got.items()}

    def fdb(self, until: float | None = None) -> set[tuple[str, str, str]]:
        """Bridge forwarding entries with a remote (VXLAN): (device, MAC, remote VTEP)."""
        found = []
        for b in self.dump(RTM_GETNEIGH, NDMSG.pack(AF_BRIDGE, 0, 0, 0, 0), "forwarding entries", until):
            _, index, _, _, _ = NDMSG.unpack_from(b)
            a = nlattr.attrs(b[NDMSG.size :])
            if NDA_DST in a:
                found.append((index, ":".join(f"{x:02x}" for x in a.get(NDA_LLADDR, b"")), _addr(a[NDA_DST])))
        names = self._names({i for i, _, _ in found}, until)
        return {(names[i], mac, dst) for i, mac, dst in found}


def enough_files() -> int:
    """The soft limit of open files raised to the hard one; returns it. A 256-router lab is read
    through a socket per namespace, beside Docker's connections and event loops: the barrier of
    issue 35 held ~1,500 descriptors there, past the common default of 1,024, and every socket it
    opened then waited out its retries (`netns.retrying`) before failing."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return hard
    return soft


class Dumpers:
    """One `Dumper` per (node pid, namespace), opened on demand, closed together."""

    def __init__(self, timeout: float = timeouts.NETLINK):
        enough_files()
        self.timeout = timeout
        self._open: dict[tuple[int, str], Dumper] = {}
        self.lock = threading.Lock()

    def get(self, pid: int, ns: str = "") -> Dumper:
        with self.lock:
            if (pid, ns) not in self._open:
                self._open[(pid, ns)] = Dumper(path(pid, ns), self.timeout)
            return self._open[(pid, ns)]

    def close(self) -> None:
        with self.lock:
            for d in self._open.values():
                d.close()
            self._open.clear()
