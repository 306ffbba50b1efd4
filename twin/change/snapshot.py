"""Operational state before and after a change: BGP sessions (with their drop counters),
every tenant's VRF routes and VXLAN FDB on every VTEP; and what differs between two."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from twin.base import timeouts
from twin.base.errors import TwinError
from twin.config.overlay import tenant_ns, vrf_tables
from twin.lifecycle.context import LabContext
from twin.runtime import FRR_SUMMARY, link_names, read_fdb, read_routes


@dataclass
class Snapshot:
    sessions: dict[str, dict[str, dict]] = field(default_factory=dict)  # node -> port -> {state, dropped}
    routes: dict[str, dict[str, set[str]]] = field(default_factory=dict)  # tenant -> vtep -> prefixes
    fdb: dict[str, dict[str, set[str]]] = field(default_factory=dict)  # tenant -> vtep -> "dev mac dst"


def _sessions(ctx: LabContext, node: str) -> tuple[str, dict]:
    try:
        (doc,) = ctx.exec(node).vtysh_json(FRR_SUMMARY, timeout=timeouts.VTYSH)
    except TwinError as e:
        return node, {"?": {"state": f"unreadable: {str(e).splitlines()[0]}", "dropped": 0}}
    peers = doc.get("peers", {}) if isinstance(doc, dict) else {}
    return node, {
        p: {
            "state": v.get("state", "?"),
            "dropped": v.get("connectionsDropped", 0),
            "established": v.get("connectionsEstablished", 0),
        }
        for p, v in peers.items()
    }


def _tenants(ctx: LabContext, node: str) -> list[tuple[str, str, set[str], set[str]]]:
    out = []
    for t in ctx.fabric.tenants_on(node):
        ns = tenant_ns(t, ctx.backend)
        try:
            with ctx.ipr(node, ns) as ipr:
                names = link_names(ipr)
                table = 254 if ns else vrf_tables(ctx.fabric)[t.name]
                routes, fdb = read_routes(ipr, table, host_only=False, names=names), read_fdb(ipr, names)
        except (OSError, TwinError):  # NetlinkFailed, NodeGone: twin's
            routes, fdb = {}, set()
        out.append(
            (
                t.name,
                node,
                {f"{p} via {','.join(sorted(h))}" for p, h in routes.items()},
                {" ".join(map(str, e)) for e in fdb},
            )
        )
    return out


def snapshot(ctx: LabContext) -> Snapshot:
    snap = Snapshot()
    running = set(ctx.refresh().running())
    with ThreadPoolExecutor(8) as pool:
        snap.sessions = dict(pool.map(lambda n: _sessions(ctx, n), [n for n in ctx.intent.nodes if n in running]))
        for rows in pool.map(lambda n: _tenants(ctx, n), [v for v in ctx.fabric.vteps() if v in running]):
            for tenant, node, routes, fdb in rows:
                snap.routes.setdefault(tenant, {})[node] = routes
                snap.fdb.setdefault(tenant, {})[node] = fdb
    return snap


def flapped(before: Snapshot, after: Snapshot) -> list[str]:
    """Sessions that went down during the change (even if they came back), or are not up now."""
    out = []
    for node, peers in sorted(after.sessions.items()):
        for port, now in sorted(peers.items()):
            was = before.sessions.get(node, {}).get(port)
            if was is None:
                out.append(f"{node} {port}: new session, {now['state']}")
            elif now["dropped"] > was["dropped"] or now["state"] != was["state"]:
                out.append(
                    f"{node} {port}: {was['state']} -> {now['state']}, dropped "
                    f"{now['dropped'] - was['dropped']} time(s)"
                )
    for node, peers in sorted(before.sessions.items()):
        out += [f"{node} {port}: session gone" for port in sorted(peers) if port not in after.sessions.get(node, {})]
    return out


def route_changes(before: Snapshot, after: Snapshot) -> dict[str, dict[str, list[str]]]:
    """Per tenant: routes added and removed, as "vtep prefix via ..."."""
    out = {}
    for t in sorted(set(before.routes) | set(after.routes)):
        b = {f"{v} {r}" for v, rs in before.routes.get(t, {}).items() for r in rs}
        a = {f"{v} {r}" for v, rs in after.routes.get(t, {}).items() for r in rs}
        if a != b:
            out[t] = {"added": sorted(a - b), "removed": sorted(b - a)}
    return out
