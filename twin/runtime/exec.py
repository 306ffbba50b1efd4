"""The one execution seam: how a command runs in a node, and what comes back.

`run` returns a Result whatever the exit code; `check` raises CommandError
carrying the command, exit code and output. Commands get a deadline through
coreutils `timeout` inside the node, so a hung daemon cannot hang `twin`.

A command enters the node's namespaces (mount, network, pid, uts, ipc, cgroup)
with util-linux `nsenter`, as the node's own root, in a clean environment: it
sees exactly what the node sees. Not through the Docker engine: a `docker exec`
costs ~105 ms and dockerd, containerd and runc work per call, `nsenter` ~25 ms
(measured with `vtysh -c 'show bgp summary json'` on this 2-core machine), and
verify, status, apply and bring-up all run many. The container is found through
Docker; the process that runs the command is twin's child (its cgroup is twin's).
Commands that start the node's own long-lived processes (FRR's daemons) go
through the container runtime instead (`start`): they must live in the node's
cgroup, under its memory and pids limits and in its accounting.
"""
from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twin import timeouts
from twin.errors import CommandError, TwinError

ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
       "LANG": "C.UTF-8", "TERM": "dumb"}
GRACE = 5.0   # beyond a command's own deadline, before twin stops waiting for nsenter itself


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
    """Runs commands in one node (its container's namespaces)."""

    def __init__(self, container, where: str):
        self.container = container
        self.where = where
        self._pid = 0

    @property
    def pid(self) -> int:
        """The node's init process, checked to be the container's still (a restarted node has another)."""
        if not self._pid or not _of(self._pid, self.container.id):
            self.container.reload()
            self._pid = self.container.attrs["State"]["Pid"]
            if not self._pid:
                raise TwinError(f"{self.where}: container {self.container.name} is not running "
                                f"({self.container.status})")
        return self._pid

    def argv(self, cmd: list[str]) -> list[str]:
        return ["nsenter", f"--target={self.pid}", "--mount", "--uts", "--ipc", "--net", "--pid", "--cgroup",
                "--wd=/", "--", *cmd]

    def run(self, cmd: list[str], timeout: float = timeouts.EXEC_DEFAULT) -> Result:
        """`cmd` in the node, its output read once it exits (into files, not pipes: a command that
        starts daemons, like FRR's frrinit.sh, leaves them holding whatever it was given)."""
        wrapped = ["timeout", "--kill-after=2", f"{timeout:g}", *cmd]
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                rc = subprocess.run(self.argv(wrapped), stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=ENV,
                                    timeout=timeout + GRACE).returncode
            except subprocess.TimeoutExpired:
                rc = 124
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
        if rc == 124:
            stderr += f"\n(timed out after {timeout:g}s)"
        return Result(self.where, list(cmd), rc, stdout, stderr)

    def start(self, cmd: list[str], timeout: float = timeouts.EXEC_DEFAULT) -> Result:
        """`cmd` through the container runtime (docker exec), for commands that leave daemons
        running in the node (`frrinit.sh start`): they belong to its cgroup, not to twin's."""
        wrapped = ["timeout", "--kill-after=2", f"{timeout:g}", *cmd]
        rc, (out, err) = self.container.exec_run(wrapped, demux=True)
        stderr = (err or b"").decode(errors="replace") + (f"\n(timed out after {timeout:g}s)" if rc == 124 else "")
        return Result(self.where, list(cmd), rc, (out or b"").decode(errors="replace"), stderr)

    def spawn(self, cmd: list[str]) -> subprocess.Popen:
        """Start `cmd` in the node and return at once (a capture); stop it from within the node."""
        return subprocess.Popen(self.argv(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=ENV)

    def path(self, inside: str) -> Path:
        """A file of the node, as the host reaches it (through its init process's root)."""
        return Path(f"/proc/{self.pid}/root") / inside.lstrip("/")

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


def _of(pid: int, container_id: str) -> bool:
    """Is `pid` (still) a process of container `container_id`?"""
    try:
        return container_id in Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return False
