"""Opening a file under a directory without letting a symbolic link lead anywhere else.

Two ways twin opens a path below a root it was given:

- `BENEATH` (a directory a user hands twin: `--configs DIR`, a clone's directory, the
  directory of a containerlab file): links are followed while they stay below the
  root; an absolute link, a `..` that climbs out of it, or /proc's magic links are
  refused.
- `NO_LINKS` (a node's filesystem, reached from the host as /proc/<pid>/root: a node
  is not trusted, see twin.lifecycle.state): no symbolic link is followed at all, in
  any component, and `..` never climbs above the node's root.

The kernel does this in one call where it has openat2(2) (Linux 5.6+: RESOLVE_BENEATH,
RESOLVE_IN_ROOT, RESOLVE_NO_SYMLINKS, RESOLVE_NO_MAGICLINKS). Elsewhere (an older
kernel, a seccomp profile that refuses the call) a walk opens one component at a time
with O_NOFOLLOW relative to the directory opened before it, reading each link itself;
the same walk explains a refusal (which component, and where it leads). Both are
free of races: no component is looked up twice.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
from pathlib import Path

BENEATH, NO_LINKS = "beneath", "no-links"
MAX_LINKS = 40  # as the kernel's own limit on links in one lookup
_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437}.get(platform.machine())  # the same number on both
_RESOLVE_NO_MAGICLINKS, _RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH, _RESOLVE_IN_ROOT = 0x02, 0x04, 0x08, 0x10
_RESOLVE = {
    BENEATH: _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS,
    NO_LINKS: _RESOLVE_IN_ROOT | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS,
}
_DIR = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


class LinkRefused(OSError):
    """A path that a link would have led elsewhere: not opened. `str()` says which component and why."""

    @property
    def why(self) -> str:
        return self.strerror or ""

    def __str__(self) -> str:
        return f"{self.filename}: {self.why}"


def _refused(path: str, why: str) -> LinkRefused:
    return LinkRefused(errno.ELOOP, why, path)


class _How(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_has_openat2: bool | None = None if _SYS_OPENAT2 else False


def open_under(root: str | Path | int, path: str, mode: str, flags: int = os.O_RDONLY) -> int:
    """An fd of `path` below `root` (a directory path or fd), resolved as `mode` allows.

    `path` is relative to root (a leading / is root itself). Raises LinkRefused when a link
    is in the way (NO_LINKS) or leads out (BENEATH), OSError as open(2) otherwise."""
    if "\0" in path:
        raise OSError(errno.EINVAL, "the path holds a NUL byte", path)
    flags |= os.O_CLOEXEC | (0 if flags & os.O_PATH else os.O_NOCTTY)  # openat2 takes O_PATH nearly alone
    owned = not isinstance(root, int)
    root_fd = root if isinstance(root, int) else os.open(root, _DIR)
    try:
        fd = _openat2(root_fd, path, flags, mode)
        if fd is None:
            return _walk(root_fd, path, flags, mode)
        if fd >= 0:
            return fd
        err = -fd
        if err in (errno.ELOOP, errno.EXDEV):
            os.close(_walk(root_fd, path, flags, mode))  # says which link, where to; else (a race):
            raise _refused(path, "a symbolic link is in the way" if mode == NO_LINKS else "leads outside the directory")
        raise OSError(err, os.strerror(err), path)
    finally:
        if owned:
            os.close(root_fd)


def read_under(root: str | Path | int, path: str, mode: str, limit: int) -> bytes:
    """At most `limit` + 1 bytes of the regular file `path` below `root` (the caller tells "too
    large" by the extra byte). A FIFO, a device or a directory is refused (IsADirectoryError,
    or OSError ENXIO): reading one could hang or never end."""
    fd = open_under(root, path, mode, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.ENXIO, "not a regular file (a FIFO, socket or device)", path)
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def read_fd(fd: int, limit: int) -> bytes:
    """At most `limit` + 1 bytes of an open file."""
    chunks, size = [], 0
    while size <= limit:
        chunk = os.read(fd, min(1 << 20, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _openat2(root_fd: int, path: str, flags: int, mode: str) -> int | None:
    """fd, or -errno; None where the kernel (or a seccomp filter) has no openat2."""
    global _has_openat2
    if _has_openat2 is False or _SYS_OPENAT2 is None:
        return None
    how = _How(flags, 0, _RESOLVE[mode])
    fd = _libc.syscall(
        ctypes.c_long(_SYS_OPENAT2),
        ctypes.c_long(root_fd),
        ctypes.c_char_p(os.fsencode(path.lstrip("/") or ".")),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd < 0:
        err = ctypes.get_errno()
        if err in (errno.ENOSYS, errno.EPERM) and _has_openat2 is None:
            _has_openat2 = False
            return None
        return -err
    _has_openat2 = True
    return fd


def _walk(root_fd: int, path: str, flags: int, mode: str) -> int:
    """open_under one component at a time (O_NOFOLLOW), links read and resolved here."""
    todo = [p for p in path.split("/") if p not in ("", ".")][::-1]
    stack = [os.dup(root_fd)]  # the directories walked so far, root first
    done: list[str] = []  # their names, for messages
    links, via = 0, ""  # the last link followed, for messages
    try:
        while todo:
            name = todo.pop()
            if name == "..":
                if len(stack) == 1 and mode == BENEATH:
                    raise _refused(
                        path, f"{via} leads outside the directory" if via else "climbs above the directory (..)"
                    )
                if len(stack) > 1:  # a node's root is its own / (.. of / is /)
                    os.close(stack.pop())
                    done.pop()
                continue
            fd = _component(stack[-1], name, flags if not todo else _DIR, path)
            if fd is not None:
                if not todo:
                    return fd
                stack.append(fd)
                done.append(name)
                continue
            where, target = "/".join(done + [name]), os.readlink(name, dir_fd=stack[-1])
            links += 1
            if mode == NO_LINKS or target.startswith("/") or links > MAX_LINKS:
                why = (
                    ""
                    if mode == NO_LINKS
                    else ", one link too many (40)"
                    if links > MAX_LINKS
                    else ", outside the directory"
                )
                raise _refused(path, f"{where} is a symbolic link (to {target[:200]}){why}")
            todo += [p for p in target.split("/") if p not in ("", ".")][::-1]
            via = f"{where} (a symbolic link to {target[:200]})"
        return os.open(".", flags, dir_fd=stack[-1])
    finally:
        for fd in stack:
            os.close(fd)


def _component(dir_fd: int, name: str, flags: int, path: str) -> int | None:
    """fd of `name` in `dir_fd`, or None where it is a symbolic link (not followed)."""
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(dir_fd, name):
            return None
        raise OSError(e.errno, e.strerror, path) from None
    if flags & os.O_PATH and stat.S_ISLNK(os.fstat(fd).st_mode):  # O_PATH opens the link itself
        os.close(fd)
        return None
    return fd


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False
