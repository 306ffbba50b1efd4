"""Zero-trust: a workload cannot pass as someone else, reach the fabric, or get anything
into another tenant, whatever it crafts.

Each host port carries six nftables rules (`twin/config/templates/nft/ports.nft.j2`), and
each host sends, for every rule, attacks that only that rule stops, towards every place
the frame could otherwise go: a peer on its segment behind its own VTEP and behind a
remote one, its gateway, a host on each other segment of its tenant (routed), a host of
each other tenant, its VTEP's loopback, a remote VTEP's loopback and a transit router's
(the underlay):

- spoofed MAC: IPv4 from another host's MAC (its own address);
- not IPv4: IPv6 from its own MAC;
- spoofed ARP MAC / spoofed ARP IP: ARP replies to a peer and to its gateway, and a
  gratuitous ARP, claiming another host's MAC / another host's address;
- spoofed IP: IPv4 from another host's address (its own MAC);
- VXLAN from a workload: UDP 4789 from itself carrying another tenant's VNI.

Every frame is tagged; taps on every host and on every bridge of every VTEP (where a
VTEP's router takes frames in) watch for them. Pass: none arrives anywhere. One check
per host and rule, named as the rule's comment (`host1a: spoofed MAC`).
"""

from __future__ import annotations

import ipaddress
from collections import Counter, defaultdict
from dataclasses import dataclass

from twin import kinds
from twin.base import timeouts
from twin.config.overlay import tenant_ns
from twin.intent.tenants import bridge_name
from twin.lifecycle.context import LabContext
from twin.topology.model import Attachment, Fabric
from twin.traffic import frames as X
from twin.traffic import roce
from twin.traffic.engine import Session, Tap, new_run_id
from twin.traffic.flows import host_taps, hosts
from twin.verify.result import Check

GROUP = "zerotrust"
COUNT = 3
RULES = ("spoofed MAC", "not IPv4", "spoofed ARP MAC", "spoofed ARP IP", "spoofed IP", "VXLAN from a workload")
ARP_RULES = ("spoofed ARP MAC", "spoofed ARP IP")


@dataclass(frozen=True)
class Target:
    """Where an attack is aimed: a frame to `mac` (and `ip`); `arp`: also a target of ARP attacks."""

    what: str
    mac: str
    ip: str
    arp: bool = False


@dataclass(frozen=True)
class Attack:
    ident: int
    host: str
    rule: str
    target: Target
    frames: tuple[bytes, ...]


def targets(fabric: Fabric, host: str) -> list[Target]:
    """Every place a frame from `host` could go, one of each kind."""
    t, a = fabric.attachment(host)
    seg = t.segments[a.segment]
    on_link = lambda ip: ipaddress.ip_address(ip) in ipaddress.ip_network(seg.subnet)  # noqa: E731
    same = [x for x in t.attachments if x.segment == a.segment and x.host != host]
    out = [
        Target(f"{x.host} (its segment, {'its VTEP ' if x.vtep == a.vtep else 'behind '}{x.vtep})", x.mac, x.ip, True)
        for x in ([x for x in same if x.vtep == a.vtep][:1] + [x for x in same if x.vtep != a.vtep][:1])
    ]
    out.append(Target(f"its gateway {seg.gateway} on {a.vtep}", seg.mac, seg.gateway, True))
    for s in t.segments.values():
        x = next((x for x in t.attachments if x.segment == s.name), None)
        if s.name != a.segment and x:
            out.append(Target(f"{x.host} ({t.name} {s.name}, routed)", seg.mac, x.ip))
    for u in fabric.tenants.values():
        if u.name != t.name and u.attachments:
            x = u.attachments[0]
            out.append(Target(f"{x.host} (tenant {u.name})", x.mac if on_link(x.ip) else seg.mac, x.ip))
    others = [v for v in fabric.vteps() if v != a.vtep]
    transit = [n.name for n in fabric.routers() if kinds.of(n).transit] or [
        n.name for n in fabric.routers() if n.name not in fabric.vteps()
    ]
    for r, why in [
        (a.vtep, "its VTEP"),
        *((v, "a remote VTEP") for v in others[:1]),
        *((n, "underlay") for n in transit[:1]),
    ]:
        out.append(Target(f"{r} loopback {fabric.loopback_of(r)} ({why})", seg.mac, fabric.loopback_of(r)))
    out.append(Target("everyone (gratuitous ARP)", X.BROADCAST, "", True))
    return out


def victim(fabric: Fabric, host: str) -> tuple[Attachment, Attachment]:
    """Whose MAC and whose address `host` claims: a host of another tenant first (its MAC lands
    in no table of the attacker's tenant), and an address other than its own; for ARP, a peer's."""
    t, a = fabric.attachment(host)
    everyone = [x for u in fabric.tenants.values() for x in u.attachments if x.host != host]
    by_mac = sorted(everyone, key=lambda x: (fabric.attachment(x.host)[0].name == t.name, x.segment == a.segment))
    by_ip = sorted(
        (x for x in everyone if x.ip != a.ip), key=lambda x: (fabric.attachment(x.host)[0].name == t.name, x.host)
    )
    return by_mac[0], (by_ip or by_mac)[0]


def _attack_frames(fabric: Fabric, host: str, rule: str, tg: Target, run: int, ident: int) -> list[bytes]:
    t, a = fabric.attachment(host)
    seg = t.segments[a.segment]
    vm, vi = victim(fabric, host)
    me, tag = a.ip, X.tag(run, ident)
    if rule in ARP_RULES:
        peer = [x for x in t.attachments if x.segment == a.segment and x.host != host and x.ip != me]
        claim = (
            peer[0].ip
            if peer
            else (vi.ip if ipaddress.ip_address(vi.ip) in ipaddress.ip_network(seg.subnet) else seg.gateway)
        )
        sha, spa = (vm.mac, me) if rule == "spoofed ARP MAC" else (a.mac, claim)
        if tg.mac == X.BROADCAST:  # gratuitous: who-has its own (claimed) address, to everyone
            return [X.arp(X.ARP_REQUEST, a.mac, X.BROADCAST, sha, spa, "00:00:00:00:00:00", spa, tag)] * COUNT
        return [X.arp(X.ARP_REPLY, a.mac, tg.mac, sha, spa, tg.mac, tg.ip, tag)] * COUNT
    if rule == "not IPv4":
        return [X.ipv6_udp(a.mac, tg.mac, "fe80::66", f"::ffff:{tg.ip}", 41000, roce.ROCE_PORT, tag)] * COUNT
    src_mac, src_ip = (vm.mac, me) if rule == "spoofed MAC" else (a.mac, vi.ip if rule == "spoofed IP" else me)
    flow = roce.Flow(
        flow_id=ident,
        src=host,
        dst="",
        src_mac=src_mac,
        dst_mac=tg.mac,
        src_ip=src_ip,
        dst_ip=tg.ip,
        count=COUNT,
        payload=64,
        sport=41000 + ident % 20000,
    )
    plain = roce.frames(flow, run)
    if rule != "VXLAN from a workload":
        return plain
    # inside: a frame for a host of another tenant (its own when it is the only one), in that host's VNI
    other = next((u for u in fabric.tenants.values() if u.name != t.name), t)
    x = other.attachments[0]
    inner = roce.frames(
        roce.Flow(
            **{
                **flow.__dict__,
                "src_mac": "02:66:66:66:66:66",
                "src_ip": "10.66.66.66",
                "dst_mac": x.mac,
                "dst_ip": x.ip,
            }
        ),
        run,
    )
    return [X.vxlan(f, a.mac, tg.mac, me, tg.ip, other.segments[x.segment].l2vni, 42000 + ident % 20000) for f in inner]


def attacks(fabric: Fabric, run: int) -> list[Attack]:
    out: list[Attack] = []
    for h in hosts(fabric):
        for rule in RULES:
            for tg in targets(fabric, h):
                if (rule in ARP_RULES and not tg.arp) or (rule not in ARP_RULES and tg.mac == X.BROADCAST):
                    continue  # ARP stays on its segment; IP frames go everywhere but to the broadcast
                ident = len(out) + 1
                out.append(Attack(ident, h, rule, tg, tuple(_attack_frames(fabric, h, rule, tg, run, ident))))
    return out


def bridge_taps(ctx: LabContext) -> list[Tap]:
    """Every bridge of every VTEP: a frame that reaches one reached that VTEP's router or a port."""
    out = []
    for v in ctx.fabric.vteps():
        for t in ctx.fabric.tenants_on(v):
            ns = tenant_ns(t, ctx.backend)
            for vni in [t.l3vni] + [s.l2vni for s in t.segments_on(v)]:
                out.append(Tap(f"{v}:{bridge_name(vni)}", ctx.netns(v, ns), bridge_name(vni)))
    return out


def run(ctx: LabContext) -> list[Check]:
    fabric = ctx.fabric
    run_id = new_run_id()
    todo = attacks(fabric, run_id)
    if not todo:
        return []
    sends: dict[str, list[bytes]] = defaultdict(list)
    for at in todo:
        sends[at.host] += at.frames
    mark = X.marker(run_id)
    with Session(host_taps(ctx) + bridge_taps(ctx)) as session:
        captured = session.run(
            sends, lambda f: mark in f, lambda _: [], timeouts.TRAFFIC, window=timeouts.ATTACK_WINDOW
        )
    by_id = {at.ident: at for at in todo}
    seen: dict[int, Counter] = defaultdict(Counter)
    for tap, got in captured.items():
        for f in got:
            i = X.ident(f, run_id)
            if i in by_id and tap != by_id[i].host:
                seen[i][tap] += 1
    return [
        _judge(fabric, h, rule, [at for at in todo if at.host == h and at.rule == rule], seen)
        for h in hosts(fabric)
        for rule in RULES
    ]


def _judge(fabric: Fabric, host: str, rule: str, mine: list[Attack], seen: dict[int, Counter]) -> Check:
    a = fabric.attachment(host)[1]
    reached = [
        f"{at.target.what}: seen at {', '.join(f'{w} ({n})' for w, n in seen[at.ident].items())}"
        for at in mine
        if seen[at.ident]
    ]
    msg = (
        ""
        if not reached
        else (
            f"{len(reached)} of {len(mine)} attacks got through, rule '{host}: {rule}' on "
            f"{a.vtep}:{a.port} does not stop them: " + "; ".join(reached)
        )
    )
    return Check(
        GROUP,
        f"{host}: {rule}",
        not reached,
        msg,
        {
            "port": f"{a.vtep}:{a.port}",
            "attacks": [at.target.what for at in mine],
            "frames": sum(len(at.frames) for at in mine),
            "seen": {at.target.what: dict(seen[at.ident]) for at in mine if seen[at.ident]},
        },
    )
