"""Background RoCEv2 streams: paced flows between host endpoints while the fabric
changes, with loss, outages, duplicates and reordering measured per flow.

    fl = stream.pair_flows(lab.fabric)            # every same-tenant (src, dst) pair
    with stream.Stream(lab, fl) as s:             # starts sending and receiving
        s.hold(1.0)
        s.mark("apply"); apply_the_change(); s.mark("applied")
        s.hold(2.0)
    for r in s.results: print(r.src, r.dst, r.lost, r.longest_outage_s, r.first_loss_s - s.marks["apply"])

Each flow sends packet n (PSN = flow.psn + n, in the BTH and in the tag) at
`start + offset + n * interval`; the flows are spread evenly over one interval.
The per-flow rate is chosen so that all flows together stay within a budget
(BUDGET_PPS), between MIN_RATE and MAX_RATE per flow, unless `interval` is given.
Pacing is deadline-based: one sender thread sleeps until the next deadline (at
least WAKE_MIN, then sends everything due, so a packet is at most 2 ms late); when
it falls behind it sends without sleeping to catch up, but never more than
MAX_BURST seconds' worth: beyond that the schedule slips, and the slip is
recorded so sequence numbers still map to the time they were really due.

Frames are stamped from one template per flow (`twin.traffic.stamp`).

Measured on the 2-core development machine, aipod lab, 12 flows: stamping alone
~370,000 frames/s; stamp + AF_PACKET send into a lab host's veth, one thread,
~99,000 pps. A paced stream, receiver in the same process, holds 20,000 pps
without slipping (its schedule slips from ~26,000-31,000 pps on). The default
2,000 pps cost ~15% of one core, half of it the kernel forwarding the frames
through the lab (accounted to the sending thread).

One receiver thread polls every host endpoint's AF_PACKET socket and records,
per flow, the sequence numbers that reached the flow's destination and when.
Nothing is sent or captured outside the lab: only the host taps of the lab
(`flows.host_taps`) are opened.

A send the kernel refuses (the host's port is down) counts as sent and lost, in
`send_errors`; a tap's port going down is noted in `Stream.port_errors`, and the
tap receives again once the port is up. A stream does not follow a node that is
restarted: its taps stay in the old namespace, so that host's flows stay lost.

Sequence numbers come from 24-bit PSNs: a flow wraps after 2^24 packets
(4.6 hours at 1,000 pps), longer streams are not supported.
"""

from __future__ import annotations

import bisect
import os
import select
import socket
import struct
import threading
import time
from typing import AbstractSet, Any, Callable

from twin.base import timeouts, wait
from twin.base.errors import ConvergenceTimeout, TwinError
from twin.lifecycle.context import context_of
from twin.topology.model import Fabric
from twin.traffic import flows as hostflows
from twin.traffic import roce
from twin.traffic.engine import PACKET_OUTGOING, new_run_id, on_cpu, open_socket
from twin.traffic.results import StreamResult, analyse
from twin.traffic.roce import PSN_MASK, icrc_ok
from twin.traffic.stamp import Stamper

BUDGET_PPS = 2000.0  # all flows of a stream together, by default
MIN_RATE = 20.0  # pps per flow: below this an outage is measured too coarsely
MAX_RATE = 1000.0  # pps per flow: 1 ms resolution is plenty
MAX_BURST = 0.05  # a late sender catches up by at most this many seconds of packets
DRAIN = timeouts.TRAFFIC_WINDOW  # after the last send: until every last packet arrived, at most this
WAKE_MIN = 0.002  # the sender sleeps at least this long, then sends what is due (wake-ups cost
# more than packets: 14% -> 9% of a core at 2,000 pps); packets are at most this late
SEND_TIMEOUT = 0.1  # a send blocked this long counts as a send error
POLL_MS = 50  # the receiver notices `stop` within this

_TIMEVAL = struct.Struct("@ll")


# --- flows -------------------------------------------------------------------
def pairs(fabric: Fabric) -> list[tuple[str, str]]:
    """Every ordered (src, dst) pair of host endpoints in the same tenant, in topology order."""
    hs = hostflows.hosts(fabric)
    return [(a, b) for a in hs for b in hs if a != b and hostflows.same_tenant(fabric, a, b)]


def pair_flows(fabric: Fabric, host_pairs: list[tuple[str, str]] | None = None, **kw: Any) -> list[roce.Flow]:
    """One flow per pair (default: `pairs(fabric)`), flow ids 0.., addressed as the hosts
    would; each gets its own UDP source port (ECMP entropy) unless `sport` is given."""
    ps = pairs(fabric) if host_pairs is None else host_pairs
    return [hostflows.flow(fabric, s, d, i, **({"sport": 49152 + i % 16384} | kw)) for i, (s, d) in enumerate(ps)]


# --- the stream --------------------------------------------------------------
def choose_interval(n_flows: int, budget_pps: float = BUDGET_PPS) -> float:
    """Seconds between two packets of one flow: as fast as the budget allows, within MIN/MAX_RATE."""
    rate = min(MAX_RATE, budget_pps / max(1, n_flows))
    if rate < MIN_RATE:
        raise TwinError(
            f"{n_flows} flows at the minimum {MIN_RATE:g} pps each need {n_flows * MIN_RATE:g} pps, "
            f"over the budget of {budget_pps:g} pps: stream fewer pairs, or pass budget_pps= or interval="
        )
    return 1.0 / rate


class Stream:
    """Paced RoCEv2 flows between a lab's host endpoints, in the background.

    `start()` opens the hosts' taps and starts one sender and one receiver thread;
    `stop()` stops sending, drains in-flight packets and returns a `StreamResult` per
    flow (also in `results`). As a context manager it starts on entry and stops on exit.
    """

    def __init__(
        self,
        lab: hostflows.Target,
        flows: list[roce.Flow],
        interval: float | None = None,
        budget_pps: float = BUDGET_PPS,
        drain: float = DRAIN,
        run: int | None = None,
    ):
        if not flows:
            raise TwinError("a stream needs at least one flow")
        ids = [f.flow_id for f in flows]
        if len(set(ids)) != len(ids):
            raise TwinError(f"flow ids must be unique: {sorted(i for i in set(ids) if ids.count(i) > 1)}")
        ctx = context_of(lab)  # a Lab or its context; TwinError if it is not up
        fabric = ctx.fabric
        known = set(hostflows.hosts(fabric))
        strangers = sorted({h for f in flows for h in (f.src, f.dst)} - known)
        if strangers:
            raise TwinError(
                f"not host endpoints of lab {ctx.name!r}: {', '.join(strangers)}; hosts: {', '.join(sorted(known))}"
            )
        if interval is not None and interval <= 0:
            raise TwinError(f"interval must be positive, not {interval}")
        self.ctx, self.flows = ctx, list(flows)
        self.interval = interval if interval is not None else choose_interval(len(flows), budget_pps)
        self.drain = drain
        self.run = new_run_id() if run is None else run
        self.tenants = {f.flow_id: fabric.attachment(f.src)[0].name for f in flows}
        self.marks: dict[str, float] = {}
        self.results: list[StreamResult] | None = None
        self.slip_s = 0.0  # how far the schedule slipped because the sender could not keep up
        self.port_errors: list[tuple[float, str, str]] = []  # (s since start, host, error) a tap reported
        self._stampers = [Stamper(f, self.run) for f in flows]  # builds the templates now: fails early
        self._index = {f.flow_id: k for k, f in enumerate(flows)}
        self._sent = [0] * len(flows)
        self._send_errors = [0] * len(flows)
        self._seqs: list[list[int]] = [[] for _ in flows]
        self._times: list[list[float]] = [[] for _ in flows]
        self._top = [-1] * len(flows)
        self._icrc_bad = [0] * len(flows)
        self._misdelivered = [0] * len(flows)
        self._slips: list[tuple[int, float]] = []  # (tick, cumulative slip from that tick on)
        self._socks: dict[str, socket.socket] = {}
        self._stop_send = threading.Event()
        self._stop_recv = threading.Event()
        self._failed = threading.Event()
        self._errors: list[str] = []
        self._threads: list[threading.Thread] = []
        self._t0: float | None = None
        self._stopped_at: float | None = None

    @property
    def rate(self) -> float:
        """Packets per second per flow."""
        return 1.0 / self.interval

    # --- lifecycle -------------------------------------------------------
    def start(self) -> "Stream":
        if self._t0 is not None:
            raise TwinError("this stream has already been started; make a new Stream to stream again")
        names = sorted({h for f in self.flows for h in (f.src, f.dst)})
        try:
            for tap in hostflows.host_taps(self.ctx, names):
                s = open_socket(tap)
                self._socks[tap.name] = s
                s.settimeout(None)  # blocking, bounded by SO_SNDTIMEO; the receiver polls, reads MSG_DONTWAIT
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _TIMEVAL.pack(0, int(SEND_TIMEOUT * 1e6)))
        except Exception:
            self._close()
            raise
        self._t0 = time.monotonic()
        self._threads = [
            threading.Thread(target=self._guard, args=(self._receive,), name="stream-rx", daemon=True),
            threading.Thread(target=self._guard, args=(self._send,), name="stream-tx", daemon=True),
        ]
        for t in self._threads:
            t.start()
        return self

    def elapsed(self) -> float:
        """Seconds since the stream started."""
        return (self._stopped_at or time.monotonic()) - self._started()

    def _started(self) -> float:
        """When the stream started (monotonic time); an error if it has not."""
        if self._t0 is None:
            raise TwinError("the stream has not been started")
        return self._t0

    def mark(self, name: str) -> float:
        """Record a named point in time (seconds since the start), e.g. mark("apply")."""
        if name in self.marks:
            raise TwinError(f"mark {name!r} is already set (at {self.marks[name]:.3f} s)")
        self.marks[name] = t = self.elapsed()
        return t

    def since(self, name: str, t: float | None) -> float | None:
        """`t` (seconds since the start, as in results) relative to mark `name`."""
        return None if t is None else t - self.marks[name]

    def hold(self, seconds: float) -> None:
        """Keep streaming for `seconds` (the measurement's duration); raises at once if a
        sender or receiver thread failed."""
        self.elapsed()  # raises if not started
        if self._failed.wait(seconds):
            raise TwinError(f"stream failed: {'; '.join(self._errors)}")

    def stop(self) -> list[StreamResult]:
        """Stop sending, wait for in-flight packets (at most `drain` s), stop receiving; per-flow results."""
        if self.results is not None:
            return self.results
        if self._t0 is None:
            raise TwinError("the stream has not been started")
        self._stop_send.set()
        self._threads[1].join()
        self._stopped_at = time.monotonic()
        try:
            wait.until(self._in_flight, self.drain, "the last packet of every flow", first=0.01, cap=0.05)
        except ConvergenceTimeout:
            pass  # what did not arrive is the measurement, not an error
        self._stop_recv.set()
        self._threads[0].join()
        self._close()
        if self._errors:
            raise TwinError(f"stream failed: {'; '.join(self._errors)}")
        self.results = [self._result(k) for k in range(len(self.flows))]
        return self.results

    def __enter__(self) -> "Stream":
        return self.start() if self._t0 is None else self

    def __exit__(self, *exc: object) -> None:
        if self._t0 is not None and self.results is None:
            try:
                self.stop()
            except TwinError:
                if exc[0] is None:
                    raise

    def arrivals(self, flow_id: int) -> list[tuple[int, float]]:
        """(sequence number, seconds since the start) of each arrival of a flow at its destination."""
        k = self._index[flow_id]
        return list(zip(self._seqs[k], self._times[k]))

    def due(self, flow_id: int, seq: int) -> float:
        """When packet `seq` of a flow was due, in seconds since the start (slips included)."""
        k = self._index[flow_id]
        tick = seq * len(self.flows) + k
        at = bisect.bisect_right(self._slips, (tick, float("inf"))) - 1
        return tick * self.interval / len(self.flows) + (self._slips[at][1] if at >= 0 else 0.0)

    def lossy_since(self, t: float, grace: float = 0.1, skip: AbstractSet[int] = frozenset()) -> list[str]:
        """Flows (but those in `skip`, by id) that lost a packet due between `t` (seconds since
        the start) and `grace` seconds ago (younger ones may still be in flight): empty = whole."""
        horizon = self.elapsed() - grace
        out = []
        for k, f in enumerate(self.flows):
            if f.flow_id in skip:
                continue
            got = set(self._seqs[k])
            due = [n for n in range(self._sent[k]) if t <= self.due(f.flow_id, n) <= horizon]
            lost = sum(n not in got for n in due)
            if lost:
                out.append(f"flow {f.flow_id} {f.src} -> {f.dst}: {lost} of {len(due)} packets since {t:.2f}s lost")
        return out

    # --- internals -------------------------------------------------------
    def _result(self, k: int) -> StreamResult:
        f = self.flows[k]
        r = analyse(
            f,
            self._sent[k],
            self._seqs[k],
            self.interval,
            self.tenants[f.flow_id],
            due=lambda n: self.due(f.flow_id, n),
        )
        r.send_errors, r.icrc_bad, r.misdelivered = self._send_errors[k], self._icrc_bad[k], self._misdelivered[k]
        return r

    def _in_flight(self) -> list[str]:
        return [
            f"flow {f.flow_id} ({f.src} -> {f.dst})"
            for k, f in enumerate(self.flows)
            if self._sent[k] and self._top[k] < self._sent[k] - 1
        ]

    def _close(self) -> None:
        for s in self._socks.values():
            s.close()
        self._socks = {}

    def _guard(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as e:  # reported by hold() and stop(), never swallowed
            self._errors.append(f"{fn.__name__.strip('_')}: {type(e).__name__}: {e}")
            self._failed.set()
            self._stop_send.set()

    def _send(self) -> None:
        with on_cpu(min(os.sched_getaffinity(0))):  # a flow's frames through one CPU's queues (engine)
            self._paced()

    def _paced(self) -> None:
        n_flows = len(self.flows)
        tick = self.interval / n_flows
        socks = [self._socks[f.src] for f in self.flows]
        stamp = [s.frame for s in self._stampers]
        psn0 = [f.psn for f in self.flows]
        sent, errors, stop = self._sent, self._send_errors, self._stop_send
        t0 = self._started()
        origin, slipped, i = t0, 0.0, 0
        while not stop.is_set():
            now = time.monotonic()
            due = origin + i * tick
            if due > now:
                stop.wait(max(due - now, WAKE_MIN))
                continue
            if now - due > MAX_BURST:  # too far behind: let the schedule slip, record by how much
                slipped += now - due - MAX_BURST
                origin = t0 + slipped
                self._slips.append((i, slipped))
                self.slip_s = slipped
            k, n = i % n_flows, i // n_flows
            try:
                socks[k].send(stamp[k](psn0[k] + n))
            except OSError:
                errors[k] += 1
            sent[k] = n + 1
            i += 1

    def _receive(self) -> None:
        t0, run = self._started(), self.run
        key = roce.MAGIC + run.to_bytes(4, "big")
        poller = select.poll()
        by_fd = {}
        for host, s in self._socks.items():
            poller.register(s.fileno(), select.POLLIN)
            by_fd[s.fileno()] = (host, s)
        index, flows, psn0 = self._index, self.flows, [f.psn for f in self.flows]
        seqs, times, top = self._seqs, self._times, self._top
        while not self._stop_recv.is_set():
            for fd, _ in poller.poll(POLL_MS):
                host, s = by_fd[fd]
                while True:
                    try:
                        frame, addr = s.recvfrom(65535, socket.MSG_DONTWAIT)
                    except BlockingIOError:
                        break
                    except OSError as e:  # the port went down (ENETDOWN, once): the socket rebinds when it is up
                        self.port_errors.append((round(time.monotonic() - t0, 3), host, e.strerror or str(e)))
                        break
                    now = time.monotonic() - t0
                    if addr[2] == PACKET_OUTGOING or key not in frame[:120]:
                        continue
                    a = roce.read(frame, run, check_icrc=False)
                    k = index.get(a.flow_id) if a else None
                    if a is None or k is None:
                        continue
                    if flows[k].dst != host:
                        self._misdelivered[k] += 1
                        continue
                    n = (a.psn - psn0[k]) & PSN_MASK
                    seqs[k].append(n)
                    times[k].append(now)
                    if n > top[k]:
                        top[k] = n
                    if not icrc_ok(frame):
                        self._icrc_bad[k] += 1
