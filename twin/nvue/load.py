"""A startup.yaml read: NVUE's own file, a YAML list of `- header:`, `- set:` and `- unset:`
documents applied in order, into one checked tree, every problem with its file, line and
NVUE path (`leaf01/startup.yaml:31: interface.swp1.bridge.domain.br_default.access: 'x'
is not a VLAN id`), and one written as NVUE writes it (`dump`).

The YAML is read by `twin.topology.yaml_safe` with NVUE's limits (`files.NVUE`: 1 MiB of
UTF-8, 64 levels, 100,000 values, no tags, anchors or duplicate keys). YAML 1.1 reads `on`/`off` as
booleans, which NVUE means; keys are kept as text ('10' stays '10', and `10:` becomes '10').
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from twin.base.errors import Problem, TopologyError
from twin.nvue.schema import API, VERSION
from twin.nvue.tree import Finding, check, patch, show, unpatch
from twin.nvue.tree import Path as NvPath
from twin.topology import files
from twin.topology.problems import Path_, listing, quoted
from twin.topology.yaml_safe import parse_yaml, read_yaml, read_yaml_bytes

DOCS = ("header", "set", "unset")


@dataclass
class NvueFile:
    """One node's NVUE configuration: the tree it declares and where each place came from."""

    source: str  # the file (or what made the tree: an export, an nv set)
    tree: dict
    header: dict = field(default_factory=dict)
    found: list[Finding] = field(default_factory=list)  # not-emulated places (errors are refused)
    lines: dict[NvPath, int] = field(default_factory=dict)

    def line(self, path: NvPath) -> int | None:
        """The line that last set `path` (or the deepest place above it that a line set)."""
        for n in range(len(path), -1, -1):
            if path[:n] in self.lines:
                return self.lines[path[:n]]
        return None

    @property
    def not_emulated(self) -> list[NvPath]:
        return [f.path for f in self.found if f.stored]

    def problem(self, path: NvPath, message: str) -> Problem:
        return Problem(self.source, show(path), message, self.line(path))


def read(path: str | Path, text: str | None = None, under: str | Path | None = None) -> NvueFile:
    """A startup.yaml, applied and checked; TopologyError with every problem at once. `text`: the
    file as a config directory's reader already read it; `under`: the directory `path` (relative
    to it) must not leave through a link."""
    file = files.shown(path, under)
    return _file(
        file, *(parse_yaml(text, file, files.NVUE) if text is not None else read_yaml(path, files.NVUE, under))
    )


def read_bytes(data: bytes, source: str) -> NvueFile:
    """The same for a file's bytes received otherwise (`nv config patch FILE`, a request body);
    `source` names it in every problem."""
    return _file(source, *read_yaml_bytes(data, source, files.NVUE))


def _file(file: str, data: Any, ylines: dict[Path_, int]) -> NvueFile:
    problems: list[Problem] = []
    tree, header, lines = documents(data, ylines, file, problems)
    nf = NvueFile(file, {}, header, [], lines)
    tree, found = check(tree)
    nf.tree, nf.found = tree, [f for f in found if f.stored]
    problems += [nf.problem(f.path, f.message) for f in found if not f.stored]
    if problems:
        raise TopologyError(problems)
    return nf


def from_tree(tree: Any, source: str) -> NvueFile:
    """A tree made in memory (an export, the live `nv` layer), checked as a file is."""
    nf = NvueFile(source, {})
    nf.tree, found = check(tree)
    nf.found = [f for f in found if f.stored]
    errors = [Problem(source, show(f.path), f.message) for f in found if not f.stored]
    if errors:
        raise TopologyError(errors)
    return nf


def documents(
    data: Any, ylines: dict[Path_, int], file: str, problems: list[Problem], tree: dict | None = None
) -> tuple[dict, dict, dict[NvPath, int]]:
    """The tree the documents make in order (from `tree`: `nv config patch`), the header, and the
    line of every place set."""
    tree = {} if tree is None else tree
    header: dict = {}
    lines: dict[NvPath, int] = {}
    if data is None:
        return tree, header, lines
    if not isinstance(data, list):
        problems.append(
            Problem(
                file,
                "",
                f"a startup.yaml is a list of documents (- header:, - set:, - unset:); "
                f"this file holds {quoted(type(data).__name__)}",
                ylines.get(()),
            )
        )
        return tree, header, lines
    for i, doc in enumerate(data):
        at = ylines.get((i,))
        if not isinstance(doc, dict) or len(doc) != 1 or next(iter(doc)) not in DOCS:
            keys = listing([str(k) for k in doc]) if isinstance(doc, dict) else quoted(doc)
            problems.append(
                Problem(
                    file, f"[{i}]", f"each document is one of - header:, - set:, - unset:; got {keys or 'nothing'}", at
                )
            )
            continue
        kind, body = next(iter(doc.items()))
        if body is not None and not isinstance(body, dict):
            problems.append(Problem(file, f"[{i}].{kind}", f"{quoted(body)} is not a mapping", at))
            continue
        body = body or {}
        if kind == "header":
            header = body
            problems += _header(body, file, at)
        elif kind == "set":
            patch(tree, body)
            _lines(ylines, (i, "set"), lines)
        else:
            unpatch(tree, body)
    return tree, header, lines


def _header(h: dict, file: str, line: int | None) -> list[Problem]:
    api = h.get("nvue-api-version")
    if api is not None and api != API:
        return [
            Problem(
                file,
                "header.nvue-api-version",
                f"{quoted(api)}: twin emulates NVUE's {API} API ({VERSION}, DOCA HBN)",
                line,
            )
        ]
    return []


def _lines(ylines: dict[Path_, int], prefix: Path_, out: dict[NvPath, int]) -> None:
    n = len(prefix)
    for p, line in ylines.items():
        if p[:n] == prefix and len(p) > n:
            out[tuple(str(k) for k in p[n:])] = line


def dump(tree: dict, header: dict | None = None) -> str:
    """A tree as NVUE writes startup.yaml: a header and one set document, `on`/`off` for booleans."""
    head = header or {"model": "twin", "nvue-api-version": API, "rev-id": 1.0, "version": f"{VERSION} (twin)"}
    return yaml_text([{"header": head}, {"set": tree}])


def yaml_text(doc: object) -> str:
    """A document as NVUE writes YAML: keys in their order, `on`/`off` for booleans."""
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=120)


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(bool, lambda d, v: d.represent_scalar("tag:yaml.org,2002:bool", "on" if v else "off"))
