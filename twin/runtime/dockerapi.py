"""Docker API calls that outlast a loaded host.

On a host with a load average of hundreds the engine answers late: a call's HTTP
read times out, or dockerd gives up on containerd ("did not receive an exit event",
"context deadline exceeded": HTTP 5xx). Neither says the call failed for good, so
`call` tries it again, with a growing pause, until its deadline; a refusal of the
request itself (4xx: no such image, a name in use) is an answer and is raised at once.
Only calls that can be made twice go through it (or whose second try is handled:
a create that timed out may have happened, see `twin.runtime.docker`).

Every request of twin's engine client (`client`) has a deadline: its own (`timeouts.DOCKER_API`),
cut to the command's in a thread that has one (`twin.base.wait.bounded`), so a call the engine never
answers ends by the command's deadline too.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, TypeVar

import docker
import requests

from twin.base import timeouts, wait
from twin.base.errors import TwinError

log = logging.getLogger(__name__)
T = TypeVar("T")


MIN_REQUEST = 0.05  # s: a request begun just before the command's deadline still gets this much


class BoundedApi(docker.APIClient):
    """Docker's API client whose requests' timeout is its own, cut to the calling thread's command
    deadline (`twin.base.wait.cut`): the SDK reads `timeout` for every request it makes."""

    @property  # type: ignore[override]
    def timeout(self) -> float | None:
        own = self._own_timeout
        limit = wait.left()
        if limit is None:
            return own
        limit = max(limit, MIN_REQUEST)
        return limit if own is None else min(own, limit)

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self._own_timeout = value


class _Client(docker.DockerClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:  # docker.DockerClient's, on the bounded API client
        self.api = BoundedApi(*args, **kwargs)


def client(
    timeout: float | None = timeouts.DOCKER_API, pool: int = 10, base_url: str | None = None
) -> docker.DockerClient:
    """twin's engine client, from the environment as `docker.from_env` (or at `base_url`): `timeout` of
    each request (None: none, for a user's long quiet `twin exec`), cut to the command's deadline."""
    seconds = int(timeout) if timeout else None
    if base_url is not None:
        return _Client(base_url=base_url, version="auto", max_pool_size=pool, timeout=seconds)
    return _Client.from_env(max_pool_size=pool, timeout=seconds)


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
    if (cmd := wait.left()) is not None:
        end = min(end, time.monotonic() + cmd)  # the command's deadline comes first
    n = 0
    while True:
        n += 1
        wait.cut(1.0, what)  # DeadlinePassed: not begun
        try:
            return fn()
        except Exception as e:  # noqa: BLE001  (judged by `transient`; the rest is raised as it was)
            if not transient(e):
                raise
            if tries is not None:
                tries.append(explain(e))
            left = end - time.monotonic()
            if left <= 0:
                raise TwinError(
                    f"{what}: Docker did not answer in time under load ({explain(e)}; tried {n} "
                    "times); the engine may still finish it"
                ) from None
            log.info("%s: %s; trying again (%d)", what, explain(e), n)
            time.sleep(min(left, 0.5 * n, 5.0))
