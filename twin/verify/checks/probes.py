"""One look at the lab for each check type: does what the check expects hold right now?

A probe returns an Outcome: `holds` (the expectation, positive or negative, is
met now), what it saw in words, and the data it looked at. Reading FRR goes
through the execution seam (so it is recorded as evidence); RoCE goes through
`twin.traffic`. A probe that cannot read its node raises TwinError: the runner
reports that as the reason, never as a pass.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from ipaddress import ip_address, ip_network
from typing import Any, Callable

from twin.base import timeouts
from twin.config.overlay import tenant_ns
from twin.lifecycle.context import LabContext
from twin.runtime import (
    bgp_peer_state,
    bgp_peers,
    bgp_summary_cmd,
    bgp_table_cmd,
    bgp_table_size,
    route_cmd,
    route_entries,
)
from twin.topology.schema import (
    BgpPrefixesCheck,
    BgpSessionCheck,
    CheckSpec,
    ExecCheck,
    FrrJsonCheck,
    PingCheck,
    RoceCheck,
    RouteCheck,
)
from twin.traffic import flows as F
from twin.verify.jsoncmp import subset

PING_INTERVAL = 0.2  # s between echo requests
_PINGED = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")


@dataclass
class Outcome:
    holds: bool
    seen: str  # what was found, in words
    data: dict[str, Any] = field(default_factory=dict)


def keys_of(ctx: LabContext, node: str, peer: str | None, port: str | None, vrf: str = "default") -> list[str]:
    """FRR's keys of the sessions a check means: the node's ports towards a peer node, the port, or the
    neighbour as given (an address). On a router of the user's config, the neighbors its config has
    towards that node or over that port (by interface, or by an address of the far end)."""
    gi = ctx.intent.generic.get(node)
    if gi is not None and (port is not None or peer in ctx.fabric.nodes):
        far = ctx.fabric.nodes[node].ports_by_name.get(port) if port is not None else None
        keys = [
            a.where
            for a in gi.adjacencies
            if a.protocol == "bgp"
            and a.vrf == vrf
            and (
                a.where == port
                or (far is not None and a.peer == f"{far.peer_node}:{far.peer_port}")
                or (port is None and a.peer.split(":")[0] == peer)
            )
        ]
        return keys or ([port] if port is not None else [])
    if port is not None:
        return [port]
    if peer in ctx.fabric.nodes:
        return [p.name for p in ctx.fabric.nodes[node].fabric_ports if p.peer_node == peer]
    return [peer] if peer is not None else []


def far_key(ctx: LabContext, node: str, key: str, vrf: str = "default") -> tuple[str, str] | None:
    """(peer node, its key for `node`'s session `key`): the far end of one session, where the lab knows it."""
    gi = ctx.intent.generic.get(node)
    if gi is None:
        port = ctx.fabric.nodes[node].ports_by_name.get(key)
        return (port.peer_node, port.peer_port) if port is not None else None
    a = next((a for a in gi.adjacencies if a.protocol == "bgp" and a.vrf == vrf and a.where == key and a.peer), None)
    if a is None:
        return None
    far, far_port = a.peer.split(":", 1)
    mine = next((p.name for p in ctx.fabric.nodes[node].ports if f"{p.peer_node}:{p.peer_port}" == a.peer), key)
    theirs = ctx.intent.generic.get(far)
    if theirs is None:
        return far, far_port
    back = next(
        (b.where for b in theirs.adjacencies if b.protocol == "bgp" and b.vrf == vrf and b.peer == f"{node}:{mine}"),
        None,
    )
    return (far, back) if back is not None else None


def _summary(ctx: LabContext, node: str, vrf: str) -> dict:
    (doc,) = ctx.exec(node).vtysh_json(bgp_summary_cmd(vrf), timeout=timeouts.VTYSH)
    return doc


def bgp_session(ctx: LabContext, s: BgpSessionCheck) -> Outcome:
    doc = _summary(ctx, s.node, s.vrf)
    states = {k: bgp_peer_state(doc, s.afi, k) for k in keys_of(ctx, s.node, s.peer, s.port, s.vrf)}
    want = {
        "established": lambda st: st == "Established",
        "down": lambda st: st != "Established",
        "absent": lambda st: st == "absent",
    }.get(s.state, lambda st: st.lower() == s.state)
    holds = bool(states) and all(want(st) for st in states.values())
    seen = "; ".join(f"{s.afi} session on {k} is {st}" for k, st in states.items()) or "no such session"
    return Outcome(holds, seen, {"states": states})


def bgp_prefixes(ctx: LabContext, s: BgpPrefixesCheck) -> Outcome:
    if s.peer is None and s.port is None:
        (doc,) = ctx.exec(s.node).vtysh_json(bgp_table_cmd(s.vrf, s.afi), timeout=timeouts.VTYSH)
        counts: dict[str, int | None] = {f"{s.vrf} {s.afi} table": bgp_table_size(doc, s.afi)}
    elif s.count == "accepted":
        doc = _summary(ctx, s.node, s.vrf)
        counts = {
            k: bgp_peers(doc, s.afi).get(k, {}).get("pfxRcd") for k in keys_of(ctx, s.node, s.peer, s.port, s.vrf)
        }
    else:  # received: what the peer sent us, as the peer counts it
        counts = {}
        for k in keys_of(ctx, s.node, s.peer, s.port, s.vrf):
            far = far_key(ctx, s.node, k, s.vrf)
            peer_doc = _summary(ctx, far[0], s.vrf) if far else {}
            counts[k] = bgp_peers(peer_doc, s.afi).get(far[1], {}).get("pfxSnt") if far else None
    bounds = " and ".join(
        ([f"at least {s.min}"] if s.min is not None else []) + ([f"at most {s.max}"] if s.max is not None else [])
    )
    bad = {
        k: n
        for k, n in counts.items()
        if not isinstance(n, int) or (s.min is not None and n < s.min) or (s.max is not None and n > s.max)
    }
    what = "prefixes" if s.peer is None and s.port is None else s.count
    seen = (
        "; ".join(f"{k}: {'no such session' if n is None else n} {what}" for k, n in counts.items())
        or "no such session"
    )
    return Outcome(bool(counts) and not bad, f"{seen} (expected {bounds})", {"counts": counts})


def route(ctx: LabContext, s: RouteCheck) -> Outcome:
    vrf = ctx.fabric.tenants[s.tenant].vrf if s.tenant else (s.vrf or "default")
    prefix = ip_network(s.prefix).compressed
    (doc,) = ctx.exec(s.node).vtysh_json(route_cmd(vrf, prefix), timeout=timeouts.VTYSH)
    entries = [e for e in route_entries(doc, prefix) if s.protocol is None or e["protocol"] == s.protocol]
    shown = "; ".join(
        f"{e['protocol']}{'' if e['selected'] else ' (not selected)'} via {', '.join(e['nexthops'])}" for e in entries
    )
    where = f"{prefix} in VRF {vrf} on {s.node}"
    data = {"vrf": vrf, "entries": entries}
    if s.expect == "absent":
        return Outcome(not entries, f"{where}: {'present: ' + shown if entries else 'absent'}", data)
    chosen = [e for e in entries if e["selected"]]
    if not chosen:
        return Outcome(
            False,
            f"{where}: no {s.protocol + ' ' if s.protocol else ''}route" + (f" selected ({shown})" if entries else ""),
            data,
        )
    want = (
        s.nexthops
        if s.nexthops is not None
        else [ctx.fabric.loopback_of(v) for v in s.vteps]
        if s.vteps is not None
        else None
    )
    if want is None:
        return Outcome(True, f"{where}: {shown}", data)
    names = chosen[0]["names"]  # each next hop matched by one of the expected, each expected by a next hop
    holds = all(any(w in n for n in names) for w in want) and all(any(w in n for w in want) for n in names)
    data["expected_nexthops"] = list(want)
    return Outcome(holds, f"{where}: {shown}" + ("" if holds else f"; expected via {', '.join(want)}"), data)


def ping(ctx: LabContext, s: PingCheck) -> Outcome:
    prefix: list[str] = []
    tenant = (
        ctx.fabric.tenants[s.tenant]
        if s.tenant
        else next((t for t in ctx.fabric.tenants_on(s.from_) if s.vrf is not None and t.vrf == s.vrf), None)
    )
    if tenant is not None:
        ns = tenant_ns(tenant, ctx.backend)
        prefix = ["ip", "netns", "exec", ns] if ns else ["ip", "vrf", "exec", tenant.vrf]
    elif s.vrf not in (None, "default"):  # a router's own VRF: a namespace (zebra -n) or a VRF device
        prefix = [
            "sh",
            "-c",
            'if [ -e /run/netns/"$0" ]; then exec ip netns exec "$0" "$@"; else exec ip vrf exec "$0" "$@"; fi',
            s.vrf,
        ]
    cmd = prefix + [
        "ping",
        "-n",
        "-c",
        str(s.count),
        "-i",
        f"{PING_INTERVAL:g}",
        "-W",
        "1",
        *(["-I", s.source] if s.source else []),
        s.to,
    ]
    if ip_address(s.to).version == 6:
        cmd.insert(len(prefix) + 1, "-6")
    res = ctx.exec(s.from_).run(cmd, timeout=s.count * PING_INTERVAL + 5)
    m = _PINGED.search(res.stdout)
    sent, got = (int(m.group(1)), int(m.group(2))) if m else (s.count, 0)
    vrf = tenant.vrf if tenant else s.vrf if s.vrf not in (None, "default") else ""
    where = f"{s.from_}{' in ' + vrf if vrf else ''} -> {s.to}: {got} of {sent} echo requests answered"
    if not m:
        where += f" (ping exited {res.rc}: {(res.stderr or res.stdout).strip()[:200]})"
    holds = got == sent if s.expect == "success" else got == 0 and m is not None
    return Outcome(holds, where, {"sent": sent, "answered": got, "rc": res.rc})


def roce(ctx: LabContext, s: RoceCheck) -> Outcome:
    f = F.flow_to(
        ctx.fabric,
        s.from_,
        s.to,
        1,
        count=s.count,
        payload=s.payload,
        dscp=s.dscp,
        ecn=s.ecn,
        sport=49152 + (zlib.crc32(s.name.encode()) & 0x3FFF),
    )
    r = F.run(ctx, [f], {1: s.expect == "delivered"}, timeout=min(timeouts.TRAFFIC, s.timeout or timeouts.CHECK))[1]
    tenant = ctx.fabric.attachment(s.from_)[0].name
    others = {h: n for h, n in r.seen_at.items() if h != s.from_ and ctx.fabric.attachment(h)[0].name != tenant}
    data = {
        "dst": f.dst,
        "dst_ip": f.dst_ip,
        "sent": r.sent,
        "received": r.received,
        "icrc_bad": r.icrc_bad,
        "tos_changed": r.tos_changed,
        "seen_at": r.seen_at,
        "dscp": s.dscp,
        "ecn": s.ecn,
    }
    where = (
        f"{s.from_} -> {f.dst or f.dst_ip} ({f.dst_ip}): {r.received} of {r.sent} delivered"
        + (f", {r.tos_changed} with DSCP/ECN changed" if r.tos_changed else "")
        + (f", {r.icrc_bad} with a bad ICRC" if r.icrc_bad else "")
        + (
            f"; seen at {', '.join(f'{h} ({n})' for h, n in sorted(r.seen_at.items()))}"
            if r.seen_at
            else "; seen at no host"
        )
    )
    if s.expect == "delivered":
        holds = r.received == r.sent and not r.icrc_bad and not others and not (s.keep_marking and r.tos_changed)
    else:
        holds = r.received == 0 and not others
    return Outcome(holds, where, data)


def frr_json(ctx: LabContext, s: FrrJsonCheck) -> Outcome:
    (doc,) = ctx.exec(s.node).vtysh_json(s.command, timeout=timeouts.VTYSH)
    diffs = subset(s.match, doc)
    return Outcome(
        not diffs,
        "matches" if not diffs else f"{len(diffs)} difference(s): " + "; ".join(diffs[:10]),
        {"differences": diffs},
    )


def exec_(ctx: LabContext, s: ExecCheck) -> Outcome:
    cmd = ["sh", "-c", s.command] if isinstance(s.command, str) else list(s.command)
    ex = ctx.exec(s.node)  # a confined lab's user's command: inside its container, never from the host
    res = (ex.inside if ctx.fabric.confined else ex.run)(cmd, timeout=timeouts.EXEC_DEFAULT)
    text = res.stdout + res.stderr
    problems, shown = [], []
    rc = s.exit_code if s.exit_code is not None else 0 if s.regex is None and s.not_regex is None else None
    tail = text.strip().splitlines()[-1][:160] if text.strip() else "no output"
    if rc is not None and res.rc != rc:
        problems.append(f"exited {res.rc}, expected {rc} (last line: {tail})")
    hit = re.search(s.regex, text, re.MULTILINE) if s.regex is not None else None
    if s.regex is not None and not hit:
        problems.append(f"output does not match /{s.regex}/ (last line: {tail})")
    elif hit:
        shown.append(f"matches /{s.regex}/ ({hit.group(0)[:100]!r})")
    if s.not_regex is not None:
        hit = re.search(s.not_regex, text, re.MULTILINE)
        if hit:
            problems.append(f"output matches /{s.not_regex}/: {hit.group(0)[:100]!r}")
    return Outcome(not problems, "; ".join(problems or [f"exited {res.rc}"] + shown), {"rc": res.rc})


PROBES: dict[type[CheckSpec], Callable[[LabContext, Any], Outcome]] = {
    BgpSessionCheck: bgp_session,
    BgpPrefixesCheck: bgp_prefixes,
    RouteCheck: route,
    PingCheck: ping,
    RoceCheck: roce,
    FrrJsonCheck: frr_json,
    ExecCheck: exec_,
}
