"""The convergence barrier: waits until every node holds what `twin.intent` says.

For every FRR node: every BGP session Established and a route to every loopback
the node should learn, and the routes between VTEPs spread over every port of the
fabric's shortest paths (drained routers avoided, as verify's underlay expects); on every
VTEP, per tenant: the flood entries (type-3), remote hosts' MACs and /32s (type-2) and
remote-only subnets (type-5), and nothing the intent no longer has (after a change).

Rounds read kernel state over netlink only (no process in the node), by raw dumps the
kernel filters by table and twin parses for the few attributes it needs
(`twin.runtime.rtdump`), and only of the routers not done yet: a round costs in
proportion to what is still missing, and rounds are paced by what the last one cost.
Every read has its own deadline, cut to the barrier's: a dump not answered in time is
abandoned (its socket closed) and its router is "not known yet" for that round, so the
deadline holds whatever a node does. A route learned over a session proves the
session Established, and every peer advertises its loopback, so the evidence
for the session on port P is: the route to P's peer's loopback has a next hop
on P. On a deadline, `show bgp summary json` of every unfinished node names the
state of each missing session (within a share of the deadline kept for it).

Routers running the user's own config (`twin.intent.generic`) are judged by what
that config declares: their daemons run, every adjacency is up (one vtysh call per
round while they are not), the L3VNIs of their VRFs are up in zebra (with EVPN), their
static routes and what their IGPs learn from their domain are in their RIB (one call
each), and their routes stood still for `timeouts.RIB_QUIET`.

Every round counts sessions up and loopback routes learned on the routers it read, and
every `timeouts.BARRIER_LOOK` FRR's counters on the router waited for name sessions that
dropped after they were up (`twin.lifecycle.progress`): the progress line says what is
moving and what flaps, and a timeout names the flapping sessions first.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Callable

from twin.base import timeouts, wait
from twin.base.errors import CommandError, ConvergenceTimeout, NetlinkFailed, NetlinkTimeout, TwinError
from twin.base.wait import Deadline
from twin.config.overlay import tenant_ns, vrf_tables
from twin.intent import NodeIntent, TenantIntent, paths
from twin.intent.gateway import DEFAULT
from twin.lifecycle import generic, hostlimits
from twin.lifecycle.context import LabContext
from twin.lifecycle.progress import Progress, counts, holdups, lacking
from twin.runtime import (
    FLOOD_MAC,
    FRR_SUMMARY,
    NetlinkHandles,
    RouteDumper,
    RouteDumpers,
    session_flaps,
    session_states,
    sessions_never_started,
    unexpected_peers,
)
from twin.topology.model import Fabric

log = logging.getLogger(__name__)
PARALLEL = 8
PACE = 2.0  # a round waits at least twice as long as the last one took (twin's share of a busy host)
DIAGNOSE_SHARE = 0.1  # of a deadline, at most, kept for naming what is missing once the rounds end


def missing_underlay(n: NodeIntent, routes: dict[str, set[str]]) -> list[str]:
    """What a node's kernel routes lack of its underlay intent (empty: converged); on the
    internet, also the public routes no gateway announces any more."""
    missing = [
        f"{n.node}: BGP session on {s.port} to {s.peer}: no route learned over it yet"
        for s in n.sessions
        if s.port not in routes.get(n.peer_loopbacks[s.port], ())
    ]
    missing += [
        f"{n.node}: no route to {peer}'s loopback {prefix}"
        for peer, prefix in n.loopbacks.items()
        if prefix not in routes
    ]
    if n.default_route and DEFAULT not in routes:
        missing.append(f"{n.node}: no default route (announced by {n.default_route})")
    missing += [
        f"{n.node}: no route to {prefix} ({whose})" for prefix, whose in n.public_routes.items() if prefix not in routes
    ]
    if n.edge:
        known = set(n.loopbacks.values()) | set(n.public_routes) | set(n.peer_loopbacks.values())
        missing += [
            f"{n.node}: stale route {p} (no gateway announces it any more)"
            for p in sorted(routes)
            if p.endswith("/32") and p not in known
        ]
    return missing


def spread(fabric: Fabric) -> dict[str, dict[str, tuple[str, frozenset[str]]]]:
    """Per router, the routes between VTEPs it carries and the ports each must spread over:
    node -> {remote VTEP's loopback /32: (that VTEP, the ports of the fabric's shortest paths)}.
    What `twin verify`'s underlay group sends frames over (`twin.intent.paths`); a drained router's
    paths are left out where others exist, and come back when it is undrained."""
    out: dict[str, dict[str, tuple[str, frozenset[str]]]] = {}
    for a, b in paths.vtep_pairs(fabric):
        lo = f"{fabric.nodes[b].loopback}/32"
        for node, ports in paths.next_hops(fabric, a, b).items():
            out.setdefault(node, {})[lo] = (b, frozenset(ports))
    return out


def missing_spread(node: str, want: dict[str, tuple[str, frozenset[str]]], routes: dict[str, set[str]]) -> list[str]:
    return [
        f"{node}: route to {vtep}'s loopback {prefix} over {', '.join(sorted(routes[prefix]))}, not yet over "
        f"{', '.join(sorted(ports))} (the fabric's shortest paths)"
        for prefix, (vtep, ports) in sorted(want.items())
        if prefix in routes and routes[prefix] != ports
    ]


def missing_tenant(
    node: str, t: TenantIntent, routes: dict[str, set[str]], fdb: set[tuple[str, str, str]]
) -> list[str]:
    """What VTEP `node` lacks of tenant `t`'s EVPN state, and still holds that the intent
    no longer has, from its kernel tables."""
    missing = []
    for seg in t.segments:
        for remote, lo in seg.remote_vteps.items():
            if (seg.vxlan, FLOOD_MAC, lo) not in fdb:
                missing.append(
                    f"{node}: tenant {t.tenant}: no type-3 flood entry to {remote} ({lo}) "
                    f"on L2VNI {seg.l2vni} ({seg.name})"
                )
        for mac, host, vtep in seg.remote_macs:
            if (seg.vxlan, mac, t.loopbacks[vtep]) not in fdb:
                missing.append(f"{node}: tenant {t.tenant}: no type-2 MAC {mac} of {host} via {vtep}")
    missing += [
        f"{node}: tenant {t.tenant}: no type-2 route to {host} {prefix} via {vtep}"
        for prefix, (host, vtep) in t.host_routes.items()
        if prefix not in routes
    ]
    missing += [
        f"{node}: tenant {t.tenant}: no type-5 route to {seg} {prefix}"
        for prefix, seg in t.subnet_routes.items()
        if prefix not in routes
    ]
    stale = [
        f"{node}: tenant {t.tenant}: stale route {p} (no such host or segment any more)"
        for p in sorted(routes)
        if p not in t.allowed
    ]
    for seg in t.segments:
        want = set(seg.remote_vteps.values())
        stale += [
            f"{node}: tenant {t.tenant}: stale type-3 flood entry to {dst} on L2VNI {seg.l2vni}"
            for dev, mac, dst in sorted(fdb)
            if dev == seg.vxlan and mac == FLOOD_MAC and dst not in want
        ]
    return missing + stale


def missing_sessions(
    ctx: LabContext, n: NodeIntent, progress: Progress | None = None, timeout: float = timeouts.VTYSH
) -> list[str]:
    """Each expected session that is not Established, with FRR's word for its state (and the
    sessions that flapped, into `progress`)."""
    try:
        (summary,) = ctx.exec(n.node).vtysh_json(FRR_SUMMARY, timeout=timeout)
    except CommandError as e:
        first = (e.stderr or e.stdout).strip().splitlines()[:1]
        return [f"{n.node}: FRR not answering yet ({first[0] if first else f'exit {e.rc}'})"]
    if progress is not None:
        progress.flapped(n.node, session_flaps(summary, [s.port for s in n.sessions]))
    states = session_states(summary, [s.port for s in n.sessions])
    if len(n.sessions) > 1 and sessions_never_started(summary, [s.port for s in n.sessions]):
        return [
            f"{n.node}: bgpd started none of its {len(n.sessions)} sessions (all Idle, never up): FRR holds its "
            "peers until their configuration is loaded (vtysh -b), which a daemon stopped or starved holds back; "
            f"`twin exec {ctx.name} {n.node} -- sh -c 'echo reboot > /run/twin/nodectl'` boots its FRR again"
        ]
    extra = unexpected_peers(summary, [s.port for s in n.sessions])
    other = f"; it has {', '.join(extra)}, on no link of the topology" if extra else ""
    return [
        f"{n.node}: BGP session on {s.port} to {s.peer} is "
        + (states[s.port] if states[s.port] != "absent" else f"not configured (FRR has no neighbor {s.port}{other})")
        for s in n.sessions
        if states[s.port] != "Established"
    ]


def not_known(node: str, why: str) -> list[str]:
    return [f"{node}: not known yet: {why}"]


class Barrier:
    """Convergence of one lab to its intent; `wait(timeout)` blocks until it holds."""

    def __init__(self, ctx: LabContext, since: float | None = None):
        self.ctx = ctx
        self.since = time.monotonic() if since is None else since  # the kernel log is read from here on
        self.intent = ctx.intent
        self.nodes = list(self.intent.nodes) + list(self.intent.generic)
        self.dumps = RouteDumpers()  # routers' kernel tables (raw dumps, each with its deadline)
        self.handles = NetlinkHandles()  # routers of the user's config: their RIB (pyroute2, with deadlines)
        self.ribs = generic.RibWatch()
        self.tables = vrf_tables(ctx.fabric)
        self.progress = Progress(dict(self.intent.nodes))
        self.spread = spread(ctx.fabric)
        self.known: dict[str, list[str]] = {}  # what each router lacked when last read
        self.rounds: list[tuple[int, float]] = []  # (routers read, seconds) of every round: its cost
        self.next_flaps = 0.0
        self.looking: threading.Thread | None = None  # the look at FRR's session counters under way

    def _dumper(self, node: str, ns: str = "") -> RouteDumper:
        return self.dumps.get(self.ctx.pid(node), ns)

    def tenant_tables(
        self, node: str, t: TenantIntent, until: Deadline
    ) -> tuple[dict[str, set[str]], set[tuple[str, str, str]]]:
        """A tenant's VRF routes and VXLAN FDB on VTEP `node`."""
        ns = tenant_ns(self.ctx.fabric.tenants[t.tenant], self.ctx.backend)
        d = self._dumper(node, ns)
        table = 254 if ns else self.tables[t.tenant]
        return d.routes(table, host_only=False, until=until.end), d.fdb(until=until.end)

    def generic_missing(self, node: str) -> list[str]:
        """A router of the user's config: its daemons, then its adjacencies, and a RIB standing still."""
        gi = self.intent.generic[node]
        try:
            missing = generic.daemons_missing(gi, self.ctx.pid(node))
            missing = missing or generic.adjacencies_missing(self.ctx.exec(node), gi)
            missing = missing or generic.vnis_missing(self.ctx.exec(node), gi)
            missing = missing or generic.routes_missing(self.ctx.exec(node), gi)
            missing = missing or self.ribs.missing(node, self.handles.get(self.ctx.pid(node)))
        except NetlinkTimeout as e:
            self.handles.drop(self.ctx.pid(node))
            return not_known(node, str(e))
        except (NetlinkFailed, OSError) as e:
            return [f"{node}: cannot read its kernel state ({e}); is the container running?"]
        return list(gi.notes) + missing if missing else []

    def node_missing(self, node: str, until: Deadline, sessions: bool = False) -> list[str]:
        """What `node` lacks of its intent, read now (each read within `until`)."""
        if node in self.intent.generic:
            return self.generic_missing(node)
        n = self.intent.nodes[node]
        try:
            routes = self._dumper(node).routes(host_only=False, until=until.end)
            self.progress.saw(node, counts(n, routes), lacking(n, routes))
            missing = missing_underlay(n, routes) or missing_spread(node, self.spread.get(node, {}), routes)
            for t in n.tenants if not missing else ():
                missing += missing_tenant(node, t, *self.tenant_tables(node, t, until))
        except NetlinkTimeout as e:
            return not_known(node, str(e))
        except (NetlinkFailed, OSError) as e:
            return [f"{node}: cannot read its kernel state ({e}); is the container running?"]
        if missing and sessions:
            missing += missing_sessions(self.ctx, n, self.progress, timeout=until.within(timeouts.VTYSH))
        return missing

    def round(self, pool: Executor, nodes: list[str], until: Deadline, sessions: bool = False) -> dict[str, list[str]]:
        """Every router of `nodes` read once, for as long as `until` allows: router -> what it lacks
        (a router whose read had not ended by then: what it lacked when last read, else not known)."""
        t = time.monotonic()
        read, late = wait.each(pool, lambda n: self.node_missing(n, until, sessions), nodes, until)
        self.known.update(read)
        for n in late:
            self.known[n] = self.known.get(n) or not_known(n, "its read had not ended at the deadline")
        left = {n: self.known[n] for n in nodes if self.known[n]}
        self.rounds.append((len(nodes), time.monotonic() - t))
        log.debug(
            "round over %d nodes: %d unfinished, %d missing, %.2fs",
            len(nodes),
            len(left),
            sum(map(len, left.values())),
            time.monotonic() - t,
        )
        return left

    def flaps(self, until: Deadline) -> None:
        """FRR's session counters on the router waited for (sessions that dropped after they were up),
        every `timeouts.BARRIER_LOOK`, read beside the rounds (a thread of its own, one look at a time): a
        vtysh call that waits for a busy bgpd neither delays the next round, nor counts in its pace, nor
        holds `twin up` once the lab has converged."""
        first = next((n for n in self.nodes if self.known.get(n) and n in self.intent.nodes), None)
        if first is None or time.monotonic() < self.next_flaps or (self.looking and self.looking.is_alive()):
            return
        self.next_flaps = time.monotonic() + timeouts.BARRIER_LOOK
        self.looking = threading.Thread(target=self._flaps, args=(first, until), name="twin-flaps", daemon=True)
        self.looking.start()

    def _flaps(self, node: str, until: Deadline) -> None:
        want = self.intent.nodes[node]
        try:
            (summary,) = self.ctx.exec(node).vtysh_json(FRR_SUMMARY, timeout=until.within(timeouts.VTYSH_QUICK))
            self.progress.flapped(node, session_flaps(summary, [s.port for s in want.sessions]))
        except TwinError:
            pass  # FRR not answering yet: the next look asks again

    def wait(self, timeout: float, say: Callable[[str], None] = lambda _: None, since: float | None = None) -> float:
        """Poll until converged: each round reads the routers not done yet (its cost in proportion
        to them), and once every one is done, a round over all confirms it at once. The deadline is
        `timeout` after `since` (default now) and holds: every read has its own deadline, cut to it,
        and a share of it (`DIAGNOSE`) is kept for naming what is missing."""
        deadline = Deadline.after(timeout, since)
        rounds = deadline.earlier(min(timeouts.BARRIER_DIAGNOSE, timeout * DIAGNOSE_SHARE))
        if rounds.passed():  # what came before the barrier (a bring-up's containers and links) took it all
            raise ConvergenceTimeout(
                self.what(),
                deadline.elapsed(),
                [
                    f"nothing read: {deadline.elapsed():.0f}s of the {timeout:.0f}s deadline had passed when the wait "
                    "for convergence began (the containers, links and FRR's start before it)"
                ],
            )
        done: set[str] = set()
        pool = ThreadPoolExecutor(PARALLEL)

        def read(nodes: list[str]) -> dict[str, list[str]]:
            left = self.round(pool, nodes, rounds)
            for n in nodes:
                if n in left:
                    done.discard(n)
                elif n not in done:
                    done.add(n)
                    self.progress.done(n)
            return left

        def probe() -> list[str]:
            nodes = [n for n in self.nodes if n not in done] or self.nodes
            left = read(nodes)
            if not left and len(nodes) < len(self.nodes):  # the last routers done: all confirmed now, not a poll later
                left = read(self.nodes)
            self.progress.looked = True
            if not left:
                return []
            self.flaps(rounds)
            say(self.progress.line(len(done), len(self.nodes), holdups(left)))  # the nodes holding it back, and what
            return [m for n in sorted(left) for m in left[n]]

        def diagnose() -> list[str]:
            left = self.round(pool, [n for n in self.nodes if n not in done], deadline, sessions=True)
            return [m for n in sorted(left) for m in left[n]]

        try:
            return wait.until(
                probe,
                rounds.end - rounds.start,
                self.what(),
                diagnose=diagnose,
                since=deadline.start,
                first=timeouts.BARRIER_FIRST,
                cap=timeouts.BARRIER_POLL,
                pace=PACE,
            )
        except ConvergenceTimeout as e:  # host-level causes (kernel log, OOM, dead daemons) first, then flaps
            # the causes are what a timeout most needs to say: read within the deadline's rest or HOST_CAUSES,
            # whichever is longer (a short deadline on a busy host is spent by the rounds and their diagnosis)
            until = max(deadline.end, time.monotonic() + timeouts.HOST_CAUSES)
            causes = hostlimits.host_causes(self.ctx.name, self.since, self.ctx.containers(), until=until)
            timers = self.ctx.fabric.timers or "keepalive 3 s, hold 9 s"
            raise ConvergenceTimeout(
                e.what, deadline.elapsed(), e.missing, causes + self.progress.causes(str(timers))
            ) from None
        finally:
            pool.shutdown(wait=False, cancel_futures=True)  # a read under way ends by its own deadline
            self.dumps.close()
            self.handles.close()

    def what(self) -> str:
        mine = ", your routers' daemons, adjacencies and settled routes" if self.intent.generic else ""
        return (
            "convergence (BGP sessions, loopback routes"
            + (", VNIs and EVPN type-2/3/5 routes" if self.ctx.fabric.tenants else "")
            + mine
            + ")"
        )

    def now(self, timeout: float = timeouts.BARRIER_NOW) -> list[str]:
        """Everything missing of the intent right now (with session states; no waiting: routes
        still changing are a matter of waiting, not judged by one look); a router not read within
        `timeout` is named as not known."""
        self.ribs.quiet = 0.0
        pool = ThreadPoolExecutor(PARALLEL)
        try:
            left = self.round(pool, self.nodes, Deadline.after(timeout), sessions=True)
            return [m for n in sorted(left) for m in left[n]]
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            self.dumps.close()
            self.handles.close()


def deadline(ctx: LabContext) -> float:
    """The default deadline of a lab: per FRR node, and OSPF's wait where a router runs it."""
    ospf = any(p in ("ospf", "ospf6") for g in ctx.intent.generic.values() for p in g.protocols())
    return timeouts.converge(len(ctx.intent.nodes) + len(ctx.intent.generic)) + (timeouts.OSPF_WAIT if ospf else 0)


def waiting_for(ctx: LabContext, limit: float, left: float | None = None) -> str:
    """What the barrier waits for, in a line; `left`: of a deadline that runs from the command's start."""
    mine, fabric = ctx.intent.generic, ctx.fabric
    return (
        f"waiting for {len(fabric.sessions())} BGP sessions and loopback routes on {len(ctx.intent.nodes)} "
        "routers"
        + (f", {len(fabric.tenants)} tenants' EVPN routes" if fabric.tenants else "")
        + (
            f", {sum(len(g.adjacencies) for g in mine.values())} adjacencies of {len(mine)} routers of your configs"
            if mine
            else ""
        )
        + (
            f" (deadline {limit:.0f}s from the command's start, {left:.0f}s left)"
            if left is not None
            else f" (deadline {limit:.0f}s)"
        )
    )


def converge(
    ctx: LabContext,
    timeout: float | None = None,
    say: Callable[[str], None] = lambda _: None,
    since: float | None = None,
    start: float | None = None,
) -> float:
    """Wait until the running lab holds its intent; ConvergenceTimeout names what is missing
    (and, first, the host-level causes it can see in the kernel log since `since`). The deadline
    is `timeout` (default: from the lab's size) after `start` (default now)."""
    limit = timeout if timeout is not None else deadline(ctx)
    return Barrier(ctx, since).wait(limit, say=say, since=start)


def missing(ctx: LabContext) -> list[str]:
    return Barrier(ctx).now()
