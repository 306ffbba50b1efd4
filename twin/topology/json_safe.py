"""Read a JSON file safely: bytes -> text -> plain data, with the line of every place.

Every JSON file a user gives twin is read here, with the limits of its format
(twin.topology.files): an NVIDIA Air topology, a clone's `lldpctl -f json`, a baseline.
Whatever the bytes, the outcome is the data or a TopologyError naming the file and
the place (line:column of a syntax error, the line of a key or item otherwise):

- bytes and text as `files.read_text` takes them (size, UTF-8, control characters);
- nesting deeper than the format's depth and more values than its count are refused
  before the parser runs (a scan of the brackets outside strings: the parser never
  recurses deeper than the limit, so no RecursionError whatever the file);
- NaN and Infinity (not JSON, though Python writes them), numbers longer than
  MAX_NUMBER_CHARS and duplicate keys are refused, each at its line.

The parse itself is the standard library's (C, fast); the line of every key and item
(`lines`, as yaml_safe gives them) comes from a second pass over the valid text, made
when asked (`places=True`) or when there is a problem to place.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

from twin.base.errors import Problem, TopologyError
from twin.topology import files
from twin.topology.files import Format, Refused
from twin.topology.problems import Path_, dotted, quoted

MAX_NUMBER_CHARS = 32
_STRING = r'"(?:[^"\\\n]|\\.)*"'  # a JSON string holds no raw newline
_STRINGS = re.compile(_STRING)
_NOT_STRUCTURE = re.compile(r"[^\[\]{},]+")
_DEPTH = {"[": 1, "{": 1, "]": -1, "}": -1, ",": 0}
_BRACKETS = re.compile(_STRING + r"|[\[\]{}]")
_TOKEN = re.compile(r"[ \t\n\r]*(?:(" + _STRING + r")|([\[\]{}:,])|([^ \t\n\r\[\]{}:,\"]+))")


def read_json(
    path: str | Path, fmt: Format, under: str | Path | None = None, places: bool = True
) -> tuple[Any, dict[Path_, int]]:
    """The file's data and (places=True) the line of every key and list item, or TopologyError."""
    file = files.shown(path, under)
    try:
        text = files.read_text(path, fmt, under)
        data, lines, problems = parse(text, fmt, places)
    except Refused as e:
        raise TopologyError([e.problem(file)]) from None
    if problems:
        raise TopologyError([Problem(file, dotted(p), m, line) for m, line, p in problems])
    return data, lines


def parse(text: str, fmt: Format, places: bool = True) -> tuple[Any, dict[Path_, int], list[tuple[str, int, Path_]]]:
    """(data, lines, problems found with their line and place), or Refused."""
    if not text.strip():
        raise Refused(f"the file is empty: {fmt.noun} is a JSON document")
    _refuse_size(text, fmt)
    odd: list[str] = []
    try:
        data = json.loads(
            text,
            object_pairs_hook=lambda pairs: _object(pairs, odd),
            parse_constant=lambda c: odd.append(c),
            parse_int=lambda s: _number(s, int, odd),
            parse_float=lambda s: _number(s, float, odd),
        )
    except json.JSONDecodeError as e:
        raise Refused(f"not JSON: {e.msg}", e.lineno, column=e.colno) from None
    if not (places or odd):
        return data, {}, []
    lines, problems = _Places(text).walk()
    return data, lines, problems


def _object(pairs: list[tuple[str, Any]], odd: list[str]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        odd.append("duplicate key")
    return out


def _number(text: str, kind: type, odd: list[str]) -> int | float | None:
    value = kind(text) if len(text) <= MAX_NUMBER_CHARS else None
    if value is None or math.isinf(value):
        odd.append(text)
        return None
    return value


def depth(text: str) -> int:
    """How deep JSON text nests (brackets outside strings, at C speed): to refuse before parsing."""
    structure = _NOT_STRUCTURE.sub("", _STRINGS.sub("", text)).replace(",", "")
    return max(itertools.accumulate(map(_DEPTH.__getitem__, structure)), default=0)


def _refuse_size(text: str, fmt: Format) -> None:
    """Nesting and value count, from the brackets and commas outside strings (C-speed scans)."""
    structure = _NOT_STRUCTURE.sub("", _STRINGS.sub("", text))
    if not structure:
        return
    deepest = max(itertools.accumulate(map(_DEPTH.__getitem__, structure)))
    if deepest > fmt.max_depth:
        line, column = _deep_place(text, fmt.max_depth)
        raise Refused(
            f"nesting deeper than {fmt.max_depth} levels" + (f": {fmt.depth_hint}" if fmt.depth_hint else ""),
            line,
            column=column,
        )
    values = structure.count(",") + structure.count("[") + structure.count("{") + 1
    if values > fmt.max_values:
        raise Refused(
            f"the file holds more than {fmt.max_values} values (keys, list items and their values): "
            f"{fmt.values_hint}; it was not read"
        )


def _deep_place(text: str, limit: int) -> tuple[int, int]:
    """Line and column of the bracket that opens level limit + 1."""
    depth = 0
    for m in _BRACKETS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > limit:
                pos = m.start()
                return text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos)
        elif c in "]}":
            depth -= 1
    return 1, 1


class _Frame:
    __slots__ = ("path", "is_list", "n", "key", "keys")

    def __init__(self, path: Path_, is_list: bool):
        self.path, self.is_list, self.n = path, is_list, 0
        self.key: str | None = None  # a mapping's key whose value comes next
        self.keys: dict[str, int] = {}  # key -> its offset (duplicates are told with both lines)


class _Places:
    """The line of every key and item of valid JSON text, and what json.loads let through
    (NaN, long numbers, duplicate keys) with its line: an explicit stack, no recursion."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.offsets: dict[Path_, int] = {}
        self.problems: list[tuple[str, int, Path_]] = []

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def walk(self) -> tuple[dict[Path_, int], list[tuple[str, int, Path_]]]:
        stack: list[_Frame] = []
        pos, end = 0, len(self.text)
        while pos < end:
            m = _TOKEN.match(self.text, pos)
            if m is None:  # trailing whitespace
                break
            pos = m.end()
            string, punct, word = m.groups()
            at = m.start(m.lastindex or 0)  # the one group that matched (a token is one of three)
            top = stack[-1] if stack else None
            if punct in ("}", "]"):
                stack.pop()
            elif punct in (":", ","):
                continue
            elif top is not None and not top.is_list and top.key is None:
                self._key(top, string, at)
            else:
                place = self._value_place(top, at)
                if punct:
                    stack.append(_Frame(place, punct == "["))
                elif word:
                    self._word(word, at, place)
        return {p: self.line(o) for p, o in self.offsets.items()}, self.problems

    def _value_place(self, top: _Frame | None, at: int) -> Path_:
        if top is None:
            place: Path_ = ()
        elif top.is_list:
            place, top.n = top.path + (top.n,), top.n + 1
        else:
            place, top.key = top.path + (top.key or "",), None  # a mapping's value: its key came first
        self.offsets.setdefault(place, at)
        return place

    def _key(self, top: _Frame, token: str, at: int) -> None:
        key = json.loads(token) if "\\" in token else token[1:-1]
        if key in top.keys:
            first, line = self.line(top.keys[key]), self.line(at)
            self.problems.append(
                (
                    f"key {quoted(key)} is defined twice (lines {first} and {line}); keep one"
                    if first != line
                    else f"key {quoted(key)} is defined twice on line {line}; keep one",
                    line,
                    top.path,
                )
            )
        else:
            top.keys[key] = at
        top.key = key
        self.offsets.setdefault(top.path + (key,), at)

    def _word(self, word: str, at: int, place: Path_) -> None:
        if word.lstrip("-") in ("NaN", "Infinity"):
            self.problems.append((f"{word} is not JSON (a number is finite)", self.line(at), place))
        elif word in ("true", "false", "null"):
            return
        elif len(word) > MAX_NUMBER_CHARS:
            self.problems.append(
                (
                    f"the number {quoted(word)} has {len(word)} characters: no field takes one longer "
                    f"than {MAX_NUMBER_CHARS}",
                    self.line(at),
                    place,
                )
            )
        elif math.isinf(float(word)):
            self.problems.append((f"the number {quoted(word)} is too large for a number", self.line(at), place))
