"""The one deadline-based wait of `twin`.

`until(probe, timeout, what)` calls `probe()` until it returns an empty list of
missing things, or the deadline passes; then it raises ConvergenceTimeout naming
what is still missing. Polling backs off from `first` to `cap` seconds so a
large lab is not hammered while it settles.
"""
from __future__ import annotations

import time
from typing import Callable

from .errors import ConvergenceTimeout


def until(
    probe: Callable[[], list[str]],
    timeout: float,
    what: str,
    first: float = 0.25,
    cap: float = 2.0,
    diagnose: Callable[[], list[str]] | None = None,
) -> float:
    """Wait until `probe()` reports nothing missing; return the seconds it took.

    On the deadline, `diagnose()` (if given) supplies the detailed list of what
    is missing, for probes that keep their rounds cheap.
    """
    start = time.monotonic()
    deadline = start + timeout
    interval = first
    while True:
        missing = probe()
        now = time.monotonic()
        if not missing:
            return now - start
        if now >= deadline:
            raise ConvergenceTimeout(what, now - start, (diagnose() if diagnose else None) or missing)
        time.sleep(min(interval, max(0.0, deadline - now)))
        interval = min(cap, interval * 1.5)
