"""The flood's sender, a process of its own: `python blast.py NS_PATH PORT SECONDS`.

Reads frames from stdin (a count, then each frame with its length, 4 bytes big-endian
each), enters network namespace NS_PATH, says "ready" once its socket is bound to PORT,
sends the frames cyclically without pause for SECONDS (or until SIGTERM) and says "sent N". It is run as a
file and imports only the standard library (not twin): it starts in a fraction of a
second, and a process of its own may enter a namespace with all of its one thread.
"""
from __future__ import annotations

import ctypes
import os
import signal
import socket
import struct
import sys
import time

CLONE_NEWNET = 0x40000000

CHECK_EVERY = 32    # sends between two looks at the clock (a shaped port blocks the sender)


def read_frames(stream) -> list[bytes]:
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


def blast(ns_path: str, port: str, seconds: float, frames: list[bytes], say=print) -> int:
    """Until `seconds` have passed or SIGTERM came; the number of frames sent."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    enter(ns_path)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((port, 0x0003))
    say("ready")
    n, end, send, ring = 0, time.monotonic() + seconds, s.send, len(frames)
    while time.monotonic() < end and not stop:
        for _ in range(CHECK_EVERY):
            try:
                send(frames[n % ring])
            except OSError:
                pass   # a full queue: the frame is dropped at the source, as a NIC would
            n += 1
    s.close()
    return n


if __name__ == "__main__":
    ns, dev, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
    got = read_frames(sys.stdin.buffer)
    sent = blast(ns, dev, secs, got, say=lambda m: print(m, flush=True))
    print(f"sent {sent}", flush=True)
