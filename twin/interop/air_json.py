"""NVIDIA Air's JSON topology format (the one Air recommends): writing and reading it.

The file is `{"format": "JSON", "title", "ztp", "content": {"nodes": {NAME: {cpu,
memory, storage, os, ...}}, "links": [[{"node", "interface"}, {...}], ...]}}`;
Air's API takes the same `nodes`/`links` at the top level, which is read too.
JSON nodes carry no `function`: on import a node's role comes from its `os`
or name (twin.interop.air.role_of) unless `--role` gives it. `oob` and `netq`
(Air's management network and NetQ server) have no twin counterpart and are
not read; an `outbound` link (to the Internet) is refused.
"""
from __future__ import annotations

import json

from twin.errors import Problem, TopologyError
from twin.topology.model import Fabric
from twin.interop.air import AirEnd, AirNode, AirTopology, from_fabric


def export_air_json(fabric: Fabric) -> str:
    """The fabric as an Air JSON topology file."""
    air = from_fabric(fabric)
    nodes = {n.name: {**n.resources, "os": n.os} for n in air.nodes.values()}
    links = [[{"interface": a.interface, "node": a.node}, {"interface": b.interface, "node": b.node}]
             for a, b in air.links]
    doc = {"format": "JSON", "title": air.title, "ztp": None, "content": {"nodes": nodes, "links": links}}
    return json.dumps(doc, indent=4) + "\n"


def parse_air_json(text: str, source: str) -> AirTopology:
    """An Air JSON topology (file or API form), or TopologyError with every problem."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise TopologyError([Problem(source, "", f"not JSON: {e.msg}", e.lineno)]) from None
    if not isinstance(doc, dict):
        raise TopologyError([Problem(source, "", "an Air topology is a JSON object")])
    content, where = (doc["content"], "content.") if isinstance(doc.get("content"), dict) else (doc, "")
    problems: list[Problem] = []
    nodes = _nodes(content.get("nodes"), source, where, problems)
    links = _links(content.get("links", []), source, where, problems)
    if problems:
        raise TopologyError(problems)
    return AirTopology(str(doc.get("title") or source), nodes, tuple(links))


def _nodes(raw, source: str, where: str, problems: list[Problem]) -> dict[str, AirNode]:
    if not isinstance(raw, dict) or not raw:
        problems.append(Problem(source, f"{where}nodes", "an object of nodes by name is required"))
        return {}
    out = {}
    for name, attrs in raw.items():
        if not isinstance(attrs, dict):
            problems.append(Problem(source, f"{where}nodes.{name}", "a node is an object (os, cpu, memory...)"))
            continue
        resources = {k: attrs[k] for k in ("cpu", "memory", "storage") if k in attrs}
        out[name] = AirNode(name, attrs.get("function"), attrs.get("os"), resources)
    return out


def _links(raw, source: str, where: str, problems: list[Problem]) -> list[tuple[AirEnd, AirEnd]]:
    if not isinstance(raw, list):
        problems.append(Problem(source, f"{where}links", "a list of links is required"))
        return []
    out = []
    for i, link in enumerate(raw):
        path = f"{where}links[{i}]"
        if isinstance(link, list) and any(isinstance(e, str) for e in link):
            problems.append(Problem(source, path, "an outbound link (to external networks) has no twin "
                                                  "counterpart; remove it"))
        elif (isinstance(link, list) and len(link) == 2
              and all(isinstance(e, dict) and isinstance(e.get("node"), str) for e in link)):
            out.append((AirEnd(link[0]["node"], link[0].get("interface")),
                        AirEnd(link[1]["node"], link[1].get("interface"))))
        else:
            problems.append(Problem(source, path, 'a link is [{"node", "interface"}, {"node", "interface"}]'))
    return out
