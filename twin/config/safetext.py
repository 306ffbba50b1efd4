"""Text becoming configuration: no value a renderer writes may hold a line break or another
control character, whatever its source (a topology, a clone, NVUE).

A value is one token of a line (a host name, a neighbor, an address): holding a newline, it
would write a line of its own into frr.conf or interfaces.sh (issue 38: a host name of
`leaf01\\nip route 192.0.2.0/24 blackhole` did). Every front end checks its values first
(topology names, NVUE's types); the renderers check again here and refuse, never write:
Jinja2's `finalize` sees every value a template writes, `script` every kernel step's line.
The caller names the place the value came from (`places` finds it in its source).
"""

from __future__ import annotations

import re
from types import TracebackType
from typing import Any

from twin.base.errors import Problem, TwinError
from twin.topology.problems import dotted

# C0 and C1 controls, DEL, and the Unicode line and paragraph separators (str.splitlines breaks there)
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
WHAT = "a line break or another control character"


class UnsafeText(TwinError):
    """A value a renderer refused to write: `value`, and where it was to go (`where`)."""

    def __init__(self, value: str, where: str = ""):
        self.value, self.where = value, where
        super().__init__(f"{shown(value)} holds {WHAT}" + (f" ({where})" if where else ""))


def shown(value: str) -> str:
    """A value as a message shows it: escaped, at most 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check(value: Any, where: str = "") -> Any:
    """`value` when its text holds no control character; else UnsafeText."""
    if value is not None and not isinstance(value, (bool, int, float)) and CONTROL.search(str(value)):
        raise UnsafeText(str(value), where)
    return value


def finalize(value: Any) -> Any:
    """Jinja2's `finalize`: every `{{ ... }}` a template writes passes here."""
    return check(value)


def template_line(e: BaseException) -> str:
    """`name.j2 line N` of the template line that wrote the value (Jinja2 keeps it in the traceback)."""
    tb: TracebackType | None = e.__traceback__
    found = ""
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.endswith(".j2"):
            found = f"{name.rsplit('templates/', 1)[-1]} line {tb.tb_lineno}"
        tb = tb.tb_next
    return found


def script(lines: list[str], where: str) -> list[str]:
    """Lines of a script (interfaces.sh), each checked; UnsafeText names the line's place."""
    for i, line in enumerate(lines, 1):
        check(line, f"{where} line {i}")
    return lines


def refusal(e: UnsafeText, node: str, source: str, data: Any) -> Problem:
    """The problem of a refused value, at its place in `data` (the source `source` holds: a
    Fabric's dump, say) when found there."""
    found = places(data)
    return Problem(source, dotted(found[0][0]) if found else "", message(e, node))


def message(e: UnsafeText, node: str) -> str:
    return (
        f"{shown(e.value)} holds {WHAT}: refused, nothing of {node} is written (it would make a line of its "
        f"own in {e.where or 'its configuration'})"
    )


def places(data: Any, at: tuple = ()) -> list[tuple[tuple, str]]:
    """Every key or text value in nested mappings and lists holding a control character, with its path."""
    out: list[tuple[tuple, str]] = []
    if isinstance(data, dict):
        for k, v in data.items():
            if isinstance(k, str) and CONTROL.search(k):
                out.append((at + (k,), k))
            out += places(v, at + (str(k),))
    elif isinstance(data, (list, tuple)):
        for i, v in enumerate(data):
            out += places(v, at + (i,))
    elif isinstance(data, str) and CONTROL.search(data):
        out.append((at, data))
    return out
