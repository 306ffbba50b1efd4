"""Congestion points, judged by what they do to RoCE (`twin verify --only congestion`).

Per congestion point (`congestion:`: CE marks above a rate on a fabric port), a pair of
hosts of one tenant whose every path crosses it (whatever ECMP chooses), with no rate
limit of theirs holding a burst below ABOVE x its rate. Where no pair's every path crosses it
(a DPU dual-homed to two leafs: half the paths go by the other one), a pair some of whose paths
do, steered onto it: ECMP decides by the flow's UDP source port, so STEER flows of 1, 2, 4 ...
frames, each from a source port of its own, are sent at once and the point's ECT counter, a sum
of distinct powers of two, says which of them crossed it (`steer`); the runs below then all use
that port. Two runs, each alone on the point:

- above its rate, back to back: BURST ECN-capable frames (ECT(0)), then BURST that are not
  (Not-ECT), a flow each. The ECN-capable ones all arrive, at least (1 - TOLERANCE) of the
  marks the point's rule makes of them at the times they arrived (its token bucket:
  `twin.traffic.dcqcn.expected_marks`) and at least one arrive CE, each mark answered with a
  CNP as the pacing rule allows, every CNP back at the sender. The others all arrive, none
  marked: a VTEP drops a CE-marked frame that is not ECN-capable when it decapsulates it
  (RFC 6040), so a point that marks them loses them.
- below its rate: ECN-capable frames paced at BELOW x its rate for BELOW_SECONDS: all arrive,
  and no more marked than the rule makes of their arrival times (none, unless the host bunched
  them on the way) plus SLACK of them.

A burst that arrived at less than ABOVE x the point's rate did not drive it (the host was
too slow): measured again, ATTEMPTS in all, then its check fails as not judged. Frames lost
or marked where no mark belongs fail at any rate. The group runs alone, after the others, so
no other frames share the point's bucket. What each point counted (`ect_<port>`, `ce_<port>`)
is in the checks' data.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

from twin.config.services import CONGESTION_BURST_S, bucket
from twin.intent import paths
from twin.lifecycle.context import LabContext
from twin.topology.model import Attachment, CongestionPoint, Fabric
from twin.traffic import dcqcn, roce
from twin.traffic import flows as F
from twin.verify.result import Check

GROUP = "congestion"
BURST = 2000  # frames of each burst above the rate
PAYLOAD = 1024  # RoCE payload (1,098-byte frames), or the smallest frames where a rate limit needs them
HEADERS = 74  # bytes of a RoCE frame around its payload
VXLAN = 36  # bytes the point counts on top of a frame it carries in VXLAN (outer IPv4, UDP, VXLAN)
ABOVE = 2.0  # a burst that arrived at this many times the point's rate drove it
TOLERANCE = 0.2  # marks of the ECN-capable burst: at least (1 - 0.2) x what the rule makes of it
BELOW = 0.2  # the paced flow: this share of the rate (a late sender's catch-up stays in the bucket)
BELOW_SECONDS = 0.5
SLACK = 0.01  # below the rate: marks beyond the rule's, at most 1 % of the frames
ATTEMPTS = 3
SPORT = 52000  # the runs' UDP source ports: SPORT, + 1, + 2 (a steered probe's runs: the one port found)
STEER, STEER_ROUNDS = 6, 3  # flows of 1 ... 32 frames at once, each its own source port; rounds of them


def applies(fabric: Fabric) -> bool:
    return bool(fabric.congestion)


@dataclass(frozen=True)
class Probe:
    point: CongestionPoint
    tenant: str
    src: Attachment
    dst: Attachment
    payload: int
    every: bool = True  # every path from src to dst crosses the point; else the runs are steered onto it
    sport: int | None = None  # a steered probe's source port that crosses it (`steer`); None: not found yet

    def port(self, run: int) -> int:
        """The UDP source port of run 0 (ECN-capable burst), 1 (not ECN-capable) or 2 (below the rate)."""
        return SPORT + run if self.every or self.sport is None else self.sport

    @property
    def where(self) -> str:
        return f"{self.point.node}:{self.point.port}"

    @property
    def frame(self) -> int:
        return HEADERS + self.payload

    @property
    def fps(self) -> float:
        """The point's rate in frames of this probe per second."""
        return self.point.above.per_second(self.frame + (VXLAN if self.point.above.unit == "bit" else 0))

    def names(self) -> dict[str, str]:
        return names(self.point, f"{self.tenant} {self.src.host} -> {self.dst.host}")


def label(p: CongestionPoint) -> str:
    return f"congestion point: {p.node}:{p.port} (above {p.above})"


def names(p: CongestionPoint, flow: str = "") -> dict[str, str]:
    """The checks of a point (`twin verify --prove` expects each of its elements named by one)."""
    where, by = f"{p.node}:{p.port}", f" ({flow})" if flow else ""
    return {
        "ect": f"{where} marks ECN-capable RoCE above {p.above}{by}",
        "plain": f"{where} leaves RoCE that is not ECN-capable unmarked{by}",
        "below": f"{where} marks nothing below {p.above}{by}",
    }


def plan(fabric: Fabric) -> tuple[list[Probe], list[dict]]:
    """A probe for every congestion point some tenant's hosts can drive, and the points none can:
    hosts whose every path crosses it first, else hosts some of whose paths do (steered onto it)."""
    probes, unexercised = [], []
    order = list(fabric.nodes)
    for p in fabric.congestion:
        found = []
        for t in fabric.tenants.values():
            for a in t.attachments:
                for b in t.attachments:
                    if a.vtep == b.vtep or p.port not in paths.next_hops(fabric, a.vtep, b.vtep).get(p.node, ()):
                        continue
                    every = paths.crosses(fabric, a.vtep, b.vtep, p.node, p.port)
                    payload = _payload(p, a, b)
                    if payload is not None:
                        key = (not every, payload != PAYLOAD, order.index(a.host), order.index(b.host))
                        found.append((key, Probe(p, t.name, a, b, payload, every)))
        if found:
            probes.append(min(found, key=lambda x: x[0])[1])
        else:
            unexercised.append(
                {"safeguard": label(p), "why": "no two hosts of a tenant send across it, at twice its rate"}
            )
    return probes, unexercised


def steer(ctx: LabContext, probe: Probe) -> Probe:
    """`probe` with a source port whose frames from its source to its destination leave by the point
    (sport None: none of STEER x STEER_ROUNDS ports did). A probe whose every path crosses it: as it is."""
    if probe.every:
        return probe
    for r in range(STEER_ROUNDS):
        ports = [SPORT + 8 + r * STEER + i for i in range(STEER)]
        flows = [
            F.flow(ctx.fabric, probe.src.host, probe.dst.host, 0x40 + i, count=1 << i, payload=probe.payload, sport=s)
            for i, s in enumerate(ports)
        ]
        before = dcqcn.congestion_counters(ctx)
        F.run(ctx, flows, {f.flow_id: True for f in flows}, check_icrc=False)
        crossed = dcqcn.delta(before, dcqcn.congestion_counters(ctx)).get(probe.where, {}).get("ect", 0)
        if 0 < crossed < 1 << STEER:  # else nothing crossed, or frames that were not these
            return replace(probe, sport=next(s for i, s in enumerate(ports) if crossed >> i & 1))
    return probe


def _payload(p: CongestionPoint, a: Attachment, b: Attachment) -> int | None:
    """Payload of a burst from `a` to `b` their own limits let through at ABOVE x the point's rate."""
    caps = [r for r in (a.rate_limit and a.rate_limit.egress, b.rate_limit and b.rate_limit.ingress) if r]
    for payload in (PAYLOAD, 0):
        probe = Probe(p, "", a, b, payload)
        if all(r.per_second(probe.frame) >= ABOVE * probe.fps * (1 + TOLERANCE) for r in caps):
            return payload
    return None


def rate_of(times: list[int]) -> float:
    """Frames per second at which these arrived (kernel times, ns)."""
    span = (max(times) - min(times)) / 1e9 if len(times) > 1 else 0.0
    return (len(times) - 1) / span if span > 0 else 0.0


def marks(probe: Probe, times: list[int]) -> int:
    """What the point's rule marks of ECN-capable frames that arrived at these times."""
    per_second, burst = bucket(probe.point.above, CONGESTION_BURST_S)
    cost = 1 if probe.point.above.unit == "pps" else probe.frame + VXLAN
    return dcqcn.expected_marks(times, per_second, burst, cost)


def figures(probe: Probe, r: roce.FlowResult) -> dict:
    return {
        "flow": f"{probe.tenant} {probe.src.host} -> {probe.dst.host}",
        "frame_bytes": probe.frame,
        "ecn": r.flow.ecn,
        "sent": r.sent,
        "received": r.received,
        "ce": r.ce,
        "tos_changed": r.tos_changed,
        "arrived_fps": round(rate_of(r.times)),
        "point_fps": round(probe.fps),
        "rule_marks": marks(probe, r.times) if r.flow.ecn != roce.NOT_ECT else 0,
        "cnps_sent": r.cnps_sent,
        "cnps_received": r.cnps_received,
        "cnps_allowed": dcqcn.expected_cnps(r.ce_times),
        "stamps_out_of_order": sum(b < a for a, b in zip(r.times, r.times[1:])),  # read after a later-stamped one
    }


def above(ctx: LabContext, probe: Probe) -> tuple[dict, dict, dict]:
    """The two bursts: figures of the ECN-capable one, of the other, and what the point counted."""
    f = ctx.fabric
    ect = F.flow(
        f, probe.src.host, probe.dst.host, 1, count=BURST, payload=probe.payload, sport=probe.port(0), dqp=0x31
    )
    plain = F.flow(
        f,
        probe.src.host,
        probe.dst.host,
        2,
        count=BURST,
        payload=probe.payload,
        sport=probe.port(1),
        dqp=0x32,
        ecn=roce.NOT_ECT,
    )
    before = dcqcn.congestion_counters(ctx)
    got = F.run(ctx, [ect, plain], {1: True, 2: True}, cnps=True)
    counted = dcqcn.delta(before, dcqcn.congestion_counters(ctx)).get(probe.where, {})
    return figures(probe, got[1]), figures(probe, got[2]), counted


def below(ctx: LabContext, probe: Probe) -> dict:
    rate = BELOW * probe.fps
    flow = F.flow(
        ctx.fabric,
        probe.src.host,
        probe.dst.host,
        3,
        count=max(1, int(rate * BELOW_SECONDS)),
        payload=probe.payload,
        sport=probe.port(2),
        dqp=0x33,
    )
    return figures(probe, F.run(ctx, [flow], {3: True}, cnps=True, pace=1.0 / rate)[3])


def judge_ect(probe: Probe, r: dict) -> tuple[bool | None, str]:
    """(passed, or None if not judged; what is wrong)."""
    problems = []
    if r["received"] < r["sent"]:
        problems.append(f"{r['sent'] - r['received']} of {r['sent']} lost (a congestion point marks, never drops)")
    if r["arrived_fps"] >= ABOVE * probe.fps and r["ce"] < max(1, math.floor((1 - TOLERANCE) * r["rule_marks"])):
        problems.append(
            f"{r['ce']} of {r['received']} arrived marked CE at {r['arrived_fps']} frames/s, over its rate "
            f"of {r['point_fps']}; its rule marks {r['rule_marks']} of them: the point does not mark"
        )
    if r["cnps_sent"] != r["cnps_allowed"]:
        problems.append(f"{r['cnps_sent']} CNPs for {r['ce']} CE marks, the pacing rule allows {r['cnps_allowed']}")
    if r["cnps_received"] < r["cnps_sent"]:
        problems.append(f"{r['cnps_sent'] - r['cnps_received']} of {r['cnps_sent']} CNPs never reached the sender")
    if not problems and r["arrived_fps"] < ABOVE * probe.fps:
        return None, _slow(probe, r)
    return not problems, "; ".join(problems)


def judge_plain(probe: Probe, r: dict, counted: dict, ect_ce: int) -> tuple[bool | None, str]:
    problems = []
    if r["received"] < r["sent"]:
        problems.append(f"{r['sent'] - r['received']} of {r['sent']} lost")
    if r["ce"] or r["tos_changed"]:
        problems.append(f"{r['ce'] + r['tos_changed']} arrived with their ECN field changed")
    extra = counted.get("ce", 0) - ect_ce
    if problems and extra > 0:
        problems.append(
            f"{probe.where} counted {counted['ce']} CE marks, {extra} more than the ECN-capable frames "
            "that arrived marked: it marks frames that are not ECN-capable (a VTEP drops those, RFC 6040)"
        )
    if not problems and r["arrived_fps"] < ABOVE * probe.fps:
        return None, _slow(probe, r)
    return not problems, "; ".join(problems)


def judge_below(r: dict) -> tuple[bool, str]:
    problems = []
    if r["received"] < r["sent"]:
        problems.append(f"{r['sent'] - r['received']} of {r['sent']} lost")
    if r["ce"] > r["rule_marks"] + SLACK * r["sent"]:
        problems.append(
            f"{r['ce']} of {r['received']} arrived marked CE at {r['arrived_fps']} frames/s, "
            f"under its rate of {r['point_fps']} (its rule marks {r['rule_marks']} of them): "
            "the point marks below its rate"
        )
    return not problems, "; ".join(problems)


def _slow(probe: Probe, r: dict) -> str:
    return (
        f"not judged: the burst arrived at only {r['arrived_fps']} frames/s, not {ABOVE:g} x the point's rate of "
        f"{r['point_fps']}: the host is too slow to drive it"
    )


def check(
    probe: Probe, probe_names: dict[str, str], ect: dict, plain: dict, below_: dict, counted: dict, attempts: int
) -> list[Check]:
    out = []
    for key, (ok, msg), data in (
        ("ect", judge_ect(probe, ect), ect),
        ("plain", judge_plain(probe, plain, counted, ect["ce"]), plain),
        ("below", judge_below(below_), below_),
    ):
        seen = {"counted": counted} if key != "below" else {}  # what the point counted of the bursts
        out.append(Check(GROUP, probe_names[key], bool(ok), msg, {**data, **seen, "attempts": attempts}))
    return out


def unsteered(probe: Probe) -> list[Check]:
    """The checks of a point no source port tried led the probe's frames across: not judged."""
    why = (
        f"not judged: none of {STEER * STEER_ROUNDS} UDP source ports led {probe.src.host} -> {probe.dst.host}'s "
        f"frames out of {probe.where} (ECMP sent them all another way)"
    )
    return [Check(GROUP, n, False, why) for n in probe.names().values()]


def run(ctx: LabContext) -> tuple[list[Check], dict]:
    probes, unexercised = plan(ctx.fabric)
    checks, points = [], []
    for probe in probes:
        t0 = time.monotonic()
        probe = steer(ctx, probe)
        if not probe.every and probe.sport is None:
            checks += unsteered(probe)
            continue
        for attempt in range(1, ATTEMPTS + 1):  # noqa: B007  (the count is reported after the loop)
            ect, plain, counted = above(ctx, probe)
            if judge_ect(probe, ect)[0] is not None and judge_plain(probe, plain, counted, ect["ce"])[0] is not None:
                break
        below_ = below(ctx, probe)
        checks += check(probe, probe.names(), ect, plain, below_, counted, attempt)
        points.append(
            {
                "point": probe.where,
                "above": str(probe.point.above),
                "flow": ect["flow"],
                "every_path": probe.every,
                "sport": probe.port(0),
                "ect": ect,
                "plain": plain,
                "below": below_,
                "counted": counted,
                "attempts": attempt,
                "seconds": round(time.monotonic() - t0, 2),
            }
        )
    if not probes and not unexercised:
        checks.append(Check(GROUP, "congestion", False, "the lab has no congestion points (congestion:)"))
    return checks, {"points": points, "not_exercised": unexercised, "tolerance": TOLERANCE}
