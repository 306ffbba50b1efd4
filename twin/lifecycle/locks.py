"""One twin at a time changes a lab: its lock files under $TWIN_HOME/locks/.

- `lock(lab, what)`: the whole lab, exclusively (`up`, `down`, `apply`, `rehearse`, a fault,
  `verify --prove`); a second writer is refused at once naming the holder's command and pid.
- `node_lock(lab, node, what)`: one node (an NVUE revision): the lab's file shared, the node's
  (`<lab>.nodes/<node>.lock`) exclusively; other nodes' changes run beside it, a lab-wide one
  excludes them all and they it.
- Readers (`status`, `verify`, `wait`, `inventory`, `events`...) take no lock: they never wait
  and are never refused. `holder` says who holds a lab without excluding anyone: it looks with a
  shared hold, which no node's change is refused by; a writer that meets a hold that names nobody
  (such a look, or a writer between taking its lock and writing its name) tries again for
  `ANONYMOUS` seconds before it says "busy".

The kernel releases a lock when its holder dies (even by SIGKILL): it never goes stale. `twin
down` removes the lab's lock files (`forget`) as its hold ends, while it still holds the lab: a
node's change cannot hold its file then (it would hold the lab's, shared), and a locker that
opened the lab's file before it went checks, once it holds it, that the file it holds is still
the one at that path (its inode), else it opens the path's file again: two lockers never hold
two files of one name.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from twin.base.errors import LabStateError
from twin.lifecycle.state import check_name, home

ANONYMOUS = 1.0  # seconds a locker tries again while the hold it meets names nobody
TRIES = 8  # lock files found removed under a locker, in a row, before it gives up


@dataclass
class _File:
    """A lock file held: its path, and whether it goes as the hold ends (`forget`)."""

    path: Path
    forget: bool = False


@dataclass
class _Held:
    thread: int
    what: str
    depth: int
    file: _File | None = None


_held: dict[str, _Held] = {}  # labs whose lock this process holds (the kernel's flock is per process)
_nodes_held: dict[tuple[str, str], _Held] = {}  # (lab, node) locks this process holds
_held_guard = threading.Lock()


def _path(name: str) -> Path:
    return home() / "locks" / f"{name}.lock"


def _nodes(lab: str) -> Path:
    return home() / "locks" / f"{lab}.nodes"


@contextmanager
def lock(name: str, what: str) -> Iterator[None]:
    """Hold lab `name`'s lock while `what` (a command line, e.g. "twin apply") changes it;
    LabStateError at once, naming the holder's command and pid, if another twin holds it.
    Re-entrant in the thread that holds it (a rehearsal applies its change under its own hold);
    another thread of the same process is refused like another process."""
    check_name(name)
    me = threading.get_ident()
    with _held_guard:
        mine = _held.get(name)
        if mine is not None and mine.thread == me:
            mine.depth += 1
        elif mine is not None:
            raise LabStateError(
                f"lab {name!r} is busy: {mine.what} (pid {os.getpid()}, another thread); wait for it, or stop it first"
            )
    if mine is not None:
        try:
            yield
        finally:
            with _held_guard:
                mine.depth -= 1
        return
    with _flock(name, what) as held:
        with _held_guard:
            _held[name] = _Held(me, what, 1, held)
        try:
            yield
        finally:
            with _held_guard:
                _held.pop(name, None)


def forget(name: str) -> None:
    """Lab `name`'s lock files go as this thread's hold of it ends (`twin down`): its nodes' and
    its own, removed while it still holds the lab (see the module's doc)."""
    with _held_guard:
        mine = _held.get(check_name(name))
        if mine is None or mine.thread != threading.get_ident() or mine.file is None:
            raise LabStateError(f"lab {name!r}: its lock files go under its lock, which this thread does not hold")
        mine.file.forget = True


@contextmanager
def node_lock(name: str, node: str, what: str) -> Iterator[None]:
    """Hold node `node` of lab `name` while `what` changes that node only (an NVUE revision: its
    files, kernel plane and FRR), as a switch applies its own configuration. LabStateError at
    once, naming the holder, when the node or the whole lab is held elsewhere; re-entrant in its
    thread, and inside the thread's own hold of the whole lab."""
    check_name(name)
    me = threading.get_ident()
    with _held_guard:
        lab, mine = _held.get(name), _nodes_held.get((name, node))
        inside = (lab is not None and lab.thread == me) or (mine is not None and mine.thread == me)
        holder = lab or mine
        if not inside and holder is not None:
            raise LabStateError(
                f"lab {name!r} is busy: {holder.what} (pid {os.getpid()}, another thread); "
                "wait for it, or stop it first"
            )
    if inside:
        yield
        return
    with _flock(name, what, shared=True), _flock(f"{name}.nodes/{node}", what):
        with _held_guard:
            _nodes_held[(name, node)] = _Held(me, what, 1)
        try:
            yield
        finally:
            with _held_guard:
                _nodes_held.pop((name, node), None)


def holder(name: str) -> str:
    """Who holds lab `name`'s lock now ("" when no one): "twin apply (pid 123)", or the nodes
    whose own changes hold it ("twin nvued: leaf01 revision ... (pid 9)")."""
    fd = _open(_path(check_name(name)))
    if fd is None:
        return ""
    try:
        if _free(fd):
            return _node_holders(name)
        return _said(fd) or _node_holders(name) or "another twin command"
    finally:
        os.close(fd)


def _open(f: Path) -> int | None:
    try:
        return os.open(f, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None


def _free(fd: int) -> bool:
    """No one holds the file exclusively: a look with a shared hold, released at once (the node
    changes' shared holds of a lab file are not refused by it)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return True


def _said(fd: int) -> str:
    return os.pread(fd, 200, 0).decode(errors="replace").strip()


def _node_holders(name: str) -> str:
    """The changes of single nodes that hold lab `name` now, in one line ("" when none does)."""
    said = []
    for f in sorted(_nodes(name).glob("*.lock")):
        fd = _open(f)
        if fd is None:
            continue
        try:
            if not _free(fd):
                said.append(_said(fd))
        finally:
            os.close(fd)
    return "; ".join(s for s in said if s)


def _same(fd: int, f: Path) -> bool:
    """Is the file open on `fd` still the one at path `f` (not removed by `twin down`)?"""
    try:
        st, at = os.fstat(fd), os.stat(f, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == (at.st_dev, at.st_ino)


def _take(name: str, shared: bool) -> int:
    """A descriptor of lock file `name`, held; LabStateError naming the holder when it is held."""
    f = _path(name)
    how = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
    until, removed = time.monotonic() + ANONYMOUS, 0
    while True:
        f.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(f, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, how)
        except BlockingIOError:
            held = _said(fd) or _node_holders(name)
            os.close(fd)
            if held or time.monotonic() >= until:
                lab, _, node = name.partition(".nodes/")
                raise LabStateError(
                    f"{'node ' + node + ' of ' if node else ''}lab {lab!r} is busy: "
                    f"{held or 'another twin command'}; wait for it, or stop it first"
                ) from None
            time.sleep(0.01)  # a look (`holder`), or a writer between its hold and its name: again
            continue
        if _same(fd, f):
            return fd
        os.close(fd)  # removed by `twin down` since it was opened: the path's own file now
        removed += 1
        if removed >= TRIES:
            raise LabStateError(
                f"lab {name.partition('.nodes/')[0]!r}: its lock file {f} keeps being removed; "
                "is a `twin down` of it running in a loop?"
            )


@contextmanager
def _flock(name: str, what: str, shared: bool = False) -> Iterator[_File]:
    """The lock file `name` held (exclusive, saying `what` in it; or shared, saying nothing)."""
    fd = _take(name, shared)
    held = _File(_path(name))
    try:
        if not shared:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{what} (pid {os.getpid()})".encode(), 0)
        try:
            yield held
        finally:
            if not shared:
                os.ftruncate(fd, 0)  # said no more once released: shared holders write nothing
            if held.forget:
                _remove(name, fd)
    finally:
        os.close(fd)


def _remove(lab: str, fd: int) -> None:
    """Lab `lab`'s lock files, removed while `fd` holds the lab's exclusively: its nodes' first (no
    node's change holds one: it would hold the lab's), then its own, if it is still the one held."""
    nodes = _nodes(lab)
    if nodes.is_dir() and not nodes.is_symlink():
        for f in nodes.glob("*.lock"):
            f.unlink(missing_ok=True)
        try:
            nodes.rmdir()
        except OSError:
            pass  # something else in it: not twin's to remove
    f = _path(lab)
    if _same(fd, f):
        f.unlink()
