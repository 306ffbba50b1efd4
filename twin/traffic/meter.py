"""Rates at host ports from the kernel's own counters, between two readings.

    with Meter(ctx, ["host1a", "host1c"]) as m:
        before = m.read()
        ...                                        # floods run
        after = m.read()
    rates(before, after)["host1c"]["rx_fps"]       # frames/s host1c received in between

What a host's port sent is what its VTEP port took in; what it received is what its VTEP
port gave it. The kernel counts every frame at no cost to the sender, however busy the
machine is (a capture thread reading tens of thousands of frames a second falls behind
and misses some). Each host's port is read with its own timestamp (the middle of its
netlink request), so the rates of several ports read one after the other stay exact.
"""
from __future__ import annotations

import time

from twin.lifecycle.context import LabContext
from twin.runtime import observe
from twin.runtime.netns import Handles

Reading = dict[str, tuple[float, dict[str, int]]]   # host -> (monotonic time, its port's counters)


class Meter:
    def __init__(self, ctx: LabContext, hosts: list[str]):
        self.ports = {h: ctx.fabric.attachment_of(h)[1].host_port for h in hosts}
        self.pids = {h: ctx.pid(h) for h in hosts}
        self._handles = Handles()

    def read(self) -> Reading:
        out: Reading = {}
        for host, port in self.ports.items():
            ipr = self._handles.get(self.pids[host])
            t0 = time.monotonic()
            counters = observe.port_counters(ipr, port)
            out[host] = ((t0 + time.monotonic()) / 2, counters)
        return out

    def close(self) -> None:
        self._handles.close()

    def __enter__(self) -> "Meter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def rates(before: Reading, after: Reading) -> dict[str, dict[str, float]]:
    """Per host: frames/s and Mbit/s its port sent (tx) and received (rx) between two readings."""
    out = {}
    for host, (t1, c1) in after.items():
        t0, c0 = before[host]
        dt = max(t1 - t0, 1e-6)
        delta = {k: c1.get(k, 0) - c0.get(k, 0) for k in c1}
        out[host] = {"tx_fps": delta["tx_packets"] / dt, "rx_fps": delta["rx_packets"] / dt,
                     "tx_mbps": delta["tx_bytes"] * 8 / dt / 1e6, "rx_mbps": delta["rx_bytes"] * 8 / dt / 1e6,
                     "seconds": dt}
    return out
