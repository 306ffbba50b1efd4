"""NVIDIA Air topologies: what Air carries, and how twin kinds map onto it and back.

Air describes nodes (a `function` such as spine, leaf or server in DOT only, an
`os` image, cpu/memory/storage) and links between named interfaces. It has no
ASNs, loopbacks, MTUs, tenants, segments or addresses: those stay twin's, and
an imported topology gets twin's defaults for them. The two file formats
(air_json, air_dot) read into and write from the `AirTopology` here.

Kinds -> Air: spine, leaf, dpu keep their name as `function` and run Cumulus VX
(the FRR-based NOS Air simulates, closest to twin's FRR nodes; Air has no
BlueField image we could check, so a DPU is a Cumulus VX router with function
"dpu"); a host is a `server` on generic Ubuntu 24.04.
Air -> kinds: the role of a node is, first found: `roles` given by the user, its
`function`, a generic (Linux server) `os`, the leading word of its name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from twin.base.errors import Problem, TopologyError
from twin.kinds import KINDS
from twin.topology.model import Fabric
from twin.topology.problems import dotted, listing, quoted

CUMULUS_OS = "cumulus-vx-5.16.1"
SERVER_OS = "generic/ubuntu2404"
SWITCH_RESOURCES = {"cpu": 2, "memory": 4096, "storage": 10}  # memory MiB, storage GB, as Air's samples
SERVER_RESOURCES = {"cpu": 2, "memory": 2048, "storage": 10}
KIND_FUNCTION = {"host": "server"}  # every other kind is its own function
FUNCTION_KIND = {
    "spine": "spine",
    "leaf": "leaf",
    "tor": "leaf",
    "dpu": "dpu",
    "server": "host",
    "host": "host",
    "internet": "internet",
}
NAME_KIND = {
    "spine": "spine",
    "leaf": "leaf",
    "tor": "leaf",
    "dpu": "dpu",
    "server": "host",
    "host": "host",
    "srv": "host",
    "internet": "internet",
    "inet": "internet",
}
# Air's out-of-band network's own nodes: left out, twin's management network stands in for them (each
# switch's eth0 on a network of the lab's, the host at its gateway as Air's oob-mgmt-server is)
OOB_FUNCTIONS = ("oob-switch", "oob-server")


@dataclass(frozen=True)
class AirNode:
    name: str
    function: str | None = None
    os: str | None = None
    resources: dict = field(default_factory=dict)  # cpu, memory, storage as Air gives them


@dataclass(frozen=True)
class AirEnd:
    node: str
    interface: str | None


@dataclass(frozen=True)
class AirTopology:
    title: str
    nodes: dict[str, AirNode]
    links: tuple[tuple[AirEnd, AirEnd], ...]
    lines: dict[tuple[str, str | int], int | None] = field(default_factory=dict)  # ("nodes", n), ("links", i)


def from_fabric(fabric: Fabric) -> AirTopology:
    """A twin fabric in Air's terms."""
    nodes = {}
    for n in fabric.nodes.values():
        router = KINDS[n.kind].runs_frr
        nodes[n.name] = AirNode(
            n.name,
            KIND_FUNCTION.get(n.kind, n.kind),
            CUMULUS_OS if router else SERVER_OS,
            dict(SWITCH_RESOURCES if router else SERVER_RESOURCES),
        )
    links = tuple((AirEnd(link.a.node, link.a.port), AirEnd(link.b.node, link.b.port)) for link in fabric.links)
    return AirTopology(fabric.name, nodes, links)


def to_twin(air: AirTopology, source: str, roles: dict[str, str] | None = None, name: str | None = None) -> dict:
    """A twin topology document (for yaml.safe_dump, then twin.topology.load), or TopologyError
    naming every node without a twin kind and how to give one."""
    roles = roles or {}
    oob = {n for n, node in air.nodes.items() if node.function in OOB_FUNCTIONS}
    problems = _role_problems(air, roles, source)
    kinds = {}
    for n, node in air.nodes.items():
        if n in oob and n not in roles:
            continue
        kind = roles.get(n) or role_of(node)
        if kind is None:
            problems.append(Problem(source, dotted(("nodes", n)), _no_kind(node), air.lines.get(("nodes", n))))
        kinds[n] = kind
    problems += [
        Problem(
            source,
            "links",
            f"link {listing([_end(a)])} -- {listing([_end(b)])} names a node the file does not define",
            air.lines.get(("links", i)),
        )
        for i, (a, b) in enumerate(air.links)
        if a.node not in air.nodes or b.node not in air.nodes
    ]
    if problems:
        raise TopologyError(problems)
    links = [{"endpoints": [_end(a), _end(b)]} for a, b in air.links if a.node not in oob and b.node not in oob]
    return {
        "name": name or lab_name(air.title),
        "description": f"imported from NVIDIA Air: {source}",
        "nodes": {n: {"kind": k} for n, k in kinds.items()},
        "links": links,
    }


def doc_lines(air: AirTopology, doc: dict) -> dict[tuple, int]:
    """The line in the Air file of each node and link of `doc` (what `to_twin` made of `air`)."""
    lines = {("nodes", n): air.lines.get(("nodes", n)) for n in doc["nodes"]}
    kept = iter(enumerate(doc["links"]))
    j, link = next(kept, (None, None))
    for i, (a, b) in enumerate(air.links):  # doc's links are air's in order, the OOB network's left out
        if link is not None and link["endpoints"] == [_end(a), _end(b)]:
            lines[("links", j)] = air.lines.get(("links", i))
            j, link = next(kept, (None, None))
    return {k: v for k, v in lines.items() if v}


def role_of(node: AirNode) -> str | None:
    """The twin kind of an Air node, from its function, a generic server OS, or its name."""
    if node.function:
        return FUNCTION_KIND.get(node.function.lower()) or (node.function if node.function in KINDS else None)
    if node.os and node.os.startswith("generic/"):
        return "host"
    word = m.group() if (m := re.match(r"[a-z]*", node.name.lower())) else ""
    return NAME_KIND.get(word)


def lab_name(title: str) -> str:
    """An Air title as a twin lab name (1-16 of a-z 0-9 -)."""
    name = re.sub(r"[^a-z0-9-]+", "-", title.lower()).strip("-")[:16].strip("-")
    return name or "air"


def _end(e: AirEnd) -> str:
    return f"{e.node}:{e.interface}" if e.interface else e.node


def _no_kind(node: AirNode) -> str:
    what = (
        f"function {quoted(node.function)}" if node.function else f"os {quoted(node.os)}" if node.os else "no function"
    )
    return f"{what} has no twin kind; give it one with --role {listing([node.name])}=KIND (kinds: {', '.join(KINDS)})"


def _role_problems(air: AirTopology, roles: dict[str, str], source: str) -> list[Problem]:
    out = []
    for n, kind in roles.items():
        if n not in air.nodes:
            out.append(Problem(source, f"--role {n}", f"no node named {n!r}; nodes: {listing(air.nodes)}"))
        elif kind not in KINDS:
            out.append(Problem(source, f"--role {n}", f"unknown kind {kind!r}; known kinds: {', '.join(KINDS)}"))
    return out
