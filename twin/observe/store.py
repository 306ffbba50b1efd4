"""The lab's event store: JSON lines in `<labdir>/observe/`, bounded, shared by processes.

Anything may append (the collector, `twin apply`, `twin fault`): one flock around
append-and-rotate. When `events.jsonl` passes MAX_BYTES it becomes `events.1.jsonl`
(the older one goes), so a lab keeps at most twice that. `Tail` follows the store
across rotations; `read` answers `twin events` (since, node).

An event is a dict with at least `time` (Unix seconds), `kind` and `text`; `node`,
`port`, `tenant`, `reason`, `code`, `headers`, `count` where they apply. Kinds: drop,
drop-burst, session, carrier, routes, action, kernel.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

MAX_BYTES = 2 << 20
DIR = "observe"
CURRENT, OLDER, LOCK = "events.jsonl", "events.1.jsonl", "events.lock"


def where(labdir: Path) -> Path:
    return Path(labdir) / DIR


def append(labdir: Path, events: Iterable[dict[str, Any]]) -> None:
    lines = "".join(json.dumps(e, separators=(",", ":"), default=str) + "\n" for e in events)
    if not lines:
        return
    d = where(labdir)
    try:
        d.mkdir(exist_ok=True)  # never the lab directory itself: a lab that is down stays gone
    except FileNotFoundError:
        return
    with open(d / LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cur = d / CURRENT
        if cur.exists() and cur.stat().st_size + len(lines) > MAX_BYTES:
            os.replace(cur, d / OLDER)
        with open(cur, "a") as f:
            f.write(lines)


def note(labdir: Path, kind: str, text: str, **fields: Any) -> None:
    """One event of twin's own (an apply stage, a fault). Never fails the caller: a lab
    directory that is gone or read-only loses the note, not the action."""
    try:
        if Path(labdir).is_dir():
            append(labdir, [{"time": round(time.time(), 3), "kind": kind, "text": text, **fields}])
    except OSError:
        pass


def _lines(path: Path, offset: int = 0) -> Iterator[tuple[int, dict]]:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            for raw in f:
                if not raw.endswith(b"\n"):
                    return  # a line still being written: next time
                offset += len(raw)
                try:
                    yield offset, json.loads(raw)
                except ValueError:
                    continue
    except FileNotFoundError:
        return


def read(
    labdir: Path,
    since: float | None = None,
    until: float | None = None,
    node: str | None = None,
    kinds: set[str] | None = None,
) -> list[dict]:
    """Stored events, oldest first, filtered."""
    d = where(labdir)
    out = []
    for path in (d / OLDER, d / CURRENT):
        for _, e in _lines(path):
            t = e.get("time", 0)
            if (since is not None and t < since) or (until is not None and t > until):
                continue
            if node and e.get("node") != node:
                continue
            if kinds and e.get("kind") not in kinds:
                continue
            out.append(e)
    return out


class Tail:
    """New events since the last `read()`, across rotations. Starts at the end, or at the
    beginning with `from_start` (the whole store first)."""

    def __init__(self, labdir: Path, from_start: bool = False):
        self.dir = where(labdir)
        self.inode: int | None = None
        self.offset = 0
        self.pending: list[dict] = read(labdir) if from_start else []
        self._sync(seek_end=True)

    def _sync(self, seek_end: bool) -> None:
        try:
            st = (self.dir / CURRENT).stat()
            self.inode, self.offset = st.st_ino, st.st_size if seek_end else 0
        except FileNotFoundError:
            self.inode, self.offset = None, 0

    def read(self) -> list[dict]:
        out, self.pending = self.pending, []
        cur = self.dir / CURRENT
        try:
            ino = cur.stat().st_ino
        except FileNotFoundError:
            return out
        if self.inode is not None and ino != self.inode:  # rotated: the rest of the old one first
            older = self.dir / OLDER
            if older.exists() and older.stat().st_ino == self.inode:
                out += [e for _, e in _lines(older, self.offset)]
            self.offset = 0
        self.inode = ino
        for offset, e in _lines(cur, self.offset):
            self.offset = offset
            out.append(e)
        return out


VERIFY = "verify.json"


def save_verify(labdir: Path, report: dict[str, Any]) -> None:
    """Keep the last `twin verify` result of the lab (shown by `twin web`)."""
    d = where(labdir)
    try:
        d.mkdir(exist_ok=True)
        tmp = d / (VERIFY + ".tmp")
        tmp.write_text(json.dumps({"time": round(time.time(), 3), **report}, default=str))
        os.replace(tmp, d / VERIFY)
    except OSError:
        pass


def last_verify(labdir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((where(labdir) / VERIFY).read_text())
    except (OSError, ValueError):
        return None
