"""Convergence of routers running the user's own config (`twin.intent.generic`), read from the node.

What is missing of a router's intent: its daemons (from the container's processes, no exec),
its adjacencies (one vtysh call per router, only the protocols its config has), and a RIB that
is still changing (over netlink: the kernel routes zebra installed, compared between rounds).
The barrier, `twin status` and `twin verify` all judge a router with these.
"""

from __future__ import annotations

import time

from twin.base import timeouts
from twin.base.errors import CommandError, ConvergenceTimeout, TwinError
from twin.intent import Adjacency, GenericIntent
from twin.lifecycle import hostlimits
from twin.runtime import (
    FRR_ADJACENCIES,
    FRR_ROUTES_V4_VRFS,
    FRR_ROUTES_V6_VRFS,
    FRR_UP_STATE,
    FRR_VNIS,
    Netlink,
    NodeExec,
    adjacency_states,
    read_rib,
    route_entries,
    vni_states,
)


def daemons_missing(gi: GenericIntent, pid: int) -> list[str]:
    running = set(hostlimits.processes(pid))
    return [
        f"{gi.node}: FRR daemon {d} is not running (its daemons file enables it)"
        for d in gi.daemons
        if d not in running
    ]


def states(ex: NodeExec, gi: GenericIntent) -> dict[Adjacency, str]:
    """The state of every adjacency of `gi`, in FRR's words ("absent" when FRR does not list it);
    CommandError when FRR does not answer."""
    protocols = sorted(gi.protocols())
    if not protocols:
        return {}
    docs = dict(zip(protocols, ex.vtysh_json(*(FRR_ADJACENCIES[p] for p in protocols), timeout=timeouts.VTYSH)))
    seen = {p: adjacency_states(p, docs[p]) for p in protocols}
    return {a: seen[a.protocol].get((a.vrf, a.where), "absent") for a in gi.adjacencies}


def is_up(a: Adjacency, state: str) -> bool:
    return state.startswith(FRR_UP_STATE[a.protocol])


def adjacencies_missing(ex: NodeExec, gi: GenericIntent) -> list[str]:
    try:
        got = states(ex, gi)
    except CommandError as e:
        first = (e.stderr or e.stdout).strip().splitlines()[:1]
        return [f"{gi.node}: FRR not answering yet ({first[0] if first else f'exit {e.rc}'})"]
    return [
        f"{a}: {'not up' if s != 'absent' else 'no such neighbor in FRR'} ({s})"
        if a.protocol == "bgp"
        else f"{a}: no {FRR_UP_STATE[a.protocol]} neighbour" + (f" ({s})" if s != "absent" else "")
        for a, s in got.items()
        if not is_up(a, s)
    ]


def routes_missing(ex: NodeExec, gi: GenericIntent) -> list[str]:
    """The routes of `gi` its RIB lacks: a static route it declares (there as `static`, selected or
    not: FRR keeps one whose next hop is unreachable too), a route its IGP learns (selected)."""
    if not gi.routes:
        return []
    try:
        v4, v6 = ex.vtysh_json(FRR_ROUTES_V4_VRFS, FRR_ROUTES_V6_VRFS, timeout=timeouts.VTYSH)
    except CommandError as e:
        first = (e.stderr or e.stdout).strip().splitlines()[:1]
        return [f"{gi.node}: FRR not answering yet ({first[0] if first else f'exit {e.rc}'})"]
    out = []
    for r in gi.routes:
        doc = v6 if ":" in r.prefix else v4
        table = doc.get(r.vrf) if isinstance(doc, dict) else None
        entries = route_entries(table if isinstance(table, dict) else {}, r.prefix)
        if r.protocol == "static" and not any(e["protocol"] == "static" for e in entries):
            out.append(f"{r}: not in its RIB")
        elif r.protocol != "static" and not any(e["selected"] for e in entries):
            out.append(
                f"{r}: not in its RIB"
                if not entries
                else f"{r}: none selected ({', '.join(e['protocol'] for e in entries)})"
            )
    return out


def vnis_missing(ex: NodeExec, gi: GenericIntent) -> list[str]:
    """The L3VNIs its config declares that zebra does not hold up (their VRF or VXLAN device is
    missing: a script that makes them has not run)."""
    if not gi.vnis:
        return []
    try:
        (doc,) = ex.vtysh_json(FRR_VNIS, timeout=timeouts.VTYSH)
    except CommandError as e:
        first = (e.stderr or e.stdout).strip().splitlines()[:1]
        return [f"{gi.node}: FRR not answering yet ({first[0] if first else f'exit {e.rc}'})"]
    have = vni_states(doc)
    out = []
    for vni, vrf in sorted(gi.vnis.items()):
        state = have.get(vni, {}).get("state")
        if state != "Up":
            out.append(
                f"{gi.node}: L3VNI {vni} of VRF {vrf} is {state or 'unknown'} in zebra ({NO_DEVICE} of it yet: "
                "has the script that makes them run?)"
            )
    return out


NO_DEVICE = "no VRF or VXLAN device"  # what a router's config references and only the lab's own scripts make


def after_deploy(e: ConvergenceTimeout, lab: str, topology: str) -> TwinError:
    """`twin up`'s timeout, led by one line when all it still waits for are devices the routers'
    configs reference and nothing of the lab makes (a lab configured by its scripts after deploy)."""
    if not e.missing or not all(NO_DEVICE in m for m in e.missing):
        return e
    nodes = sorted({m.split(":")[0] for m in e.missing})
    return TwinError(
        f"lab {lab} waits only for VRF or VXLAN devices that its routers' configs reference and "
        f"nothing of the lab makes ({', '.join(nodes)}): configured after deploy? `twin up {topology} "
        f"--no-wait`, then its scripts (`twin exec {lab} NODE -- SCRIPT`), then `twin wait {lab}`\n{e}"
    )


class RibWatch:
    """When each router's routes last changed, from one netlink dump per look."""

    def __init__(self, quiet: float = timeouts.RIB_QUIET):
        self.quiet = quiet
        self.seen: dict[str, tuple[frozenset, float]] = {}

    def missing(self, node: str, ipr: Netlink) -> list[str]:
        now, table = time.monotonic(), read_rib(ipr)
        last = self.seen.get(node)
        if last is None or last[0] != table:
            self.seen[node] = (table, now)
            since = 0.0
        else:
            since = now - last[1]
        return (
            []
            if since >= self.quiet
            else [f"{node}: its routes changed {since:.1f}s ago (settled once unchanged for {self.quiet:g}s)"]
        )
