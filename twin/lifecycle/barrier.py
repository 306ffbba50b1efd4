"""The convergence barrier: waits until every node holds what `twin.intent` says.

For every FRR node: every BGP session Established and a route to every loopback
the node should learn, and the routes between VTEPs spread over every port of the
fabric's shortest paths (drained routers avoided, as verify's underlay expects); on every
VTEP, per tenant: the flood entries (type-3), remote hosts' MACs and /32s (type-2) and
remote-only subnets (type-5), and nothing the intent no longer has (after a change).

Rounds read kernel state over netlink only (no process in the node, so a 48-node
lab can be polled often on 2 cores). A route learned over a session proves the
session Established, and every peer advertises its loopback, so the evidence
for the session on port P is: the route to P's peer's loopback has a next hop
on P. On a deadline, `show bgp summary json` of every unfinished node names the
state of each missing session.

Routers running the user's own config (`twin.intent.generic`) are judged by what
that config declares: their daemons run, every adjacency is up (one vtysh call per
round while they are not), the L3VNIs of their VRFs are up in zebra (with EVPN), their
static routes and what their IGPs learn from their domain are in their RIB (one call
each), and their routes stood still for `timeouts.RIB_QUIET`.

Every `timeouts.BARRIER_LOOK` (or three times as long as a look takes, on a loaded host) a
look over the next unfinished routers counts sessions up and loopback routes learned, and
FRR's counters on the router waited for name sessions that dropped after they were up
(`twin.lifecycle.progress`): the progress line says what is moving and what flaps, and a
timeout names the flapping sessions first.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

from twin import timeouts, wait
from twin.config.overlay import tenant_ns, vrf_tables
from twin.errors import CommandError, ConvergenceTimeout, NetlinkFailed, TwinError
from twin.intent import NodeIntent, TenantIntent, paths
from twin.intent.gateway import DEFAULT
from twin.lifecycle import generic, hostlimits
from twin.lifecycle.context import LabContext
from twin.lifecycle.progress import Progress, counts
from twin.runtime import frr, observe
from twin.runtime.netns import Handles, Netlink
from twin.runtime.observe import FLOOD

log = logging.getLogger(__name__)
PARALLEL = 8
LOOK_NODES = 8    # unfinished routers a look reads (the next ones at the next look): on a host FRR
                  # saturates, twin's own process gets little CPU, and a read of a router takes seconds


def missing_underlay(n: NodeIntent, routes: dict[str, set[str]]) -> list[str]:
    """What a node's kernel routes lack of its underlay intent (empty: converged); on the
    internet, also the public routes no gateway announces any more."""
    missing = [f"{n.node}: BGP session on {s.port} to {s.peer}: no route learned over it yet"
               for s in n.sessions if s.port not in routes.get(n.peer_loopbacks[s.port], ())]
    missing += [f"{n.node}: no route to {peer}'s loopback {prefix}"
                for peer, prefix in n.loopbacks.items() if prefix not in routes]
    if n.default_route and DEFAULT not in routes:
        missing.append(f"{n.node}: no default route (announced by {n.default_route})")
    missing += [f"{n.node}: no route to {prefix} ({whose})" for prefix, whose in n.public_routes.items()
                if prefix not in routes]
    if n.edge:
        known = set(n.loopbacks.values()) | set(n.public_routes) | set(n.peer_loopbacks.values())
        missing += [f"{n.node}: stale route {p} (no gateway announces it any more)" for p in sorted(routes)
                    if p.endswith("/32") and p not in known]
    return missing


def spread(fabric) -> dict[str, dict[str, tuple[str, frozenset[str]]]]:
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
    return [f"{node}: route to {vtep}'s loopback {prefix} over {', '.join(sorted(routes[prefix]))}, not yet over "
            f"{', '.join(sorted(ports))} (the fabric's shortest paths)"
            for prefix, (vtep, ports) in sorted(want.items()) if prefix in routes and routes[prefix] != ports]


def missing_tenant(node: str, t: TenantIntent, routes: dict[str, set[str]],
                   fdb: set[tuple[str, str, str]]) -> list[str]:
    """What VTEP `node` lacks of tenant `t`'s EVPN state, and still holds that the intent
    no longer has, from its kernel tables."""
    missing = []
    for seg in t.segments:
        for remote, lo in seg.remote_vteps.items():
            if (seg.vxlan, FLOOD, lo) not in fdb:
                missing.append(f"{node}: tenant {t.tenant}: no type-3 flood entry to {remote} ({lo}) "
                               f"on L2VNI {seg.l2vni} ({seg.name})")
        for mac, host, vtep in seg.remote_macs:
            if (seg.vxlan, mac, t.loopbacks[vtep]) not in fdb:
                missing.append(f"{node}: tenant {t.tenant}: no type-2 MAC {mac} of {host} via {vtep}")
    missing += [f"{node}: tenant {t.tenant}: no type-2 route to {host} {prefix} via {vtep}"
                for prefix, (host, vtep) in t.host_routes.items() if prefix not in routes]
    missing += [f"{node}: tenant {t.tenant}: no type-5 route to {seg} {prefix}"
                for prefix, seg in t.subnet_routes.items() if prefix not in routes]
    stale = [f"{node}: tenant {t.tenant}: stale route {p} (no such host or segment any more)"
             for p in sorted(routes) if p not in t.allowed]
    for seg in t.segments:
        want = set(seg.remote_vteps.values())
        stale += [f"{node}: tenant {t.tenant}: stale type-3 flood entry to {dst} on L2VNI {seg.l2vni}"
                  for dev, mac, dst in sorted(fdb) if dev == seg.vxlan and mac == FLOOD and dst not in want]
    return missing + stale


def missing_sessions(ctx: LabContext, n: NodeIntent, progress: Progress | None = None) -> list[str]:
    """Each expected session that is not Established, with FRR's word for its state (and the
    sessions that flapped, into `progress`)."""
    try:
        (summary,) = ctx.exec(n.node).vtysh_json(frr.SUMMARY, timeout=timeouts.VTYSH)
    except CommandError as e:
        first = (e.stderr or e.stdout).strip().splitlines()[:1]
        return [f"{n.node}: FRR not answering yet ({first[0] if first else f'exit {e.rc}'})"]
    if progress is not None:
        progress.flapped(n.node, frr.flaps(summary, [s.port for s in n.sessions]))
    states = frr.session_states(summary, [s.port for s in n.sessions])
    if len(n.sessions) > 1 and frr.never_started(summary, [s.port for s in n.sessions]):
        return [f"{n.node}: bgpd started none of its {len(n.sessions)} sessions (all Idle, never up): FRR holds its "
                "peers until their configuration is loaded (vtysh -b), which watchfrr cuts short on a host too busy; "
                f"`twin exec {ctx.name} {n.node} -- /usr/lib/frr/frrinit.sh restart` starts FRR again"]
    extra = frr.unexpected_peers(summary, [s.port for s in n.sessions])
    other = f"; it has {', '.join(extra)}, on no link of the topology" if extra else ""
    return [f"{n.node}: BGP session on {s.port} to {s.peer} is " + (
            states[s.port] if states[s.port] != "absent" else f"not configured (FRR has no neighbor {s.port}{other})")
            for s in n.sessions if states[s.port] != "Established"]


class Barrier:
    """Convergence of one lab to its intent; `wait(timeout)` blocks until it holds."""

    def __init__(self, ctx: LabContext, since: float | None = None):
        self.ctx = ctx
        self.since = time.monotonic() if since is None else since   # the kernel log is read from here on
        self.intent = ctx.intent
        self.nodes = list(self.intent.nodes) + list(self.intent.generic)
        self.handles = Handles()
        self.ribs = generic.RibWatch()
        self.tables = vrf_tables(ctx.fabric)
        self.progress = Progress(dict(self.intent.nodes))
        self.spread = spread(ctx.fabric)
        self.cursor = 0   # where the next look's window starts among the unfinished routers

    def _ipr(self, node: str, ns: str = "") -> Netlink:
        return self.handles.get(self.ctx.pid(node), ns)

    def tenant_tables(self, node: str, t: TenantIntent) -> tuple[dict[str, set[str]], set[tuple[str, str, str]]]:
        """A tenant's VRF routes and VXLAN FDB on VTEP `node`."""
        ns = tenant_ns(self.ctx.fabric.tenants[t.tenant], self.ctx.backend)
        ipr = self._ipr(node, ns)
        names = observe.link_names(ipr)
        table = 254 if ns else self.tables[t.tenant]
        return observe.routes(ipr, table, host_only=False, names=names), observe.fdb(ipr, names)

    def generic_missing(self, node: str) -> list[str]:
        """A router of the user's config: its daemons, then its adjacencies, and a RIB standing still."""
        gi = self.intent.generic[node]
        try:
            missing = generic.daemons_missing(gi, self.ctx.pid(node))
            missing = missing or generic.adjacencies_missing(self.ctx.exec(node), gi)
            missing = missing or generic.vnis_missing(self.ctx.exec(node), gi)
            missing = missing or generic.routes_missing(self.ctx.exec(node), gi)
            missing = missing or self.ribs.missing(node, self._ipr(node))   # settling starts once all is up
        except (NetlinkFailed, OSError) as e:
            return [f"{node}: cannot read its kernel state ({e}); is the container running?"]
        return list(gi.notes) + missing if missing else []

    def node_missing(self, node: str, sessions: bool = False) -> list[str]:
        if node in self.intent.generic:
            return self.generic_missing(node)
        n = self.intent.nodes[node]
        try:
            routes = observe.routes(self._ipr(node), host_only=False)
            self.progress.saw(node, counts(n, routes))
            missing = missing_underlay(n, routes) or missing_spread(node, self.spread.get(node, {}), routes)
            for t in n.tenants if not missing else ():
                missing += missing_tenant(node, t, *self.tenant_tables(node, t))
        except (NetlinkFailed, OSError) as e:
            return [f"{node}: cannot read its kernel state ({e}); is the container running?"]
        if missing and sessions:
            missing += missing_sessions(self.ctx, n, self.progress)
        return missing

    def look(self, pool: ThreadPoolExecutor, done: set[str]) -> None:
        """The next LOOK_NODES unfinished routers read (counts for the progress line, kept per router
        between looks; the finished ones marked done), and FRR's session counters on the router
        waited for (flaps). A window, not the whole lab: on 256 routers of a saturated host,
        reading every one took minutes, and the barrier waited meanwhile."""
        unfinished = [n for n in self.nodes if n not in done]
        start = self.cursor % len(unfinished) if unfinished else 0
        window = (unfinished[start:] + unfinished[:start])[:LOOK_NODES]
        self.cursor = start + len(window)
        left = self.round(pool, window)
        for n in window:
            if n not in left:
                done.add(n)
                self.progress.done(n)
        first = next((n for n in self.nodes if n not in done and n in self.intent.nodes), None)
        if first is not None:
            want = self.intent.nodes[first]
            try:
                (summary,) = self.ctx.exec(first).vtysh_json(frr.SUMMARY, timeout=timeouts.VTYSH_QUICK)
                self.progress.flapped(first, frr.flaps(summary, [s.port for s in want.sessions]))
            except (CommandError, TwinError):
                pass   # FRR not answering yet: the next look asks again
        self.progress.looked = True

    def round(self, pool: ThreadPoolExecutor, nodes: list[str], sessions: bool = False) -> dict[str, list[str]]:
        t = time.monotonic()
        results = dict(zip(nodes, pool.map(lambda n: self.node_missing(n, sessions), nodes)))
        left = {n: m for n, m in results.items() if m}
        log.debug("round over %d nodes: %d unfinished, %d missing, %.2fs", len(nodes), len(left),
                  sum(map(len, left.values())), time.monotonic() - t)
        return left

    def wait(self, timeout: float, say=lambda _: None) -> float:
        """Poll until converged. Rounds stop at the first unfinished node (the lab
        cannot be done before it), so a settling lab costs one cheap read per
        round; finished nodes are skipped until a confirmation round over all."""
        done: set[str] = set()
        next_look = time.monotonic() + timeouts.BARRIER_LOOK
        with ThreadPoolExecutor(PARALLEL) as pool:
            def probe() -> list[str]:
                nonlocal next_look
                if time.monotonic() >= next_look:
                    t = time.monotonic()
                    self.look(pool, done)
                    took = time.monotonic() - t   # a look costs: on a large lab, a few times its own length apart
                    next_look = time.monotonic() + min(max(timeouts.BARRIER_LOOK, 3 * took), timeouts.BARRIER_LOOK_MAX)
                for n in self.nodes:
                    if n in done:
                        continue
                    missing = self.node_missing(n)
                    if missing:
                        say(self.progress.line(len(done), len(self.nodes), n))
                        return missing
                    done.add(n)
                    self.progress.done(n)
                left = self.round(pool, self.nodes)  # all looked done: confirm once over every node
                done.difference_update(left)
                return [m for n in sorted(left) for m in left[n]]

            def diagnose() -> list[str]:
                left = self.round(pool, self.nodes, sessions=True)
                return [m for n in sorted(left) for m in left[n]]

            try:
                return wait.until(probe, timeout, self.what(), diagnose=diagnose, first=timeouts.BARRIER_FIRST,
                                  cap=timeouts.BARRIER_POLL)
            except ConvergenceTimeout as e:   # host-level causes (kernel log, OOM, dead daemons) first, then flaps
                causes = hostlimits.host_causes(self.ctx.name, self.since, self.ctx.containers())
                timers = self.ctx.fabric.timers or "keepalive 3 s, hold 9 s"
                raise e.with_causes(causes + self.progress.causes(str(timers))) from None
            finally:
                self.handles.close()

    def what(self) -> str:
        mine = ", your routers' daemons, adjacencies and settled routes" if self.intent.generic else ""
        return "convergence (BGP sessions, loopback routes" + (
            ", VNIs and EVPN type-2/3/5 routes" if self.ctx.fabric.tenants else "") + mine + ")"

    def now(self) -> list[str]:
        """Everything missing of the intent right now (with session states; no waiting: routes
        still changing are a matter of waiting, not judged by one look)."""
        self.ribs.quiet = 0.0
        try:
            with ThreadPoolExecutor(PARALLEL) as pool:
                left = self.round(pool, self.nodes, sessions=True)
            return [m for n in sorted(left) for m in left[n]]
        finally:
            self.handles.close()


def deadline(ctx: LabContext) -> float:
    """The default deadline of a lab: per FRR node, and OSPF's wait where a router runs it."""
    ospf = any(p in ("ospf", "ospf6") for g in ctx.intent.generic.values() for p in g.protocols())
    return timeouts.converge(len(ctx.intent.nodes) + len(ctx.intent.generic)) + (timeouts.OSPF_WAIT if ospf else 0)


def converge(ctx: LabContext, timeout: float | None = None, say=lambda _: None, since: float | None = None) -> float:
    """Wait until the running lab holds its intent; ConvergenceTimeout names what is missing
    (and, first, the host-level causes it can see in the kernel log since `since`)."""
    limit = timeout if timeout is not None else deadline(ctx)
    return Barrier(ctx, since).wait(limit, say=say)


def missing(ctx: LabContext) -> list[str]:
    return Barrier(ctx).now()
