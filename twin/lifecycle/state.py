"""Where a lab lives on disk: $TWIN_HOME/labs/<name>/ (default ~/.twin).

state.json records status and timings, fabric.json the derived intent, and one
directory per node holds its rendered config. Any command in a new shell finds
the lab from its name; when the directory is gone, Docker labels still do.

Every lab name is checked (the topology's rule, fully matched) before a path is
made of it, and nothing but a real directory directly under $TWIN_HOME/labs/
is ever removed. A node's directory is bind-mounted into its container, so a
container could plant symlinks there: files are read with O_NOFOLLOW and
written as a new file renamed over the old one (a rename replaces a symlink,
never what it points to). state.json and fabric.json are written the same way,
so a crash leaves the old or the new file, never half of one.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Literal

from pydantic import BaseModel, ValidationError

from twin import kinds
from twin.config.backend import Backend
from twin.config.services import Shaping
from twin.errors import LabNameError, LabStateError, TwinError
from twin.topology.model import Fabric
from twin.topology.names import check_lab_name

STATE = "state.json"
FABRIC = "fabric.json"


def home() -> Path:
    return Path(os.environ.get("TWIN_HOME") or Path.home() / ".twin")


def labs_root() -> Path:
    return home() / "labs"


def check_name(name: object) -> str:
    """`name` if it is a valid lab name, else LabNameError (one line)."""
    if not isinstance(name, str):
        raise LabNameError(f"{name!r} is not a lab name")
    reason = check_lab_name(name)
    if reason:
        raise LabNameError(reason)
    return name


def labdir(name: str) -> Path:
    return labs_root() / check_name(name)


class LabState(BaseModel):
    name: str
    topology: str
    image: str
    status: Literal["creating", "deployed", "converging", "up", "failed"] = "creating"   # deployed: `up --no-wait`
    created: float = 0.0
    timings: dict[str, float] = {}
    error: str = ""
    backend: Backend | None = None   # VRF backend of the VTEPs
    shaping: Shaping | None = None      # how rate limits are enforced (probed when there are any)
    runtime: str = "docker"      # what made the nodes (docker: twin itself; containerlab: its CLI)
    history: list[dict] = []     # changes applied since `up` (twin apply): when, what, from where
    configs: str = ""            # the user's config directory it came up with (`twin up --configs`)
    user_files: dict[str, list[str]] = {}   # node -> its files that are the user's, not twin's rendering
    notes: list[str] = []        # what twin adapted or left out of what it was given (an import, a daemons file)
    layout: Literal["per-vni", "vlan-aware"] | None = None   # kernel layout of the NVUE nodes (twin.nvue)
    images: dict[str, str] = {}  # node -> its own image, which it runs (`twin up --images`); others: `image`


# --- files, safely -------------------------------------------------------------------
def read_text(f: Path) -> str:
    """A file's text, never through a symlink (OSError ELOOP if it is one)."""
    fd = os.open(f, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def write_text(f: Path, text: str) -> None:
    """Write a new file next to `f` and rename it over `f` (atomic; replaces a symlink, not its target)."""
    tmp = f.with_name(f".{f.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, f)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def node_dir(d: Path, node: str) -> Path:
    """A node's directory in lab directory `d`, made if missing; never a symlink."""
    sub = d / node
    if sub.is_symlink() or (sub.exists() and not sub.is_dir()):
        raise TwinError(f"{sub} is not a directory twin made (a symlink or a file); `twin down` the lab")
    sub.mkdir(parents=True, exist_ok=True)
    return sub


def write_files(d: Path, files: dict[str, dict[str, str]]) -> None:
    """Per node, every file whose text differs ({node: {file name: text}})."""
    for node, fs in files.items():
        sub = node_dir(d, node)
        for name, text in fs.items():
            f = sub / name
            try:
                same = f.is_file() and not f.is_symlink() and read_text(f) == text
            except OSError:
                same = False
            if not same:
                write_text(f, text)


def remove_files(d: Path, node: str, names: list[str]) -> None:
    """Files of `node` that are rendered no more (a symlink is removed, never what it points to)."""
    for name in names:
        f = d / node / name
        if f.parent.is_dir() and not f.parent.is_symlink() and "/" not in name:
            f.unlink(missing_ok=True)
def running_files(d: Path, fabric: Fabric) -> dict[str, dict[str, str]]:
    """frr.conf and daemons of every node whose intent is its own config's (a router): what
    `twin.intent.Intent(fabric, files)` judges it by."""
    return {n: read_files(d, n, ["frr.conf", "daemons"]) for n, node in fabric.nodes.items()
            if kinds.of(node).user_config}


def read_files(d: Path, node: str, names: list[str]) -> dict[str, str]:
    """The files of `node` that exist, by name (symlinks are not followed: they count as missing)."""
    out = {}
    for name in names:
        try:
            out[name] = read_text(d / node / name)
        except OSError:
            continue
    return out


# --- state --------------------------------------------------------------------------
def save(d: Path, state: LabState, fabric: Fabric | None = None) -> None:
    d.mkdir(parents=True, exist_ok=True)
    write_text(d / STATE, state.model_dump_json(indent=2))
    if fabric is not None:
        write_text(d / FABRIC, fabric.model_dump_json(indent=2))


def load(d: Path) -> tuple[LabState | None, Fabric | None]:
    """The lab's recorded state and intent; (None, None) when it has no directory.
    A directory whose files are missing or corrupt is an error naming the file."""
    if not d.is_dir():
        return None, None
    try:
        state = LabState.model_validate_json(read_text(d / STATE))
        fabric = Fabric.model_validate(json.loads(read_text(d / FABRIC))) if (d / FABRIC).exists() else None
    except (OSError, ValueError, ValidationError) as e:
        what = getattr(e, "filename", None) or (d / STATE if "state" in str(e).lower() else d / FABRIC)
        raise LabStateError(f"lab {d.name!r}: {what} is missing or unreadable "
                            f"({str(e).splitlines()[0][:120]}); `twin down {d.name}` removes what is left") from None
    return state, fabric


def known_labs() -> list[str]:
    root = labs_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.is_symlink() and _valid(p.name))


def _valid(name: str) -> bool:
    try:
        check_name(name)
        return True
    except LabNameError:
        return False


# --- removal --------------------------------------------------------------------------
def owned(d: Path) -> Path:
    """`d` if it is a lab directory twin owns: a real directory (not a symlink) directly
    under $TWIN_HOME/labs/ whose name is a lab name; else TwinError. Nothing outside is removed."""
    root = labs_root().resolve()
    if d.is_symlink() or d.resolve().parent != root or not _valid(d.name) or d.resolve().name != d.name:
        raise TwinError(f"refusing to remove {d}: not a lab directory directly under {root}")
    return d


def remove(d: Path) -> bool:
    """Remove a lab directory (see `owned`); False if there was none."""
    owned(d)
    if not d.exists():
        return False
    shutil.rmtree(d)
    return True


def remove_node(d: Path, node: str) -> bool:
    """Remove one node's directory inside lab directory `d` (a host endpoint that left)."""
    sub = owned(d) / node
    if sub.is_symlink() or sub.resolve().parent != d.resolve() or sub.name != node:
        raise TwinError(f"refusing to remove {sub}: not a node directory of {d}")
    if not sub.exists():
        return False
    shutil.rmtree(sub)
    return True


# --- one twin at a time per lab ------------------------------------------------------------
@dataclass
class _Held:
    thread: int
    what: str
    depth: int


_held: dict[str, _Held] = {}     # labs whose lock this process holds (the kernel's flock is per process)
_nodes_held: dict[tuple[str, str], _Held] = {}     # (lab, node) locks this process holds
_held_guard = threading.Lock()


@contextmanager
def lock(name: str, what: str) -> Iterator[None]:
    """Hold lab `name`'s lock while `what` (a command line, e.g. "twin apply") changes it;
    LabStateError at once, naming the holder's command and pid, if another twin holds it.

    Every command that changes a lab holds it (`up`, `down`, `apply`, `rehearse`, `fault`,
    `verify --prove`); readers never take it. It is re-entrant in the thread that holds it
    (a rehearsal applies its change under its own hold); another thread of the same process
    is refused like another process. The kernel releases it when its holder dies (even by
    SIGKILL): it never goes stale."""
    check_name(name)
    me = threading.get_ident()
    with _held_guard:
        mine = _held.get(name)
        if mine is not None and mine.thread == me:
            mine.depth += 1
        elif mine is not None:
            raise LabStateError(f"lab {name!r} is busy: {mine.what} (pid {os.getpid()}, another thread); "
                                "wait for it, or stop it first")
    if mine is not None:
        try:
            yield
        finally:
            with _held_guard:
                mine.depth -= 1
        return
    with _flock(name, what):
        with _held_guard:
            _held[name] = _Held(me, what, 1)
        try:
            yield
        finally:
            with _held_guard:
                _held.pop(name, None)


@contextmanager
def node_lock(name: str, node: str, what: str) -> Iterator[None]:
    """Hold node `node` of lab `name` while `what` changes that node only (an NVUE revision: its
    files, kernel plane and FRR), as a switch applies its own configuration: changes of other nodes
    run beside it, a lab-wide change (`lock`: `twin apply`, a fault, a rehearsal) excludes them all
    and they it. LabStateError at once, naming the holder, when either is held elsewhere; re-entrant
    in its thread, and inside the thread's own hold of the whole lab."""
    check_name(name)
    me = threading.get_ident()
    with _held_guard:
        lab, mine = _held.get(name), _nodes_held.get((name, node))
        inside = (lab is not None and lab.thread == me) or (mine is not None and mine.thread == me)
        if not inside and (lab is not None or mine is not None):
            raise LabStateError(f"lab {name!r} is busy: {(lab or mine).what} (pid {os.getpid()}, another thread); "
                                "wait for it, or stop it first")
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
    d = home() / "locks" / f"{check_name(name)}.lock"
    try:
        fd = os.open(d, os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return ""
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 200, 0).decode(errors="replace").strip() or _node_holders(name)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return ""
    finally:
        os.close(fd)


def _node_holders(name: str) -> str:
    """The changes of single nodes that hold lab `name` now, in one line."""
    said = []
    for f in sorted((home() / "locks" / f"{name}.nodes").glob("*.lock")):
        try:
            fd = os.open(f, os.O_RDWR | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            said.append(os.pread(fd, 200, 0).decode(errors="replace").strip())
        finally:
            os.close(fd)
    return "; ".join(s for s in said if s) or "another twin command"


@contextmanager
def _flock(name: str, what: str, shared: bool = False) -> Iterator[None]:
    """The lock file `name` held (exclusive, saying `what` in it; or shared, saying nothing)."""
    f = home() / "locks" / f"{name}.lock"
    f.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(f, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            held = os.pread(fd, 200, 0).decode(errors="replace").strip() or _node_holders(name)
            lab, _, node = name.partition(".nodes/")
            raise LabStateError(f"{'node ' + node + ' of ' if node else ''}lab {lab!r} is busy: {held}; wait for it, "
                                "or stop it first") from None
        if not shared:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{what} (pid {os.getpid()})".encode(), 0)
        try:
            yield
        finally:
            if not shared:
                os.ftruncate(fd, 0)      # said no more once released: shared holders write nothing
    finally:
        os.close(fd)


def now() -> float:
    return time.time()
