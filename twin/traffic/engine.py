"""Send and capture frames inside lab namespaces, from the twin process.

Each tap is an AF_PACKET socket opened inside a node's namespace (pyroute2's
`netns.create_socket`), bound to one port. All taps receive concurrently while
every source sends its flows; the run ends when every frame that should arrive
has arrived, or once none at all has arrived for `timeouts.TRAFFIC_QUIET` (frames
in flight arrive within milliseconds of each other: what is still missing then is
lost), or at the deadline, plus a short window for late or stray frames (leaks,
duplicates). Nothing is sent outside namespaces the lab created.

The threads that send (and answer) frames run on one CPU for the run. The kernel queues a frame
a thread sends on the backlog of the CPU the thread is on, and carries it through every veth of
the lab from there; a sender the scheduler moves to another CPU mid-flow puts the rest of the
flow on another backlog, which may be processed first (a loaded host defers backlogs to
ksoftirqd). A switch keeps a flow in order: so must the twin, or verify reports reordering
the fabric did not do.
"""

from __future__ import annotations

import errno
import os
import random
import select
import socket
import struct
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from twin.base import timeouts, wait
from twin.base.errors import ConvergenceTimeout
from twin.runtime import in_namespace
from twin.traffic import roce

ETH_P_ALL = 0x0003
SO_TIMESTAMPNS = 35  # Linux: SO_TIMESTAMPNS(_OLD), the arrival time as a struct timespec
TIMESPEC = struct.Struct("@qq")
Respond = Callable[[str, bytes, int], "bytes | None"]
PACKET_OUTGOING = 4
POLL_MS = 50  # the receiver notices `stop` within this
BATCH = 256  # frames read from one tap before the others get their turn
CATCH_UP = 0.005  # a paced sender that fell behind sends at most this many seconds' worth at once


@dataclass(frozen=True)
class Tap:
    """A port to send from and capture on: `name` (a host, or node:port) in namespace `ns_path`."""

    name: str
    ns_path: str
    port: str


def socket_in(ns_path: str, family: int, kind: int, proto: int) -> socket.socket:
    """A socket of network namespace `ns_path`, made by a short thread inside it (`netns.inside`)."""
    return in_namespace(ns_path, lambda: socket.socket(family, kind, proto))


def open_socket(tap: Tap) -> socket.socket:
    s = socket_in(tap.ns_path, socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((tap.port, ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.settimeout(0.05)
    return s


class Session:
    """Open taps; `run(sends, done)` sends frames and returns what every tap captured."""

    def __init__(self, taps: list[Tap]):
        self.taps = {t.name: t for t in taps}
        with ThreadPoolExecutor(8) as pool:
            socks = list(pool.map(open_socket, taps))
        self.socks = dict(zip(self.taps, socks))

    def close(self) -> None:
        for s in self.socks.values():
            s.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(
        self,
        sends: dict[str, list[bytes]],
        keep: Callable[[bytes], bool],
        done: Callable[[dict[str, list[bytes]]], list[str]],
        timeout: float,
        window: float = timeouts.TRAFFIC_WINDOW,
        quiet: float | None = timeouts.TRAFFIC_QUIET,
        respond: Respond | None = None,
        pace: float = 0.0,
    ) -> dict[str, list[bytes]]:
        """Send `sends` (tap -> frames, in order) while capturing frames that `keep` accepts
        on every tap (not the ones a tap sends itself). Ends when `done(captured)` reports
        nothing missing, when no frame was kept for `quiet` seconds since the last one (or
        since the sending ended), or at `timeout`; then captures `window` seconds more.

        `respond(tap, frame, ns)`, given each captured frame and the kernel's time of its
        arrival (ns), may answer it: the frame it returns is sent on that tap at once (a NIC
        answering congestion marks with CNPs). `pace`: seconds between two frames of a tap
        (0: back to back); a sender late by more than CATCH_UP lets its schedule slip rather
        than send what it owes at once."""
        cap = _Captured()
        stop = threading.Event()
        cpu = min(os.sched_getaffinity(0))
        if respond is not None:
            for sock in self.socks.values():
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)

        def send(name: str) -> None:
            s = self.socks[name]
            with on_cpu(cpu):
                if pace:
                    _paced(s, sends[name], pace)
                    return
                for f in sends[name]:
                    _send(s, f)

        receiver = threading.Thread(
            target=self._receive, args=(keep, cap, stop, respond, cpu), name="twin-taps", daemon=True
        )
        receiver.start()
        try:
            with ThreadPoolExecutor(max(1, min(16, len(sends)))) as pool:
                list(pool.map(send, [n for n in sends if sends[n]]))
            sent = time.monotonic()

            def missing() -> list[str]:
                with cap.lock:
                    snapshot = {k: list(v) for k, v in cap.frames.items()}
                    since = time.monotonic() - max(cap.last, sent)
                left = done(snapshot)
                return [] if left and quiet is not None and since > quiet else left  # the rest is lost

            try:
                wait.until(missing, timeout, "expected frames", first=0.02, cap=0.2)
            except ConvergenceTimeout:
                pass  # what did not arrive is the measurement, not an error
            stop.wait(window)
        finally:
            stop.set()
            receiver.join()
        return dict(cap.frames)

    def _receive(
        self, keep: Callable[[bytes], bool], cap: "_Captured", stop: threading.Event, respond: Respond | None, cpu: int
    ) -> None:
        """One thread reads every tap: poll(2) says which have frames; it answers on the senders' CPU."""
        with on_cpu(cpu):
            self._read(keep, cap, stop, respond)

    def _read(
        self, keep: Callable[[bytes], bool], cap: "_Captured", stop: threading.Event, respond: Respond | None
    ) -> None:
        poller, by_fd = select.poll(), {}
        for name, sock in self.socks.items():
            sock.setblocking(False)
            poller.register(sock, select.POLLIN)
            by_fd[sock.fileno()] = (name, sock)
        while not stop.is_set():
            for fd, _ in poller.poll(POLL_MS):
                name, sock = by_fd[fd]
                for _ in range(BATCH):
                    try:
                        frame, addr, ns = _recv(sock, respond is not None)
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:
                        poller.unregister(fd)
                        break
                    if addr[2] != PACKET_OUTGOING and keep(frame):
                        with cap.lock:
                            cap.frames[name].append(frame)
                            cap.last = time.monotonic()
                        answer = respond(name, frame, ns) if respond else None
                        if answer:
                            _send(sock, answer)


@contextmanager
def on_cpu(cpu: int) -> Iterator[None]:
    """The calling thread runs on `cpu` only, until the block ends."""
    before = os.sched_getaffinity(0)  # pid 0: this thread
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


class _Captured:
    """What the taps kept so far, per tap, and when the last frame was kept."""

    def __init__(self) -> None:
        self.frames: dict[str, list[bytes]] = defaultdict(list)
        self.lock = threading.Lock()
        self.last = 0.0


def _recv(sock: socket.socket, stamped: bool) -> tuple[bytes, tuple, int]:
    """One frame, its address and (`stamped`) the kernel's time of its arrival in ns (else 0)."""
    if not stamped:
        frame, addr = sock.recvfrom(65535)
        return frame, addr, 0
    frame, anc, _, addr = sock.recvmsg(65535, 64)
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= TIMESPEC.size:
            sec, nsec = TIMESPEC.unpack(data[: TIMESPEC.size])
            return frame, addr, sec * 1_000_000_000 + nsec
    return frame, addr, time.time_ns()


def _send(s: socket.socket, frame: bytes) -> None:
    """Send on a non-blocking tap; a full queue waits until it can take the frame. A frame longer
    than the port's MTU is refused by the kernel (EMSGSIZE), as a NIC would not send it, and one
    the port's far end drops (a veth whose peer's MTU is smaller says ENOBUFS) is lost on the
    wire: either way it is lost at the sender, and counted as lost where it should have arrived. A
    port that is down (a fault) refuses it too: that frame is lost, as on a dead link."""
    while True:
        try:
            s.send(frame)
            return
        except BlockingIOError:
            select.select([], [s], [], 0.05)
        except OSError as e:
            if e.errno in (errno.EMSGSIZE, errno.ENOBUFS, errno.ENETDOWN, errno.ENXIO):
                return
            raise


def _paced(s: socket.socket, frames: list[bytes], pace: float) -> None:
    """`frames` one every `pace` seconds, each at its due time (a late one at once, but never more
    than CATCH_UP seconds' worth at once: beyond, the schedule slips)."""
    start = time.monotonic()
    for i, f in enumerate(frames):
        due = start + i * pace
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)  # pacing, not waiting for a state
        elif now - due > CATCH_UP:
            start += now - due - CATCH_UP
        _send(s, f)


def new_run_id() -> int:
    return random.getrandbits(32)


def roce_keep(run: int) -> Callable[[bytes], bool]:
    """This run's RoCE frames, bare or inside VXLAN (UDP 4789) on fabric ports."""
    tag = roce.MAGIC + run.to_bytes(4, "big")
    return lambda f: tag in f[:220] and (roce.is_roce(f) or is_vxlan(f))


def is_vxlan(frame: bytes) -> bool:
    if len(frame) < 50 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return False
    udp = 14 + (frame[14] & 0x0F) * 4
    return frame[udp + 2 : udp + 4] == b"\x12\xb5"
