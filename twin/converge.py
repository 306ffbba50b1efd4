"""The convergence barrier, derived from intent.

For every FRR node: every BGP session the topology implies is Established and
the kernel has a route to every loopback the node should learn.

Rounds read kernel state over netlink only (no process in the node, so a 48-node
lab can be polled often on 2 cores). A route learned over a session proves the
session Established, and every peer advertises its loopback, so the evidence
for the session on port P is: the route to P's peer's loopback has a next hop
on P. On a deadline, `show bgp summary json` of every unfinished node names the
state of each missing session.
"""
from __future__ import annotations

import logging
import socket
import time
from concurrent.futures import ThreadPoolExecutor

from pyroute2 import IPRoute, NetlinkError

from twin import hostlimits, wait
from twin.errors import CommandError, ConvergenceTimeout
from twin.overlay import vrf_tables, vxlan_name
from twin.runtime.exec import NodeExec
from twin.runtime.kernel import tenant_netns_path
from twin.runtime.links import netns_path
from twin.topology.model import Fabric, Tenant

FLOOD = "00:00:00:00:00:00"

log = logging.getLogger(__name__)
PARALLEL = 8
SUMMARY = "show bgp ipv4 unicast summary json"


def sessions_state(fabric: Fabric, node: str, summary: dict) -> dict[str, str]:
    """State of each expected session of `node`, by port, from `show bgp summary json`."""
    peers = summary.get("peers", {}) if isinstance(summary, dict) else {}
    return {s.port: peers.get(s.port, {}).get("state", "absent") for s in fabric.sessions(node)}


def link_names(ipr: IPRoute) -> dict[int, str]:
    return {link["index"]: link.get("ifname") for link in ipr.get_links()}


def kernel_routes(ipr: IPRoute, table: int = 254, host_only: bool = True,
                  names: dict[int, str] | None = None) -> dict[str, set[str]]:
    """Routes of a table (host routes only by default): prefix -> names of next-hop ports."""
    names = names if names is not None else link_names(ipr)
    out: dict[str, set[str]] = {}
    for r in ipr.get_routes(family=socket.AF_INET, table=table):
        if (host_only and r["dst_len"] != 32) or not r.get("dst") or r.get("table") != table:
            continue
        hops = [h.get("oif") for h in r.get("multipath") or []] or [r.get("oif")]
        out[f"{r.get('dst')}/{r['dst_len']}"] = {names.get(h, str(h)) for h in hops if h}
    return out


def kernel_fdb(ipr: IPRoute, names: dict[int, str] | None = None) -> set[tuple[str, str, str]]:
    """VXLAN forwarding entries: (device, MAC, remote VTEP)."""
    names = names if names is not None else link_names(ipr)
    return {(names.get(e["ifindex"], "?"), e.get("lladdr") or e.get("NDA_LLADDR"), e.get("dst") or e.get("NDA_DST"))
            for e in ipr.fdb("dump") if e.get("dst") or e.get("NDA_DST")}


def missing_tenant(fabric: Fabric, node: str, t: Tenant, routes: dict[str, set[str]],
                   fdb: set[tuple[str, str, str]]) -> list[str]:
    """What VTEP `node` lacks of tenant `t`'s EVPN state, from its kernel tables.

    type-3: a flood entry to every other VTEP of each local segment (head-end replication);
    type-2: each remote host's MAC on a local segment, and a /32 to every remote host (symmetric IRB);
    type-5: a route to every tenant subnet that has no local segment.
    """
    missing = []
    lo = {n: fabric.nodes[n].loopback for n in t.vteps()}
    local = {s.name for s in t.segments_on(node)}
    for seg in t.segments_on(node):
        vx = vxlan_name(seg.l2vni)
        for remote in t.segment_vteps(seg.name):
            if remote != node and (vx, FLOOD, lo[remote]) not in fdb:
                missing.append(f"{node}: tenant {t.name}: no type-3 flood entry to {remote} ({lo[remote]}) "
                               f"on L2VNI {seg.l2vni} ({seg.name})")
    for a in t.attachments:
        if a.vtep == node:
            continue
        if a.segment in local and (vxlan_name(t.segments[a.segment].l2vni), a.mac, lo[a.vtep]) not in fdb:
            missing.append(f"{node}: tenant {t.name}: no type-2 MAC {a.mac} of {a.host} via {a.vtep}")
        host = a.address.split("/")[0] + "/32"
        if host not in routes:
            missing.append(f"{node}: tenant {t.name}: no type-2 route to {a.host} {host} via {a.vtep}")
    for seg in t.segments.values():
        if seg.name not in local and t.segment_vteps(seg.name) and seg.subnet not in routes:
            missing.append(f"{node}: tenant {t.name}: no type-5 route to {seg.name} {seg.subnet}")
    return missing + stale_tenant(node, t, routes, fdb, lo)


def stale_tenant(node: str, t: Tenant, routes: dict[str, set[str]], fdb: set[tuple[str, str, str]],
                 lo: dict[str, str]) -> list[str]:
    """What VTEP `node` still holds of tenant `t` that the intent no longer has (after a change):
    routes to hosts or subnets that are gone, flood entries to VTEPs that left a segment."""
    hosts = {a.address.split("/")[0] + "/32" for a in t.attachments}
    subnets = {s.subnet for s in t.segments.values()}
    stale = [f"{node}: tenant {t.name}: stale route {p} (no such host or segment any more)"
             for p in sorted(routes) if p not in hosts and p not in subnets]
    for seg in t.segments_on(node):
        vx, want = vxlan_name(seg.l2vni), {lo[v] for v in t.segment_vteps(seg.name) if v != node}
        stale += [f"{node}: tenant {t.name}: stale type-3 flood entry to {dst} on L2VNI {seg.l2vni}"
                  for dev, mac, dst in sorted(fdb) if dev == vx and mac == FLOOD and dst not in want]
    return stale


def missing_underlay(fabric: Fabric, node: str, routes: dict[str, set[str]]) -> list[str]:
    """What `node`'s kernel routes lack of the intended underlay (empty: converged)."""
    missing = []
    for port in fabric.nodes[node].fabric_ports:
        peer = fabric.nodes[port.peer_node]
        if port.name not in routes.get(f"{peer.loopback}/32", ()):
            missing.append(f"{node}: BGP session on {port.name} to {peer.name}: no route learned over it yet")
    for peer, prefix in fabric.expected_loopbacks(node).items():
        if prefix not in routes:
            missing.append(f"{node}: no route to {peer}'s loopback {prefix}")
    return missing


def missing_sessions(fabric: Fabric, node: str, ex: NodeExec) -> list[str]:
    try:
        (summary,) = ex.vtysh_json(SUMMARY, timeout=20)
    except CommandError as e:
        first = (e.stderr or e.stdout).strip().splitlines()[:1]
        return [f"{node}: FRR not answering yet ({first[0] if first else f'exit {e.rc}'})"]
    ports = fabric.nodes[node].ports_by_name
    return [f"{node}: BGP session on {port} to {ports[port].peer_node} is {state}"
            for port, state in sessions_state(fabric, node, summary).items() if state != "Established"]


class Barrier:
    """Underlay convergence of one lab; `wait(timeout)` blocks until it holds."""

    def __init__(self, fabric: Fabric, execs: dict[str, NodeExec], pids: dict[str, int], backend: str = "netns",
                 since: float | None = None):
        self.fabric, self.execs, self.pids, self.backend = fabric, execs, pids, backend
        self.since = time.monotonic() if since is None else since  # issue 19: kernel log read from here on
        self.nodes = [n.name for n in fabric.routers()]
        self.handles: dict[tuple[str, str], IPRoute] = {}
        self.tables = vrf_tables(fabric)

    def _ipr(self, node: str, ns: str = "") -> IPRoute:
        if (node, ns) not in self.handles:
            path = tenant_netns_path(self.pids[node], ns) if ns else netns_path(self.pids[node])
            self.handles[(node, ns)] = IPRoute(netns=path, flags=0)
        return self.handles[(node, ns)]

    def overlay_missing(self, node: str) -> list[str]:
        missing = []
        for t in self.fabric.tenants_on(node):
            ipr = self._ipr(node, t.vrf if self.backend == "netns" else "")
            table = 254 if self.backend == "netns" else self.tables[t.name]
            names = link_names(ipr)
            routes, fdb = kernel_routes(ipr, table, host_only=False, names=names), kernel_fdb(ipr, names)
            missing += missing_tenant(self.fabric, node, t, routes, fdb)
        return missing

    def node_missing(self, node: str, sessions: bool = False) -> list[str]:
        try:
            missing = missing_underlay(self.fabric, node, kernel_routes(self._ipr(node)))
            if not missing and self.fabric.tenants_on(node):
                missing = self.overlay_missing(node)
        except (NetlinkError, OSError) as e:
            return [f"{node}: cannot read its kernel state ({e}); is the container running?"]
        if missing and sessions:
            missing += missing_sessions(self.fabric, node, self.execs[node])
        return missing

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
        with ThreadPoolExecutor(PARALLEL) as pool:
            def probe() -> list[str]:
                for n in self.nodes:
                    if n in done:
                        continue
                    missing = self.node_missing(n)
                    if missing:
                        say(f"converging: {len(done)}/{len(self.nodes)} routers done, waiting for {n}")
                        return missing
                    done.add(n)
                left = self.round(pool, self.nodes)  # all looked done: confirm once over every node
                done.difference_update(left)
                return [m for n in sorted(left) for m in left[n]]

            def diagnose() -> list[str]:
                left = self.round(pool, self.nodes, sessions=True)
                return [m for n in sorted(left) for m in left[n]]

            try:
                return wait.until(probe, timeout, self.what(),
                                  diagnose=diagnose, cap=1.0)
            except ConvergenceTimeout as e:  # issue 19: host-level causes (kernel log, OOM, dead daemons) first
                raise e.with_causes(hostlimits.host_causes(
                    self.fabric.name, self.since, {n: x.container for n, x in self.execs.items()})) from None
            finally:
                self.close()

    def what(self) -> str:
        return "convergence (BGP sessions, loopback routes" + (
            ", VNIs and EVPN type-2/3/5 routes)" if self.fabric.tenants else ")")

    def close(self) -> None:
        for h in self.handles.values():
            h.close()
        self.handles.clear()


def check_now(fabric: Fabric, execs: dict[str, NodeExec], pids: dict[str, int], backend: str = "netns") -> list[str]:
    """Everything missing of the intended state right now (with session states; no waiting)."""
    b = Barrier(fabric, execs, pids, backend)
    try:
        with ThreadPoolExecutor(PARALLEL) as pool:
            left = b.round(pool, b.nodes, sessions=True)
        return [m for n in sorted(left) for m in left[n]]
    finally:
        b.close()
