"""The one execution seam: how a command runs in a node, and what comes back.

`run` returns a Result whatever the exit code; `check` raises CommandError
carrying the command, exit code and output. Commands get a deadline through
coreutils `timeout` inside the node, so a hung daemon cannot hang `twin`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

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


class NodeExec:
    """Runs commands in one node's container through the Docker engine."""

    def __init__(self, container, where: str):
        self.container = container
        self.where = where

    def run(self, cmd: list[str], timeout: float = timeouts.EXEC_DEFAULT, user: str = "") -> Result:
        wrapped = ["timeout", "--kill-after=2", f"{timeout:g}", *cmd]
        rc, (out, err) = self.container.exec_run(wrapped, demux=True, user=user)
        if rc == 124:
            err = (err or b"") + f"\n(timed out after {timeout:g}s)".encode()
        return Result(self.where, list(cmd), rc, (out or b"").decode(errors="replace"),
                      (err or b"").decode(errors="replace"))

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
