"""Where a node's network namespaces are, and one factory of netlink handles into them.

A node's own namespace is `/proc/<pid>/ns/net`; a tenant namespace of the netns
VRF backend lives inside the node as `/proc/<pid>/root/run/netns/<vrf>`. Every
reader and writer of kernel state (kernel steps, the barrier, faults, status,
rehearsal snapshots) opens its pyroute2 handles through `Handles` or `ipr`.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from pyroute2 import IPRoute


def netns_path(pid: int) -> str:
    return f"/proc/{pid}/ns/net"


def tenant_netns_path(pid: int, ns: str) -> str:
    return f"/proc/{pid}/root/run/netns/{ns}"


def path(pid: int, ns: str = "") -> str:
    """The node's own namespace (ns "") or a tenant namespace inside it."""
    return tenant_netns_path(pid, ns) if ns else netns_path(pid)


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

    def close(self) -> None:
        for h in self._open.values():
            h.close()
        self._open.clear()

    def __enter__(self) -> "Handles":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
