"""Links through netlink (pyroute2): veth pairs created straight into two nodes'
network namespaces, with the topology's MTU, then brought up in each node.

No veth ever exists in the host namespace, so nothing can be left behind there:
a link dies with the namespace of either of its nodes. Each end carries an
ifalias naming its lab, link and peer so `ip link` inside a node says what it is.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from pyroute2 import IPRoute, NetlinkError

from twin.errors import TwinError
from twin.topology.model import Fabric, Link

PARALLEL = 8


def netns_path(pid: int) -> str:
    return f"/proc/{pid}/ns/net"


def alias(lab: str, local: str, peer: str) -> str:
    return f"twin:{lab}:{local}->{peer}"


def _create(link: Link, pids: dict[str, int]) -> None:
    a, b = link.a, link.b
    with IPRoute() as ipr:
        try:
            ipr.link("add", ifname=a.port, kind="veth", mtu=link.mtu,
                     net_ns_fd=netns_path(pids[a.node]),
                     peer={"ifname": b.port, "mtu": link.mtu, "net_ns_fd": netns_path(pids[b.node])})
        except NetlinkError as e:
            raise TwinError(f"cannot create link {a} <-> {b}: {e.args[1] if len(e.args) > 1 else e}") from None


def _bring_up(lab: str, fabric: Fabric, node: str, pid: int) -> None:
    with IPRoute(netns=netns_path(pid)) as ipr:
        for port in fabric.nodes[node].ports:
            idx = ipr.link_lookup(ifname=port.name)
            if not idx:
                raise TwinError(f"{node}: port {port.name} is missing after wiring")
            ipr.link("set", index=idx[0], state="up",
                     ifalias=alias(lab, f"{node}:{port.name}", f"{port.peer_node}:{port.peer_port}"))


def wire(fabric: Fabric, pids: dict[str, int]) -> None:
    """Create every link of the fabric, then bring every port up; concurrently."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        list(pool.map(lambda l: _create(l, pids), fabric.links))
        list(pool.map(lambda n: _bring_up(fabric.name, fabric, n, pids[n]),
                      [n for n in fabric.nodes if fabric.nodes[n].ports]))
