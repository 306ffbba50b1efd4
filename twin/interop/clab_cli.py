"""The containerlab CLI as twin drives it: the command lines, and reading `inspect`.

Pure: this module builds the exact argv twin runs through subprocess
(`deploy`, `inspect --format json`, `destroy --cleanup`) and turns the output
of `inspect --format json` into node -> container. Running the commands is the
runtime's business.

`inspect --format json` has printed three shapes over containerlab's releases,
all read here:
- a bare list of containers (early releases: srl-labs/containerlab docs/cmd/inspect.md,
  revisions 0af103f and f4e9d15);
- `{"containers": [...]}` (as srl-labs/containerlab issue #2549 shows it, April 2025);
- `{"<lab>": [...]}`, grouped by lab name, `{}` when nothing runs (pull request #2552,
  April 2025, and docs/cmd/inspect.md since).
The fixtures in tests/golden/interop/clab-inspect/ are these documented outputs.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from twin.base.errors import TwinError
from twin.interop.containerlab import PREFIX

BINARIES = ("containerlab", "clab")  # the installer links `clab` to `containerlab`
MISSING = "containerlab is not installed; twin's own runtime (--runtime docker) needs nothing"


@dataclass(frozen=True)
class ClabContainer:
    """One node's container as containerlab reports it."""

    node: str
    name: str
    container_id: str
    state: str  # created, running, exited, ...
    image: str = ""


@dataclass(frozen=True)
class Containerlab:
    """The command lines for one exported lab: `binary` run on the topology file `topology`."""

    binary: str
    topology: Path

    @classmethod
    def find(cls, topology: Path, which: Callable[[str], str | None] = shutil.which) -> "Containerlab":
        """The installed containerlab, or TwinError saying it is missing."""
        return cls(find_binary(which), Path(topology))

    def deploy(self, reconfigure: bool = False) -> list[str]:
        """`deploy`: makes the lab. Without --reconfigure it fails on a lab that exists, as `twin up` must;
        with it, containerlab first removes the lab's containers and directory."""
        return [self.binary, "deploy", "-t", str(self.topology)] + (["--reconfigure"] if reconfigure else [])

    def inspect(self) -> list[str]:
        return [self.binary, "inspect", "-t", str(self.topology), "--format", "json"]

    def destroy(self) -> list[str]:
        """`destroy --cleanup`: the containers, their links and containerlab's lab directory."""
        return [self.binary, "destroy", "-t", str(self.topology), "--cleanup"]


def find_binary(which: Callable[[str], str | None] = shutil.which) -> str:
    for name in BINARIES:
        found = which(name)
        if found:
            return found
    raise TwinError(MISSING)


def container_name(lab: str, node: str, prefix: str = PREFIX) -> str:
    """The container containerlab makes for `node` (its `prefix` rule: "" none, "__lab-name" the lab's name)."""
    if prefix == "":
        return node
    if prefix == "__lab-name":
        return f"{lab}-{node}"
    return f"{prefix}-{lab}-{node}"


def parse_inspect(output: str, lab: str, prefix: str = PREFIX) -> dict[str, ClabContainer]:
    """`containerlab inspect --format json` -> {node: container} of lab `lab` (other labs are left out)."""
    found: dict[str, ClabContainer] = {}
    for entry in _entries(output):
        if entry.get("lab_name", lab) != lab:
            continue
        c = _container(entry, lab, prefix)
        if c.node in found:
            raise TwinError(f"containerlab reports two containers for node {c.node} of lab {lab}")
        found[c.node] = c
    return found


def _entries(output: str) -> list[dict]:
    """The container entries of any of the three shapes."""
    if not output.strip():
        return []  # older releases print nothing (and log "no containers found")
    try:
        doc = json.loads(output)
    except json.JSONDecodeError as e:
        raise TwinError(f"containerlab inspect printed no JSON ({e}): {output[:200]!r}") from None
    if isinstance(doc, dict) and isinstance(doc.get("containers"), list):
        groups = [doc["containers"]]
    elif isinstance(doc, dict):
        groups = list(doc.values())
    else:
        groups = [doc]
    if not all(isinstance(g, list) and all(isinstance(e, dict) for e in g) for g in groups):
        raise TwinError(f"containerlab inspect printed JSON of an unknown shape: {output[:200]!r}")
    return [e for g in groups for e in g]


def _container(entry: dict, lab: str, prefix: str) -> ClabContainer:
    name = str(entry.get("name", "")).lstrip("/")
    head = container_name(lab, "", prefix)
    if not name.startswith(head) or name == head:
        raise TwinError(
            f"container {name!r} of lab {lab} is not named {container_name(lab, 'NODE', prefix)}; "
            f"was the lab deployed from another file than twin's export?"
        )
    return ClabContainer(
        node=name[len(head) :],
        name=name,
        container_id=str(entry.get("container_id", "")),
        state=str(entry.get("state", "")),
        image=str(entry.get("image", "")),
    )
