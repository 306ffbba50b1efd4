"""Rates at host ports from the kernel's own counters, between two readings.

    with Meter(ctx, ["host1a", "host1c"], [("dpu2", "p0")]) as m:
        before = m.read()
        ...                                        # floods run
        after = m.read()
    rates(before, after)["host1c"]["rx_fps"]       # frames/s host1c received in between
    rates(before, after)["dpu2:p0"]["rx_fps"]      # ... and dpu2 from the fabric by p0

What a host's port sent is what its VTEP port took in; what it received is what its VTEP
port gave it; what a node's fabric port received is what reached the node by it. The kernel
counts every frame at no cost to the sender, however busy the machine is (a capture thread
reading tens of thousands of frames a second falls behind and misses some). Each host's port
is read with its own timestamp (the middle of its netlink request), so the rates of several
ports read one after the other stay exact.
"""

from __future__ import annotations

import time
from typing import Sequence

from twin.lifecycle.context import LabContext
from twin.runtime import NetlinkHandles, port_counters

Reading = dict[str, tuple[float, dict[str, int]]]  # host -> (monotonic time, its port's counters)


class Meter:
    """Counters of host ports (by the host's name) and of nodes' own ports (by "node:port")."""

    def __init__(self, ctx: LabContext, hosts: list[str], ports: Sequence[tuple[str, str]] = ()):
        self.ports = {h: (ctx.pid(h), ctx.fabric.attachment(h)[1].host_port) for h in hosts}
        self.ports |= {f"{n}:{p}": (ctx.pid(n), p) for n, p in ports}
        self._handles = NetlinkHandles()

    def read(self) -> Reading:
        out: Reading = {}
        for key, (pid, port) in self.ports.items():
            ipr = self._handles.get(pid)
            t0 = time.monotonic()
            counters = port_counters(ipr, port)
            out[key] = ((t0 + time.monotonic()) / 2, counters)
        return out

    def close(self) -> None:
        self._handles.close()

    def __enter__(self) -> "Meter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def rates(before: Reading, after: Reading) -> dict[str, dict[str, float]]:
    """Per port: frames/s and Mbit/s it sent (tx) and received (rx) between two readings."""
    out = {}
    for key, (t1, c1) in after.items():
        t0, c0 = before[key]
        dt = max(t1 - t0, 1e-6)
        delta = {k: c1.get(k, 0) - c0.get(k, 0) for k in c1}
        out[key] = {
            "tx_fps": delta["tx_packets"] / dt,
            "rx_fps": delta["rx_packets"] / dt,
            "tx_mbps": delta["tx_bytes"] * 8 / dt / 1e6,
            "rx_mbps": delta["rx_bytes"] * 8 / dt / 1e6,
            "seconds": dt,
        }
    return out
