"""Drops: the kernel's own (drop_monitor, where the kernel has it) and the rate limit of
twin's drop events."""

from __future__ import annotations

from typing import Any

from twin.runtime import drop_monitor_text

PER_SECOND = 10  # drop events a second per (node, port, reason); the rest become one drop-burst event


def probe() -> str:
    """Whether the kernel reports its own drops (generic netlink family NET_DM), in words."""
    return drop_monitor_text()


class Limiter:
    """At most PER_SECOND events a second per (node, port, code); the rest are counted and said
    in one drop-burst event when that second is over."""

    def __init__(self, per_second: int = PER_SECOND):
        self.per_second = per_second
        self.windows: dict[tuple, list[Any]] = {}  # key -> [start, admitted, suppressed, first suppressed]

    def admit(self, events: list[dict], now: float) -> list[dict]:
        out = []
        for e in events:
            key = (e["node"], e["port"], e["code"])
            w = self.windows.get(key)
            if w is None or now - w[0] >= 1.0:
                out += self._close(key)
                w = self.windows[key] = [now, 0, 0, None]
            if w[1] < self.per_second:
                w[1] += 1
                out.append(e)
            else:
                w[2] += 1
                w[3] = w[3] or e
        for key in [k for k, w in self.windows.items() if now - w[0] >= 1.0]:
            out += self._close(key)
        return out

    def _close(self, key: tuple) -> list[dict]:
        w = self.windows.pop(key, None)
        if not w or not w[2]:
            return []
        e = w[3]
        return [
            {
                **e,
                "kind": "drop-burst",
                "count": w[2],
                "time": e["time"],
                "text": f"{e['node']} {e['port']}: {w[2]} more dropped in 1 s ({e['reason']})",
            }
        ]
