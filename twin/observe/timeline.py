"""State changes between two snapshots, as timeline events: nodes started or stopped, link
carrier, BGP sessions, routes added or withdrawn per VRF."""

from __future__ import annotations

from typing import Any

from twin.observe.sample import Snapshot

SHOWN = 12  # prefixes named in one routes event (the rest are counted)


def changes(old: Snapshot | None, new: Snapshot) -> list[dict[str, Any]]:
    if old is None:
        return []
    t = new.time
    out = _nodes(old, new, t) + _carrier(old, new, t)
    if new.control_time != old.control_time and old.control_time:
        out += _sessions(old, new, new.control_time)
    out += _routes(old, new, t)
    return out


def _nodes(old: Snapshot, new: Snapshot, t: float) -> list[dict[str, Any]]:
    return [
        {"time": t, "kind": "node", "node": n, "state": s, "text": f"{n}: {old.nodes.get(n, 'absent')} -> {s}"}
        for n, s in new.nodes.items()
        if old.nodes.get(n) != s
    ]


def _carrier(old: Snapshot, new: Snapshot, t: float) -> list[dict[str, Any]]:
    out = []
    for node, ports in new.ports.items():
        before = old.ports.get(node)
        if before is None:
            continue
        for port, p in ports.items():
            was = before.get(port, {}).get("oper")
            if was is not None and was != p["oper"]:
                out.append(
                    {
                        "time": t,
                        "kind": "carrier",
                        "node": node,
                        "port": port,
                        "state": p["oper"],
                        "text": f"{node} {port}: link {p['oper']}"
                        + (" (admin down)" if p.get("admin") == "down" else ""),
                    }
                )
    return out


def _sessions(old: Snapshot, new: Snapshot, t: float) -> list[dict[str, Any]]:
    out = []
    for node in set(old.sessions) | set(new.sessions):
        if node not in new.sessions or node not in old.sessions:
            continue  # a node that stopped or came back: its node event says it
        a, b = old.sessions[node], new.sessions[node]
        for key in sorted(set(a) | set(b)):
            was, now = a.get(key, {}).get("state", "absent"), b.get(key, {}).get("state", "absent")
            if was != now:
                s = b.get(key) or a[key]
                out.append(
                    {
                        "time": t,
                        "kind": "session",
                        "node": node,
                        "port": s["port"],
                        "peer": s["peer"],
                        "afi": s["afi"],
                        "vrf": s["vrf"],
                        "state": now,
                        "up": now == "Established",
                        "text": f"{node} {key}{' (' + s['peer'] + ')' if s['peer'] else ''}: {was} -> {now}",
                    }
                )
    return out


def _routes(old: Snapshot, new: Snapshot, t: float) -> list[dict[str, Any]]:
    out = []
    for node, vrfs in new.routes.items():
        before = old.routes.get(node)
        if before is None:
            continue
        for vrf in sorted(set(before) | set(vrfs)):
            a, b = set(before.get(vrf, [])), set(vrfs.get(vrf, []))
            added, gone = sorted(b - a), sorted(a - b)
            if not added and not gone:
                continue
            words = [f"+{len(added)}" if added else "", f"-{len(gone)}" if gone else ""]
            named = [f"+{p}" for p in added[:SHOWN]] + [f"-{p}" for p in gone[:SHOWN]]
            out.append(
                {
                    "time": t,
                    "kind": "routes",
                    "node": node,
                    "vrf": vrf,
                    "added": added,
                    "withdrawn": gone,
                    "text": f"{node} vrf {vrf}: {' '.join(w for w in words if w)} routes ({', '.join(named)}"
                    f"{', ...' if len(added) + len(gone) > len(named) else ''})",
                }
            )
    return out
