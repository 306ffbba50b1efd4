"""An operation's work in a process of its own: a bring-up, an apply, a rehearsal or a proof
never shares the server's interpreter (its GIL, its garbage collector) with the event loop that
answers `GET`s, and a crash in one takes no other down.

The work (`Work`: a module-level function, or a `functools.partial` of one, called as
`work(home, say)`) is sent to a process forked from multiprocessing's fork server, which has
twin's modules loaded already (`PRELOAD`): a fork costs milliseconds, an interpreter importing
twin a second. The worker
- runs with the server's environment and working directory as they were when the operation
  started;
- dies with the server: the fork server ends when the server does (however it ends, SIGKILL
  included), and takes its children with it (PR_SET_PDEATHSIG), so a server started again never
  races work its predecessor left running (`gone`: the new server's recovery waits for it);
- ignores SIGINT: a Ctrl-C in the server's terminal stops the server, which lets running
  operations finish;
- runs in a session of its own, `NICE` steps below the server (which raised its own priority
  as much, `serve`): where the kernel weighs each session as one (autogroup, `cpu`), a worker
  left in the server's would take the server's share; on a busy host, a request is answered
  before an operation's work moves on, and that work runs at the priority `twin up` would;
- writes the operation's state, its progress and its end into the state database, where the
  server's readers and event streams find them. Its progress is `twin.base.stages`': the `say` it
  hands the work is a `Progress`, each `Step` (stage and text) one event.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Callable

from twin.base import stages, wait
from twin.server.home import Home
from twin.server.problems import of_error
from twin.server.store import Store

Say = Callable[[str], None]
Work = Callable[[Home, Say], "tuple[Any, int]"]  # (the result as the CLI's --json has it, the CLI's exit code)
CONTEXT = multiprocessing.get_context("forkserver")
PRELOAD = ["twin.server.worker", "twin.server.labwork", "twin.server.snapshots"]
PR_SET_PDEATHSIG = 1
NICE = 5  # the worker's CPU priority below the server's
GONE = 30.0  # s: a dead server's worker is gone (it is SIGKILLed as the fork server ends)


def warm() -> None:
    """The fork server started now, with twin loaded (a server does it as it starts: its first
    operation forks at once)."""
    CONTEXT.set_forkserver_preload(PRELOAD)
    multiprocessing.forkserver.ensure_running()


def start(home: Path, oid: str, work: Work) -> multiprocessing.process.BaseProcess:
    """Operation `oid`'s worker, started; `work` runs in it."""
    CONTEXT.set_forkserver_preload(PRELOAD)
    proc = CONTEXT.Process(
        target=_main, args=(str(home), oid, work, os.getpid(), dict(os.environ), os.getcwd()), name=f"twin-op-{oid}"
    )
    proc.start()
    return proc


def _main(home: str, oid: str, work: Work, server: int, env: dict[str, str], cwd: str) -> None:
    # multiprocessing hands a fork server's child a copy of the server's end of the pipe whose
    # closing ends the fork server: kept open here, the fork server would outlive a killed server
    # (and so would this worker)
    fs: Any = multiprocessing.forkserver._forkserver
    if fs._forkserver_alive_fd is not None:
        os.close(fs._forkserver_alive_fd)
        fs._forkserver_alive_fd = None
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if not _alive(server):  # the server died before that took hold: nothing to do for anyone
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setsid()  # out of the server's scheduling group (`cpu`); a forked child leads none
    os.nice(NICE)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    h = Home(Path(home))
    try:
        run(h, oid, work)
    finally:
        h.store.close()


def run(home: Home, oid: str, work: Work) -> None:
    """Operation `oid`: running, its work done with its progress recorded, then succeeded or failed."""
    events = Events(home.store, oid)
    home.store.run(
        "UPDATE operations SET state = 'running', started = ?, worker = ? WHERE id = ?", time.time(), os.getpid(), oid
    )
    events.add("state", "running")
    progress = stages.Progress()
    progress.subscribe(events.step)
    # each end's event before its state: a stream that reads the operation done has every event
    try:
        result, code = work(home, progress)
    except BaseException as e:  # noqa: BLE001  (an operation ends failed, saying why)
        problem = of_error(e)
        events.add("state", f"failed: {problem.detail}")
        home.store.finish(oid, "failed", {"error": problem.doc()}, problem.detail, 1)
    else:
        events.add("state", "succeeded")
        home.store.finish(oid, "succeeded", result, "", code)


class Events:
    """An operation's events, numbered, into the database: each progress `Step` (one said again
    is not an event again) and its states."""

    def __init__(self, store: Store, oid: str):
        self.store, self.oid = store, oid
        self.seq = store.last_event(oid)
        self.last: tuple[str, str] | None = None
        self._lock = threading.Lock()  # a work may say from several threads

    def step(self, step: stages.Step) -> None:
        with self._lock:
            if (step.stage, step.text) == self.last:
                return
            self.last = (step.stage, step.text)
            self._add("progress", step.text, step.stage)

    def add(self, kind: str, text: str) -> None:
        with self._lock:
            self._add(kind, text, "")

    def _add(self, kind: str, text: str, stage: str) -> None:
        self.seq += 1
        self.store.add_event(self.oid, self.seq, kind, text, stage)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _worker_alive(pid: int) -> bool:
    """Whether `pid` is still an operation's worker (a process forked by a fork server)."""
    try:
        return b"multiprocessing.forkserver" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def gone(pid: int | None, timeout: float = GONE) -> None:
    """Wait until a stopped server's worker `pid` is gone (it dies with the server's fork server);
    ConvergenceTimeout naming it if it does not."""
    if pid:
        wait.until(
            lambda: [f"worker process {pid} (its lab is not touched while it runs)"] if _worker_alive(pid) else [],
            timeout,
            "the stopped server's operation ended",
            first=0.05,
            cap=0.5,
        )
