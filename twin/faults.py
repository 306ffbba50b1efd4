"""Faults as first-class changes, for rehearsals and tests.

Each fault acts on a running lab and returns a `Fault` record saying what was
done, how, and how to revert it:

    f = faults.link_down(lab, "dpu1:p0")     # both ends of the link, over netlink
    ...                                       # watch the fabric react
    f.revert()                                # = faults.link_up(lab, "dpu1:p0")

Link faults: `link_down`/`link_up` (both ends), `link_loss`/`link_loss_clear`
(random loss on a port: tc netem where the kernel has it, else nftables).
Node faults: `node_stop`, `node_kill`, `node_start`, `node_restart` (Docker);
a container that starts again has a new network namespace, so `node_start`
re-creates its links and configures it as bring-up would. `daemon_kill` kills
an FRR daemon, which watchfrr restarts.

`fault_group` is the `twin fault ...` command line over the same functions.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import click
import docker
from pyroute2 import IPRoute, NetlinkError

from twin import bringup, overlay, timeouts, wait
from twin.errors import TwinError
from twin.overlay import plan
from twin.runtime import kernel
from twin.runtime.exec import NodeExec
from twin.runtime.kernel import tenant_netns_path
from twin.runtime.links import alias, create_link, netns_path
from twin.topology.model import Fabric

if TYPE_CHECKING:
    from twin.lab import Lab

LOSS_TABLE = "twin_loss_{port}"   # nftables table of a loss fault, per port (netdev family)
LOSS_PRIORITY = -500              # before anything else on the device


@dataclass
class Fault:
    """One applied fault: what (kind), where (target), how (details), and its undo."""

    kind: str
    target: str
    details: dict[str, Any] = field(default_factory=dict)
    undo: str = ""                                   # what reverts it, as a command line
    revert_fn: Callable[[], "Fault"] | None = field(default=None, repr=False)

    def revert(self) -> "Fault | None":
        """Apply the undo; None for faults that revert themselves (a killed daemon)."""
        return self.revert_fn() if self.revert_fn else None

    def __str__(self) -> str:
        how = ", ".join(f"{k}={v}" for k, v in self.details.items() if k != "ruleset")
        return f"{self.kind} {self.target}" + (f" ({how})" if how else "") + (f"; undo: {self.undo}" if self.undo else "")


# --- resolving targets ------------------------------------------------------
@dataclass(frozen=True)
class PortRef:
    """A port of a node and the namespace it lives in ("" = the node's own, else a tenant netns)."""

    node: str
    port: str
    ns: str = ""

    def __str__(self) -> str:
        return f"{self.node}:{self.port}" + (f" (tenant namespace {self.ns})" if self.ns else "")


def _fabric(lab: "Lab") -> Fabric:
    if lab.fabric is None:
        raise TwinError(f"lab {lab.name!r} has no recorded topology; is it up? (`twin list`)")
    return lab.fabric


def _node(lab: "Lab", node: str) -> str:
    fabric = _fabric(lab)
    if node not in fabric.nodes:
        raise TwinError(f"lab {lab.name!r} has no node {node!r}; nodes: {', '.join(fabric.nodes)}")
    return node


def _port_ns(lab: "Lab", node: str, port: str) -> str:
    """The tenant namespace a VTEP's host port was moved into (netns VRF backend), else ""."""
    return overlay.port_ns(_fabric(lab), node, port, lab.backend)


def port_ref(lab: "Lab", spec: str) -> PortRef:
    """'node:port' -> PortRef, or a TwinError naming the nodes or ports that exist."""
    node, sep, port = spec.partition(":")
    if not sep or not node or not port:
        raise TwinError(f"{spec!r}: a port is given as NODE:PORT, e.g. dpu1:p0")
    ports = _fabric(lab).nodes[_node(lab, node)].ports_by_name
    if port not in ports:
        raise TwinError(f"node {node!r} has no port {port!r}; ports: {', '.join(ports) or 'none'}")
    return PortRef(node, port, _port_ns(lab, node, port))


def link_of(lab: "Lab", spec: str) -> tuple[PortRef, PortRef]:
    """Both ends of the link on port `spec`, that end first."""
    here = port_ref(lab, spec)
    p = _fabric(lab).nodes[here.node].ports_by_name[here.port]
    return here, PortRef(p.peer_node, p.peer_port, _port_ns(lab, p.peer_node, p.peer_port))


def _ns_path(pid: int, ref: PortRef) -> str:
    return tenant_netns_path(pid, ref.ns) if ref.ns else netns_path(pid)


def _pid(lab: "Lab", node: str) -> int:
    return lab.runtime.pid(_container(lab, node))  # TwinError if not running


def _container(lab: "Lab", node: str):
    containers = lab.runtime.containers(lab.name)
    if _node(lab, node) not in containers:
        raise TwinError(f"lab {lab.name!r}: node {node} has no container; is the lab up? (`twin status {lab.name}`)")
    return containers[node]


def _exec(lab: "Lab", node: str) -> NodeExec:
    return NodeExec(_container(lab, node), f"{lab.name}/{node}")


def _set_port(lab: "Lab", ref: PortRef, state: str, pid: int | None = None) -> None:
    pid = pid or _pid(lab, ref.node)
    try:
        with IPRoute(netns=_ns_path(pid, ref), flags=0) as ipr:
            idx = ipr.link_lookup(ifname=ref.port)
            if not idx:
                raise TwinError(f"{lab.name}/{ref}: no such interface in the node; is its link wired?")
            p = _fabric(lab).nodes[ref.node].ports_by_name[ref.port]
            ipr.link("set", index=idx[0], state=state,
                     ifalias=alias(lab.name, f"{ref.node}:{ref.port}", f"{p.peer_node}:{p.peer_port}"))
    except (NetlinkError, OSError) as e:
        raise TwinError(f"{lab.name}/{ref}: cannot set it {state}: {e}") from None


# --- links -----------------------------------------------------------------
def link_down(lab: "Lab", spec: str) -> Fault:
    """Set both ends of the link on `spec` ('node:port') administratively down."""
    a, b = link_of(lab, spec)
    for ref in (a, b):
        _set_port(lab, ref, "down")
    return Fault("link-down", f"{a.node}:{a.port}", {"ends": f"{a}, {b}"}, undo=f"twin fault link-up {lab.name} {spec}",
                 revert_fn=lambda: link_up(lab, spec))


def link_up(lab: "Lab", spec: str) -> Fault:
    """Set both ends of the link on `spec` up again."""
    a, b = link_of(lab, spec)
    for ref in (a, b):
        _set_port(lab, ref, "up")
    return Fault("link-up", f"{a.node}:{a.port}", {"ends": f"{a}, {b}"}, undo=f"twin fault link-down {lab.name} {spec}",
                 revert_fn=lambda: link_down(lab, spec))


def _in_ns(ref: PortRef, cmd: list[str]) -> list[str]:
    return (["ip", "netns", "exec", ref.ns] if ref.ns else []) + cmd


def loss_ruleset(port: str, percent: int) -> str:
    """nftables: drop `percent`% of the frames entering and leaving `port`, at random, counted."""
    table = LOSS_TABLE.format(port=port)
    match = "" if percent >= 100 else f"numgen random mod 100 < {percent} "  # 100%: a black hole
    rule = f'{match}counter drop comment "twin fault: {percent}% loss"'
    chains = "\n".join(
        f"\tchain {hook} {{\n\t\ttype filter hook {hook} device \"{port}\" priority {LOSS_PRIORITY}; policy accept;\n"
        f"\t\t{rule}\n\t}}" for hook in ("ingress", "egress"))
    return f"table netdev {table}\ndelete table netdev {table}\ntable netdev {table} {{\n{chains}\n}}\n"


def _nft_load(ex: NodeExec, ref: PortRef, ruleset: str) -> None:
    ex.check(_in_ns(ref, ["sh", "-c", 'printf "%s" "$1" | nft -f -', "nft", ruleset]))


def link_loss(lab: "Lab", spec: str, percent: int) -> Fault:
    """Random loss of `percent`% of the frames crossing port `spec`, in each direction.

    With tc netem (probed by trying it): netem on the egress of both ends of the
    link. Without it: an nftables netdev table on that port, whose ingress and
    egress hooks drop `numgen random mod 100 < percent`.
    """
    if not 0 < percent <= 100:
        raise TwinError(f"loss must be a percentage in 1..100, not {percent}")
    a, b = link_of(lab, spec)
    ends = {a.node: _exec(lab, a.node), b.node: _exec(lab, b.node)}
    tried = ends[a.node].run(_in_ns(a, ["tc", "qdisc", "replace", "dev", a.port, "root", "netem",
                                        "loss", f"{percent}%"]))
    if tried.ok:
        ends[b.node].check(_in_ns(b, ["tc", "qdisc", "replace", "dev", b.port, "root", "netem", "loss", f"{percent}%"]))
        details = {"mechanism": "netem", "percent": percent, "where": f"egress of {a} and {b}"}
    else:
        ruleset = loss_ruleset(a.port, percent)
        _nft_load(ends[a.node], a, ruleset)
        details = {"mechanism": "nftables", "percent": percent,
                   "where": f"netdev ingress+egress of {a}, table {LOSS_TABLE.format(port=a.port)}",
                   "netem": (tried.stderr or tried.stdout).strip().splitlines()[0] if (tried.stderr or tried.stdout).strip()
                   else f"tc exited {tried.rc}", "ruleset": ruleset}
    return Fault("link-loss", f"{a.node}:{a.port}", details, undo=f"twin fault loss-clear {lab.name} {spec}",
                 revert_fn=lambda: link_loss_clear(lab, spec))


def loss_dropped(lab: "Lab", spec: str) -> int | None:
    """Frames an nftables loss fault on `spec` dropped so far (None: no such fault)."""
    ref = port_ref(lab, spec)
    res = _exec(lab, ref.node).run(_in_ns(ref, ["nft", "-j", "list", "table", "netdev", LOSS_TABLE.format(port=ref.port)]))
    if not res.ok:
        return None
    try:
        items = json.loads(res.stdout)["nftables"]
    except (ValueError, KeyError) as e:
        raise TwinError(f"{lab.name}/{ref}: unreadable nft output ({e})") from None
    return sum(x["counter"]["packets"] for item in items if "rule" in item
               for x in item["rule"]["expr"] if "counter" in x)


def link_loss_clear(lab: "Lab", spec: str) -> Fault:
    """Remove a loss fault from the link on `spec`, whichever mechanism made it."""
    a, b = link_of(lab, spec)
    dropped = loss_dropped(lab, spec)
    removed = []
    if dropped is not None:
        _exec(lab, a.node).check(_in_ns(a, ["nft", "delete", "table", "netdev", LOSS_TABLE.format(port=a.port)]))
        removed.append(f"nftables table on {a}")
    for ref in (a, b):
        ex = _exec(lab, ref.node)
        if "netem" in ex.run(_in_ns(ref, ["tc", "qdisc", "show", "dev", ref.port])).stdout:
            ex.check(_in_ns(ref, ["tc", "qdisc", "del", "dev", ref.port, "root"]))
            removed.append(f"netem on {ref}")
    details: dict[str, Any] = {"removed": "; ".join(removed) or "nothing: no loss fault on this link"}
    if dropped is not None:
        details["dropped"] = dropped
    return Fault("link-loss-clear", f"{a.node}:{a.port}", details)


# --- FRR daemons -----------------------------------------------------------
def daemon_pid(lab: "Lab", node: str, daemon: str = "bgpd") -> int | None:
    """PID of FRR daemon `daemon` in `node` (None: not running)."""
    res = _exec(lab, node).run(["pgrep", "-x", daemon])
    pids = [int(p) for p in res.stdout.split()]
    return pids[0] if pids else None


def daemon_kill(lab: "Lab", node: str, daemon: str = "bgpd") -> Fault:
    """SIGKILL FRR daemon `daemon` in `node`; watchfrr starts it again."""
    if not _fabric(lab).nodes[_node(lab, node)].runs_bgp:
        raise TwinError(f"node {node} runs no FRR; routers: {', '.join(n.name for n in _fabric(lab).routers())}")
    pid = daemon_pid(lab, node, daemon)
    if pid is None:
        running = _exec(lab, node).run(["pgrep", "-l", "-f", "^/usr/lib/frr/"]).stdout.split()
        names = sorted({w for w in running if not w.isdigit()})
        raise TwinError(f"{lab.name}/{node}: no {daemon} running; FRR processes: {', '.join(names) or 'none'}")
    _exec(lab, node).check(["kill", "-KILL", str(pid)])
    return Fault("daemon-kill", f"{node}/{daemon}", {"pid": pid, "signal": "KILL"},
                 undo="none needed: watchfrr restarts the daemon")


# --- nodes -----------------------------------------------------------------
def node_stop(lab: "Lab", node: str) -> Fault:
    """Stop `node`'s container (SIGTERM, then SIGKILL after the grace period); its links die."""
    c = _container(lab, node)
    c.stop(timeout=int(timeouts.NODE_STOP))
    return Fault("node-stop", node, {"container": c.name}, undo=f"twin fault node-start {lab.name} {node}",
                 revert_fn=lambda: node_start(lab, node))


def node_kill(lab: "Lab", node: str) -> Fault:
    """SIGKILL `node`'s container, as a power loss would; its links die."""
    c = _container(lab, node)
    try:
        c.kill()
        c.wait(timeout=timeouts.NODE_STOP)
    except docker.errors.APIError as e:
        raise TwinError(f"{lab.name}/{node}: cannot kill {c.name}: {e.explanation or e}") from None
    return Fault("node-kill", node, {"container": c.name, "signal": "KILL"},
                 undo=f"twin fault node-start {lab.name} {node}", revert_fn=lambda: node_start(lab, node))


def _replumb_peer(lab: "Lab", ref: PortRef, pid: int) -> None:
    """A peer's port on a re-created link: back up, and, on a VTEP's host port or a host,
    the kernel steps of bring-up that concern it (tenant namespace, bridge, MAC, address)."""
    fabric = _fabric(lab)
    if fabric.nodes[ref.node].kind == "host":
        bringup.configure_node(fabric, ref.node, _exec(lab, ref.node), pid, lab.backend)
        return
    steps = [s for s in plan(fabric, ref.node, lab.backend) if s.dev == ref.port]
    if steps:  # moves it into its tenant namespace first, then master/up/fdb there
        kernel.apply(steps, pid, _exec(lab, ref.node))
    _set_port(lab, ref, "up", pid)


def _wait_gone(lab: "Lab", ref: PortRef, pid: int) -> None:
    """Until the peer's end of a link whose node stopped is gone (the kernel frees a dead
    namespace's veths asynchronously), so the link can be made again."""
    def left() -> list[str]:
        paths = {_ns_path(pid, ref), netns_path(pid)}
        found = []
        for path in paths:
            try:
                with IPRoute(netns=path, flags=0) as ipr:
                    found += [f"{ref}: old interface still there" for _ in ipr.link_lookup(ifname=ref.port)]
            except (NetlinkError, OSError):
                pass
        return found

    wait.until(left, timeouts.NODE_STOP, f"{lab.name}: old end of the link on {ref}", first=0.05, cap=0.2)


def node_start(lab: "Lab", node: str) -> Fault:
    """Start `node`'s container again and bring it back into the lab: re-create its links
    to every running peer (a new namespace has none), set both ends up, configure the
    node as bring-up does (overlay, FRR, bindings) and restore the peers' side of the links."""
    fabric = _fabric(lab)
    c = _container(lab, node)
    c.reload()
    if c.status == "running":
        raise TwinError(f"{lab.name}/{node} is already running; `twin fault node-restart {lab.name} {node}` restarts it")
    c.start()
    pid = lab.runtime.pid(c)
    ex = NodeExec(c, f"{lab.name}/{node}")
    if lab.backend == "netns" and fabric.tenants_on(node):  # names of the old tenant namespaces are stale
        ex.check(["rm", "-f", *[f"/run/netns/{t.vrf}" for t in fabric.tenants_on(node)]])
    running = {n: lab.runtime.pid(x) for n, x in lab.runtime.containers(lab.name).items()
               if n != node and (x.reload() or x.status == "running")}
    pids = {**running, node: pid}
    wired: list[tuple[str, PortRef]] = []  # (own port, peer end) of each re-created link
    skipped = []
    for link in (l for l in fabric.links if node in (l.a.node, l.b.node)):
        own, peer = (link.a, link.b) if link.a.node == node else (link.b, link.a)
        if peer.node not in running:
            skipped.append(str(peer))
            continue
        _wait_gone(lab, PortRef(peer.node, peer.port, _port_ns(lab, peer.node, peer.port)), running[peer.node])
        create_link(link, pids)
        wired.append((own.port, PortRef(peer.node, peer.port, _port_ns(lab, peer.node, peer.port))))
    for own, _ in wired:
        _set_port(lab, PortRef(node, own), "up", pid)
    bringup.configure_node(fabric, node, ex, pid, lab.backend)
    for _, peer in wired:
        _replumb_peer(lab, peer, running[peer.node])
    details: dict[str, Any] = {"container": c.name, "pid": pid, "links": len(wired)}
    if skipped:
        details["not wired (peer not running)"] = ", ".join(skipped)
    return Fault("node-start", node, details, undo=f"twin fault node-stop {lab.name} {node}",
                 revert_fn=lambda: node_stop(lab, node))


def node_restart(lab: "Lab", node: str) -> Fault:
    """Stop and start `node` again (new namespace, links re-created, configured again)."""
    stopped = node_stop(lab, node)
    started = node_start(lab, node)
    return Fault("node-restart", node, {**stopped.details, **started.details},
                 undo="none needed: the node runs again")


# --- command line ----------------------------------------------------------
def _do(ctx: click.Context, fn: Callable[[], Fault]) -> None:
    try:
        click.echo(str(fn()))
    except TwinError as e:
        verbose = getattr(ctx.find_root().obj, "verbose", False)
        lines = (str(e) or type(e).__name__).splitlines()
        text = "\n".join(lines) if verbose else lines[0] + (" (-v for details)" if len(lines) > 1 else "")
        click.secho("error: ", fg="red", err=True, nl=False)
        click.echo(text, err=True)
        sys.exit(1)


def _lab(name: str) -> "Lab":
    from twin.lab import Lab

    lab = Lab.open(name)
    if lab.fabric is None:
        raise TwinError(f"no lab named {name!r} here (`twin list` shows the labs)")
    return lab


@click.group(name="fault")
def fault_group() -> None:
    """Apply faults to a running lab: links, loss, nodes, FRR daemons."""


def _port_command(name: str, fn: Callable[["Lab", str], Fault], doc: str) -> None:
    @fault_group.command(name=name, help=doc)
    @click.argument("lab")
    @click.argument("port", metavar="NODE:PORT")
    @click.pass_context
    def cmd(ctx, lab, port):
        _do(ctx, lambda: fn(_lab(lab), port))


def _node_command(name: str, fn: Callable[["Lab", str], Fault], doc: str) -> None:
    @fault_group.command(name=name, help=doc)
    @click.argument("lab")
    @click.argument("node")
    @click.pass_context
    def cmd(ctx, lab, node):
        _do(ctx, lambda: fn(_lab(lab), node))


_port_command("link-down", link_down, "Set both ends of the link on NODE:PORT down.")
_port_command("link-up", link_up, "Set both ends of the link on NODE:PORT up.")
_port_command("loss-clear", link_loss_clear, "Remove random loss from the link on NODE:PORT.")
_node_command("node-stop", node_stop, "Stop NODE's container (its links die with it).")
_node_command("node-kill", node_kill, "Kill NODE's container with SIGKILL.")
_node_command("node-start", node_start, "Start NODE again: re-create its links and configure it.")
_node_command("node-restart", node_restart, "Stop and start NODE (links re-created, FRR started).")


@fault_group.command(name="daemon-kill")
@click.argument("lab")
@click.argument("node")
@click.option("--daemon", default="bgpd", show_default=True, help="FRR daemon to kill.")
@click.pass_context
def daemon_kill_cmd(ctx, lab, node, daemon):
    """SIGKILL an FRR daemon in NODE; watchfrr restarts it."""
    _do(ctx, lambda: daemon_kill(_lab(lab), node, daemon))


@fault_group.command(name="loss")
@click.argument("lab")
@click.argument("port", metavar="NODE:PORT")
@click.argument("percent", type=click.IntRange(1, 100))
@click.pass_context
def loss_cmd(ctx, lab, port, percent):
    """Drop PERCENT% of the frames crossing NODE:PORT, at random (netem, else nftables)."""
    _do(ctx, lambda: link_loss(_lab(lab), port, percent))
