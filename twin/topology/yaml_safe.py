"""Read a topology file safely: bytes -> text -> plain data, with the line of every place.

Whatever the file holds, the outcome is the data or a TopologyError naming the
file and, where there is one, the line:

- the file is read up to MAX_BYTES and refused above it, before any parsing;
- it must be UTF-8 text: a UTF-16 or Latin-1 file, binary data, a NUL byte or
  a control character is refused with the line where it is;
- the YAML is built from the parser's events with an explicit stack (no
  recursion, no node tree kept): nesting deeper than MAX_DEPTH, anchors and
  aliases (a self-reference or an expansion bomb is then impossible), tags
  other than plain text, numbers, booleans and null, merge keys (<<), numbers
  longer than MAX_NUMBER_CHARS, more than MAX_VALUES values (which bounds the
  time and memory of everything after) and duplicate keys are refused;
- dates stay text (`description: 2024-01-01` is a string, not a date).
"""
from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import Any

import yaml
from yaml.events import (AliasEvent, CollectionEndEvent, CollectionStartEvent, Event, MappingStartEvent,
                         ScalarEvent, StreamEndEvent)
from yaml.nodes import ScalarNode

from twin.errors import Problem, TopologyError
from twin.topology.problems import Path_, dotted, quoted

MAX_BYTES = 1 << 20          # 1 MiB: a 500-node fabric is about 50 KiB
MAX_DEPTH = 64               # a topology nests 6 levels deep
MAX_NUMBER_CHARS = 32        # the largest number a topology holds (an ASN) has 10 digits
MAX_VALUES = 100_000         # keys, items and values: a 1000-node fabric has about 15000
REWORD_CHARS = 256 * 1024    # a syntax error is worded by PyYAML's parser in a file up to this size

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_TAG + t: t for t in ("str", "int", "float", "bool", "null")}
_COLLECTION_TAGS = {None, "!", _TAG + "map", _TAG + "seq"}
_WHAT = {"int": "whole number", "float": "number", "bool": "boolean (true or false)"}
# What YAML calls printable, without the line separators editors do not count as lines (NEL, U+2028/9).
_NOT_TEXT = re.compile("[^\t\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_BOMS = [(codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
         (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16")]
_SAVE_AS = "save it as UTF-8"
_TOO_DEEP = f"nesting deeper than {MAX_DEPTH} levels: a topology needs about 6"
# libyaml's parser when PyYAML has it (15x faster on a large file); both give the same events.
_FAST_LOADER = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader


class _Refused(Exception):
    """The file cannot be read any further: one problem, at a line."""

    def __init__(self, message: str, line: int | None = None, path: Path_ = ()):
        super().__init__(message)
        self.message, self.line, self.path = message, line, path


def read_yaml(path: str | Path) -> tuple[Any, dict[Path_, int]]:
    """The file's data and the line of every mapping key and list item, or TopologyError."""
    return _read(str(path), lambda: _read_text(path))


def read_yaml_bytes(data: bytes, name: str) -> tuple[Any, dict[Path_, int]]:
    """The same for a file's bytes received otherwise (a request body, a file sent by `nv`):
    `name` stands for the file in every problem."""
    return _read(name, lambda: _decode(data[:MAX_BYTES + 1]))


def _read(file: str, text_of) -> tuple[Any, dict[Path_, int]]:
    text = ""
    try:
        text = text_of()
        reader = _Reader(_FAST_LOADER(text))
        try:
            data = reader.document()
        finally:
            reader.loader.dispose()
    except _Refused as e:
        raise TopologyError([Problem(file, dotted(e.path), e.message, e.line)]) from None
    except yaml.YAMLError as e:
        raise TopologyError([_syntax_problem(file, text, e)]) from None
    if reader.problems:
        raise TopologyError([Problem(file, dotted(p), m, line) for m, line, p in reader.problems])
    return data, reader.lines


def _syntax_problem(file: str, text: str, error: yaml.YAMLError) -> Problem:
    """The YAML syntax error, worded by PyYAML's own parser whichever parser found it.

    libyaml (fast, used when present) words errors more vaguely ("found character
    that cannot start any token": which one?); the pure-Python parser names the
    character, and the same file gets the same message on every machine. It reads
    the file again under the same limits (a deep nesting is refused as such), and
    only up to REWORD_CHARS: beyond, libyaml's words are kept.
    """
    if _FAST_LOADER is not yaml.SafeLoader and len(text) <= REWORD_CHARS:
        reader = _Reader(yaml.SafeLoader(text))
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
        return Problem(file, "", _TOO_DEEP, line)
    return Problem(file, "", f"not valid YAML: {_cut(msg)}", line)


def _read_text(path: str | Path) -> str:
    """The file as text: at most MAX_BYTES of UTF-8 without NUL bytes or control characters."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise _Refused(f"cannot read the topology file: {e.strerror or e}") from None
    return _decode(data)


def _decode(data: bytes) -> str:
    if len(data) > MAX_BYTES:
        raise _Refused(f"the file is larger than {MAX_BYTES // (1 << 20)} MiB ({MAX_BYTES} bytes), "
                       "the limit for a topology file; it was not parsed")
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            raise _Refused(f"the file is {encoding} text (it starts with a {encoding} byte order mark); "
                           f"{_SAVE_AS}", 1)
    nul = data.find(b"\0")
    if nul >= 0:
        raise _Refused(f"byte {nul} is a NUL byte: a topology is UTF-8 text (a file saved as UTF-16 "
                       f"looks like this); {_SAVE_AS}", data.count(b"\n", 0, nul) + 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _Refused(f"the file is not UTF-8 text: byte {e.start} (0x{data[e.start]:02x}) cannot be decoded "
                       f"(a Latin-1 or Windows-1252 file looks like this); {_SAVE_AS}",
                       data.count(b"\n", 0, e.start) + 1) from None
    text = text.removeprefix("\ufeff")
    bad = _NOT_TEXT.search(text)
    if bad:
        pos = bad.start()
        column = pos - text.rfind("\n", 0, pos)
        raise _Refused(f"column {column} holds the control character U+{ord(bad.group()):04X}: "
                       "a topology is plain text (tabs and newlines are the only control characters allowed)",
                       text.count("\n", 0, pos) + 1)
    return text


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

    def __init__(self, loader: yaml.SafeLoader):
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
            raise _Refused("a second YAML document starts here; a topology file holds one",
                           _line(self.loader.peek_event()))
        return data

    def _build(self) -> Any:
        stack: list[_Open] = []
        count = 0
        while True:
            event = self.loader.get_event()
            line = _line(event)
            count += not isinstance(event, CollectionEndEvent)
            if count > MAX_VALUES:
                raise _Refused(f"the file holds more than {MAX_VALUES} values (keys, list items and their "
                               "values): far more than a fabric that runs on one host; it was not read further",
                               line)
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
        if depth >= MAX_DEPTH:
            raise _Refused(_TOO_DEEP, line)
        if event.tag not in _COLLECTION_TAGS:
            self.problems.append((f"the tag {_short(event.tag)} is not supported: a topology holds only "
                                  "plain lists and mappings", line, path))
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
            raise _Refused("anchors and aliases (&name, *name) are not supported in a topology file: "
                           "write each value out", line, top.path if top else ())

    def _scalar(self, event: ScalarEvent, line: int, path: Path_) -> Any:
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.loader.resolve(ScalarNode, event.value, event.implicit)
            if tag == _TAG + "timestamp":
                return event.value  # a date stays text
        kind = _SCALAR_TAGS.get(tag)
        if kind is None:
            message = ("merge keys (<<) are not supported: write the keys out" if tag == _TAG + "merge" else
                       f"the tag {_short(tag)} is not supported: a topology holds text, numbers, true/false and null")
            self.problems.append((message, line, path))
            return event.value
        if kind in ("int", "float") and len(event.value) > MAX_NUMBER_CHARS:
            self.problems.append((f"the number {quoted(event.value)} has {len(event.value)} characters: "
                                  f"no field of a topology takes one longer than {MAX_NUMBER_CHARS}", line, path))
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
    return text if len(text) <= limit else text[:limit - 3] + "..."
