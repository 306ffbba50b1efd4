"""Docker API calls that outlast a loaded host.

On a host with a load average of hundreds the engine answers late: a call's HTTP
read times out, or dockerd gives up on containerd ("did not receive an exit event",
"context deadline exceeded": HTTP 5xx). Neither says the call failed for good, so
`call` tries it again, with a growing pause, until its deadline; a refusal of the
request itself (4xx: no such image, a name in use) is an answer and is raised at once.
Only calls that can be made twice go through it (or whose second try is handled:
a create that timed out may have happened, see `twin.runtime.docker`).
"""
from __future__ import annotations

import logging
import time
from typing import Callable, TypeVar

import docker
import requests

from twin import timeouts
from twin.errors import TwinError

log = logging.getLogger(__name__)
T = TypeVar("T")


def transient(e: BaseException) -> bool:
    """An answer that says "not now" rather than "no": a timeout, a dropped connection, a 5xx."""
    if isinstance(e, (requests.exceptions.Timeout, requests.exceptions.ConnectionError)):
        return True
    return isinstance(e, docker.errors.APIError) and e.is_server_error()


def explain(e: BaseException) -> str:
    if isinstance(e, docker.errors.APIError):
        return str(e.explanation or e)
    return f"{type(e).__name__}: {e}"


def call(what: str, fn: Callable[[], T], deadline: float | None = None, tries: list | None = None) -> T:
    """`fn()` (a Docker API call), tried again while the engine times out or fails on its side,
    until `deadline` (time.monotonic(); default: timeouts.DOCKER_RETRY from now); then a TwinError
    naming `what`, the last answer and how often it was tried. `tries`, if given, collects the
    transient errors seen (for a caller that reports them)."""
    end = deadline if deadline is not None else time.monotonic() + timeouts.DOCKER_RETRY
    n = 0
    while True:
        n += 1
        try:
            return fn()
        except Exception as e:   # noqa: BLE001  (judged by `transient`; the rest is raised as it was)
            if not transient(e):
                raise
            if tries is not None:
                tries.append(explain(e))
            left = end - time.monotonic()
            if left <= 0:
                raise TwinError(f"{what}: Docker did not answer in time under load ({explain(e)}; tried {n} "
                                "times); the engine may still finish it") from None
            log.info("%s: %s; trying again (%d)", what, explain(e), n)
            time.sleep(min(left, 0.5 * n, 5.0))
