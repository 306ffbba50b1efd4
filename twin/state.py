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

from twin.topology.model import Fabric

STATE = "state.json"
FABRIC = "fabric.json"


def home() -> Path:
    return Path(os.environ.get("TWIN_HOME") or Path.home() / ".twin")


def labdir(name: str) -> Path:
    return home() / "labs" / name


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
    root = home() / "labs"
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def remove(d: Path) -> bool:
    if d.exists():
        shutil.rmtree(d)
        return True
    return False


def now() -> float:
    return time.time()
