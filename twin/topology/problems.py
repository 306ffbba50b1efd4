"""Problems of one topology file, each placed at its line, and how values are shown in them.

Whatever a file holds ends up quoted in a message sooner or later, so every
value, key and list of names goes through `quoted`, `dotted` or `listing`:
cut to a readable length, control characters escaped.
"""

from __future__ import annotations

import itertools
import re
from typing import Any, Iterable, NoReturn

from twin.base.errors import Problem, TopologyError

Path_ = tuple[str | int, ...]

SHOWN_CHARS = 60  # a value longer than this is cut, with "..."
SHOWN_NAMES = 12  # a list of names longer than this says how many more
SHOWN_PATH = 100  # a place deeper than this is cut
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]{1,60}")  # a place shown as is: nodes.leaf1
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.:/-]{1,60}")  # a name listed as is: leaf1, dpu1:pf0vf1


def quoted(value: object) -> str:
    """repr(value) (true, false, null as YAML writes them), cut to SHOWN_CHARS: any input is safe in a message."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def listing(names: Iterable[Any], limit: int = SHOWN_NAMES) -> str:
    """'a, b, c' for at most `limit` names, then '... and N more' (a list or dict is not copied)."""
    if not isinstance(names, (list, tuple, dict)):
        names = list(names)
    shown = ", ".join(
        n if isinstance(n, str) and _PLAIN_NAME.fullmatch(n) else quoted(n) for n in itertools.islice(names, limit)
    )
    return shown + (f", ... and {len(names) - limit} more" if len(names) > limit else "")


def dotted(path: Path_) -> str:
    """nodes.leaf1.asn, links[3].endpoints[0]; a key that is no plain name is quoted: nodes['a b']."""
    out = ""
    for p in path:
        if isinstance(p, int) and not isinstance(p, bool):
            out += f"[{p}]"
        elif isinstance(p, str) and _PLAIN_KEY.fullmatch(p):
            out += f".{p}" if out else p
        else:
            out += f"[{quoted(p)}]"
    return out if len(out) <= SHOWN_PATH else out[: SHOWN_PATH - 3] + "..."


class Problems:
    """Collects problems of one file, placing each at its line when known."""

    def __init__(self, file: str, lines: dict[Path_, int]):
        self.file, self.lines = file, lines
        self.items: list[Problem] = []

    def add(self, path: Path_, message: str, in_file: bool = True) -> None:
        """A problem at `path`; in_file=False for a place outside the file (e.g. a --name option)."""
        line = None
        for i in range(len(path), -1 if in_file else len(path), -1):  # nearest enclosing place with a line
            if path[:i] in self.lines:
                line = self.lines[path[:i]]
                break
        self.items.append(Problem(self.file, dotted(path), message, line))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise TopologyError(self.items)

    def stop(self, path: Path_, message: str) -> NoReturn:
        """A problem that ends the reading: raised with every problem found before it."""
        self.add(path, message)
        raise TopologyError(self.items)
