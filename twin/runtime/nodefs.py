"""Files inside a node, read from the host without following the node's links.

A node's filesystem is reached from the host as /proc/<pid>/root. A node is not trusted
(twin.lifecycle.state): a symbolic link it plants there would, followed from the host,
lead to the host's own files (an absolute link resolves against the host's root). Every
path is therefore opened one way only (twin.base.safeopen, NO_LINKS): no link in any
component is followed, `..` never climbs above the node's root, and only a regular file
is read, up to a size. A link in the way is an error that says so (NodeFileError);
a file that is not there reads as None.

    text = read_text(pid, "/etc/frr/frr.conf", where="leaf1")     # None when missing
"""

from __future__ import annotations

import errno
import os

from twin.base import safeopen
from twin.base.errors import TwinError

MAX_BYTES = 1 << 20  # a config file
FRR_CONF, FRR_DAEMONS = "/etc/frr/frr.conf", "/etc/frr/daemons"
NOT_THERE = (errno.ENOENT, errno.ENOTDIR)


class NodeFileError(TwinError):
    """A file of a node twin would not read (a link in its path, not a regular file, too large)."""


def root(pid: int) -> str:
    return f"/proc/{pid}/root"


def read(pid: int, inside: str, where: str, limit: int = MAX_BYTES) -> bytes | None:
    """The bytes of regular file `inside` of the node, None when there is none; NodeFileError
    for a link in the way, something that is not a regular file, or more than `limit` bytes."""
    try:
        data = safeopen.read_under(root(pid), inside, safeopen.NO_LINKS, limit)
    except OSError as e:
        _raise(e, inside, where)
        return None
    if len(data) > limit:
        raise NodeFileError(f"{where}: {inside} is larger than {limit} bytes: not read")
    return data


def read_text(pid: int, inside: str, where: str, limit: int = MAX_BYTES) -> str | None:
    data = read(pid, inside, where, limit)
    return None if data is None else data.decode("utf-8", errors="replace")


def size(pid: int, inside: str, where: str) -> int:
    """The size of file `inside` (0 when there is none), links not followed."""
    try:
        fd = safeopen.open_under(root(pid), inside, safeopen.NO_LINKS, os.O_PATH)
    except OSError as e:
        _raise(e, inside, where)
        return 0
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def exists(pid: int, inside: str, where: str) -> bool:
    """Is there a file (or directory) `inside`, reached without a link?"""
    try:
        os.close(safeopen.open_under(root(pid), inside, safeopen.NO_LINKS, os.O_PATH))
        return True
    except OSError as e:
        _raise(e, inside, where)
        return False


def remove(pid: int, inside: str, where: str) -> None:
    """Remove file `inside` of the node (the name itself, a link included), its directory
    reached without a link; nothing when it is not there."""
    parent, _, name = inside.rstrip("/").rpartition("/")
    try:
        fd = safeopen.open_under(root(pid), parent or "/", safeopen.NO_LINKS, os.O_PATH | os.O_DIRECTORY)
    except OSError as e:
        _raise(e, inside, where)
        return
    try:
        os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)


def _raise(e: OSError, inside: str, where: str) -> None:
    """NodeFileError for what is not a plain 'not there'."""
    if isinstance(e, safeopen.LinkRefused):
        raise NodeFileError(
            f"{where}: {inside}: {e.why}: not followed; a node is not trusted, and twin follows "
            "no link inside one (it could lead to the host's files)"
        ) from None
    if e.errno not in NOT_THERE:
        raise NodeFileError(f"{where}: {inside}: {e.strerror or e}") from None
