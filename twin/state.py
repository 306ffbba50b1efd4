"""Where a lab lives on disk: $TWIN_HOME/labs/<name>/ (default ~/.twin).

state.json records status and timings, fabric.json the derived intent, and one
directory per node holds its rendered config. Any command in a new shell finds
the lab from its name; when the directory is gone, Docker labels still do.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from twin.errors import LabNameError, TwinError
from twin.topology.model import Fabric

STATE = "state.json"
FABRIC = "fabric.json"


def home() -> Path:
    return Path(os.environ.get("TWIN_HOME") or Path.home() / ".twin")


def labs_root() -> Path:
    return home() / "labs"


def check_name(name: object) -> str:
    """`name` if it is a valid lab name (the topology's rule, fully matched), else LabNameError.
    Every lab name is checked here before a path, container name or label is made of it."""
    from twin.topology.build import LAB_NAME, LAB_NAME_RULE

    if not isinstance(name, str) or not LAB_NAME.fullmatch(name):
        shown = repr(name)[:40] + ("..." if len(repr(name)) > 40 else "")
        raise LabNameError(f"{shown} is not a lab name: {LAB_NAME_RULE}")
    return name


def labdir(name: str) -> Path:
    return labs_root() / check_name(name)


class LabState(BaseModel):
    name: str
    topology: str
    image: str
    status: Literal["creating", "converging", "up", "failed"] = "creating"
    created: float = 0.0
    timings: dict[str, float] = {}
    error: str = ""
    backend: str | None = None   # VRF backend of the VTEPs: "vrf" (Linux VRF devices) or "netns"
    history: list[dict] = []     # changes applied since `up` (twin apply): when, what, from where


def save(d: Path, state: LabState, fabric: Fabric | None = None) -> None:
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / (STATE + ".tmp")
    tmp.write_text(state.model_dump_json(indent=2))
    tmp.replace(d / STATE)
    if fabric is not None:
        (d / FABRIC).write_text(fabric.model_dump_json(indent=2))


def load(d: Path) -> tuple[LabState | None, Fabric | None]:
    try:
        state = LabState.model_validate_json((d / STATE).read_text())
    except (OSError, ValueError):
        state = None
    try:
        fabric = Fabric.model_validate(json.loads((d / FABRIC).read_text()))
    except (OSError, ValueError):
        fabric = None
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
