"""Address resolution, as a workload sees it: its gateway, and its peers across the fabric.

Every host asks (ARP who-has, broadcast) for its gateway and for each peer on its
segment behind another VTEP. Its own VTEP must answer each: the gateway with the
anycast gateway's MAC (the bridge's own address), a remote peer with that peer's
MAC on the peer's behalf (ARP suppression on the segment's VXLAN port, from the
IP/MAC bindings EVPN type-2 routes carry). And the request must go no further: a
request seen at the peer, or at any other host, crossed the fabric as a flood.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from twin.base import timeouts
from twin.lifecycle.context import LabContext
from twin.topology.model import Fabric
from twin.traffic import frames as X
from twin.traffic.engine import Session, new_run_id
from twin.traffic.flows import host_taps, hosts
from twin.verify.result import Check

GROUP = "arp"


@dataclass(frozen=True)
class Ask:
    ident: int
    host: str
    ip: str  # asked for
    mac: str  # the answer expected
    what: str  # whose address it is
    frame: bytes


def asks(fabric: Fabric, run: int) -> list[Ask]:
    out: list[Ask] = []
    for h in hosts(fabric):
        t, a = fabric.attachment(h)
        seg, me = t.segments[a.segment], a.ip
        wanted = [(seg.gateway, seg.mac, f"gateway, anycast on {a.vtep}")]
        wanted += [
            (p.ip, p.mac, f"{p.host} behind {p.vtep}")
            for p in t.attachments
            if p.segment == a.segment and p.vtep != a.vtep
        ]
        for ip, mac, what in wanted:
            ident = len(out) + 1
            frame = X.arp(X.ARP_REQUEST, a.mac, X.BROADCAST, a.mac, me, "00:00:00:00:00:00", ip, X.tag(run, ident))
            out.append(Ask(ident, h, ip, mac, what, frame))
    return out


def run(ctx: LabContext) -> list[Check]:
    fabric = ctx.fabric
    run_id = new_run_id()
    todo = asks(fabric, run_id)
    if not todo:
        return []
    me = {h: fabric.attachment(h)[1].ip for h in hosts(fabric)}
    mark = X.marker(run_id)
    sends: dict[str, list[bytes]] = defaultdict(list)
    for q in todo:
        sends[q.host].append(q.frame)

    def answers(captured: dict[str, list[bytes]], q: Ask) -> list[str]:
        got = [X.arp_of(f) for f in captured.get(q.host, [])]
        return [r[1] for r in got if r and r[0] == X.ARP_REPLY and r[2] == q.ip and r[4] == me[q.host]]

    def missing(captured: dict[str, list[bytes]]) -> list[str]:
        return [f"{q.host} {q.ip}" for q in todo if q.mac not in answers(captured, q)]

    keep = lambda f: X.arp_of(f) is not None  # noqa: E731  (replies carry no tag; the requests do)
    with Session(host_taps(ctx)) as session:
        captured = session.run(sends, keep, missing, timeouts.TRAFFIC)
    checks = []
    for q in todo:
        macs = answers(captured, q)
        flooded = sorted(
            h
            for h, got in captured.items()
            if h != q.host and any(mark in f and X.ident(f, run_id) == q.ident for f in got)
        )
        a = fabric.attachment(q.host)[1]
        problems = []
        if q.mac not in macs:
            problems.append(
                f"no answer with {q.mac}" + (f" (answered with {', '.join(sorted(set(macs)))})" if macs else "")
            )
        if flooded:
            problems.append(
                f"the request crossed to {', '.join(flooded)}: {a.vtep} did not answer it for {q.ip} (ARP suppression)"
            )
        checks.append(
            Check(
                GROUP,
                f"{q.host} resolves {q.ip} ({q.what})",
                not problems,
                "; ".join(problems),
                {"answers": macs, "expected": q.mac, "request_seen_at": flooded},
            )
        )
    return checks
