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
import time
from pathlib import Path
from typing import Callable, Literal

from pydantic import BaseModel, ValidationError

from twin import kinds
from twin.base.errors import LabNameError, LabStateError, TwinError
from twin.config import dialect
from twin.config.backend import Backend
from twin.config.services import Shaping
from twin.config.userconf import FRR_CONF, UserConfigs
from twin.intent import frrconf
from twin.runtime import Runtime, make_runtime
from twin.topology.model import Fabric
from twin.topology.names import check_lab_name

STATE = "state.json"
FABRIC = "fabric.json"
RUNTIME_ENV = "TWIN_RUNTIME"  # the runtime of a lab nothing else names (`twin up --runtime`'s too)


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
    status: Literal["creating", "deployed", "converging", "up", "failed"] = "creating"  # deployed: `up --no-wait`
    created: float = 0.0
    timings: dict[str, float] = {}
    error: str = ""
    backend: Backend | None = None  # VRF backend of the VTEPs
    shaping: Shaping | None = None  # how rate limits are enforced (probed when there are any)
    runtime: str = "docker"  # what made the nodes (docker: twin itself; containerlab: its CLI)
    history: list[dict] = []  # changes applied since `up` (twin apply): when, what, from where
    configs: str = ""  # the user's config directory it came up with (`twin up --configs`)
    user_files: dict[str, list[str]] = {}  # node -> its files that are the user's, not twin's rendering
    notes: list[str] = []  # what twin adapted or left out of what it was given (an import, a daemons file)
    images: dict[str, str] = {}  # node -> its own image, which it runs (`twin up --images`); others: `image`
    lint: list[dict] = []  # `twin lint`'s findings of the user's configs as they went in (up, apply)


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
    return {
        n: read_files(d, n, ["frr.conf", "daemons"]) for n, node in fabric.nodes.items() if kinds.of(node).user_config
    }


def frr_hostnames(d: Path, fabric: Fabric) -> dict[str, str]:
    """Node -> the host name its frr.conf gives FRR, for every FRR node that has one (its peers may see it,
    `twin.intent.Intent`'s `hostnames`)."""
    out = {}
    for n, node in fabric.nodes.items():
        if kinds.of(node).runs_frr and (text := read_files(d, n, ["frr.conf"]).get("frr.conf")):
            if name := frrconf.hostname(text):
                out[n] = name
    return out


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


def update(d: Path, change: Callable[[LabState], None], fabric: Fabric | None = None) -> LabState | None:
    """state.json read, changed by `change` and written back as one step among the processes that
    record in it (`twin wait`, the NVUE service's revisions, `twin apply`): none loses another's
    change (a hold of the lab directory, for that step only). None when the lab has no state."""
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held while one file is read and written: no one waits long
        st, _ = load(d)
        if st is not None:
            change(st)
            save(d, st, fabric)
        return st
    finally:
        os.close(fd)


def converged(st: LabState, took: float) -> None:
    """A lab `twin wait` saw converge is up (one `up --no-wait` left deployed, or a failed wait)."""
    if st.status in ("deployed", "converging", "failed"):
        st.status, st.error = "up", ""
        st.timings["waited"] = took


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
        raise LabStateError(
            f"lab {d.name!r}: {what} is missing or unreadable "
            f"({str(e).splitlines()[0][:120]}); `twin down {d.name}` removes what is left"
        ) from None
    return state, fabric


def runtime_of(d: Path, asked: str | None = None, removing: bool = False) -> Runtime:
    """The runtime of the lab in directory `d`, decided here once: `asked`, else the one that made it
    (its state says), else $TWIN_RUNTIME, else docker (a broken directory names none: what the lab
    made carries its label, which Docker finds). `removing`: one that takes the lab down, even where
    the tool that made it (the containerlab CLI) is gone now."""
    return make_runtime(asked or made_by(d) or os.environ.get(RUNTIME_ENV), removing)


def made_by(d: Path) -> str | None:
    """The runtime the lab in directory `d` records (None: no lab there, or its state unreadable)."""
    try:
        st = load(d)[0]
    except TwinError:
        return None
    return st.runtime if st else None


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


def now() -> float:
    return time.time()


def configs_differ(d: Path, st: LabState, configs: UserConfigs | None) -> list[str]:
    """How the user's files given now differ from those the lab in directory `d` booted."""
    given = configs.files if configs is not None else {}
    out = [
        f"{n} runs your {', '.join(st.user_files[n])}, not twin's rendering" for n in st.user_files if n not in given
    ]
    for n, files in given.items():
        if n not in st.user_files:
            out.append(f"{n} runs twin's rendering, not your files")
        elif FRR_CONF in files and files[FRR_CONF] != read_files(d, n, [FRR_CONF]).get(FRR_CONF):
            out.append(f"{n}: your frr.conf differs from the one it runs")
    return out + dialect.differs(configs, d)  # a dialect's files (NVUE's startup.yaml)
