"""Every rate limit of a lab, held: each driven by a flood of its own (part of the performance group).

For each limit a workload has (egress: what it sends; ingress: what it receives; in bits
or frames per second), one flood that this limit holds and no other does first:

- egress of W: W floods a peer of its tenant (on W's own VTEP where it has one: the
  cheapest path) whose ingress limit, if any, lets more through;
- ingress of W: a peer whose egress limit, if any, lets more through floods W.

Frames carry 1 KiB of RoCE payload for a bit rate. For a frame rate they are the
smallest the sender's own egress limit lets through at MARGIN over the rate (a frame
rate costs per frame, not per byte). A limit no peer can drive is not exercised, and
said so (`unexercised`).

The floods of one VTEP's limits run together (a host sends at most one flood and
receives at most one; more are run in rounds) and are measured over one window by the
ports' own counters (`twin.traffic.meter`): what the sender's port sent (what its VTEP
port took in) and what the receiver's port received. Verdicts, TOLERANCE 5 %:

- held: what arrived is at most the limit x 1.05; more is a failure, the rate named;
- driven: more than the limit x 1.05 reached it (what the sender's port sent; for an
  ingress limit flooded from another VTEP, what that VTEP received from the fabric, since
  a busy host may lose frames on the way), or the port held the sender back (its socket
  waited HELD_BACK of the time or more, as a shaper makes it: it wanted to send more);
  otherwise the host was too slow to drive the limit;
- reached: what arrived is at least the limit x 0.95; otherwise what came out of the
  limit was lost after it, or the limit is stricter than declared.

A limit not driven or not reached is measured again (ATTEMPTS in all); after the last
its check fails as "not judged": a slow host never passes for a held limit.
"""

from __future__ import annotations

import math
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass

from twin.lifecycle.context import LabContext
from twin.topology.model import Attachment, Fabric, Rate, Tenant
from twin.traffic import flows as F
from twin.traffic.flood import Flood
from twin.traffic.meter import Meter, rates
from twin.verify.result import Check

GROUP = "performance"
TOLERANCE = 0.05  # held: at most limit x 1.05; driven and reached: at least limit x 0.95
MARGIN = 0.15  # a frame-rate limit's flood: the sender's own limit lets through 1.15 x the rate
HELD_BACK = 0.05  # a sender that waited on its socket this share of the flood was held back by its port
WARMUP = 0.5  # before the window: queues filled, buckets drained
SECONDS = 2.0  # the window
ATTEMPTS = 3  # a limit not judged is measured again, this many times in all
BIT_PAYLOAD = 1024  # RoCE payload of a bit-rate flood (1,098-byte frames)
HEADERS = 74  # bytes of a RoCE frame around its payload: Ethernet, IPv4, UDP, BTH, twin's tag, ICRC
FLOW_ID = 0x7100  # + the test's number: the floods' flow ids


@dataclass(frozen=True)
class LimitTest:
    """One limit (`holder`'s `direction`), driven by a flood `src` -> `dst` of `payload`-byte frames."""

    tenant: str
    holder: Attachment
    direction: str
    rate: Rate
    src: Attachment
    dst: Attachment
    payload: int

    @property
    def frame(self) -> int:
        return HEADERS + self.payload

    @property
    def fps(self) -> float:
        return self.rate.per_second(self.frame)

    @property
    def where(self) -> str:
        return f"{self.holder.vtep}:{self.holder.port}"

    @property
    def name(self) -> str:
        return check_name(self.tenant, self.holder, self.direction, self.rate)

    @property
    def remote(self) -> bool:
        """An ingress limit flooded from another VTEP: what reaches the limit is what its VTEP
        receives from the fabric (the fabric may lose some of what the sender sent)."""
        return self.direction == "ingress" and self.src.vtep != self.holder.vtep


def check_name(tenant: str, a: Attachment, direction: str, rate: Rate) -> str:
    """The check that judges a limit: `twin verify --prove` expects a broken limit named by it."""
    return f"{tenant} {a.host} {direction} {rate} held on {a.vtep}:{a.port}"


def label(a: Attachment, direction: str, rate: Rate) -> str:
    return f"rate limit: {a.host} {direction} {rate} on {a.vtep}:{a.port}"


def declared(fabric: Fabric) -> list[tuple[Tenant, Attachment, str, Rate]]:
    """Every limit of every workload: (tenant, workload, direction, rate)."""
    return [
        (t, a, d, getattr(a.rate_limit, d))
        for t in fabric.tenants.values()
        for a in t.attachments
        for d in ("egress", "ingress")
        if a.rate_limit and getattr(a.rate_limit, d)
    ]


def plan(fabric: Fabric) -> tuple[list[LimitTest], list[dict]]:
    """A flood for every limit that has one, and the limits that have none (why, in words)."""
    tests, unexercised = [], []
    for t, a, d, rate in declared(fabric):
        test = _flood_for(fabric, t, a, d, rate)
        if test is not None:
            tests.append(test)
        else:
            unexercised.append(
                {
                    "safeguard": label(a, d, rate),
                    "why": f"no other workload of {t.name} can flood it without a limit of its own "
                    "holding the flood first",
                }
            )
    return tests, unexercised


def _flood_for(fabric: Fabric, t: Tenant, a: Attachment, d: str, rate: Rate) -> LimitTest | None:
    order = list(fabric.nodes)
    peers = sorted(
        (b for b in t.attachments if b.host != a.host), key=lambda b: (b.vtep != a.vtep, order.index(b.host))
    )
    for b in peers:
        src, dst = (a, b) if d == "egress" else (b, a)
        other = dst.rate_limit and dst.rate_limit.ingress if d == "egress" else src.rate_limit and src.rate_limit.egress
        payload = payload_for(rate, other or None)
        if payload is not None:
            return LimitTest(t.name, a, d, rate, src, dst, payload)
    return None


def payload_for(rate: Rate, other: Rate | None) -> int | None:
    """RoCE payload of a flood that `rate` holds while `other` (the one other limit on its way, if
    any) lets MARGIN more through; None if no frame size does."""
    if rate.unit == "bit":
        payload = BIT_PAYLOAD
    elif other is not None and other.unit == "bit":  # the largest frame `other` passes at (1 + MARGIN) x rate
        payload = min(BIT_PAYLOAD, math.floor(other.value / (8 * rate.value * (1 + MARGIN))) - HEADERS)
    else:
        payload = 0
    if payload < 0:
        return None
    frame = HEADERS + payload
    if other is not None and other.per_second(frame) < rate.per_second(frame) * (1 + MARGIN):
        return None
    return payload


def rounds(tests: list[LimitTest]) -> list[list[LimitTest]]:
    """Tests grouped by VTEP, each VTEP's split so that a host sends and receives at most one flood,
    and one flood at most comes into the VTEP from the fabric."""
    out: list[list[LimitTest]] = []
    for vtep in dict.fromkeys(t.holder.vtep for t in tests):
        mine: list[list[LimitTest]] = []
        for t in (t for t in tests if t.holder.vtep == vtep):
            r = next(
                (
                    r
                    for r in mine
                    if all(
                        t.src.host != o.src.host and t.dst.host != o.dst.host and not (t.remote and o.remote) for o in r
                    )
                ),
                None,
            )
            if r is None:
                mine.append(r := [])
            r.append(t)
        out += mine
    return out


def measure(ctx: LabContext, tests: list[LimitTest]) -> list[dict]:
    """Flood every test of a round at once; per test, its figures and verdict (`judge`)."""
    fabric = ctx.fabric
    floods = [
        Flood(ctx, F.flow(fabric, t.src.host, t.dst.host, FLOW_ID + i, payload=t.payload, sport=51100 + i), count=False)
        for i, t in enumerate(tests)
    ]
    hosts = list(dict.fromkeys(h for t in tests for h in (t.src.host, t.dst.host)))
    uplinks = {t.holder.vtep: [p.name for p in fabric.nodes[t.holder.vtep].fabric_ports] for t in tests if t.remote}
    with Meter(ctx, hosts, [(n, p) for n, ps in uplinks.items() for p in ps]) as meter, ExitStack() as running:
        for f in floods:
            running.enter_context(f)
        pause = threading.Event()
        pause.wait(WARMUP)
        before = meter.read()
        pause.wait(SECONDS)
        after = meter.read()
    seen = rates(before, after)
    reached = {v: sum(seen[f"{v}:{p}"]["rx_fps"] for p in ps) for v, ps in uplinks.items()}
    return [
        judge(
            t,
            seen[t.src.host],
            seen[t.dst.host],
            f.held / max(f.elapsed, 1e-3),
            reached[t.holder.vtep] if t.remote else None,
        )
        for t, f in zip(tests, floods)
    ]


def judge(t: LimitTest, src: dict, dst: dict, held: float, reached: float | None = None) -> dict:
    """A limit's figures and verdict: "held", "over", "slow" (not driven) or "short" (not reached).
    `reached`: frames/s that reached the limit's VTEP from the fabric (an ingress limit flooded from
    another VTEP), else what the sender's port sent counts as what reached it."""
    limit, offered, delivered = t.fps, src["tx_fps"], dst["rx_fps"]
    into = offered if reached is None else reached
    driven = into > limit * (1 + TOLERANCE) or (held >= HELD_BACK and reached is None)
    if delivered > limit * (1 + TOLERANCE):
        verdict = "over"
    elif not driven:
        verdict = "slow"
    elif delivered < limit * (1 - TOLERANCE):
        verdict = "short"
    else:
        verdict = "held"
    return {
        "tenant": t.tenant,
        "host": t.holder.host,
        "direction": t.direction,
        "limit": str(t.rate),
        "where": t.where,
        "src": t.src.host,
        "dst": t.dst.host,
        "frame_bytes": t.frame,
        "limit_fps": round(limit),
        "limit_mbps": round(limit * t.frame * 8 / 1e6, 2),
        "offered_fps": round(offered),
        "offered_mbps": round(src["tx_mbps"], 2),
        "reached_fps": round(into),
        "delivered_fps": round(delivered),
        "delivered_mbps": round(dst["rx_mbps"], 2),
        "held_back": round(held, 2),
        "seconds": round(dst["seconds"], 2),
        "verdict": verdict,
    }


def message(r: dict) -> str:
    """Why a limit's check failed, with the rates measured."""
    got = f"{r['delivered_fps']} frames/s ({r['delivered_mbps']} Mbit/s) of {r['frame_bytes']} bytes"
    limit = f"{r['limit_fps']} frames/s ({r['limit_mbps']} Mbit/s)"
    flood = f"{r['src']} -> {r['dst']}"
    if r["verdict"] == "over":
        return f"delivered {got}, over its limit of {limit}: the limit is not enforced (flood {flood})"
    if r["verdict"] == "slow":
        into = (
            "" if r["reached_fps"] == r["offered_fps"] else f", {r['reached_fps']} reached {r['where'].split(':')[0]}"
        )
        return (
            f"not judged: the flood {flood} offered only {r['offered_fps']} frames/s ({r['offered_mbps']} Mbit/s)"
            f"{into}, not over its limit of {limit}, and nothing held it back: the host is too slow to drive it"
        )
    return (
        f"not judged: delivered only {got} of its limit of {limit} though {r['reached_fps']} frames/s reached it "
        f"({flood}): lost after it, or it is stricter than declared"
    )


def run(ctx: LabContext, tests: list[LimitTest]) -> tuple[list[Check], list[dict]]:
    """Every test, by rounds; those not judged measured again, ATTEMPTS in all. A check per limit,
    the figures of its last measurement, and the seconds each round took (its attempts included)."""
    final: dict[str, dict] = {}
    timing = []
    for r in rounds(tests):
        t0, todo, attempt = time.monotonic(), r, 0
        while todo and attempt < ATTEMPTS:
            attempt += 1
            for t, fig in zip(todo, measure(ctx, todo)):
                final[t.name] = {**fig, "attempts": attempt}
            todo = [t for t in todo if final[t.name]["verdict"] in ("slow", "short")]
        timing.append(
            {
                "vtep": r[0].holder.vtep,
                "limits": [t.name for t in r],
                "attempts": attempt,
                "seconds": round(time.monotonic() - t0, 2),
            }
        )
    checks = [
        Check(
            GROUP,
            t.name,
            final[t.name]["verdict"] == "held",
            "" if final[t.name]["verdict"] == "held" else message(final[t.name]),
            final[t.name],
        )
        for t in tests
    ]
    return checks, timing
