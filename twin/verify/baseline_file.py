"""A baseline file read back: the JSON `twin baseline record` writes, checked to be one.

Read as every JSON file a user gives twin is (twin.topology.json_safe: size, UTF-8,
nesting, no NaN or duplicate keys), then its shape is checked before anything uses
it: a node, VRF, session, route or VNI that is not what `record` writes is named with
its place and line, so the comparison never meets a value it cannot compare or print.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from twin.base.errors import Problem, TopologyError, TwinError
from twin.topology import files
from twin.topology.json_safe import read_json
from twin.topology.problems import Path_, Problems
from twin.topology.read import kind_of
from twin.verify.baseline import FORMAT

SCALAR = (str, int, float, bool, type(None))
_SESSION = {"state": (str, type(None)), "accepted": (int, type(None)), "sent": (int, type(None))}
_ROUTE = {"protocol": (str, type(None)), "nexthops": list}


def load_baseline(path: str | Path) -> dict[str, Any]:
    """A baseline file written by `twin baseline record`, or TwinError saying what it is not
    (TopologyError, with every place, for one whose shape is wrong)."""
    try:
        doc, _ = read_json(path, files.BASELINE, places=False)
    except TopologyError as e:
        (p, *_) = e.problems
        raise TwinError(str(replace(p, message=f"not a twin baseline ({p.message})"))) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("nodes"), dict):
        raise TwinError(
            f'{path}: not a twin baseline (no "format": "{FORMAT}" with nodes); '
            "`twin baseline record LAB -o FILE` writes one"
        )
    found = shape(doc)
    if found:
        _, lines = read_json(path, files.BASELINE, places=True)  # the lines, now that they are needed
        problems = Problems(str(path), lines)
        for at, message in found[:100]:
            problems.add(at, message)
        if len(found) > 100:
            problems.items.append(Problem(str(path), "", f"... and {len(found) - 100} more"))
        problems.raise_if_any()
    return doc


def shape(doc: dict) -> list[tuple[Path_, str]]:
    """What in a baseline is not as `record` writes it: (place, what is wrong)."""
    out: list[tuple[Path_, str]] = []
    for key in ("lab", "recorded"):
        if not isinstance(doc.get(key, ""), str):
            out.append(((key,), f"must be text; got {kind_of(doc[key])}"))
    for node, state in doc["nodes"].items():
        at = ("nodes", node)
        if not _mapping(state, at, "a node's state {sessions, routes, vnis}", out):
            continue
        for section, check in (("sessions", _sessions), ("routes", _routes), ("vnis", _vnis)):
            value = state.get(section)
            if value is not None and _mapping(value, at + (section,), "a mapping", out):
                check(value, at + (section,), out)
    return out


def _sessions(sessions: dict, at: Path_, out: list) -> None:
    for vrf, peers in sessions.items():
        if _mapping(peers, at + (vrf,), 'a mapping of "AFI PEER" -> {state, accepted, sent}', out):
            for key, s in peers.items():
                _fields(s, at + (vrf, key), _SESSION, out)


def _routes(routes: dict, at: Path_, out: list) -> None:
    for vrf, table in routes.items():
        if _mapping(table, at + (vrf,), "a mapping of prefix -> {protocol, nexthops}", out):
            for prefix, r in table.items():
                if _fields(r, at + (vrf, prefix), _ROUTE, out) and not all(
                    isinstance(h, str) for h in r.get("nexthops") or []
                ):
                    out.append((at + (vrf, prefix, "nexthops"), "must be a list of next hops, each text"))


def _vnis(vnis: dict, at: Path_, out: list) -> None:
    for vni, v in vnis.items():
        if not _mapping(v, at + (vni,), "a mapping {type, vrf, ...}", out):
            continue
        if not isinstance(v.get("vrf"), (str, type(None))):
            out.append((at + (vni, "vrf"), f"must be text; got {kind_of(v['vrf'])}"))
        for k, value in v.items():
            if not (isinstance(value, SCALAR) or isinstance(value, list) and all(isinstance(i, str) for i in value)):
                out.append((at + (vni, k), f"must be a number, text or a list of text; got {kind_of(value)}"))


def _mapping(value: Any, at: Path_, what: str, out: list) -> bool:
    if isinstance(value, dict):
        return True
    out.append((at, f"must be {what}; got {kind_of(value)}"))
    return False


def _fields(value: Any, at: Path_, types: dict, out: list) -> bool:
    if not _mapping(value, at, "a mapping {" + ", ".join(types) + "}", out):
        return False
    wrong = [k for k, t in types.items() if k in value and not isinstance(value[k], t)]
    out += [(at + (k,), f"has the wrong type; got {kind_of(value[k])}") for k in wrong]
    return not wrong
