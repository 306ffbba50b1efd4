"""Read a YAML file safely: bytes -> text -> plain data, with the line of every place.

Every YAML file a user gives twin is read here, each with the limits of its format
(twin.topology.files): a topology (`read_yaml(path)`), a containerlab file, a checks or
allow file, an NVUE startup file (`read_yaml(path, files.NVUE)`). Whatever the file
holds, the outcome is the data or a TopologyError naming the file and, where there is
one, the line:

- bytes and text as `files.read_text` takes them: size, UTF-8, no NUL or control
  characters, and (below a directory the user gave) no link out of it;
- the YAML is built from the parser's events with an explicit stack (no
  recursion, no node tree kept): nesting deeper than the format's depth, anchors and
  aliases (a self-reference or an expansion bomb is then impossible), tags
  other than plain text, numbers, booleans and null, merge keys (<<), numbers
  longer than MAX_NUMBER_CHARS, more values than the format's (which bounds the
  time and memory of everything after) and duplicate keys are refused;
- YAML 1.1 as PyYAML reads it: `on`/`off`/`yes`/`no` are booleans, quoted values stay
  text (`'10': ...` is the key "10"); dates stay text (`description: 2024-01-01`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    Event,
    MappingStartEvent,
    ScalarEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode

from twin.base.errors import Problem, TopologyError
from twin.topology import files
from twin.topology.files import Format
from twin.topology.files import Refused as _Refused
from twin.topology.problems import Path_, dotted, quoted

MAX_BYTES = files.TOPOLOGY.max_bytes  # a 500-node fabric is about 50 KiB
MAX_DEPTH = files.TOPOLOGY.max_depth  # a topology nests 6 levels deep
MAX_NUMBER_CHARS = 32  # the largest number a topology holds (an ASN) has 10 digits
MAX_VALUES = files.TOPOLOGY.max_values  # keys, items and values: a 1000-node fabric has about 15000
REWORD_CHARS = 256 * 1024  # a syntax error is worded by PyYAML's parser in a file up to this size

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_TAG + t: t for t in ("str", "int", "float", "bool", "null")}
_COLLECTION_TAGS = {None, "!", _TAG + "map", _TAG + "seq"}
_WHAT = {"int": "whole number", "float": "number", "bool": "boolean (true or false)"}
# libyaml's parser when PyYAML has it (15x faster on a large file); both give the same events.
_FAST_LOADER = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader


def too_deep(fmt: Format) -> str:
    return f"nesting deeper than {fmt.max_depth} levels" + (f": {fmt.depth_hint}" if fmt.depth_hint else "")


def read_yaml(
    path: str | Path, fmt: Format = files.TOPOLOGY, under: str | Path | None = None
) -> tuple[Any, dict[Path_, int]]:
    """The file's data and the line of every mapping key and list item, or TopologyError.
    `fmt`: which kind of file (its limits, its name in messages); `under`: the directory
    `path` is relative to and must not leave."""
    file = files.shown(path, under)
    try:
        text = files.read_text(path, fmt, under)
    except _Refused as e:
        raise TopologyError([e.problem(file)]) from None
    return parse_yaml(text, file, fmt)


def read_yaml_bytes(data: bytes, name: str, fmt: Format = files.NVUE) -> tuple[Any, dict[Path_, int]]:
    """The same for a file's bytes received otherwise (a request body, a file sent by `nv`),
    under the same limits: `name` stands for the file in every problem."""
    try:
        if len(data) > fmt.max_bytes:
            raise _Refused(
                f"the file is larger than {fmt.limit} ({fmt.max_bytes} bytes), the limit for "
                f"{files.a(fmt.what)}; it was not parsed"
            )
        text = files.decode(data, fmt)
    except _Refused as e:
        raise TopologyError([e.problem(name)]) from None
    return parse_yaml(text, name, fmt)


def parse_yaml(text: str, file: str, fmt: Format = files.TOPOLOGY) -> tuple[Any, dict[Path_, int]]:
    """`read_yaml` of text already read as `files.read_text` reads it (e.g. by a config directory's
    reader), named `file` in messages."""
    try:
        reader = _Reader(_FAST_LOADER(text), fmt)
        try:
            data = reader.document()
        finally:
            reader.loader.dispose()
    except _Refused as e:
        raise TopologyError([e.problem(file)]) from None
    except yaml.YAMLError as e:
        raise TopologyError([_syntax_problem(file, text, e, fmt)]) from None
    if reader.problems:
        raise TopologyError([Problem(file, dotted(p), m, line) for m, line, p in reader.problems])
    return data, reader.lines


def _syntax_problem(file: str, text: str, error: yaml.YAMLError, fmt: Format) -> Problem:
    """The YAML syntax error, worded by PyYAML's own parser whichever parser found it.

    libyaml (fast, used when present) words errors more vaguely ("found character
    that cannot start any token": which one?); the pure-Python parser names the
    character, and the same file gets the same message on every machine. It reads
    the file again under the same limits (a deep nesting is refused as such), and
    only up to REWORD_CHARS: beyond, libyaml's words are kept.
    """
    if _FAST_LOADER is not yaml.SafeLoader and len(text) <= REWORD_CHARS:
        reader = _Reader(yaml.SafeLoader(text), fmt)
        try:
            reader.document()
        except yaml.YAMLError as e:
            error = e
        except _Refused as e:  # found before the syntax error, so it is the first thing wrong
            return Problem(file, dotted(e.path), e.message, e.line)
        finally:
            reader.loader.dispose()
    mark = getattr(error, "problem_mark", None)
    line = mark.line + 1 if mark else None
    msg = " ".join(str(getattr(error, "problem", None) or error).split())
    if msg == "exceeded maximum nesting depth":  # libyaml's own limit (1000 levels), beyond ours
        return Problem(file, "", too_deep(fmt), line)
    return Problem(file, "", f"not valid YAML: {_cut(msg)}", line)


class _Open:
    """A mapping or list being built, its place, and (mapping) the key whose value comes next."""

    NO_KEY = object()

    def __init__(self, value: dict | list, path: Path_):
        self.value, self.path = value, path
        self.key: Any = self.NO_KEY
        self.key_lines: dict[Any, int] = {}

    def wants_key(self) -> bool:
        return isinstance(self.value, dict) and self.key is self.NO_KEY

    def child_path(self) -> Path_:
        if isinstance(self.value, list):
            return self.path + (len(self.value),)
        return self.path + (_place(self.key),)

    def put(self, value: Any) -> None:
        if isinstance(self.value, list):
            self.value.append(value)
        else:
            self.value[self.key] = value
            self.key = self.NO_KEY


class _Reader:
    """Plain data from parser events, with an explicit stack instead of recursion."""

    def __init__(self, loader: yaml.SafeLoader, fmt: Format):
        self.fmt = fmt
        self.loader = loader
        self.lines: dict[Path_, int] = {}
        self.problems: list[tuple[str, int, Path_]] = []  # found, reading went on

    def document(self) -> Any:
        self.loader.get_event()  # stream start
        if self.loader.check_event(StreamEndEvent):
            return None
        self.loader.get_event()  # document start
        data = self._build()
        self.loader.get_event()  # document end
        if not self.loader.check_event(StreamEndEvent):
            raise _Refused(
                f"a second YAML document starts here; {files.a(self.fmt.what)} holds one",
                _line(self.loader.peek_event()),
            )
        return data

    def _build(self) -> Any:
        stack: list[_Open] = []
        count = 0
        while True:
            event = self.loader.get_event()
            line = _line(event)
            count += not isinstance(event, CollectionEndEvent)
            if count > self.fmt.max_values:
                raise _Refused(
                    f"the file holds more than {self.fmt.max_values} values (keys, list items and their "
                    f"values): {self.fmt.values_hint}; it was not read further",
                    line,
                )
            top = stack[-1] if stack else None
            self._refuse_references(event, line, top)
            if isinstance(event, CollectionEndEvent):
                value = stack.pop().value
            elif top is not None and top.wants_key():
                self._key(top, event, line)
                continue
            else:
                path = top.child_path() if top else ()
                self.lines.setdefault(path, line)
                if isinstance(event, CollectionStartEvent):
                    stack.append(self._open(event, line, path, len(stack)))
                    continue
                value = self._scalar(event, line, path)
            if not stack:
                return value
            stack[-1].put(value)

    def _open(self, event: CollectionStartEvent, line: int, path: Path_, depth: int) -> _Open:
        if depth >= self.fmt.max_depth:
            raise _Refused(too_deep(self.fmt), line)
        if event.tag not in _COLLECTION_TAGS:
            self.problems.append(
                (
                    f"the tag {_short(event.tag)} is not supported: {self.fmt.noun} holds only "
                    "plain lists and mappings",
                    line,
                    path,
                )
            )
        return _Open({} if isinstance(event, MappingStartEvent) else [], path)

    def _key(self, top: _Open, event: Event, line: int) -> None:
        if not isinstance(event, ScalarEvent):
            raise _Refused("a key must be a name or a number, not a list or a mapping", line, top.path)
        key = self._scalar(event, line, top.path)
        if key in top.key_lines:
            first = top.key_lines[key]
            where = f"(lines {first} and {line})" if first != line else f"on line {line}"
            self.problems.append((f"key {quoted(key)} is defined twice {where}; keep one", line, top.path))
        else:
            top.key_lines[key] = line
        top.key = key
        self.lines.setdefault(top.path + (_place(key),), line)

    def _refuse_references(self, event: Event, line: int, top: _Open | None) -> None:
        if isinstance(event, AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused(
                f"anchors and aliases (&name, *name) are not supported in {files.a(self.fmt.what)}: "
                "write each value out",
                line,
                top.path if top else (),
            )

    def _scalar(self, event: ScalarEvent, line: int, path: Path_) -> Any:
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.loader.resolve(ScalarNode, event.value, event.implicit)
            if tag == _TAG + "timestamp":
                return event.value  # a date stays text
        kind = _SCALAR_TAGS.get(tag)
        if kind is None:
            message = (
                "merge keys (<<) are not supported: write the keys out"
                if tag == _TAG + "merge"
                else f"the tag {_short(tag)} is not supported: {self.fmt.noun} holds text, numbers, true/false and null"
            )
            self.problems.append((message, line, path))
            return event.value
        if kind in ("int", "float") and len(event.value) > MAX_NUMBER_CHARS:
            self.problems.append(
                (
                    f"the number {quoted(event.value)} has {len(event.value)} characters: "
                    f"no field of {self.fmt.noun} takes one longer than {MAX_NUMBER_CHARS}",
                    line,
                    path,
                )
            )
            return None
        try:
            return self.loader.yaml_constructors[tag](self.loader, ScalarNode(tag, event.value))
        except (ValueError, KeyError):  # e.g. `!!int abc`, `!!bool maybe`, `0b_`
            self.problems.append((f"{quoted(event.value)} is not a valid {_WHAT[kind]}", line, path))
            return None


def _place(key: Any) -> str:
    """A mapping key as it appears in a place: the text of the key."""
    return key if isinstance(key, str) else str(key)


def _short(tag: str) -> str:
    """A tag as written: !!int, not tag:yaml.org,2002:int."""
    return quoted(tag.replace(_TAG, "!!", 1) if tag.startswith(_TAG) else tag)


def _line(event: Event) -> int:
    return event.start_mark.line + 1


def _cut(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
