"""The front doors: which files `twin up`, `twin validate` and `twin import` take, and how each
becomes a twin topology document.

    door("lab.clab.yml")          # "containerlab" (also any file holding `topology: {nodes:}`);
                                  # "air" for *.json, *.dot, *.gv; "twin" otherwise
    imported = import_file(path, roles, name)   # Imported: the document, the user's configs, notes
    import_other(path, roles, name)             # the same, or None for a twin topology
    loaded = load(path, name, roles, configs)   # any of them as a validated Fabric, with the user's configs

A twin topology is read by twin.topology itself; every other door is a front end that
becomes the same document (and, for containerlab, the FRR files its nodes bind), read
through twin.topology.files with its format's limits. A new front end (NVUE) adds a row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from twin import topology
from twin.base.errors import Problem, TopologyError
from twin.config import dialect, userconf
from twin.config.userconf import UserConfigs
from twin.interop.air_import import PARSERS as AIR_SUFFIXES
from twin.interop.air_import import import_air_placed
from twin.interop.clab_import import SUFFIXES as CLAB_SUFFIXES
from twin.interop.clab_import import Imported, import_clab, is_clab
from twin.topology import samples
from twin.topology.model import Fabric

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
        raise TopologyError(
            [
                Problem(
                    str(path),
                    "",
                    f"not a file of another tool: twin imports {taken} (and a containerlab topology of any name)",
                )
            ]
        )
    return imported


def import_other(path: str | Path, roles: dict[str, str] | None = None, name: str | None = None) -> Imported | None:
    """The file imported through its door, or None when it is a twin topology (no import)."""
    d = door(path)
    return None if d == TWIN else DOORS[d][1](path, roles, name)


@dataclass(frozen=True)
class Loaded:
    """A file `twin up` takes, read: the lab's Fabric, the user's configs for it, what twin adapted."""

    fabric: Fabric
    configs: UserConfigs | None = None
    notes: list[str] = field(default_factory=list)


def load(
    path: str | Path, name: str | None = None, roles: dict[str, str] | None = None, configs: str | Path | None = None
) -> Loaded:
    """Any file `twin up` takes (a twin topology or the name of one twin ships, a containerlab or an
    NVIDIA Air file, imported on the way) as a validated Fabric, with the user's configs (`configs`: a
    directory of them, over what the file binds) checked on it, a dialect's (NVUE's) too; TopologyError
    with every problem. `roles` maps an imported file's nodes to kinds."""
    path = samples.resolve(path)
    imported = import_other(path, roles, name)
    if imported is None:
        if roles:
            raise TopologyError(
                [
                    Problem(
                        "--role",
                        "",
                        "roles map the nodes of a containerlab or NVIDIA Air "
                        "file; a twin topology says each node's kind itself",
                    )
                ]
            )
        fabric = topology.load(path, name=name)
        loaded = Loaded(fabric, userconf.load(configs, fabric) if configs is not None else None)
    else:
        fabric = topology.load_document(imported.doc, imported.source, name, imported.lines)
        user = imported.configs.under(userconf.load(configs, fabric)) if configs is not None else imported.configs
        loaded = Loaded(fabric, user if user.files else None, list(imported.notes))
    problems = dialect.problems(loaded.configs, fabric)
    if problems:
        raise TopologyError(problems)
    return loaded
