"""Send and capture frames inside lab namespaces, from the twin process.

Each tap is an AF_PACKET socket opened inside a node's namespace (pyroute2's
`netns.create_socket`), bound to one port. All taps receive concurrently while
every source sends its flows; the run ends when every frame that should arrive
has arrived, or at the deadline, plus a short window for late or stray frames
(leaks, duplicates). Nothing is sent outside namespaces the lab created.
"""
from __future__ import annotations

import ctypes
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
from dataclasses import dataclass
from typing import Callable

from twin import timeouts, wait
from twin.errors import ConvergenceTimeout
from twin.traffic import roce

ETH_P_ALL = 0x0003
SO_TIMESTAMPNS = 35           # Linux: SO_TIMESTAMPNS(_OLD), the arrival time as a struct timespec
TIMESPEC = struct.Struct("@qq")
Respond = Callable[[str, bytes, int], "bytes | None"]
PACKET_OUTGOING = 4
POLL_MS = 50      # the receiver notices `stop` within this
BATCH = 256       # frames read from one tap before the others get their turn


@dataclass(frozen=True)
class Tap:
    """A port to send from and capture on: `name` (a host, or node:port) in namespace `ns_path`."""

    name: str
    ns_path: str
    port: str


_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def socket_in(ns_path: str, family: int, kind: int, proto: int) -> socket.socket:
    """A socket of network namespace `ns_path`. A namespace is a per-thread attribute: a thread
    of its own enters it (setns(2)), makes the socket (which stays in that namespace) and ends,
    so no thread of twin is ever left in a lab's namespace, and no process is forked."""
    made: dict[str, object] = {}

    def enter_and_make() -> None:
        try:
            fd = os.open(ns_path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns into {ns_path}: {os.strerror(err)}")
            finally:
                os.close(fd)
            made["socket"] = socket.socket(family, kind, proto)
        except OSError as e:
            made["error"] = e

    t = threading.Thread(target=enter_and_make, name="twin-netns-socket")
    t.start()
    t.join()
    if "error" in made:
        raise made["error"]
    return made["socket"]


def open_socket(tap: Tap) -> socket.socket:
    s = socket_in(tap.ns_path, socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((tap.port, ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.settimeout(0.05)
    return s


class Session:
    """Open taps; `run(sends, done)` sends frames and returns what every tap captured."""

    def __init__(self, taps: list[Tap], outgoing: set[str] = frozenset()):
        """`outgoing`: taps that also capture what their node sends (fabric ports)."""
        self.taps = {t.name: t for t in taps}
        self.outgoing = set(outgoing)
        with ThreadPoolExecutor(8) as pool:
            socks = list(pool.map(open_socket, taps))
        self.socks = dict(zip(self.taps, socks))

    def close(self) -> None:
        for s in self.socks.values():
            s.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run(self, sends: dict[str, list[bytes]], keep: Callable[[bytes], bool],
            done: Callable[[dict[str, list[bytes]]], list[str]], timeout: float,
            window: float = timeouts.TRAFFIC_WINDOW, respond: Respond | None = None) -> dict[str, list[bytes]]:
        """Send `sends` (tap -> frames, in order) while capturing frames that `keep` accepts
        on every tap (not the ones a tap sends itself). Ends when `done(captured)` reports
        nothing missing, or at `timeout`, then captures `window` seconds more.

        `respond(tap, frame, ns)`, given each captured frame and the kernel's time of its
        arrival (ns), may answer it: the frame it returns is sent on that tap at once (a NIC
        answering congestion marks with CNPs)."""
        captured: dict[str, list[bytes]] = defaultdict(list)
        lock = threading.Lock()
        stop = threading.Event()
        if respond is not None:
            for sock in self.socks.values():
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)

        def receive() -> None:
            self._receive(captured, lock, stop, keep, respond)

        def send(name: str) -> None:
            s = self.socks[name]
            for f in sends[name]:
                _send(s, f)

        receivers = [threading.Thread(target=receive, name="twin-taps", daemon=True)]
        for r in receivers:
            r.start()
        try:
            with ThreadPoolExecutor(max(1, min(16, len(sends)))) as pool:
                list(pool.map(send, [n for n in sends if sends[n]]))

            def missing() -> list[str]:
                with lock:
                    snapshot = {k: list(v) for k, v in captured.items()}
                return done(snapshot)

            try:
                wait.until(missing, timeout, "expected frames", first=0.02, cap=0.2)
            except ConvergenceTimeout:
                pass  # what did not arrive is the measurement, not an error
            stop.wait(window)
        finally:
            stop.set()
            for r in receivers:
                r.join()
        return dict(captured)

    def _receive(self, captured: dict, lock: threading.Lock, stop: threading.Event, keep: Callable[[bytes], bool],
                 respond: Respond | None) -> None:
        """One thread reads every tap: poll(2) says which have frames."""
        poller, by_fd = select.poll(), {}
        for name, sock in self.socks.items():
            sock.setblocking(False)
            poller.register(sock, select.POLLIN)
            by_fd[sock.fileno()] = (name, sock, name in self.outgoing)
        while not stop.is_set():
            for fd, _ in poller.poll(POLL_MS):
                name, sock, both = by_fd[fd]
                for _ in range(BATCH):
                    try:
                        frame, addr, ns = _recv(sock, respond is not None)
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:
                        poller.unregister(fd)
                        break
                    if (both or addr[2] != PACKET_OUTGOING) and keep(frame):
                        with lock:
                            captured[name].append((frame, addr[2] == PACKET_OUTGOING) if both else frame)
                        answer = respond(name, frame, ns) if respond and addr[2] != PACKET_OUTGOING else None
                        if answer:
                            _send(sock, answer)


def _recv(sock: socket.socket, stamped: bool) -> tuple[bytes, tuple, int]:
    """One frame, its address and (`stamped`) the kernel's time of its arrival in ns (else 0)."""
    if not stamped:
        frame, addr = sock.recvfrom(65535)
        return frame, addr, 0
    frame, anc, _, addr = sock.recvmsg(65535, 64)
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= TIMESPEC.size:
            sec, nsec = TIMESPEC.unpack(data[:TIMESPEC.size])
            return frame, addr, sec * 1_000_000_000 + nsec
    return frame, addr, time.time_ns()


def _send(s: socket.socket, frame: bytes) -> None:
    """Send on a non-blocking tap; a full queue waits until it can take the frame. A port that
    is down (a fault) refuses it: that frame is lost, as on a dead link."""
    while True:
        try:
            s.send(frame)
            return
        except BlockingIOError:
            select.select([], [s], [], 0.05)
        except OSError as e:
            if e.errno not in (errno.ENETDOWN, errno.ENXIO):
                raise
            return


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
    return frame[udp + 2:udp + 4] == b"\x12\xb5"
