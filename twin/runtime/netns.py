"""Where a node's network namespaces are, and one factory of netlink handles into them.

A node's own namespace is `/proc/<pid>/ns/net`; a tenant namespace of the netns
VRF backend lives inside the node as `/proc/<pid>/root/run/netns/<vrf>`. Every
reader and writer of kernel state (kernel steps, the barrier, faults, status,
rehearsal snapshots) opens its pyroute2 handles through `Handles` or `ipr`.
"""
from __future__ import annotations

import ctypes
import os
import socket
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

from pyroute2 import IPRoute

from twin import timeouts


def netns_path(pid: int) -> str:
    return f"/proc/{pid}/ns/net"


def tenant_netns_path(pid: int, ns: str) -> str:
    return f"/proc/{pid}/root/run/netns/{ns}"


def path(pid: int, ns: str = "") -> str:
    """The node's own namespace (ns "") or a tenant namespace inside it."""
    return tenant_netns_path(pid, ns) if ns else netns_path(pid)


T = TypeVar("T")
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def inside(ns_path: str, fn: Callable[[], T]) -> T:
    """`fn()` run in network namespace `ns_path`. A namespace is a per-thread attribute: a thread of
    its own enters it (setns(2)), runs `fn` and ends, so no thread of twin stays in a lab's namespace
    and no process is forked. What it opens (a socket, a /proc/sys/net file) belongs to that namespace."""
    out: dict[str, object] = {}

    def enter_and_run() -> None:
        try:
            fd = os.open(ns_path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns into {ns_path}: {os.strerror(err)}")
            finally:
                os.close(fd)
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001  (raised again in the caller's thread)
            out["error"] = e

    t = threading.Thread(target=enter_and_run, name="twin-netns")
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


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
def ipr(pid: int, ns: str = "") -> Iterator[IPRoute]:
    """One IPRoute handle in a node's (or tenant's) namespace, closed on exit."""
    handle = IPRoute(netns=path(pid, ns), flags=0)
    try:
        yield handle
    finally:
        handle.close()


class Handles:
    """IPRoute handles opened on demand, one per (node pid, namespace), closed together.

    `Handles(pid)` is also the `Netns` that kernel steps are applied through."""

    def __init__(self, pid: int | None = None):
        self.pid = pid
        self._open: dict[tuple[int, str], IPRoute] = {}

    def get(self, pid: int, ns: str = "") -> IPRoute:
        if (pid, ns) not in self._open:
            self._open[(pid, ns)] = IPRoute(netns=path(pid, ns), flags=0)
        return self._open[(pid, ns)]

    # the `twin.config.steps.Netns` protocol, for the node `pid`
    def ipr(self, ns: str) -> IPRoute:
        return self.get(self.pid, ns)

    def path(self, ns: str) -> str:
        return path(self.pid, ns)

    def sysctl(self, ns: str, key: str, value: str) -> None:
        write_sysctl(path(self.pid, ns), key, value)

    def close(self) -> None:
        for h in self._open.values():
            h.close()
        self._open.clear()

    def __enter__(self) -> "Handles":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
