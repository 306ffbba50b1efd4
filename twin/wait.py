"""The one deadline-based wait of `twin`, on tenacity.

`until(probe, timeout, what)` calls `probe()` until it returns an empty list of
missing things, or the deadline passes; then it raises ConvergenceTimeout naming
what is still missing. Polling backs off from `first` to `cap` seconds so a
large lab is not hammered while it settles.
"""
from __future__ import annotations

import time
from typing import Callable

from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_exponential

from twin.errors import ConvergenceTimeout


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
    retrying = Retrying(
        retry=retry_if_result(bool),
        stop=stop_after_delay(timeout),
        wait=wait_exponential(multiplier=first, exp_base=1.5, max=cap) if first else lambda _: cap,
        reraise=False,
    )
    try:
        retrying(probe)
    except RetryError as e:
        missing = e.last_attempt.result()
        raise ConvergenceTimeout(what, time.monotonic() - start,
                                 (diagnose() if diagnose else None) or missing) from None
    return time.monotonic() - start
