"""NVIDIA Air's JSON topology format (the one Air recommends): writing and reading it.

The file is `{"format": "JSON", "title", "ztp", "content": {"nodes": {NAME: {cpu,
memory, storage, os, ...}}, "links": [[{"node", "interface"}, {...}], ...]}}`;
Air's API takes the same `nodes`/`links` at the top level, which is read too.
JSON nodes carry no `function`: on import a node's role comes from its `os`
or name (twin.interop.air.role_of) unless `--role` gives it. `oob` (Air's
management network: twin's own stands in for it) and `netq` (its NetQ server,
with no twin counterpart) are not read; an `outbound` link (to the Internet) is refused.
"""

from __future__ import annotations

import json

from twin.base.errors import Problem, TopologyError
from twin.interop.air import AirEnd, AirNode, AirTopology, from_fabric
from twin.topology import files, json_safe
from twin.topology.model import Fabric
from twin.topology.problems import Path_, Problems, dotted
from twin.topology.read import kind_of


def export_air_json(fabric: Fabric) -> str:
    """The fabric as an Air JSON topology file."""
    air = from_fabric(fabric)
    nodes = {n.name: {**n.resources, "os": n.os} for n in air.nodes.values()}
    links = [
        [{"interface": a.interface, "node": a.node}, {"interface": b.interface, "node": b.node}] for a, b in air.links
    ]
    doc = {"format": "JSON", "title": air.title, "ztp": None, "content": {"nodes": nodes, "links": links}}
    return json.dumps(doc, indent=4) + "\n"


def parse_air_json(text: str, source: str) -> AirTopology:
    """An Air JSON topology (file or API form), or TopologyError with every problem, each at its line."""
    try:
        doc, lines, found = json_safe.parse(text, files.AIR_JSON)
    except files.Refused as e:
        raise TopologyError([e.problem(source)]) from None
    problems = Problems(source, lines)  # what JSON let through (duplicates, NaN) and the rest, together
    problems.items += [Problem(source, dotted(place), message, line) for message, line, place in found]
    if not isinstance(doc, dict):
        problems.add((), f"an Air topology is a JSON object with nodes and links; got {kind_of(doc)}")
        problems.raise_if_any()
    content, at = (doc["content"], ("content",)) if isinstance(doc.get("content"), dict) else (doc, ())
    nodes = _nodes(content.get("nodes"), at + ("nodes",), problems)
    links = _links(content.get("links", []), at + ("links",), problems)
    problems.raise_if_any()
    title = doc.get("title")
    places: dict[tuple[str, str | int], int | None] = {("nodes", n): lines.get(at + ("nodes", n)) for n in nodes}
    places.update({("links", i): lines.get(at + ("links", i)) for i in range(len(links))})
    return AirTopology(title if isinstance(title, str) and title else source, nodes, tuple(links), places)


def _nodes(raw: object, at: Path_, problems: Problems) -> dict[str, AirNode]:
    if not isinstance(raw, dict) or not raw:
        problems.add(at, "an object of nodes by name is required" + (f"; got {kind_of(raw)}" if raw else ""))
        return {}
    out = {}
    for name, attrs in raw.items():
        if not isinstance(attrs, dict):
            problems.add(at + (name,), f"a node is an object (os, cpu, memory...); got {kind_of(attrs)}")
            continue
        wrong = [k for k in ("function", "os") if attrs.get(k) is not None and not isinstance(attrs[k], str)]
        for k in wrong:
            problems.add(at + (name, k), f"must be text; got {kind_of(attrs[k])}")
        resources = {k: attrs[k] for k in ("cpu", "memory", "storage") if k in attrs}
        if not wrong:
            out[name] = AirNode(name, attrs.get("function"), attrs.get("os"), resources)
    return out


def _links(raw: object, at: Path_, problems: Problems) -> list[tuple[AirEnd, AirEnd]]:
    if not isinstance(raw, list):
        problems.add(at, f"a list of links is required; got {kind_of(raw)}")
        return []
    out = []
    for i, link in enumerate(raw):
        if isinstance(link, list) and any(isinstance(e, str) for e in link):
            problems.add(at + (i,), "an outbound link (to external networks) has no twin counterpart; remove it")
        elif isinstance(link, list) and len(link) == 2 and all(_end(e) for e in link):
            out.append(
                (AirEnd(link[0]["node"], link[0].get("interface")), AirEnd(link[1]["node"], link[1].get("interface")))
            )
        else:
            problems.add(at + (i,), 'a link is [{"node", "interface"}, {"node", "interface"}], each a text')
    return out


def _end(e: object) -> bool:
    return (
        isinstance(e, dict)
        and isinstance(e.get("node"), str)
        and e["node"] != ""
        and isinstance(e.get("interface"), (str, type(None)))
    )
