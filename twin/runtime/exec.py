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

Evidence (opt-in): inside `with recording() as rec:` every command run through
this seam is kept in `rec.entries` (node, command, exit code, raw output,
start and duration), each under the label `labelled(...)` set around it. The
recorder lives in a context variable, so nothing is kept outside such a block;
work handed to a thread pool carries it along with `carried(fn)`.
"""

from __future__ import annotations

import contextvars
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from docker.models.containers import Container

from twin.base import timeouts, wait
from twin.base.errors import CommandError, DeadlinePassed, TwinError
from twin.runtime import dockerapi, nodefs
from twin.runtime.failures import engine_errors

ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
}
GRACE = 5.0  # beyond a command's own deadline, before twin stops waiting for nsenter itself
_LOCK = threading.Lock()  # the commands under way of every NodeExec (a few sets, briefly)


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
    label: str  # what it was run for, e.g. "checks: red web reachable", "control"
    node: str  # lab/node
    cmd: list[str]
    rc: int
    stdout: str
    stderr: str
    started: float  # Unix time
    seconds: float


@dataclass
class Recorder:
    """Commands run through NodeExec while it records (thread-safe)."""

    entries: list[Evidence] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(
        self, where: str, cmd: list[str], rc: int, stdout: str, stderr: str, started: float, seconds: float
    ) -> None:
        with self._lock:
            self.entries.append(
                Evidence(
                    len(self.entries) + 1,
                    _LABEL.get(),
                    where,
                    list(cmd),
                    rc,
                    stdout,
                    stderr,
                    round(started, 3),
                    round(seconds, 3),
                )
            )

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
    """Runs commands in one node (its container's namespaces)."""

    def __init__(self, container: Container, where: str, pid: int = 0) -> None:
        """`pid`: the node's init process where the caller knows it, else the one of the container's last
        inspection (either checked before use: no inspection of the engine for a pid that is still it)."""
        self.container = container
        self.where = where
        self._pid = pid or _inspected_pid(container)
        self._running: set[subprocess.Popen] = set()
        self._stopped = False

    @property
    def pid(self) -> int:
        """The node's init process, checked to be the container's still (a restarted node has another)."""
        if not self._pid or not _of(self._pid, self.container.id):
            with engine_errors(f"{self.where}: container {self.container.name}"):
                self.container.reload()
            self._pid = self.container.attrs["State"]["Pid"]
            if not self._pid:
                raise TwinError(
                    f"{self.where}: container {self.container.name} is not running ({self.container.status})"
                )
        return self._pid

    def argv(self, cmd: list[str]) -> list[str]:
        # --root and --wd without a directory: the node's own root and its init's working directory
        # (a directory given to --wd is looked up before entering: a shell there cannot tell where it is)
        return [
            "nsenter",
            f"--target={self.pid}",
            "--mount",
            "--uts",
            "--ipc",
            "--net",
            "--pid",
            "--cgroup",
            "--root",
            "--wd",
            "--",
            *cmd,
        ]

    def run(self, cmd: list[str], timeout: float = timeouts.EXEC_DEFAULT) -> Result:
        """`cmd` in the node, its output read once it exits (into files, not pipes: a command that
        starts daemons, like FRR's frrinit.sh, leaves them holding whatever it was given)."""
        if self._stopped:
            raise TwinError(f"{self.where}: not run ({' '.join(cmd)[:80]}): twin was interrupted")
        own, timeout = timeout, wait.cut(timeout, f"{self.where}: `{' '.join(cmd)[:80]}`")  # by the command's deadline
        wrapped = ["timeout", "--kill-after=2", f"{timeout:g}", *cmd]
        started, t0 = time.time(), time.monotonic()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            rc = self._wait(
                subprocess.Popen(self.argv(wrapped), stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=ENV),
                timeout + GRACE,
            )
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
        if rc == 124:
            _cut_short(self.where, cmd, own, timeout)
            stderr += f"\n(timed out after {timeout:g}s)"
        return _recorded(Result(self.where, list(cmd), rc, stdout, stderr), started, t0)

    def _wait(self, proc: subprocess.Popen, limit: float) -> int:
        """The exit code of `proc` (124: not done within `limit`); it is stopped if this is interrupted."""
        with _LOCK:
            self._running.add(proc)
        try:
            return proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            _end(proc)
            return 124
        except BaseException:
            _end(proc)
            raise
        finally:
            with _LOCK:
                self._running.discard(proc)

    def stop(self) -> None:
        """End the commands under way in this node and every later one at once (a bring-up that is
        interrupted: with --keep, the nodes stay, and nothing must run on in them for twin)."""
        with _LOCK:
            self._stopped = True
            running = list(self._running)
        for proc in running:
            _end(proc)

    def start(
        self, cmd: list[str], timeout: float = timeouts.EXEC_DEFAULT, env: dict[str, str] | None = None
    ) -> Result:
        """`cmd` through the container runtime (docker exec), for commands that leave daemons
        running in the node (`frrinit.sh start`): they belong to its cgroup, not to twin's. `env`:
        its environment besides the container's (a secret it needs: never on a command line)."""
        own, timeout = timeout, wait.cut(timeout, f"{self.where}: `{' '.join(cmd)[:80]}`")
        wrapped = ["timeout", "--kill-after=2", f"{timeout:g}", *cmd]
        started, t0 = time.time(), time.monotonic()
        api = self.container.client.api  # each step by itself: only what can be asked twice is retried
        extra = {"environment": env} if env else {}
        with engine_errors(f"{self.where}: docker exec {cmd[0]}"):
            exec_id = dockerapi.call(
                f"{self.where}: docker exec {cmd[0]}",
                lambda: api.exec_create(self.container.id, wrapped, **extra)["Id"],
            )
            out, err = api.exec_start(exec_id, demux=True)  # runs the command: once
            rc = dockerapi.call(f"{self.where}: docker exec {cmd[0]}", lambda: api.exec_inspect(exec_id)["ExitCode"])
        if rc == 124:
            _cut_short(self.where, cmd, own, timeout)
        stderr = (err or b"").decode(errors="replace") + (f"\n(timed out after {timeout:g}s)" if rc == 124 else "")
        return _recorded(Result(self.where, list(cmd), rc, (out or b"").decode(errors="replace"), stderr), started, t0)

    def inside(self, cmd: list[str], timeout: float = timeouts.EXEC_DEFAULT) -> Result:
        """A command a user submitted (a confined lab's `exec`, an exec check): run by the container
        runtime inside the node as its own processes run (docker exec: its namespaces, cgroup,
        capabilities and seccomp profile, `twin.runtime.hardening`), never from the host with
        twin's own capabilities as `run` does."""
        own, timeout = timeout, wait.cut(timeout, f"{self.where}: `{' '.join(cmd)[:80]}`")
        wrapped = ["timeout", "--kill-after=2", f"{timeout:g}", *cmd]
        started, t0 = time.time(), time.monotonic()
        api = self.container.client.api
        with engine_errors(f"{self.where}: docker exec {cmd[0]}"):
            exec_id = dockerapi.call(
                f"{self.where}: docker exec {cmd[0]}",
                lambda: api.exec_create(self.container.id, wrapped, environment=ENV)["Id"],
            )
            out, err = api.exec_start(exec_id, demux=True)
            rc = dockerapi.call(f"{self.where}: docker exec {cmd[0]}", lambda: api.exec_inspect(exec_id)["ExitCode"])
        if rc == 124:
            _cut_short(self.where, cmd, own, timeout)
        stderr = (err or b"").decode(errors="replace") + (f"\n(timed out after {timeout:g}s)" if rc == 124 else "")
        return _recorded(
            Result(self.where, list(cmd), rc if rc is not None else 126, (out or b"").decode(errors="replace"), stderr),
            started,
            t0,
        )

    def spawn(self, cmd: list[str]) -> subprocess.Popen:
        """Start `cmd` in the node and return at once (a capture); stop it from within the node."""
        return subprocess.Popen(
            self.argv(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV
        )

    def read_file(self, inside: str, limit: int = nodefs.MAX_BYTES) -> bytes | None:
        """A file of the node read from the host (None when missing), no link in it followed
        (twin.runtime.nodefs: NodeFileError says why not)."""
        return nodefs.read(self.pid, inside, self.where, limit)

    def file_size(self, inside: str) -> int:
        return nodefs.size(self.pid, inside, self.where)

    def remove_file(self, inside: str) -> None:
        nodefs.remove(self.pid, inside, self.where)

    def check(self, cmd: list[str], timeout: float = timeouts.EXEC_DEFAULT) -> Result:
        return self.run(cmd, timeout).check()

    # FRR -----------------------------------------------------------------
    def vtysh(self, *commands: str, timeout: float = timeouts.EXEC_DEFAULT, daemon: str | None = None) -> str:
        """`commands` in the node's vtysh (`daemon`: sent to that daemon alone, `vtysh -d`)."""
        cmd = ["vtysh", "-d", daemon] if daemon else ["vtysh"]
        for c in commands:
            cmd += ["-c", c]
        return self.check(cmd, timeout).stdout

    def vtysh_json(self, *commands: str, timeout: float = timeouts.EXEC_DEFAULT) -> list[Any]:
        """One vtysh call, one parsed JSON document per command. Bad JSON is an error."""
        cmd = ["vtysh"]
        for c in commands:
            cmd += ["-c", c]
        res = self.check(cmd, timeout)
        docs: list[Any] = []
        text, pos = res.stdout, 0
        decoder = json.JSONDecoder()
        while len(docs) < len(commands):
            while pos < len(text) and text[pos].isspace():
                pos += 1
            try:
                doc, pos = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as e:
                raise CommandError(
                    self.where, cmd, res.rc, f"output is not JSON ({e.msg} at char {e.pos}):\n{text[:2000]}", res.stderr
                ) from None
            docs.append(doc)
        return docs


def _cut_short(where: str, cmd: list[str], own: float, given: float) -> None:
    """A command that ran out of the time it was given, which the command's deadline cut from its own:
    DeadlinePassed (the deadline, not the node's answer)."""
    b = wait.current()
    if given < own and b is not None and b.passed(wait.SLACK):
        raise DeadlinePassed(f"{where}: `{' '.join(cmd)[:80]}` cut short by {b.name} after {given:.0f}s")


def _end(proc: subprocess.Popen) -> None:
    """End a command run through nsenter: the process nsenter forked into the node's pid namespace
    (coreutils `timeout`, which passes the signal on to the command) first, then nsenter."""
    try:
        inside = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    except OSError:
        inside = []
    for pid in inside:
        try:
            os.kill(int(pid), signal.SIGTERM)
        except OSError:
            pass
    try:
        proc.wait(timeout=GRACE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _inspected_pid(container: Container) -> int:
    """The pid of the container's last inspection (0: none, or a listing's short record)."""
    state = (getattr(container, "attrs", None) or {}).get("State")
    pid = state.get("Pid") if isinstance(state, dict) else None
    return pid if isinstance(pid, int) else 0


def _of(pid: int, container_id: str) -> bool:
    """Is `pid` (still) a process of container `container_id`?"""
    try:
        return container_id in Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return False


def _recorded(res: Result, started: float, t0: float) -> Result:
    """`res`, kept as evidence when a recorder is on."""
    rec = _RECORDER.get()
    if rec is not None:
        rec.add(res.where, res.cmd, res.rc, res.stdout, res.stderr, started, time.monotonic() - t0)
    return res
