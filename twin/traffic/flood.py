"""The noisy neighbour: one RoCE flow sent as fast as a process of its own can, and counted
where it arrives.

    with Flood(ctx, flow, seconds=3.0) as f:      # a child process floods from the flow's source host
        ...                                       # meanwhile: paced streams of other tenants
    f.sent, f.arrivals                            # frames sent; arrival times at the destination
    f.held                                        # seconds the sender waited on a full socket

The sender is a process of its own (`twin/traffic/blast.py`, run as a file), so the flood competes with
the lab for CPU as a noisy tenant's workload would, not with twin's own threads for
Python's lock. It enters the source host's network namespace, sends a ring of
pre-stamped frames (`twin.traffic.stamp`, valid ICRC) on its port without pause until
its time is up, and reports how many it sent and how long a full socket held it back (a
port shaping what it receives makes the sender wait: it wanted to send more than the
port's rate). A thread of twin counts the flow's frames at the destination host's port,
with their arrival times, so a rate can be taken over any window (`count=False`: no
counting, the caller reads the ports' own counters). Nothing leaves the lab's namespaces.
"""

from __future__ import annotations

import os
import re
import select
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace

from twin.base.errors import TwinError
from twin.lifecycle.context import LabContext
from twin.runtime import open_ns
from twin.traffic import blast, roce
from twin.traffic import flows as hostflows
from twin.traffic.engine import PACKET_OUTGOING, new_run_id, open_socket
from twin.traffic.stamp import Stamper

RING = 512  # distinct frames (PSNs) the sender cycles through
START = 10.0  # the sender process has its socket within this
UNTIL_STOPPED = 86400.0
_REPORT = re.compile(r"sent (\d+) held ([\d.]+)")


class Flood:
    def __init__(
        self, ctx: LabContext, flow: roce.Flow, seconds: float | None = None, run: int | None = None, count: bool = True
    ):
        """`seconds`: how long it floods (None: until `stop`); `count`: count arrivals at the destination."""
        if flow.src not in hostflows.hosts(ctx.fabric) or flow.dst not in hostflows.hosts(ctx.fabric):
            raise TwinError(f"a flood runs between host endpoints of lab {ctx.name!r}, not {flow.src} -> {flow.dst}")
        self.ctx, self.flow, self.seconds = ctx, flow, seconds
        self.elapsed = 0.0  # how long it flooded
        self.run = new_run_id() if run is None else run
        stamper = Stamper(replace(flow, count=1), self.run)
        self.frames = [stamper.frame(flow.psn + i) for i in range(RING)]
        self.frame_bytes = len(self.frames[0])
        self.sent = 0
        self.held = 0.0  # seconds the sender waited for its socket (held back by the port)
        self.count = count
        self.arrivals: list[float] = []  # monotonic times of the flow's frames at its destination
        self.t0 = 0.0
        self._stop = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None  # the sender, while it runs

    def __enter__(self) -> "Flood":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> "Flood":
        src = hostflows.host_taps(self.ctx, [self.flow.src])[0]
        self._thread = None
        if self.count:
            self._rx = open_socket(hostflows.host_taps(self.ctx, [self.flow.dst])[0])
            self._rx.setblocking(False)
            self._thread = threading.Thread(target=self._count, name="flood-rx", daemon=True)
            self._thread.start()
        ns = open_ns(src.ns_path)  # checked here, entered by the sender through its descriptor
        try:
            self._proc = proc = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    blast.__file__,
                    f"/proc/self/fd/{ns}",
                    src.port,
                    f"{self.seconds or UNTIL_STOPPED:g}",
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                pass_fds=(ns,),
            )
        finally:
            os.close(ns)
        assert proc.stdin is not None and proc.stdout is not None  # both piped
        proc.stdin.write(blast.pack_frames(self.frames))
        proc.stdin.close()
        line = proc.stdout.readline().decode().strip()  # its own deadline: START, by stop() below
        if line != "ready":
            self.stop()
            raise TwinError(f"the flood from {self.flow.src} did not start ({line or 'no word from it'})")
        self.t0 = time.monotonic()
        return self

    def stop(self) -> int:
        """Stop the sender (or wait for it to end by itself), then stop counting; frames sent."""
        proc = self._proc
        if proc is None:
            return self.sent
        if self.seconds is None:
            proc.terminate()
        try:
            proc.wait(timeout=(self.seconds or 0) + START)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out = proc.stdout.read() if proc.stdout else b""
        if proc.stdout:
            proc.stdout.close()
        self.elapsed = time.monotonic() - self.t0 if self.t0 else 0.0
        if self._thread is not None:
            time.sleep(0.05)  # the last frames in flight
            self._stop.set()
            self._thread.join()
            self._rx.close()
        got = _REPORT.search(out.decode())
        self.sent, self.held = (int(got[1]), float(got[2])) if got else (0, 0.0)
        self._proc = None
        return self.sent

    def delivered(self, start: float, end: float) -> int:
        """Frames that arrived between `start` and `end` seconds after the flood began."""
        return sum(self.t0 + start <= t < self.t0 + end for t in self.arrivals)

    def _count(self) -> None:
        key = roce.MAGIC + self.run.to_bytes(4, "big") + self.flow.flow_id.to_bytes(4, "big")
        poller = select.poll()
        poller.register(self._rx, select.POLLIN)
        while not self._stop.is_set():
            for _ in poller.poll(50):
                while True:
                    try:
                        frame, addr = self._rx.recvfrom(65535, socket.MSG_DONTWAIT)
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:
                        break
                    if addr[2] != PACKET_OUTGOING and key in frame[:120]:
                        self.arrivals.append(time.monotonic())
