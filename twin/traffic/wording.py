"""One RoCE flow's outcome in words, for people (`twin traffic`): figures that mean something
for the case at hand. A flow that must arrive reports what arrived and how (ICRC, DSCP/ECN, PSN
gaps, duplicates, order); a flow that must not (its destination is another tenant's host) reports
whether it reached it and where it went instead, never PSN gaps of frames not meant to arrive."""

from __future__ import annotations

from twin.topology.model import Fabric
from twin.traffic.roce import FlowResult


def hosts_seen(seen_at: dict[str, int]) -> str:
    """`host2a (8), host3a (2)`: the hosts that captured the flow, with their frame counts."""
    return ", ".join(f"{h} ({n})" for h, n in sorted(seen_at.items())) or "no host"


def tenant_of(fabric: Fabric, host: str) -> str:
    found = fabric.attachment_of(host)
    return found[0].name if found else "?"


def delivered_line(r: FlowResult) -> str:
    """A flow meant to arrive: what arrived at its destination, and how."""
    dst = r.flow.dst
    text = f"sent {r.sent}, {r.received} arrived at {dst}"
    faults = [
        (r.icrc_bad, "with a bad ICRC"),
        (r.tos_changed, "with DSCP/ECN changed"),
        (r.gaps, "never arrived (PSN gaps)"),
        (r.duplicates, "arrived twice"),
        (r.reordered, "out of order"),
    ]
    text += "".join(f", {n} {what}" for n, what in faults if n)
    others = {h: n for h, n in r.seen_at.items() if h != dst}
    return text + (f"; also seen at {hosts_seen(others)}" if others else "")


def blocked_line(fabric: Fabric, r: FlowResult) -> str:
    """A flow that must not arrive (another tenant's host): did it, and where did it go instead."""
    src, dst = r.flow.src, r.flow.dst
    mine, theirs = tenant_of(fabric, src), tenant_of(fabric, dst)
    text = f"sent {r.sent}; "
    if r.received:
        text += f"{r.received} ARRIVED at {dst} (tenant {theirs}): tenant isolation is broken"
    else:
        text += f"none arrived at {dst} (tenant {theirs})"
    own = {h: n for h, n in r.seen_at.items() if h != dst and tenant_of(fabric, h) == mine}
    foreign = {h: n for h, n in r.seen_at.items() if h != dst and tenant_of(fabric, h) != mine}
    if own:
        text += f"; it stayed in tenant {mine}, seen at {hosts_seen(own)} (its own hosts)"
    if foreign:
        text += f"; it LEAKED to other tenants' hosts: {hosts_seen(foreign)}"
    if not r.seen_at:
        text += f"; no host saw it: stopped in the fabric, inside tenant {mine}'s VRF"
    return text


def flow_line(fabric: Fabric, r: FlowResult, must_arrive: bool) -> str:
    """`host1a -> host2b (10.0.2.12), must not arrive (another tenant): ...` in one line."""
    f = r.flow
    head = f"{f.src} -> {f.dst} ({f.dst_ip}), "
    if must_arrive:
        return head + "must arrive: " + delivered_line(r)
    return (
        head + f"must not arrive ({f.dst} is tenant {tenant_of(fabric, f.dst)}'s, {f.src} tenant "
        f"{tenant_of(fabric, f.src)}'s): " + blocked_line(fabric, r)
    )
