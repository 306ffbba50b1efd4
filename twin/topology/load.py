"""Read a topology file: YAML with line numbers, then structure per node/link.

Structure errors of one node or link do not hide the others: each entry is
validated on its own and every problem is collected with its place in the file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from twin.errors import Problem, TopologyError
from twin.topology.schema import Defaults, LinkSpec, NodeSpec, TenantSpec, TopologySpec

Path_ = tuple[str | int, ...]


class Problems:
    """Collects problems of one file, placing each at its line when known."""

    def __init__(self, file: str, lines: dict[Path_, int]):
        self.file, self.lines, self.items = file, lines, []

    def add(self, path: Path_, message: str) -> None:
        line = None
        for i in range(len(path), -1, -1):  # nearest enclosing place that has a line
            if path[:i] in self.lines:
                line = self.lines[path[:i]]
                break
        self.items.append(Problem(self.file, dotted(path), message, line))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise TopologyError(self.items)


def dotted(path: Path_) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in path).replace(".[", "[")


def parse_yaml(text: str, file: str) -> tuple[Any, dict[Path_, int]]:
    """Parse YAML; return data and the line of every mapping key / list item."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        msg = " ".join(str(getattr(e, "problem", None) or e).split())
        raise TopologyError([Problem(file, "", f"not valid YAML: {msg}",
                                     mark.line + 1 if mark else None)]) from None
    lines: dict[Path_, int] = {}

    def walk(n: yaml.Node, path: Path_) -> None:
        lines.setdefault(path, n.start_mark.line + 1)
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                key = k.value
                lines[path + (key,)] = k.start_mark.line + 1
                walk(v, path + (key,))
        elif isinstance(n, yaml.SequenceNode):
            for i, v in enumerate(n.value):
                walk(v, path + (i,))

    if node is not None:
        walk(node, ())
    return data, lines


def _validate(model: type[BaseModel], raw: Any, at: Path_, problems: Problems):
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        allowed = ", ".join(model.model_fields)
        for err in e.errors():
            loc = at + tuple(err["loc"])
            if err["type"] == "extra_forbidden":
                problems.add(loc, f"unknown field; allowed: {allowed}")
            elif err["type"] == "missing":
                problems.add(loc, "required field is missing")
            elif err["type"] == "model_type":
                problems.add(loc, f"must be a mapping with fields: {allowed}")
            else:
                problems.add(loc, f"{err['msg']} (got {err.get('input')!r})")
        return None


def load_spec(path: str | Path) -> tuple[TopologySpec, Problems, set[str]]:
    """Parse and structurally validate a topology file.

    Returns the spec of everything that was well-formed, the problems found so
    far (the caller adds semantic ones) and the names of malformed nodes (so
    links to them are not reported twice).
    """
    file = str(path)
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise TopologyError([Problem(file, "", f"cannot read the topology file: {e.strerror}")]) from None
    data, lines = parse_yaml(text, file)
    problems = Problems(file, lines)
    if not isinstance(data, dict):
        problems.add((), "a topology is a mapping with keys: " + ", ".join(TopologySpec.model_fields))
        problems.raise_if_any()

    for key in data:
        if key not in TopologySpec.model_fields:
            problems.add((key,), "unknown field; allowed: " + ", ".join(TopologySpec.model_fields))
    name = data.get("name")
    if not isinstance(name, str):
        problems.add(("name",), "required: the lab name (a string)")
    defaults = _validate(Defaults, data.get("defaults") or {}, ("defaults",), problems) or Defaults()

    raw_nodes = data.get("nodes")
    nodes: dict[str, NodeSpec] = {}
    broken: set[str] = set()
    if not isinstance(raw_nodes, dict) or not raw_nodes:
        problems.add(("nodes",), "required: a mapping of node name -> {kind: ...}")
        raw_nodes = {}
    for nname, raw in raw_nodes.items():
        spec = _validate(NodeSpec, raw, ("nodes", str(nname)), problems)
        if spec is None:
            broken.add(str(nname))
        else:
            nodes[str(nname)] = spec

    raw_links = data.get("links") or []
    links: list[LinkSpec | None] = []
    if not isinstance(raw_links, list):
        problems.add(("links",), "must be a list of {endpoints: [a, b]}")
        raw_links = []
    for i, raw in enumerate(raw_links):
        if isinstance(raw, list):  # shorthand: - [spine1, leaf1]
            raw = {"endpoints": raw}
        links.append(_validate(LinkSpec, raw, ("links", i), problems))

    raw_tenants = data.get("tenants") or {}
    tenants: dict[str, TenantSpec] = {}
    if not isinstance(raw_tenants, dict):
        problems.add(("tenants",), "must be a mapping of tenant name -> {l3vni, segments, attachments}")
        raw_tenants = {}
    for tname, raw in raw_tenants.items():
        spec_t = _validate(TenantSpec, raw, ("tenants", str(tname)), problems)
        if spec_t is not None:
            tenants[str(tname)] = spec_t
    vtep = data.get("vtep", "dpu")

    spec = TopologySpec.model_construct(
        name=name if isinstance(name, str) else "",
        description=str(data.get("description") or ""),
        defaults=defaults,
        nodes=nodes,
        links=links,  # None marks a malformed link, kept so indexes match the file
        vtep=vtep if isinstance(vtep, str) else repr(vtep),
        tenants=tenants,
    )
    return spec, problems, broken
