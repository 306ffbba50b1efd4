"""Rate limits: every one held, and against a noisy neighbour (`twin verify --only performance`).

Every limit of every workload (egress and ingress, bits and frames per second) is driven
by a flood of its own and judged held within a tolerance, the rate measured named in the
result (`twin.verify.limits`: the floods of one VTEP's limits run together, over one
window). Then the noisy neighbour:

For every ordered pair of tenants that share a VTEP (the first one they share),
where the first has a workload with an egress limit: that workload floods a
peer of its tenant as fast as a process can (`twin.traffic.flood`), while a
workload of the other tenant on the same VTEP streams paced RoCE to a peer of
its own (`twin.traffic.stream`) at 80 % of what its limits guarantee it (or
1,000 frames/s without limits). Both cross the fabric where they can.

- the victim keeps its rate: it delivers what it offered, within the tolerance;
- the noisy tenant is held to its limit (the lower of its egress limit and its
  peer's ingress limit), counted at its peer over the measurement window: no
  more than the limit, within the tolerance, and it did offer at least that.

Figures per limit (`performance.limits`, with the seconds of each VTEP's round in
`performance.rounds`) and per tenant of each noisy-neighbour run (offered, delivered,
dropped; frames/s and Mbit/s: `performance.runs`) are in the report's JSON and printed
as tables by `twin verify`. A limit no flood can drive is listed in `not_exercised`.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.lifecycle.context import LabContext
from twin.topology.model import Attachment, Fabric, Rate, Tenant
from twin.traffic import flows as F
from twin.traffic.flood import Flood
from twin.traffic.stream import Stream
from twin.verify import limits
from twin.verify.result import Check

GROUP = "performance"
SECONDS = limits.SECONDS  # the measurement
WARMUP = limits.WARMUP  # before it: the flood fills the queues on its way
TOLERANCE = limits.TOLERANCE  # delivered within 5 % of the figure it is judged against
PAYLOAD = 1024  # bytes of RoCE payload per frame (1,098-byte frames)
SHARE = 0.8  # a victim streams at this share of what its limits guarantee
UNLIMITED_FPS = 1000.0  # a victim without limits streams this many frames/s


def applies(fabric: Fabric) -> bool:
    return bool(limits.declared(fabric))


@dataclass(frozen=True)
class Scenario:
    vtep: str
    noisy: tuple[Tenant, Attachment, Attachment]  # tenant, source, destination
    victim: tuple[Tenant, Attachment, Attachment]


def peer(fabric: Fabric, t: Tenant, a: Attachment) -> Attachment | None:
    """Another workload of the tenant to send to: on another VTEP if it has one (across the fabric)."""
    others = [b for b in t.attachments if b.host != a.host]
    return min(others, key=lambda b: (b.vtep == a.vtep, b.segment != a.segment), default=None)


def scenarios(fabric: Fabric) -> list[Scenario]:
    out, done = [], set()
    for v in fabric.vteps():
        local = {t.name: [a for a in t.attachments if a.vtep == v] for t in fabric.tenants_on(v)}
        for n in local:
            noisy = next(
                (a for a in local[n] if a.rate_limit and a.rate_limit.egress and peer(fabric, fabric.tenants[n], a)),
                None,
            )
            for w in local:
                victim = next((a for a in local[w] if peer(fabric, fabric.tenants[w], a)), None)
                if w == n or noisy is None or victim is None or (n, w) in done:
                    continue
                tn, tw = fabric.tenants[n], fabric.tenants[w]
                to_noisy, to_victim = peer(fabric, tn, noisy), peer(fabric, tw, victim)
                if to_noisy is None or to_victim is None:  # (both were chosen for having a peer)
                    continue
                done.add((n, w))
                out.append(Scenario(v, (tn, noisy, to_noisy), (tw, victim, to_victim)))
    return out


def cap_fps(src: Attachment, dst: Attachment, frame: int) -> float | None:
    """Frames/s a flow from `src` to `dst` may carry: the lower of src's egress and dst's ingress limit."""
    rates: list[Rate] = [
        r for r in ((src.rate_limit and src.rate_limit.egress), (dst.rate_limit and dst.rate_limit.ingress)) if r
    ]
    return min((r.per_second(frame) for r in rates), default=None)


def figures(
    tenant: str,
    src: str,
    dst: str,
    limit: str,
    offered: float,
    delivered: float,
    sent: int,
    arrived: int,
    frame: int,
    seconds: float,
) -> dict:
    mbit = lambda fps: round(fps * frame * 8 / 1e6, 2)  # noqa: E731
    return {
        "tenant": tenant,
        "src": src,
        "dst": dst,
        "limit": limit,
        "frame_bytes": frame,
        "offered_fps": round(offered),
        "offered_mbps": mbit(offered),
        "delivered_fps": round(delivered),
        "delivered_mbps": mbit(delivered),
        "dropped": max(0, sent - arrived),
        "loss_pct": round(100.0 * max(0, sent - arrived) / sent, 2) if sent else 0.0,
        "seconds": seconds,
    }


def limit_text(src: Attachment, dst: Attachment) -> str:
    parts = [f"egress {src.rate_limit.egress}"] if src.rate_limit and src.rate_limit.egress else []
    parts += [f"{dst.host} ingress {dst.rate_limit.ingress}"] if dst.rate_limit and dst.rate_limit.ingress else []
    return ", ".join(parts) or "none"


def measure(ctx: LabContext, s: Scenario, flow_ids: tuple[int, int] = (1, 2)) -> tuple[list[Check], dict]:
    fabric = ctx.fabric
    (nt, na, nd), (vt, va, vd) = s.noisy, s.victim
    flood_flow = F.flow(fabric, na.host, nd.host, flow_ids[0], payload=PAYLOAD, sport=51000)
    victim_flow = F.flow(fabric, va.host, vd.host, flow_ids[1], payload=PAYLOAD, sport=51001, dqp=0x22)
    held = WARMUP + SECONDS
    with Flood(ctx, flood_flow, held) as flood:
        frame = flood.frame_bytes
        cap = cap_fps(va, vd, frame)
        target = SHARE * cap if cap else UNLIMITED_FPS
        with Stream(ctx, [victim_flow], interval=1.0 / target) as stream:
            stream.hold(WARMUP + SECONDS)
    r = stream.stop()[0]  # (stopped: its results)
    victim = figures(
        vt.name,
        va.host,
        vd.host,
        limit_text(va, vd),
        r.sent / stream.elapsed(),
        r.received / stream.elapsed(),
        r.sent,
        r.received,
        frame,
        round(stream.elapsed(), 2),
    )
    limit = cap_fps(na, nd, frame)
    noisy = figures(
        nt.name,
        na.host,
        nd.host,
        limit_text(na, nd),
        flood.sent / held,
        flood.delivered(WARMUP, WARMUP + SECONDS) / SECONDS,
        flood.sent,
        len(flood.arrivals),
        frame,
        held,
    )
    checks = [_judge_victim(s, victim, target), _judge_noisy(s, noisy, limit)]
    return checks, {
        "vtep": s.vtep,
        "noisy": noisy,
        "victim": victim,
        "victim_target_fps": round(target),
        "noisy_limit_fps": round(limit or 0),
    }


def _judge_victim(s: Scenario, v: dict, target: float) -> Check:
    problems = []
    if v["offered_fps"] < target * (1 - TOLERANCE):
        problems.append(
            f"its stream could only offer {v['offered_fps']} frames/s of {target:.0f} (the machine is "
            "too busy to judge)"
        )
    if v["delivered_fps"] < v["offered_fps"] * (1 - TOLERANCE):
        problems.append(
            f"delivered {v['delivered_fps']} of {v['offered_fps']} frames/s ({v['delivered_mbps']} of "
            f"{v['offered_mbps']} Mbit/s, {v['dropped']} dropped): the noisy neighbour took its share"
        )
    name = (
        f"{v['tenant']} {v['src']} -> {v['dst']} keeps {target:.0f} frames/s while {s.noisy[0].name} floods on {s.vtep}"
    )
    return Check(GROUP, name, not problems, "; ".join(problems), v)


def _judge_noisy(s: Scenario, n: dict, limit: float | None) -> Check:
    name = f"{n['tenant']} {n['src']} -> {n['dst']} held to its limit ({n['limit']}) on {s.vtep}"
    if limit is None:
        return Check(GROUP, name, False, "no limit applies to this flow", n)
    problems = []
    if n["delivered_fps"] > limit * (1 + TOLERANCE):
        problems.append(
            f"delivered {n['delivered_fps']} frames/s ({n['delivered_mbps']} Mbit/s), over its limit "
            f"of {limit:.0f} frames/s: the limit is not enforced"
        )
    if n["offered_fps"] < limit * (1 - TOLERANCE):
        problems.append(f"it offered only {n['offered_fps']} frames/s, under its limit of {limit:.0f}: nothing to hold")
    return Check(GROUP, name, not problems, "; ".join(problems), n)


def run(ctx: LabContext) -> tuple[list[Check], dict]:
    tests, unexercised = limits.plan(ctx.fabric)
    todo = scenarios(ctx.fabric)
    if not tests and not todo:
        return [
            Check(GROUP, "performance", False, "no workload has a rate limit a flood can drive (tenants.*.rate_limit)")
        ], {"not_exercised": unexercised}
    checks, rounds = limits.run(ctx, tests)
    runs = []
    for s in todo:
        c, figures = measure(ctx, s)
        checks += c
        runs.append(figures)
    return checks, {
        "limits": [c.data for c in checks if c.name in {t.name for t in tests}],
        "rounds": rounds,
        "runs": runs,
        "shaping": ctx.shaping,
        "tolerance": TOLERANCE,
        "not_exercised": unexercised,
    }
