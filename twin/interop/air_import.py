"""`twin import`: an NVIDIA Air topology file (JSON or DOT) as a twin topology document.

Owns choosing the format by the file's suffix and handing the parsed Air
topology to twin.interop.air.to_twin; the result is a plain dict to write
with yaml.safe_dump and load with twin.topology.load.
"""

from __future__ import annotations

from pathlib import Path

from twin.base.errors import Problem, TopologyError
from twin.interop.air import AirTopology, doc_lines, to_twin
from twin.interop.air_dot import parse_air_dot
from twin.interop.air_json import parse_air_json
from twin.topology import files

PARSERS = {".json": parse_air_json, ".dot": parse_air_dot, ".gv": parse_air_dot}


def import_air(path: str | Path, roles: dict[str, str] | None = None, name: str | None = None) -> dict:
    """Air topology file -> twin topology document; `roles` ({node: kind}) places nodes Air does not."""
    return import_air_placed(path, roles, name)[0]


def import_air_placed(
    path: str | Path, roles: dict[str, str] | None = None, name: str | None = None
) -> tuple[dict, dict]:
    """`import_air`, and the line in the Air file of each node and link of the document."""
    air = read_air(path)
    doc = to_twin(air, str(path), roles=roles, name=name)
    return doc, doc_lines(air, doc)


def read_air(path: str | Path) -> AirTopology:
    path = Path(path)
    parse = PARSERS.get(path.suffix.lower())
    if parse is None:
        raise TopologyError([Problem(str(path), "", f"not an Air topology file: expected one of {', '.join(PARSERS)}")])
    return parse(files.read(path, files.AIR_JSON if parse is parse_air_json else files.AIR_DOT), str(path))


def parse_roles(specs: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`--role leaf1=leaf,spine=spine` (repeatable) -> {node: kind}."""
    roles: dict[str, str] = {}
    for spec in specs:
        for item in filter(None, (s.strip() for s in spec.split(","))):
            node, sep, kind = item.partition("=")
            if not sep or not node or not kind:
                raise TopologyError([Problem("--role", item, "expected NODE=KIND, e.g. --role leaf1=leaf")])
            roles[node.strip()] = kind.strip()
    return roles
