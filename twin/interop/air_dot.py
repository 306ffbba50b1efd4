"""NVIDIA Air's DOT topology format: writing it, and reading the subset Air uses.

Air's DOT files are Graphviz graphs of a fixed shape: `graph "Title" { ... }`
with node statements carrying string attributes (`function`, `os`, `cpu`,
`memory`, `storage`, ...) and edges between `"node":"interface"` endpoints.
A small parser reads exactly that (quoted or bare IDs, attribute lists,
`node [...]` defaults, edge chains, comments) and reports anything else with
its line, instead of a general Graphviz library: nothing of DOT beyond this
subset means anything to Air or twin, and twin's errors stay one style.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from twin.base.errors import Problem, TopologyError
from twin.interop.air import AirEnd, AirNode, AirTopology, from_fabric
from twin.topology import files
from twin.topology.model import Fabric
from twin.topology.problems import quoted

_TOKEN = re.compile(
    r"""
    (?P<space>[ \t\r]+) | (?P<newline>\n) | (?P<comment>//[^\n]*|/\*.*?\*/|^\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*") | (?P<edge>--|->) | (?P<id>[A-Za-z0-9_.]+) | (?P<punct>[{}\[\]=,;:])
""",
    re.X | re.S | re.M,
)


@dataclass(frozen=True)
class Token:
    kind: str  # string, id, edge, punct, end
    text: str  # the value (unquoted for strings)
    line: int
    column: int = 0


def export_air_dot(fabric: Fabric) -> str:
    """The fabric as an Air DOT topology file."""
    air = from_fabric(fabric)
    lines = [f"graph {_q(air.title)} {{"]
    for n in air.nodes.values():
        attrs = {"function": n.function, "os": n.os, **{k: str(v) for k, v in n.resources.items()}}
        lines.append(f"  {_q(n.name)} [ " + " ".join(f"{k}={_q(v)}" for k, v in attrs.items()) + " ]")
    lines += [f"  {_q(a.node)}:{_q(a.interface)} -- {_q(b.node)}:{_q(b.interface)}" for a, b in air.links]
    return "\n".join(lines + ["}"]) + "\n"


def parse_air_dot(text: str, source: str) -> AirTopology:
    """An Air DOT topology, or TopologyError naming the line that is not Air's DOT."""
    try:
        return _Parser(tokens(text, source), source).graph()
    except _Bad as e:
        raise TopologyError([Problem(source, "", e.message, e.tok.line, e.tok.column)]) from None


class _Bad(Exception):
    def __init__(self, message: str, tok: Token):
        super().__init__(message)
        self.message, self.tok = message, tok


def tokens(text: str, source: str, limit: int = files.AIR_DOT.max_values) -> list[Token]:
    """The file's tokens, each with its line and column; at most `limit` of them."""
    out, line, start, pos = [], 1, 0, 0  # start: where the current line starts
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise _Bad(f"unexpected character {quoted(text[pos])}", Token("", "", line, pos - start + 1))
        kind, value = m.lastgroup, m.group()
        if kind == "string":
            out.append(Token("string", re.sub(r"\\(.)", r"\1", value[1:-1]), line, pos - start + 1))
        elif kind in ("id", "edge", "punct"):
            out.append(Token(kind, value, line, pos - start + 1))
        if len(out) > limit:
            raise _Bad(
                f"the file holds more than {limit} names, values and punctuation: {files.AIR_DOT.values_hint}; "
                "it was not read further",
                out[-1],
            )
        if "\n" in value:
            line += value.count("\n")
            start = pos + value.rindex("\n") + 1
        pos = m.end()
    return out + [Token("end", "", line, pos - start + 1)]


class _Parser:
    """graph := [strict] (graph|digraph) [ID] { stmt* }; stmt := node | edge | default | ID = ID."""

    def __init__(self, toks: list[Token], source: str):
        self.toks, self.i, self.source = toks, 0, source
        self.attrs: dict[str, dict[str, str]] = {}  # node -> its attributes, in order of appearance
        self.links: list[tuple[AirEnd, AirEnd]] = []
        self.defaults: dict[str, str] = {}
        self.lines: dict[tuple[str, str | int], int | None] = {}  # ("nodes", name), ("links", i) -> line

    def graph(self) -> AirTopology:
        if self._peek().text == "strict":
            self._next()
        if self._next().text not in ("graph", "digraph"):
            raise _Bad('an Air DOT file starts with: graph "Title" {', self.toks[self.i - 1])
        title = self._next().text if self._peek().kind in ("string", "id") else self.source
        self._expect("{")
        while not self._at("}"):
            self._statement()
            if self._at(";"):
                self._next()
        self._next()
        if self._peek().kind != "end":
            raise _Bad(f"unexpected {quoted(self._peek().text)} after the graph's closing brace", self._peek())
        nodes = {n: _node(n, attrs) for n, attrs in self.attrs.items()}
        return AirTopology(title, nodes, tuple(self.links), self.lines)

    def _statement(self) -> None:
        first = self._id()
        if first.text in ("node", "edge", "graph") and self._at("["):
            attrs = self._attrs()
            if first.text == "node":
                self.defaults.update(attrs)
        elif first.text == "subgraph":
            raise _Bad("subgraphs are not part of Air's DOT", first)
        elif self._at("="):
            self._next()
            self._id()  # a graph attribute: nothing Air or twin reads
        else:
            self._node_or_edge(first)

    def _node_or_edge(self, first: Token) -> None:
        ends = [self._endpoint(first)]
        while self._peek().kind == "edge":
            self._next()
            ends.append(self._endpoint(self._id()))
        attrs = self._attrs() if self._at("[") else {}
        for e in ends:  # a node exists once named, with the `node [...]` defaults of that moment
            self.attrs.setdefault(e.node, dict(self.defaults))
            self.lines.setdefault(("nodes", e.node), first.line)
        if len(ends) == 1:
            self.attrs[first.text].update(attrs)
        for pair in zip(ends, ends[1:]):
            self.lines[("links", len(self.links))] = first.line
            self.links.append(pair)

    def _endpoint(self, name: Token) -> AirEnd:
        port = None
        if self._at(":"):
            self._next()
            port = self._id().text
            if self._at(":"):  # a compass point: no meaning for a link
                self._next()
                self._id()
        return AirEnd(name.text, port)

    def _attrs(self) -> dict[str, str]:
        out: dict[str, str] = {}
        while self._at("["):
            self._next()
            while not self._at("]"):
                key = self._id().text
                self._expect("=")
                out[key] = self._id().text
                if self._at(",") or self._at(";"):
                    self._next()
            self._next()
        return out

    def _id(self) -> Token:
        tok = self._next()
        if tok.kind not in ("string", "id"):
            raise _Bad(f"expected a name or a quoted string, found {quoted(tok.text or 'the end of the file')}", tok)
        return tok

    def _expect(self, text: str) -> None:
        tok = self._next()
        if tok.text != text or tok.kind != "punct":
            raise _Bad(f"expected {text!r}, found {quoted(tok.text or 'the end of the file')}", tok)

    def _at(self, punct: str) -> bool:
        tok = self.toks[self.i]
        return tok.kind == "punct" and tok.text == punct

    def _peek(self) -> Token:
        return self.toks[self.i]

    def _next(self) -> Token:
        tok = self.toks[self.i]
        self.i = min(self.i + 1, len(self.toks) - 1)
        return tok


def _node(name: str, attrs: dict[str, str]) -> AirNode:
    resources = {k: _number(attrs[k]) for k in ("cpu", "memory", "storage") if k in attrs}
    return AirNode(name, attrs.get("function"), attrs.get("os"), resources)


def _number(value: str) -> int | str:
    """A resource as a number where it is one (a few ASCII digits), else as written."""
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 12 else value


def _q(value: str | None) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
