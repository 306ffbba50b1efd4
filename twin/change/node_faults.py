"""Node faults: a container stopped, killed, started again, restarted; an FRR daemon killed.

A node that twin stops or kills first hands its ends of its links to a namespace of the lab's
(`links.park`): its peers keep their ports, configured as they were and without carrier, as a
switch's neighbours do while it reboots. A container that starts again has a new network
namespace: `node-start` takes its held ends back (`links.unpark`), re-creates its management port
and any link that was not held (the container stopped behind twin's back) with the peer's side
restored (a VTEP's host port back into its tenant, a host's address), sets its ports up and
configures the node as bring-up does (overlay, FRR, bindings). A node
whose own configuration makes its plane (a dialect's: NVUE's applied
startup.yaml, on the lab's layout) gets the plane of what it runs now
(`LabContext.planes`), not the topology's rendering; so does a peer's port on such a node. A node running the user's
frr.conf gets it (its directory is its /etc/frr) and the loopback it declares.
"""

from __future__ import annotations

from typing import Any, ClassVar

from twin import kinds
from twin.base import timeouts, wait
from twin.base.errors import NetlinkFailed, RuntimeFailed, TwinError
from twin.change.base import register
from twin.change.fault_base import Fault, Param, PortRef, set_port
from twin.config import overlay
from twin.config.backend import NETNS
from twin.config.dialect import NodePlane
from twin.lifecycle import mgmtnet
from twin.lifecycle.bringup import configure_node
from twin.lifecycle.context import LabContext
from twin.runtime import apply_live, create_link, has_link, node_netlink, park_links, unpark_links


class NodeFault(Fault):
    on: ClassVar[str] = "node"

    def hosts_out(self, ctx: LabContext) -> frozenset[str]:
        return frozenset({self.target}) if kinds.of(ctx.fabric.nodes[self.target]).endpoint else frozenset()


@register
class NodeStop(NodeFault):
    key, summary, undone_by = "node-stop", "stop NODE's container (its peers keep their ports)", "node-start"

    def act(self, ctx: LabContext) -> dict[str, Any]:
        c = ctx.container(self.target)
        held = _hold(ctx, self.target)
        c.stop(timeouts.NODE_STOP)
        ctx.refresh()
        return {"container": c.name, "links held": len(held)}


@register
class NodeKill(NodeFault):
    key, summary, undone_by = "node-kill", "kill NODE's container with SIGKILL, as a power loss would", "node-start"

    def act(self, ctx: LabContext) -> dict[str, Any]:
        c = ctx.container(self.target)
        held = _hold(ctx, self.target)
        try:
            c.kill(timeouts.NODE_STOP)
        except RuntimeFailed as e:
            raise TwinError(f"{ctx.name}/{self.target}: {e}") from None
        ctx.refresh()
        return {"container": c.name, "signal": "KILL", "links held": len(held)}


@register
class NodeStart(NodeFault):
    key, summary, undone_by = "node-start", "start NODE again: take back its links and configure it", "node-stop"
    breaks_intent = False

    def act(self, ctx: LabContext) -> dict[str, Any]:
        node, fabric = self.target, ctx.fabric
        c = ctx.container(node)
        if c.running():
            raise TwinError(
                f"{ctx.name}/{node} is already running; `twin fault node-restart {ctx.name} {node}` restarts it"
            )
        c.start()
        ctx.refresh()
        pid, ex = ctx.pid(node), ctx.exec(node)
        runs = ctx.planes()
        plane = runs.get(node)
        tenants = (plane.fabric if plane else fabric).tenants_on(node)
        if ctx.backend == NETNS and tenants:  # names of the old tenant namespaces are stale
            ex.check(["rm", "-f", *[f"/run/netns/{t.vrf}" for t in tenants]])
        ctx.runtime.attach_mgmt(fabric, node, pid)  # its eth0 on the management network again
        running = {n: ctx.pid(n) for n in ctx.running() if n != node}
        back = set(unpark_links(ctx.name, node, pid))  # its ends, held since it stopped
        wired, skipped = [], []  # (own port, peer end) of each re-created link
        for link in (k for k in fabric.links if node in (k.a.node, k.b.node)):
            own, peer = (link.a, link.b) if link.a.node == node else (link.b, link.a)
            if own.port in back:  # the peer kept its port as it was
                continue
            if peer.node not in running:
                skipped.append(str(peer))
                continue
            theirs = runs[peer.node].fabric if peer.node in runs else fabric  # as the peer runs it
            ref = PortRef(peer.node, peer.port, overlay.port_ns(theirs, peer.node, peer.port, ctx.backend))
            _wait_gone(ctx, ref, running[peer.node])
            create_link(link, {**running, node: pid})
            wired.append((own.port, ref))
        for port in sorted(back) + [port for port, _ in wired]:
            set_port(ctx, PortRef(node, port), up=True, pid=pid)
        configure_node(
            fabric, node, ex, pid, ctx.backend, ctx.shaping, plane, password=mgmtnet.node_password(ctx.dir, fabric)
        )
        for _, peer_ref in wired:
            _replumb_peer(ctx, peer_ref, running[peer_ref.node], runs)
        return {
            "container": c.name,
            "pid": pid,
            "links": len(back) + len(wired),
            "links taken back": len(back),
            **({"not wired (peer not running)": ", ".join(skipped)} if skipped else {}),
        }


@register
class NodeRestart(NodeFault):
    key, summary = "node-restart", "stop and start NODE (links held and taken back, FRR started)"
    self_revert = "none needed: the node runs again"

    def act(self, ctx: LabContext) -> dict[str, Any]:
        return {**NodeStop(self.target).act(ctx), **NodeStart(self.target).act(ctx)}


def daemon_pid(ctx: LabContext, node: str, daemon: str = "bgpd") -> int | None:
    """PID of FRR daemon `daemon` in `node` (None: not running)."""
    pids = [int(p) for p in ctx.exec(node).run(["pgrep", "-x", daemon]).stdout.split()]
    return pids[0] if pids else None


@register
class DaemonKill(NodeFault):
    key, summary = "daemon-kill", "SIGKILL an FRR daemon in NODE; watchfrr restarts it"
    params = (Param("daemon", str, "an FRR daemon", default="bgpd"),)
    self_revert = "none needed: watchfrr restarts the daemon"

    def resolve(self, ctx: LabContext) -> None:
        if not kinds.of(ctx.fabric.nodes[ctx.node(self.target)]).runs_frr:
            raise TwinError(f"node {self.target} runs no FRR; routers: {', '.join(ctx.intent.nodes)}")

    def act(self, ctx: LabContext) -> dict[str, Any]:
        (daemon,) = self.args
        pid = daemon_pid(ctx, self.target, daemon)
        ex = ctx.exec(self.target)
        if pid is None:
            running = ex.run(["pgrep", "-l", "-f", "^/usr/lib/frr/"]).stdout.split()
            names = sorted({w for w in running if not w.isdigit()})
            raise TwinError(
                f"{ctx.name}/{self.target}: no {daemon} running; FRR processes: {', '.join(names) or 'none'}"
            )
        ex.check(["kill", "-KILL", str(pid)])
        return {"daemon": daemon, "pid": pid, "signal": "KILL"}


def _hold(ctx: LabContext, node: str) -> list[str]:
    """A running node's ends of its links handed to the lab's holding namespace (`links.park`), each
    taken from where the node runs it (its own namespace, or a tenant's on a VTEP's host port)."""
    if not ctx.container(node).running():
        return []
    runs = ctx.planes()
    fabric = runs[node].fabric if node in runs else ctx.fabric
    ends = [
        (end.port, overlay.port_ns(fabric, node, end.port, ctx.backend))
        for link in ctx.fabric.links
        for end in (link.a, link.b)
        if end.node == node
    ]
    return park_links(ctx.name, node, ctx.pid(node), ends)


def _replumb_peer(ctx: LabContext, ref: PortRef, pid: int, runs: dict[str, NodePlane]) -> None:
    """A peer's port on a re-created link: back up, and, on a VTEP's host port or a host,
    the kernel steps of bring-up that concern it (tenant namespace, bridge, MAC, address), of the
    plane the peer runs (its own configuration's, else the topology's rendering)."""
    fabric = ctx.fabric
    if kinds.of(fabric.nodes[ref.node]).endpoint:  # up first: its `exec` commands (a route) need it
        set_port(ctx, ref, up=True, pid=pid)
        configure_node(fabric, ref.node, ctx.exec(ref.node), pid, ctx.backend, ctx.shaping)
        return
    plan = runs[ref.node].steps if ref.node in runs else overlay.plan(fabric, ref.node, ctx.backend, ctx.shaping)
    steps = [s for s in plan if s.dev == ref.port]
    if steps:  # moves it into its tenant namespace first, then master/up/fdb there (zebra running)
        apply_live(steps, pid, ctx.exec(ref.node))
    set_port(ctx, ref, up=True, pid=pid)


def _wait_gone(ctx: LabContext, ref: PortRef, pid: int) -> None:
    """Until the peer's end of a link whose node stopped is gone (the kernel frees a dead
    namespace's veths asynchronously), so the link can be made again."""

    def left() -> list[str]:
        found = []
        for ns in {ref.ns, ""}:
            try:
                with node_netlink(pid, ns) as ipr:
                    found += [f"{ref}: old interface still there"] if has_link(ipr, ref.port) else []
            except (NetlinkFailed, OSError):
                pass
        return found

    wait.until(left, timeouts.NODE_STOP, f"{ctx.name}: old end of the link on {ref}", first=0.05, cap=0.2)
