"""The convergence barrier, derived from intent.

For every FRR node: every BGP session the topology implies is Established and
there is an installed route to every loopback it should learn. Each round makes
one vtysh call per node still pending (both tables in one call); a node that
is done is not polled again until a final confirmation round over all nodes.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from twin import wait
from twin.errors import CommandError
from twin.runtime.exec import NodeExec
from twin.topology.model import Fabric

PARALLEL = 8
SUMMARY = "show bgp ipv4 unicast summary json"
ROUTES = "show ip route json"


def sessions_state(fabric: Fabric, node: str, summary: dict) -> dict[str, str]:
    """State of each expected session of `node`, by port, from `show bgp summary json`."""
    peers = summary.get("peers", {}) if isinstance(summary, dict) else {}
    return {s.port: peers.get(s.port, {}).get("state", "absent") for s in fabric.sessions(node)}


def underlay_missing(fabric: Fabric, node: str, ex: NodeExec) -> list[str]:
    """What `node` still lacks of its intended underlay state (empty: converged)."""
    try:
        summary, routes = ex.vtysh_json(SUMMARY, ROUTES, timeout=20)
    except CommandError as e:
        first = (e.stderr or e.stdout).strip().splitlines()[:1]
        return [f"{node}: FRR not answering yet ({first[0] if first else f'exit {e.rc}'})"]
    missing = [f"{node}: BGP session on {port} to {fabric.nodes[node].ports_by_name[port].peer_node} is {state}"
               for port, state in sessions_state(fabric, node, summary).items() if state != "Established"]
    for peer, prefix in fabric.expected_loopbacks(node).items():
        if not any(r.get("selected") and r.get("installed") for r in routes.get(prefix, [])):
            missing.append(f"{node}: no route to {peer}'s loopback {prefix}")
    return missing


class Barrier:
    """Polls nodes for what is missing; used through `wait.until`."""

    def __init__(self, fabric: Fabric, execs: dict[str, NodeExec],
                 check: Callable[[Fabric, str, NodeExec], list[str]] = underlay_missing):
        self.fabric, self.execs, self.check = fabric, execs, check
        self.nodes = [n.name for n in fabric.routers()]
        self.pending = set(self.nodes)
        self.pool = ThreadPoolExecutor(PARALLEL)

    def _round(self, nodes: list[str]) -> dict[str, list[str]]:
        results = self.pool.map(lambda n: self.check(self.fabric, n, self.execs[n]), nodes)
        return dict(zip(nodes, results))

    def probe(self) -> list[str]:
        if self.pending:
            missing = self._round(sorted(self.pending))
            self.pending = {n for n, m in missing.items() if m}
            if self.pending:
                return [m for n in sorted(self.pending) for m in missing[n]]
        # Everything looked done: confirm once across all nodes (state may have moved).
        missing = self._round(self.nodes)
        self.pending = {n for n, m in missing.items() if m}
        return [m for n in sorted(self.pending) for m in missing[n]]

    def wait(self, timeout: float) -> float:
        try:
            return wait.until(self.probe, timeout, "underlay convergence (BGP sessions and loopback routes)")
        finally:
            self.pool.shutdown()
