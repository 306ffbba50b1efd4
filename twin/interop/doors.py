"""The front doors: which files `twin up`, `twin validate` and `twin import` take, and how each
becomes a twin topology document.

    door("lab.clab.yml")          # "containerlab" (also any file holding `topology: {nodes:}`);
                                  # "air" for *.json, *.dot, *.gv; "twin" otherwise
    imported = import_file(path, roles, name)   # Imported: the document, the user's configs, notes
    import_other(path, roles, name)             # the same, or None for a twin topology

A twin topology is read by twin.topology itself; every other door is a front end that
becomes the same document (and, for containerlab, the FRR files its nodes bind), read
through twin.topology.files with its format's limits. A new front end (NVUE) adds a row.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from twin.base.errors import Problem, TopologyError
from twin.config.userconf import UserConfigs
from twin.interop.air_import import PARSERS as AIR_SUFFIXES
from twin.interop.air_import import import_air_placed
from twin.interop.clab_import import SUFFIXES as CLAB_SUFFIXES
from twin.interop.clab_import import Imported, import_clab, is_clab

TWIN = "twin"


def _air(path: str | Path, roles: dict[str, str] | None, name: str | None) -> Imported:
    doc, lines = import_air_placed(path, roles=roles, name=name)
    return Imported(str(path), doc, UserConfigs(str(path)), lines=lines)


# door -> (the file names it takes, the importer); a twin topology is no import
DOORS: dict[str, tuple[tuple[str, ...], Callable[..., Imported]]] = {
    "containerlab": (CLAB_SUFFIXES, import_clab),
    "air": (tuple(AIR_SUFFIXES), _air),
}


def door(path: str | Path) -> str:
    """Which front door a file comes in by: from its name, and a containerlab topology by its
    content too (`topology: {nodes: ...}`), whatever its name, as `clab -t` takes any."""
    name = Path(path).name.lower()
    by_name = next((d for d, (suffixes, _) in DOORS.items() if name.endswith(suffixes)), TWIN)
    return "containerlab" if by_name == TWIN and is_clab(path) else by_name


def import_file(path: str | Path, roles: dict[str, str] | None = None, name: str | None = None) -> Imported:
    """A file of another tool as a twin topology document; TopologyError names every problem."""
    imported = import_other(path, roles, name)
    if imported is None:
        taken = ", ".join(s for suffixes, _ in DOORS.values() for s in suffixes)
        raise TopologyError([Problem(str(path), "", f"not a file of another tool: twin imports {taken} (and a "
                                                    "containerlab topology of any name)")])
    return imported


def import_other(path: str | Path, roles: dict[str, str] | None = None, name: str | None = None) -> Imported | None:
    """The file imported through its door, or None when it is a twin topology (no import)."""
    d = door(path)
    return None if d == TWIN else DOORS[d][1](path, roles, name)
