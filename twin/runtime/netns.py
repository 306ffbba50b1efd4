"""Where a node's network namespaces are, and one factory of netlink handles into them.

A node's own namespace is `/proc/<pid>/ns/net`; a tenant namespace of the netns
VRF backend lives inside the node as `/proc/<pid>/root/run/netns/<vrf>`, its management
namespace (`twin.config.mgmt`) as `/proc/<pid>/root/run/twin/mgmt`. Every
reader and writer of kernel state (kernel steps, the barrier, faults, status,
rehearsal snapshots, captures, sysctls) opens its pyroute2 handles through `Handles`
or `ipr`, and every namespace becomes a descriptor in one place, `open_ns`: a tenant
namespace is opened without following the node's links and checked to be that
tenant's own (`twin.runtime.nsguard`), then used only through that descriptor.

No process is forked for it: pyroute2's own `IPRoute(netns=...)` forks a child of
twin (a large, threaded process) to open each socket and gives up when the child
has not answered within 2 s, which on an overloaded host ended `twin up` in
"RuntimeError: child process is dead" (issue 28). Here a short-lived thread enters
the namespace (setns(2) is per thread), opens the socket and ends; pyroute2 gets
the open socket. An open that fails for want of resources (a thread, memory, file
descriptors) is retried until `timeouts.NETLINK_OPEN`, then named in a TwinError;
a namespace that is gone (its container stopped) is an OSError at once.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import os
import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Awaitable, Callable, Iterator, TypeVar

from pyroute2 import AsyncIPRoute, IPRoute
from pyroute2 import netns as named_netns

from twin.base import timeouts, wait
from twin.base.errors import NetlinkTimeout, TwinError
from twin.kinds import MGMT_NETNS, MGMT_NS
from twin.runtime import nsguard
from twin.runtime.failures import namespace_gone, netlink_errors


def netns_path(pid: int) -> str:
    return f"/proc/{pid}/ns/net"


def tenant_netns_path(pid: int, ns: str) -> str:
    """A namespace inside the node: a tenant's in /run/netns, or the management one (`MGMT_NS`)."""
    return f"/proc/{pid}/root{MGMT_NETNS}" if ns == MGMT_NS else f"/proc/{pid}/root/run/netns/{ns}"


def exec_prefix(ns: str) -> list[str]:
    """What runs a command of the node in its namespace `ns`: nothing for its own (""), `ip netns exec` for a
    tenant's, nsenter for the management one (not in /run/netns, where `ip netns` looks: `twin.config.mgmt`)."""
    if not ns:
        return []
    return ["nsenter", f"--net={MGMT_NETNS}"] if ns == MGMT_NS else ["ip", "netns", "exec", ns]


def path(pid: int, ns: str = "") -> str:
    """The node's own namespace (ns "") or a tenant namespace inside it."""
    return tenant_netns_path(pid, ns) if ns else netns_path(pid)


def open_ns(ns_path: str) -> int:
    """A descriptor of namespace `ns_path` (the caller closes it), opened and checked as
    `twin.runtime.nsguard` says: NamespaceRefused for a link or another namespace than the node's."""
    return nsguard.open_path(ns_path)


T = TypeVar("T")
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def inside(ns_path: str, fn: Callable[[], T], fresh: bool = False) -> T:
    """`fn()` run in network namespace `ns_path`. A namespace is a per-thread attribute: a thread of
    its own enters it (setns(2)), runs `fn` and ends, so no thread of twin stays in a lab's namespace
    and no process is forked. What it opens (a socket, a /proc/sys/net file) belongs to that namespace."""
    out: dict[str, T] = {}
    failed: list[BaseException] = []

    def enter_and_run() -> None:
        try:
            if fresh:
                if _libc.unshare(CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"unshare of a new network namespace: {os.strerror(err)}")
            else:
                fd = open_ns(ns_path)
                try:
                    if _libc.setns(fd, CLONE_NEWNET) != 0:
                        err = ctypes.get_errno()
                        raise OSError(err, f"setns into {ns_path}: {os.strerror(err)}")
                finally:
                    os.close(fd)
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001  (raised again in the caller's thread)
            failed.append(e)

    t = threading.Thread(target=enter_and_run, name="twin-netns")
    t.start()
    t.join()
    if failed:
        raise failed[0]
    return out["value"]


def scratch(fn: Callable[[], T]) -> T:
    """`fn()` run in a new, empty network namespace of its own, gone when `fn` returns: a thread
    unshares its namespace (CLONE_NEWNET is per thread), runs `fn` and ends. For probing what the
    kernel offers (a VRF device, a qdisc) without a name on the host to leave behind."""
    return inside("", fn, fresh=True)


SCARCE = (errno.ENOMEM, errno.EAGAIN, errno.ENOBUFS, errno.EMFILE, errno.ENFILE, errno.EINTR)


def retrying(what: str, fn: Callable[[], T], timeout: float = timeouts.NETLINK_OPEN) -> T:
    """`fn()`, tried again while it fails for want of a resource the host is short of under load
    (memory, a thread, file descriptors), until `timeout`; then a TwinError naming `what`."""
    start, tries = time.monotonic(), 0
    timeout = wait.cut(timeout, what)  # no longer than the command's deadline
    while True:
        tries += 1
        try:
            return fn()
        except (OSError, RuntimeError) as e:  # RuntimeError: "can't start new thread" (pids limit)
            scarce = e.errno in SCARCE if isinstance(e, OSError) else "thread" in str(e)
            if not scarce:
                raise
            if time.monotonic() - start >= timeout:
                raise TwinError(
                    f"{what}: {e} (tried {tries} times in {time.monotonic() - start:.0f}s; "
                    "the host is short of memory, threads or file descriptors)"
                ) from None
            time.sleep(min(1.0, 0.05 * tries))


def probe(what: str, fn: Callable[[], T]) -> T:
    """`fn()` in a throwaway namespace (`scratch`), tried again while the host is short of
    resources (`retrying`); TwinError when no namespace can be made at all (twin is not root)."""
    try:
        return retrying(f"{what}: probing the kernel", lambda: scratch(fn))
    except OSError as e:
        raise TwinError(f"cannot ask the kernel in a throwaway namespace ({e}); twin runs as root") from None


class _AsyncInNamespace(AsyncIPRoute):
    """pyroute2's RTNL socket, each of whose sockets (pyroute2 opens one per thread that uses the
    handle) is opened in namespace `ns_path` by a thread of twin's instead of a forked child
    ("": twin's own namespace, opened by the thread that uses it)."""

    def __init__(self, ns_path: str):
        self.ns_path = ns_path
        super().__init__()

    def setup_socket(self) -> socket.socket:
        def new() -> socket.socket:
            return socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, socket.NETLINK_ROUTE)

        def make() -> socket.socket:
            return inside(self.ns_path, new) if self.ns_path else new()

        sock = retrying(f"cannot open a netlink socket in {self.ns_path}", make)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.status["sndbuf"])
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.status["rcvbuf"])
        return sock


class InNamespace(IPRoute):
    """A sync IPRoute in namespace `ns_path` (pyroute2 0.9's IPRoute, over `_AsyncInNamespace`) whose
    every request has a deadline (`timeouts.NETLINK_REQUEST`, cut to the command's): pyroute2's own waits
    for an answer forever (issue 35). A request not answered in time is NetlinkTimeout and the handle is
    closed: an abandoned dump may still be under way on its socket; `Handles` opens a new one next time."""

    def __init__(self, ns_path: str, timeout: float = timeouts.NETLINK_REQUEST):  # noqa: D107  (twin's socket maker)
        self.timeout = timeout
        self.asyncore = _AsyncInNamespace(ns_path)
        self.asyncore.status["event_loop"] = "new"
        self.asyncore.local.keep_event_loop = True
        self.asyncore.event_loop.run_until_complete(self.asyncore.setup_endpoint())

    # pyroute2's own hooks, as untyped as pyroute2: `func` is one of its requests (a coroutine)
    def _bounded(self, func: Callable[..., Awaitable[Any]], *argv: Any, **kwarg: Any) -> Any:
        async def whole() -> Any:
            got = await func(*argv, **kwarg)
            return [m async for m in got] if hasattr(got, "__aiter__") else got

        late = False
        what = getattr(func, "__name__", "")
        limit = wait.cut(self.timeout, f"a netlink request ({what}) in {self.asyncore.ns_path or 'twin'}")
        try:
            self._setup_transport()
            return self.asyncore.event_loop.run_until_complete(asyncio.wait_for(whole(), limit))
        except asyncio.TimeoutError:
            late = True
            raise NetlinkTimeout(
                f"{self.asyncore.ns_path or 'twin'}: no answer to a netlink request ({what}) "
                f"within {limit:g}s (abandoned)"
            ) from None
        finally:
            self._cleanup_transport()
            if late:
                self.close()  # its sockets: an abandoned dump may still be under way on them

    def _run_with_cleanup(self, func: Callable[..., Awaitable[Any]], *argv: Any, **kwarg: Any) -> Any:  # a request
        return self._bounded(func, *argv, **kwarg)

    def _generate_with_cleanup(self, func: Callable[..., Awaitable[Any]], *argv: Any, **kwarg: Any) -> Any:  # a dump
        return iter(self._bounded(func, *argv, **kwarg))


Netlink = InNamespace  # twin's netlink handle in one namespace: what `ipr` and `Handles` hand out


def open_ipr(ns_path: str) -> Netlink:
    """An IPRoute handle on netlink sockets of namespace `ns_path`, opened by threads (no fork);
    NodeGone when the namespace is not there (its node stopped)."""
    try:
        return InNamespace(ns_path)
    except OSError as e:
        gone = namespace_gone(e, ns_path)
        if gone is e:
            raise
        raise gone from e


def here() -> Netlink:
    """A netlink handle in the namespace of the thread that uses it: twin's own (veth pairs made from
    here into two nodes'), or a throwaway one (`scratch`, a probe's); its requests have deadlines as
    any of twin's. Close it after use (a `with` block does)."""
    return InNamespace("")


def named_path(name: str) -> str:
    """Where the host's named namespace `name` is (iproute2's `ip netns` place)."""
    return f"/run/netns/{name}"


def create_named(name: str) -> str:
    """The host's named namespace `name` (/run/netns/NAME), new and empty, made without a fork: a
    thread of twin's unshares its namespace and binds it there (pyroute2's `attach`), so it lives on
    after the thread; an existing one of that name is kept (it is twin's: its names carry the lab's).
    Returns its path."""
    if name not in named_netns.listnetns():
        inside("", lambda: named_netns.attach(name, "thread-self"), fresh=True)
    return named_path(name)


def named(name: str) -> list[str]:
    """The host's named namespaces whose names start with `name`."""
    return sorted(n for n in named_netns.listnetns() if n.startswith(name))


def remove_named(name: str) -> None:
    """The host's named namespace `name` (/run/netns/NAME, e.g. a lab's probe) removed, if there."""
    if name in named_netns.listnetns():
        named_netns.remove(name)


def netlink(ns_path: str, proto: int) -> socket.socket:
    """A bound netlink socket of namespace `ns_path` ("" = this process's) whose reads give up after
    `timeouts.NETLINK`: a dump the kernel never answers is an error (TimeoutError), not a hang."""

    def make() -> socket.socket:
        return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto)

    s = inside(ns_path, make) if ns_path else make()
    s.bind((0, 0))
    s.settimeout(timeouts.NETLINK)
    return s


def write_sysctl(ns_path: str, key: str, value: str) -> None:
    """Set a network sysctl (net.*) of namespace `ns_path` through the host's /proc/sys, which
    shows the namespace of the thread that opens it (a container's own is read-only)."""
    if not key.startswith("net."):
        raise ValueError(f"{key}: only network sysctls belong to a namespace")

    def write() -> None:
        with open("/proc/sys/" + key.replace(".", "/"), "w") as f:
            f.write(value)

    inside(ns_path, write)


@contextmanager
def ipr(pid: int, ns: str = "") -> Iterator[Netlink]:
    """One netlink handle in a node's (or tenant's) namespace, closed on exit. A netlink error in
    the block leaves it as NetlinkFailed (the kernel's errno kept)."""
    handle = open_ipr(path(pid, ns))
    try:
        with netlink_errors():
            yield handle
    finally:
        handle.close()


class Handles:
    """IPRoute handles opened on demand, one per (node pid, namespace), closed together.

    `Handles(pid)` is also the `Netns` that kernel steps are applied through."""

    def __init__(self, pid: int | None = None):
        self.pid = pid
        self._open: dict[tuple[int, str], IPRoute] = {}
        self._lock = threading.Lock()
        self._fds: dict[str, int] = {}  # checked namespace descriptors (steps that move devices), by ns

    def get(self, pid: int, ns: str = "") -> Netlink:
        with self._lock:
            h = self._open.get((pid, ns))
            if h is None or h.asyncore.status["closed"]:  # closed: a request of it was abandoned
                h = self._open[(pid, ns)] = open_ipr(path(pid, ns))
            return h

    def drop(self, pid: int, ns: str = "") -> None:
        """The handle of (pid, ns) closed and forgotten (a request of it was abandoned)."""
        with self._lock:
            h = self._open.pop((pid, ns), None)
        if h is not None:
            h.close()

    # the `twin.runtime.steps_apply.Netns` protocol, for the node `pid`
    def ipr(self, ns: str) -> IPRoute:
        return self.get(self._node(), ns)

    def fd(self, ns: str) -> int:
        """A checked descriptor of namespace `ns` of the node (IFLA_NET_NS_FD), kept until close."""
        if ns not in self._fds:
            self._fds[ns] = open_ns(path(self._node(), ns))
        return self._fds[ns]

    def sysctl(self, ns: str, key: str, value: str) -> None:
        write_sysctl(path(self._node(), ns), key, value)

    def _node(self) -> int:
        if self.pid is None:
            raise TwinError("netlink handles made without a node (Handles()) apply no kernel steps")
        return self.pid

    def close(self) -> None:
        with self._lock:
            handles, self._open = list(self._open.values()), {}
        for h in handles:
            h.close()
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def __enter__(self) -> "Handles":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
