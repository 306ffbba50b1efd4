"""Where the runtime's libraries' errors become twin's own (issue 26).

Above `twin.runtime` nothing imports Docker's SDK or pyroute2, nor catches their
exceptions: a netlink refusal is `NetlinkFailed` (with the kernel's errno), a
container or namespace that is not there is `NodeGone`, anything else the
engine answers is `RuntimeFailed`. `describe` is the one line for a library
error that escaped anyway (the CLI's last resort).
"""

from __future__ import annotations

import errno
import functools
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

import docker
from pyroute2 import NetlinkError

from twin.base.errors import NetlinkFailed, NodeGone, RuntimeFailed

T = TypeVar("T")
GONE = (errno.ENOENT, errno.ESRCH)  # a namespace whose process is gone


def netlink_failed(e: NetlinkError) -> NetlinkFailed:
    return NetlinkFailed(e.code, str(e))


@contextmanager
def netlink_errors() -> Iterator[None]:
    """Inside: a NetlinkError becomes NetlinkFailed (same errno, same text)."""
    try:
        yield
    except NetlinkError as e:
        raise netlink_failed(e) from e


def netlinked(fn: Callable[..., T]) -> Callable[..., T]:
    """`fn` whose NetlinkError leaves it as NetlinkFailed."""

    @functools.wraps(fn)
    def wrapped(*args: object, **kw: object) -> T:
        with netlink_errors():
            return fn(*args, **kw)

    return wrapped


def namespace_gone(e: OSError, where: str) -> OSError:
    """An OSError opening a namespace: NodeGone when its process is gone, else as it was."""
    return NodeGone(f"{where}: {e.strerror or e}", e.errno) if e.errno in GONE else e


@contextmanager
def engine_errors(what: str) -> Iterator[None]:
    """Inside: Docker's NotFound becomes NodeGone, any other Docker error RuntimeFailed, naming `what`."""
    try:
        yield
    except docker.errors.NotFound as e:
        raise NodeGone(f"{what}: {e.explanation or e}") from e
    except docker.errors.DockerException as e:
        raise RuntimeFailed(f"{what}: Docker: {getattr(e, 'explanation', None) or e}") from e


def describe(e: BaseException) -> str | None:
    """One line for a Docker or netlink error that reached the user untranslated (None: neither)."""
    if isinstance(e, docker.errors.DockerException):
        what = getattr(e, "explanation", None) or str(e)
        return f"Docker: {what}" + (
            "; is dockerd running? (`make twin-up` starts it)" if "connection" in str(e).lower() else ""
        )
    if isinstance(e, NetlinkError):
        return f"netlink: {e.args[1] if len(e.args) > 1 else e} (errno {e.code})"
    return None
