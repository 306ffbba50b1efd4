"""Read a topology file: safe YAML with line numbers, then structure per node/link/tenant.

Structure errors of one node or link do not hide the others: each entry is
validated on its own and every problem is collected with its place in the file.
What can be in the file at all (size, encoding, nesting, anchors) is the
business of `yaml_safe`.
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from twin.topology.problems import Path_, Problems, quoted
from twin.topology.schema import CongestionSpec, Defaults, LinkSpec, MgmtSpec, NodeSpec, TenantSpec, TopologySpec
from twin.topology.yaml_safe import read_yaml

M = TypeVar("M", bound=BaseModel)

TOP_KEYS = ", ".join(TopologySpec.model_fields)
_MUST_BE = {
    "bool_type": "must be true or false",
    "string_type": "must be text",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
}


def load_spec(path: str | Path) -> tuple[TopologySpec, Problems, set[str]]:
    """Parse and structurally validate a topology file.

    Returns the spec of everything that was well-formed, the problems found so
    far (the caller adds semantic ones) and the names of malformed nodes (so
    links to them are not reported twice).
    """
    data, lines = read_yaml(path)
    return spec_of(data, lines, str(path))


def spec_of(data: Any, lines: dict, source: str) -> tuple[TopologySpec, Problems, set[str]]:
    """`load_spec` of a document already read (an imported one: `lines` may be empty)."""
    problems = Problems(source, lines)
    if not isinstance(data, dict):
        what = "no topology (it is empty, only comments or null)" if data is None else kind_of(data)
        problems.add((), f"the file holds {what}; a topology is a mapping with keys: {TOP_KEYS}")
        problems.raise_if_any()

    for key in data:
        if key not in TopologySpec.model_fields:
            problems.add((str(key),), f"unknown field; allowed: {TOP_KEYS}")
    name = data.get("name")
    if "name" not in data:
        problems.add(("name",), "required: the lab name")
    elif not isinstance(name, str):
        problems.add(("name",), f"the lab name must be text; got {quoted(name)}")
    description = data.get("description") or ""
    if not isinstance(description, str):
        problems.add(("description",), f"must be text; got {quoted(description)}")
    raw_defaults = _container(data, "defaults", dict, "must be a mapping of defaults", problems)
    defaults = validate_model(Defaults, raw_defaults, ("defaults",), problems) or Defaults()
    raw_mgmt = _container(data, "mgmt", dict, "must be a mapping: {subnet, gateway, password, enabled}", problems)
    mgmt = validate_model(MgmtSpec, raw_mgmt, ("mgmt",), problems) or _sound_fields(MgmtSpec, raw_mgmt)
    nodes, broken = _nodes(data, problems)
    vtep = "dpu" if data.get("vtep") is None else data["vtep"]

    return (
        TopologySpec.model_construct(
            name=name if isinstance(name, str) else "",
            description=description if isinstance(description, str) else "",
            defaults=defaults,
            mgmt=mgmt,
            nodes=nodes,
            links=_links(data, problems),  # None marks a malformed link, kept so indexes match the file
            vtep=vtep
            if isinstance(vtep, str) or (isinstance(vtep, list) and vtep and all(isinstance(k, str) for k in vtep))
            else quoted(vtep),
            tenants=_tenants(data, problems),
            congestion=_congestion(data, problems),
            checks=_container(data, "checks", list, "must be a list of checks, each {name, type, ...}", problems),
        ),
        problems,
        broken,
    )


def _sound_fields(model: type[BaseModel], raw: dict) -> Any:
    """`model` of the fields of `raw` that are sound by themselves (its others reported already): the
    rules across fields still judge those, without a wrong one hiding them or being reported twice."""
    sound = {}
    for k, v in raw.items():
        try:
            model.model_validate({k: v})
        except ValidationError:
            continue
        sound[k] = v
    return model.model_validate(sound)


def _nodes(data: dict, problems: Problems) -> tuple[dict[str, NodeSpec], set[str]]:
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, dict) or not raw_nodes:
        got = "" if raw_nodes is None or raw_nodes == {} else f"; got {kind_of(raw_nodes)}"
        problems.add(("nodes",), "required: a mapping of node name -> {kind: ...}" + got)
        raw_nodes = {}
    nodes: dict[str, NodeSpec] = {}
    broken: set[str] = set()
    for nname, raw in _named(raw_nodes, ("nodes",), problems):
        spec = validate_model(NodeSpec, raw, ("nodes", nname), problems)
        if spec is None:
            broken.add(nname)
        else:
            nodes[nname] = spec
    return nodes, broken


def _links(data: dict, problems: Problems) -> list[LinkSpec | None]:
    raw_links = _container(data, "links", list, "must be a list of {endpoints: [a, b]}", problems)
    links: list[LinkSpec | None] = []
    for i, raw in enumerate(raw_links):
        if isinstance(raw, list):  # shorthand: - [spine1, leaf1]
            raw = {"endpoints": raw}
        links.append(validate_model(LinkSpec, raw, ("links", i), problems))
    return links


def _congestion(data: dict, problems: Problems) -> list[CongestionSpec | None]:
    raw = _container(data, "congestion", list, 'must be a list of {port: "node:port", above: RATE}', problems)
    return [validate_model(CongestionSpec, r, ("congestion", i), problems) for i, r in enumerate(raw)]


def _tenants(data: dict, problems: Problems) -> dict[str, TenantSpec]:
    raw_tenants = _container(
        data, "tenants", dict, "must be a mapping of tenant name -> {l3vni, segments, attachments}", problems
    )
    tenants: dict[str, TenantSpec] = {}
    for tname, raw in _named(raw_tenants, ("tenants",), problems):
        if isinstance(raw, dict) and isinstance(raw.get("segments"), dict):
            raw = {**raw, "segments": dict(_named(raw["segments"], ("tenants", tname, "segments"), problems))}
        spec = validate_model(TenantSpec, raw, ("tenants", tname), problems)
        if spec is not None:
            tenants[tname] = spec
    return tenants


def _container(data: dict, key: str, kind: type, wanted: str, problems: Problems) -> Any:
    """data[key] when it is a `kind` (absent or null: empty), else report `wanted` and return it empty."""
    value = data.get(key)
    if value is None:
        return kind()
    if not isinstance(value, kind):
        problems.add((key,), f"{wanted}; got {kind_of(value)}")
        return kind()
    return value


def _named(raw: dict, at: Path_, problems: Problems) -> list[tuple[str, Any]]:
    """(name, value) of a mapping of names: keys as text (a name `1` is '1'), each name once."""
    seen: dict[str, Any] = {}
    for key, value in raw.items():
        name = key if isinstance(key, str) else str(key)
        if name in seen:
            problems.add(at + (name,), f"the name {quoted(name)} is given twice (once as {quoted(key)})")
            continue
        seen[name] = value
    return list(seen.items())


def kind_of(value: object) -> str:
    if isinstance(value, bool):
        return f"a boolean ({quoted(value)})"
    if isinstance(value, (int, float)):
        return f"a number ({quoted(value)})"
    if isinstance(value, str):
        return f"text ({quoted(value)})"
    containers: dict[type, str] = {list: "a list", dict: "a mapping"}
    return containers.get(type(value), quoted(value))


def validate_model(model: type[M], raw: Any, at: Path_, problems: Problems) -> M | None:
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        for err in e.errors():
            inner = tuple(p for p in err["loc"] if p != "[key]")
            loc, kind = at + inner, err["type"]
            if kind == "extra_forbidden":
                problems.add(loc, f"unknown field; allowed: {_fields_at(model, inner[:-1])}")
            elif kind == "missing":
                problems.add(loc, "required field is missing")
            elif kind == "literal_error":
                problems.add(loc, f"must be {err['ctx']['expected']}; got {quoted(err.get('input'))}")
            elif kind == "model_type":
                problems.add(
                    loc, f"must be a mapping with fields: {_fields_at(model, inner)}; got {kind_of(err.get('input'))}"
                )
            else:
                problems.add(loc, f"{_MUST_BE.get(kind, err['msg'])}; got {quoted(err.get('input'))}")
        return None


def _fields_at(model: type[BaseModel], loc: tuple) -> str:
    """The fields allowed at `loc` inside `model` (a nested model's, not the outer one's)."""
    current: Any = model
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel) and part in current.model_fields:
            current = current.model_fields[part].annotation
        elif typing.get_origin(current) in (list, dict):
            current = typing.get_args(current)[-1]
        else:
            return ""
        if typing.get_origin(current) in (typing.Union, types.UnionType):  # X | None
            current = next(a for a in typing.get_args(current) if a is not type(None))
    if not (isinstance(current, type) and issubclass(current, BaseModel)):
        return ""
    return ", ".join(f.alias or n for n, f in current.model_fields.items())  # as written: `from`, not `from_`
