"""The one execution seam: how a command runs in a node, and what comes back.

`run` returns a Result whatever the exit code; `check` raises CommandError
carrying the command, exit code and output. Commands get a deadline through
coreutils `timeout` inside the node, so a hung daemon cannot hang `twin`.

Evidence (opt-in): inside `with recording() as rec:` every command run through
this seam is kept in `rec.entries` (node, command, exit code, raw output,
start and duration), each under the label `labelled(...)` set around it. The
recorder lives in a context variable, so nothing is kept outside such a block;
work handed to a thread pool carries it along with `carried(fn)`.
"""
from __future__ import annotations

import contextvars
import json
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator, TypeVar

from twin import timeouts
from twin.errors import CommandError


@dataclass(frozen=True)
class Result:
    where: str
    cmd: list[str]
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def check(self) -> "Result":
        if self.rc != 0:
            raise CommandError(self.where, self.cmd, self.rc, self.stdout, self.stderr)
        return self


@dataclass(frozen=True)
class Evidence:
    """One command as it ran: for a reviewer to see why a verdict was reached."""

    seq: int
    label: str          # what it was run for, e.g. "checks: red web reachable", "control"
    node: str           # lab/node
    cmd: list[str]
    rc: int
    stdout: str
    stderr: str
    started: float      # Unix time
    seconds: float


@dataclass
class Recorder:
    """Commands run through NodeExec while it records (thread-safe)."""

    entries: list[Evidence] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, where: str, cmd: list[str], rc: int, stdout: str, stderr: str, started: float,
            seconds: float) -> None:
        with self._lock:
            self.entries.append(Evidence(len(self.entries) + 1, _LABEL.get(), where, list(cmd), rc, stdout,
                                         stderr, round(started, 3), round(seconds, 3)))

    def of(self, label: str) -> list[Evidence]:
        with self._lock:
            return [e for e in self.entries if e.label == label]

    def to_list(self) -> list[dict[str, Any]]:
        with self._lock:
            return [asdict(e) for e in self.entries]


_RECORDER: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar("twin_recorder", default=None)
_LABEL: contextvars.ContextVar[str] = contextvars.ContextVar("twin_evidence_label", default="")
T = TypeVar("T")


@contextmanager
def recording(recorder: Recorder | None = None) -> Iterator[Recorder]:
    """Record every command run through NodeExec in this context (and in work `carried` from it)."""
    rec = recorder if recorder is not None else Recorder()
    token = _RECORDER.set(rec)
    try:
        yield rec
    finally:
        _RECORDER.reset(token)


@contextmanager
def labelled(label: str) -> Iterator[None]:
    """Commands run in this block are recorded under `label`."""
    token = _LABEL.set(label)
    try:
        yield
    finally:
        _LABEL.reset(token)


def carried(fn: Callable[..., T]) -> Callable[..., T]:
    """`fn` to run in another thread with the caller's recorder and label (a copy per call)."""
    parent = contextvars.copy_context()
    return lambda *a, **kw: parent.copy().run(fn, *a, **kw)


class NodeExec:
    """Runs commands in one node's container through the Docker engine."""

    def __init__(self, container, where: str):
        self.container = container
        self.where = where

    def run(self, cmd: list[str], timeout: float = timeouts.EXEC_DEFAULT, user: str = "") -> Result:
        wrapped = ["timeout", "--kill-after=2", f"{timeout:g}", *cmd]
        started, t0 = time.time(), time.monotonic()
        rc, (out, err) = self.container.exec_run(wrapped, demux=True, user=user)
        if rc == 124:
            err = (err or b"") + f"\n(timed out after {timeout:g}s)".encode()
        res = Result(self.where, list(cmd), rc, (out or b"").decode(errors="replace"),
                     (err or b"").decode(errors="replace"))
        rec = _RECORDER.get()
        if rec is not None:
            rec.add(self.where, res.cmd, rc, res.stdout, res.stderr, started, time.monotonic() - t0)
        return res

    def check(self, cmd: list[str], timeout: float = timeouts.EXEC_DEFAULT) -> Result:
        return self.run(cmd, timeout).check()

    # FRR -----------------------------------------------------------------
    def vtysh(self, *commands: str, timeout: float = timeouts.EXEC_DEFAULT) -> str:
        cmd = ["vtysh"]
        for c in commands:
            cmd += ["-c", c]
        return self.check(cmd, timeout).stdout

    def vtysh_json(self, *commands: str, timeout: float = timeouts.EXEC_DEFAULT) -> list[Any]:
        """One vtysh call, one parsed JSON document per command. Bad JSON is an error."""
        cmd = ["vtysh"]
        for c in commands:
            cmd += ["-c", c]
        res = self.check(cmd, timeout)
        docs, text, pos = [], res.stdout, 0
        decoder = json.JSONDecoder()
        while len(docs) < len(commands):
            while pos < len(text) and text[pos].isspace():
                pos += 1
            try:
                doc, pos = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as e:
                raise CommandError(self.where, cmd, res.rc,
                                   f"output is not JSON ({e.msg} at char {e.pos}):\n{text[:2000]}", res.stderr) from None
            docs.append(doc)
        return docs
