"""What `twin watch`, `twin counters` and `twin events` print (rich renderables and plain text)."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text


def clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"


def rate(v: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= div:
            return f"{v / div:.1f}{unit}"
    return f"{v:.1f}" if 0 < v < 10 else f"{v:.0f}"


def ports_table(state: dict[str, Any], node: str | None = None) -> Table:
    snap, rates = state["snapshot"], state.get("rates", {})
    t = Table(title="ports", title_justify="left", expand=False)
    for col in (
        "node",
        "port",
        "link",
        "rx pkts",
        "tx pkts",
        "rx pps",
        "tx pps",
        "rx B/s",
        "tx B/s",
        "drops",
        "errors",
        "RoCE rx",
        "RoCE tx",
        "CE rx",
        "CNP rx/tx",
    ):
        t.add_column(col, justify="left" if col in ("node", "port", "link") else "right")
    for n, ports in sorted(snap["ports"].items()):
        if node and n != node:
            continue
        for p, s in sorted(ports.items()):
            r = rates.get(n, {}).get(p, {})
            ro = snap["roce"].get(n, {}).get(p, {})
            link = Text(s["oper"], style="green" if s["oper"] == "up" else "bold red")
            t.add_row(
                n,
                p,
                link,
                str(s["rx_packets"]),
                str(s["tx_packets"]),
                rate(r.get("rx_packets", 0)),
                rate(r.get("tx_packets", 0)),
                rate(r.get("rx_bytes", 0)),
                rate(r.get("tx_bytes", 0)),
                str(s["rx_dropped"] + s["tx_dropped"]),
                str(s["rx_errors"] + s["tx_errors"]),
                str(ro.get("rx_packets", 0)),
                str(ro.get("tx_packets", 0)),
                str(ro.get("rx_ce", 0)),
                f"{ro.get('cnp_rx', 0)}/{ro.get('cnp_tx', 0)}",
            )
    return t


def roce_table(state: dict[str, Any], node: str | None = None) -> Table:
    t = Table(title="RoCEv2 by class (DSCP, ECN on the wire)", title_justify="left")
    for col in ("node", "port", "dir", "dscp", "ecn", "packets", "bytes"):
        t.add_column(col, justify="right" if col in ("packets", "bytes", "dscp") else "left")
    for n, ports in sorted(state["snapshot"]["roce"].items()):
        if node and n != node:
            continue
        for p, r in sorted(ports.items()):
            for c in r["classes"]:
                t.add_row(
                    n,
                    p,
                    c["direction"],
                    str(c["dscp"]),
                    Text(c["ecn"], style="yellow" if c["ecn"] == "ce" else ""),
                    str(c["packets"]),
                    str(c["bytes"]),
                )
    return t


def sessions_table(state: dict[str, Any], node: str | None = None) -> Table:
    t = Table(title="BGP sessions", title_justify="left")
    for col in ("node", "session", "peer", "state", "prefixes"):
        t.add_column(col)
    for n, sessions in sorted(state["snapshot"]["sessions"].items()):
        if node and n != node:
            continue
        for key, s in sorted(sessions.items()):
            t.add_row(n, key, s["peer"], Text(s["state"], style="green" if s["up"] else "bold red"), str(s["prefixes"]))
    return t


def vnis_table(state: dict[str, Any], node: str | None = None) -> Table:
    t = Table(title="VNIs (EVPN routes per VNI)", title_justify="left")
    for col in ("node", "vni", "type", "tenant", "macs", "type-2", "type-3", "type-5", "remote VTEPs"):
        t.add_column(col)
    for n, vnis in sorted(state["snapshot"]["vnis"].items()):
        if node and n != node:
            continue
        for vni, v in sorted(vnis.items()):
            t.add_row(
                n,
                vni,
                v["type"],
                v["tenant"],
                str(v["macs"]),
                str(v["type2"]),
                str(v["type3"]),
                str(v["type5"]),
                "-" if v["remote_vteps"] is None else str(v["remote_vteps"]),
            )
    return t


def routes_table(state: dict[str, Any], node: str | None = None) -> Table:
    t = Table(title="IPv4 routes per VRF (kernel)", title_justify="left")
    for col in ("node", "vrf", "routes"):
        t.add_column(col, justify="right" if col == "routes" else "left")
    for n, vrfs in sorted(state["snapshot"]["routes"].items()):
        if node and n != node:
            continue
        for vrf, prefixes in sorted(vrfs.items()):
            t.add_row(n, vrf, str(len(prefixes)))
    return t


def sessions_summary(state: dict[str, Any]) -> Table:
    """One line per node: sessions up of all, prefixes received, and the ones that are not up."""
    t = Table(title="BGP sessions", title_justify="left")
    for col in ("node", "up", "prefixes", "not Established"):
        t.add_column(col, justify="right" if col in ("up", "prefixes") else "left")
    for n, sessions in sorted(state["snapshot"]["sessions"].items()):
        up = sum(s["up"] for s in sessions.values())
        down = ", ".join(f"{k} ({s['peer']}) {s['state']}" for k, s in sorted(sessions.items()) if not s["up"])
        t.add_row(
            n,
            Text(f"{up}/{len(sessions)}", style="green" if up == len(sessions) else "bold red"),
            str(sum(s["prefixes"] for s in sessions.values())),
            Text(down, style="red"),
        )
    return t


def event_line(e: dict[str, Any]) -> str:
    where = " ".join(x for x in (e.get("node", ""), e.get("port", "")) if x)
    return f"{clock(e['time'])} {e['kind']:<10} {e['text'] if e.get('text') else where}"


def events_text(events: list[dict[str, Any]], limit: int = 12) -> Text:
    out = Text()
    for e in events[-limit:]:
        style = {
            "drop": "red",
            "drop-burst": "bold red",
            "carrier": "yellow",
            "session": "magenta",
            "action": "cyan",
            "routes": "blue",
        }.get(e["kind"], "")
        out.append(event_line(e) + "\n", style=style)
    return out or Text("(no events yet)")


def screen(state: dict[str, Any], node: str | None = None) -> Group:
    snap = state["snapshot"]
    running = sum(1 for s in snap["nodes"].values() if s == "running")
    head = Text(
        f"twin watch {state['lab']}: {running}/{len(snap['nodes'])} nodes running, "
        f"sampled {clock(snap['time'])}; kernel drops: {state['kernel_drops'].split(':')[0]}"
        + ("" if state["leader"] else " (events recorded by another collector)"),
        style="bold",
    )
    if state.get("errors"):
        head.append(f"\nlast problem reading the lab: {state['errors'][-1]}", style="yellow")
    events = [e for e in state["events"] if not node or e.get("node") == node]
    return Group(
        head,
        Text("latest events", style="bold"),
        events_text(events, limit=8),
        ports_table(state, node),
        sessions_table(state, node) if node else sessions_summary(state),
    )
