"""Links through netlink (pyroute2): veth pairs created straight into two nodes'
network namespaces, with the topology's MTU, then brought up in each node.

No veth ever exists in the host's own namespace, so nothing can be left behind there:
a link dies with the namespace of either of its nodes. Each end carries an
ifalias naming its lab, port and peer, so `ip link` inside a node says what it is.

A node that twin stops (a fault: node-stop, node-kill, node-restart) first hands its ends of
its links to a namespace of the lab's on the host (`park`, `naming.held_netns`), so its peers keep
their ports, without carrier, as a switch's neighbours do while it reboots; starting it again
takes them back (`unpark`), and `twin down` removes what is held (`remove_held`).

`Wiring` overlaps with container creation: a link is created as soon as both
of its nodes run, and a node's ports come up as soon as all its links exist.
"""

from __future__ import annotations

import errno
import logging
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from socket import AF_INET6
from typing import Callable

from pyroute2 import NetlinkError

from twin.base import timeouts, wait
from twin.base.errors import StageTimeout, TwinError
from twin.base.stages import Said
from twin.config.naming import held_netns, link_alias
from twin.runtime import netns
from twin.runtime.netns import Netlink, netns_path
from twin.topology.model import Fabric, Link

log = logging.getLogger(__name__)
KERNEL = 2  # RTPROT_KERNEL: the route is the kernel's own
PARALLEL = 8  # links being made at once
CONFIGURE_PARALLEL = 64  # nodes being configured (FRR starting) at once


def create_link(link: Link, pids: dict[str, int]) -> None:
    """The veth pair, made from twin's own namespace straight into both nodes' (a request with a
    deadline, cut to the command's)."""
    a, b = link.a, link.b
    with netns.here() as ipr:
        try:
            ipr.link(
                "add",
                ifname=a.port,
                kind="veth",
                mtu=link.mtu,
                net_ns_fd=netns_path(pids[a.node]),
                peer={"ifname": b.port, "mtu": link.mtu, "net_ns_fd": netns_path(pids[b.node])},
            )
        except NetlinkError as e:
            raise TwinError(f"cannot create link {a} <-> {b}: {e}") from None


def bring_up(fabric: Fabric, node: str, pid: int, ports: list[str] | None = None) -> None:
    """Set the ports of `node` (default: all) up and label each with its lab, port and peer; a fabric
    port (a BGP session's) gets its route to the link-local network too (`link_local_route`)."""
    with netns.ipr(pid) as ipr:
        for port in fabric.nodes[node].ports:
            if ports is not None and port.name not in ports:
                continue
            try:  # by its name: the kernel finds the port (a lookup first costs a request and a parse more)
                ipr.link(
                    "set",
                    ifname=port.name,
                    state="up",
                    ifalias=link_alias(fabric.name, f"{node}:{port.name}", f"{port.peer_node}:{port.peer_port}"),
                )
            except NetlinkError as e:
                if e.code != errno.ENODEV:
                    raise
                raise TwinError(f"{node}: port {port.name} is missing after wiring") from None
            if port.role == "fabric":
                link_local_route(ipr, port.name)


def link_local_route(ipr: Netlink, port: str) -> None:
    """fe80::/64 on `port`, as the kernel adds it once the port has a carrier: BGP unnumbered's TCP
    between link-local addresses needs it. The kernel's own add allocates from its atomic per-CPU
    reserve, which a burst of new ports on a busy host can empty ("percpu: allocation failed ...
    atomic" in its log): the route is then silently missing, the session never opens (its SYN-ACK
    has no route: seen on 1 of 3,968 ports of an 8 x 248 Clos). Added here first, by a request the
    kernel serves from its normal allocator; the kernel's own add then finds it there. A refusal
    leaves the port as the kernel makes it."""
    try:
        ipr.route(
            "add", dst="fe80::/64", oif=ipr.link_lookup(ifname=port)[0], proto=KERNEL, priority=256, family=AF_INET6
        )
    except (NetlinkError, IndexError) as e:
        log.debug("%s: fe80::/64 not added ahead of the kernel: %s", port, e)


def add_link(fabric: Fabric, link: Link, pids: dict[str, int]) -> None:
    """One link into a running lab: the veth pair, both ends up and labelled."""
    create_link(link, pids)
    for end in (link.a, link.b):
        bring_up(fabric, end.node, pids[end.node], [end.port])


def delete_link(link: Link, pids: dict[str, int]) -> bool:
    """Delete a veth pair from whichever end is still in its node's own namespace
    (a host's end never moves); False when neither is there."""
    for end in (link.a, link.b):
        with netns.ipr(pids[end.node]) as ipr:
            idx = ipr.link_lookup(ifname=end.port)
            if idx:
                ipr.link("del", index=idx[0])
                return True
    return False


def park(lab: str, node: str, pid: int, ends: list[tuple[str, str]]) -> list[str]:
    """Node `node` (init process `pid`) is about to stop: its ends of its links, `ends` as (port,
    namespace in the node: "" its own, else a tenant's), moved into the lab's holding namespace for
    it, where they stay down. Returns the ports moved (one already gone is left out)."""
    place = netns.create_named(held_netns(lab, node))
    moved = []
    for port, ns in ends:
        with netns.ipr(pid, ns) as ipr:
            idx = ipr.link_lookup(ifname=port)
            if not idx:
                continue
            try:
                ipr.link("set", index=idx[0], net_ns_fd=place)
            except NetlinkError as e:
                raise TwinError(f"{lab}/{node}: cannot hold port {port} while the node stops: {e}") from None
            moved.append(port)
    return moved


def unpark(lab: str, node: str, pid: int) -> list[str]:
    """Node `node` runs again (init process `pid`): its ends of its links, held since it stopped,
    moved into its new namespace under their names, and the holding namespace removed. Returns the
    ports taken back ([]: nothing was held, e.g. the container was stopped behind twin's back)."""
    name = held_netns(lab, node)
    if name not in netns.named(name):  # exactly its own: leaf10's starts with leaf1's name too
        return []
    back = []
    with netns.open_ipr(netns.named_path(name)) as ipr:
        for link in ipr.get_links():
            port = link.get("ifname")
            if port == "lo":
                continue
            try:
                ipr.link("set", index=link["index"], net_ns_fd=netns_path(pid))
            except NetlinkError as e:
                raise TwinError(f"{lab}/{node}: cannot give back its port {port}: {e}") from None
            back.append(port)
    netns.remove_named(name)
    return back


def remove_held(lab: str) -> list[str]:
    """Every holding namespace of lab `lab` removed (the links in it die with it); their names."""
    gone = netns.named(held_netns(lab))
    for name in gone:
        netns.remove_named(name)
    return gone


class Wiring:
    """Wires a fabric while its containers come up; call `node_running` per node, then `wait`.

    `on_wired(node)` runs as soon as all of a node's ports are up, in a pool of its own as wide as
    the lab (up to CONFIGURE_PARALLEL): configuring a node is mostly waiting for FRR to start in
    it (~1-3 s), and every node can wait at once, while links (netlink, milliseconds) keep theirs.
    """

    def __init__(
        self,
        fabric: Fabric,
        on_wired: Callable[[str], None] = lambda node: None,
        attach: Callable[[str, int], None] | None = None,
        bound: wait.Bound | None = None,
    ):
        """`attach(node, pid)`: its management port (`twin.runtime.mgmt`), made with its links. `bound`:
        the command's deadline, which the pools' calls are cut to and `wait` holds."""
        self.fabric = fabric
        self.on_wired = on_wired
        self.attach = attach
        self.bound = bound
        self.pids: dict[str, int] = {}
        self.waiting = list(fabric.links)
        managed = {n.name for n in fabric.managed() if n.mgmt} if attach else set()
        self.left = {n: len(node.ports) + (n in managed) for n, node in fabric.nodes.items()}
        self.managed = managed
        self.lock = threading.Lock()
        self.pool = ThreadPoolExecutor(PARALLEL, thread_name_prefix="twin-link")
        self.configure = ThreadPoolExecutor(
            max(1, min(CONFIGURE_PARALLEL, len(fabric.nodes))), thread_name_prefix="twin-configure"
        )
        self.futures: list[Future] = []
        self.linked = 0
        self.configured = 0

    def progress(self) -> Said:
        """What is moving: containers running, links made, nodes configured (FRR started); its stage
        the first of them not complete."""
        with self.lock:
            nodes, links = len(self.fabric.nodes), len(self.fabric.links)
            stage = "containers" if len(self.pids) < nodes else "links" if self.linked < links else "configs"
            return Said(
                f"starting: {len(self.pids)}/{nodes} containers running, {self.linked}/{links} links wired, "
                f"{self.configured}/{nodes} nodes configured",
                stage,
            )

    def late(self, e: BaseException, stage: str = "") -> StageTimeout | None:
        """When `e` came at the command's deadline (or is it): the deadline, naming the stage (`stage`, else
        the wiring's), how far it got and what each unit of its work waited for; else None."""
        b = self.bound
        if b is None or not b.passed(wait.SLACK) or not isinstance(e, Exception) or isinstance(e, StageTimeout):
            return None
        now = self.progress()
        return b.timeout(stage or now.stage, now.split(": ", 1)[-1])

    def _configure(self, node: str) -> None:
        with wait.bounded(self.bound), wait.doing(node, "its configuration"):
            self.on_wired(node)
        with self.lock:
            self.configured += 1

    def node_running(self, node: str, pid: int) -> None:
        with self.lock:
            self.pids[node] = pid
            ready = [k for k in self.waiting if k.a.node in self.pids and k.b.node in self.pids]
            self.waiting = [k for k in self.waiting if k not in ready]
            if not self.left[node]:
                self.futures.append(self.configure.submit(self._configure, node))
            if node in self.managed:
                self.futures.append(self.pool.submit(self._attach, node))
            self.futures += [self.pool.submit(self._link, k) for k in ready]

    def _attach(self, node: str) -> None:
        assert self.attach is not None
        with wait.bounded(self.bound), wait.doing(node, "its management port made"):
            self.attach(node, self.pids[node])
        self._made([node])

    def _link(self, link: Link) -> None:
        with wait.bounded(self.bound), wait.doing(f"link {link.a} <-> {link.b}", "its veth pair made"):
            create_link(link, self.pids)
        with self.lock:
            self.linked += 1
        self._made([link.a.node, link.b.node])

    def _made(self, nodes: list[str]) -> None:
        """One more port of each of `nodes` exists; a node whose ports all do is set up and configured."""
        done = []
        with self.lock:
            for n in nodes:
                self.left[n] -= 1
                if self.left[n] == 0:
                    done.append(n)
        for n in done:
            with wait.bounded(self.bound), wait.doing(n, "its ports set up"):
                bring_up(self.fabric, n, self.pids[n])
            with self.lock:
                self.futures.append(self.configure.submit(self._configure, n))

    def wait(self, say: Callable[[str], None] = lambda _: None) -> None:
        """Until every link is made and every node configured; says what is moving now and then. On a
        failure, an interrupt or the command's deadline (TimeoutError) it returns at once (`abort`),
        without joining what is under way: the caller stops or removes the nodes."""
        try:
            said = time.monotonic()
            while True:
                with self.lock:
                    pending = [f for f in self.futures if not f.done()]
                if not pending:
                    break
                if self.bound is not None and self.bound.passed():
                    raise TimeoutError(f"{self.bound.name} passed")
                limit = min(timeouts.WIRING_SAY, self.bound.deadline.left()) if self.bound else timeouts.WIRING_SAY
                finished, _ = futures_wait(pending, timeout=limit, return_when=FIRST_EXCEPTION)
                for f in finished:
                    f.result()
                if time.monotonic() - said >= timeouts.WIRING_SAY:
                    say(self.progress())
                    said = time.monotonic()
            for f in self.futures:
                f.result()
            say(self.progress())  # all of it, once, however soon it came (a log shows the stage whole)
            if self.waiting:
                raise TwinError(f"{len(self.waiting)} links were never wired: nodes missing")
        except BaseException:
            self.abort()
            raise
        self.pool.shutdown(cancel_futures=True)
        self.configure.shutdown(cancel_futures=True)

    def abort(self) -> None:
        """Stop wiring now: links and configurations not begun are cancelled; those under way
        end by themselves once their nodes are removed."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.configure.shutdown(wait=False, cancel_futures=True)
