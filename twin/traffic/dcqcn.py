"""The receiving NIC's part of DCQCN, played by the traffic engine: a notification point.

A RoCE frame that arrives marked CE (a congestion point on its way set its ECN
field instead of dropping it) is answered with a CNP: a RoCEv2 frame with BTH
opcode 0x81 and the BECN bit, to the sender's QP, from the receiver's address to
the sender's, DSCP 48 (the usual CNP class) and not ECN-capable (a congestion
point never marks a CNP). The sender's reaction point would slow the QP down;
twin's senders keep their pace, so the marks and CNPs can be counted.

CNP pacing, as NICs do it: at most one CNP per QP per `CNP_INTERVAL_NS` (50 us)
of arrival time. The arrival time is the kernel's (SO_TIMESTAMPNS on the tap),
so the rule does not depend on when twin reads the frame. `expected_cnps` gives
what the rule allows for a list of CE arrival times, for tests and reports, and
`expected_marks` what a congestion point's rule marks of frames arriving at given times.
"""

from __future__ import annotations

import threading
from collections import defaultdict

from twin.lifecycle.context import LabContext
from twin.runtime import NFT_CONGESTION, nft_counters
from twin.traffic import roce

CNP_INTERVAL_NS = 50_000  # at most one CNP per QP per 50 microseconds
CNP_DSCP = 48
CNP_BIT = 0x40000000  # a CNP's tag: the flow id it answers, with this bit set


def expected_cnps(arrivals_ns: list[int], interval_ns: int = CNP_INTERVAL_NS) -> int:
    """How many CNPs the pacing rule sends for CE marks arriving at these times (one QP), in the order
    the receiver read them: a frame stamped less than the interval after the last CNP's frame gets
    none, one stamped before it too (the kernel stamps a frame as it queues it on a CPU's backlog; where
    a hop's qdisc hands frames to another CPU, the receiver may read them out of their stamps' order)."""
    count, last = 0, None
    for t in arrivals_ns:
        if last is None or t - last >= interval_ns:
            count, last = count + 1, t
    return count


def expected_marks(arrivals_ns: list[int], per_second: float, burst: float, cost: float = 1.0) -> int:
    """How many of these frames a congestion point marks: an nftables `limit rate over` of
    `per_second` (frames, or bytes with `cost` bytes a frame) with a bucket of `burst`, full at
    the first frame, taking `cost` of it per frame; a frame the bucket cannot pay for is marked.
    The times are where the frames arrived (the point's own are a constant delay earlier)."""
    tokens, last, marked = burst, None, 0
    for t in sorted(arrivals_ns):
        if last is not None:
            tokens = min(burst, tokens + (t - last) * per_second / 1e9)
        last = t
        if tokens >= cost:
            tokens -= cost
        else:
            marked += 1
    return marked


class NotificationPoint:
    """Answers CE-marked frames of a run's flows with paced CNPs; counts marks and CNPs per flow."""

    def __init__(
        self, cnps: dict[int, roce.Flow], flows: list[roce.Flow], run: int, interval_ns: int = CNP_INTERVAL_NS
    ):
        """`cnps`: per data flow id, the CNP flow that answers it (`twin.traffic.flows.cnp_flow`)."""
        self.run, self.interval = run, interval_ns
        self.flows = {f.flow_id: f for f in flows if f.flow_id in cnps}
        self.cnp = cnps
        self.marked: dict[int, list[int]] = defaultdict(list)  # flow -> arrival times (ns) of its CE frames
        self.arrived: dict[int, list[int]] = defaultdict(list)  # flow -> arrival times (ns) of all its frames
        self.sent: dict[int, int] = defaultdict(int)  # flow -> CNPs sent
        self._last: dict[int, int] = {}  # flow (its QP pair) -> time of its last CNP
        self._lock = threading.Lock()

    def __call__(self, tap: str, frame: bytes, ns: int) -> bytes | None:
        """The engine's `respond`: a CNP for a CE-marked frame of one of the flows, if the pacing allows."""
        a = roce.read(frame, self.run, check_icrc=False)
        f = self.flows.get(a.flow_id) if a else None
        if f is None or f.dst != tap:
            return None
        with self._lock:
            self.arrived[f.flow_id].append(ns)
            if not roce.is_ce(frame[15]):
                return None
            self.marked[f.flow_id].append(ns)
            # each flow is one QP pair of its own (flows share the QP number, not the QP), so the
            # pacing is per flow; paced across flows, one flow's marks would silence another's CNPs
            last = self._last.get(f.flow_id)
            if last is not None and ns - last < self.interval:
                return None
            self._last[f.flow_id] = ns
            self.sent[f.flow_id] += 1
            psn = self.sent[f.flow_id] - 1
        return roce.frame(self.cnp[f.flow_id], self.run, psn)

    def cnps_at(self, captured: dict[str, list[bytes]]) -> dict[int, int]:
        """CNPs that reached each flow's sender, from what its tap captured."""
        got: dict[int, int] = defaultdict(int)
        for f in self.flows.values():
            for frame in captured.get(f.src, []):
                a = roce.read(frame, self.run, check_icrc=False)
                if a is not None and a.flow_id == f.flow_id | CNP_BIT:
                    got[f.flow_id] += 1
        return got


def congestion_counters(ctx: LabContext) -> dict[str, dict[str, int]]:
    """What every congestion point of the lab has counted: "node:port" -> {ect, ce} frames."""
    out: dict[str, dict[str, int]] = {}
    for node in sorted({p.node for p in ctx.fabric.congestion}):
        got = nft_counters(ctx.exec(node), *NFT_CONGESTION)
        for p in (p for p in ctx.fabric.congestion if p.node == node):
            ident = "".join(c if c.isalnum() or c == "_" else "_" for c in p.port)
            out[f"{node}:{p.port}"] = {"ect": got.get(f"ect_{ident}", 0), "ce": got.get(f"ce_{ident}", 0)}
    return out


def delta(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    return {p: {k: v - before.get(p, {}).get(k, 0) for k, v in c.items()} for p, c in after.items()}
