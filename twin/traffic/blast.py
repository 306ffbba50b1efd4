"""The flood's sender, a process of its own: `python blast.py NS_PATH PORT SECONDS`.

Reads frames from stdin (a count, then each frame with its length, 4 bytes big-endian
each), enters network namespace NS_PATH (twin gives it `/proc/self/fd/N`, a descriptor it
opened and checked: `twin.runtime.netns.open_ns`), says "ready" once its socket is bound to PORT,
sends the frames cyclically without pause for SECONDS (or until SIGTERM) and says
"sent N held S": N frames, and S seconds it waited for its socket to take the next one. A
port that shapes what it receives (tc TBF) holds on to the frames it queues, and the
socket's send buffer fills: the sender is held back at the port's rate, like a NIC at a
rate limiter, and `held` shows that it wanted to send more. It is run as a
file and imports only the standard library (not twin): it starts in a fraction of a
second, and a process of its own may enter a namespace with all of its one thread.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import socket
import struct
import sys
import time
from typing import BinaryIO, Callable

CLONE_NEWNET = 0x40000000

CHECK_EVERY = 32  # sends between two looks at the clock (a shaped port blocks the sender)


def read_frames(stream: BinaryIO) -> list[bytes]:
    (count,) = struct.unpack("!I", stream.read(4))
    frames = []
    for _ in range(count):
        (n,) = struct.unpack("!I", stream.read(4))
        frames.append(stream.read(n))
    return frames


def pack_frames(frames: list[bytes]) -> bytes:
    return struct.pack("!I", len(frames)) + b"".join(struct.pack("!I", len(f)) + f for f in frames)


def enter(ns_path: str) -> None:
    """This process into network namespace `ns_path` (setns(2))."""
    fd = os.open(ns_path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into {ns_path}: {os.strerror(err)}")
    finally:
        os.close(fd)


def blast(
    ns_path: str, port: str, seconds: float, frames: list[bytes], say: Callable[[str], None] = print
) -> tuple[int, float]:
    """Until `seconds` have passed or SIGTERM came: (frames sent, seconds held back by a full socket)."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    enter(ns_path)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((port, 0x0003))
    s.setblocking(False)
    say("ready")
    n, held, end, send, ring = 0, 0.0, time.monotonic() + seconds, s.send, len(frames)
    while time.monotonic() < end and not stop:
        for _ in range(CHECK_EVERY):
            try:
                send(frames[n % ring])
            except BlockingIOError:  # the send buffer is full: wait until it takes the frame
                t = time.monotonic()
                select.select([], [s], [], 0.05)
                held += time.monotonic() - t
                continue
            except OSError:
                pass  # the port refused it (a full queue further on): dropped at the source, as a NIC would
            n += 1
    s.close()
    return n, held


if __name__ == "__main__":
    ns, dev, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
    got = read_frames(sys.stdin.buffer)
    sent, held = blast(ns, dev, secs, got, say=lambda m: print(m, flush=True))
    print(f"sent {sent} held {held:.3f}", flush=True)
