"""A lab's long-lived process: started detached from the command that starts it, recorded in
the lab directory, stopped exactly.

    rec = daemon.spawn(recfile, argv, log, ready=lambda r: bool(r.get("listeners")))
    daemon.alive(rec)          # that very process runs (its pid and its start time match)
    daemon.stop(recfile)       # SIGTERM, then SIGKILL at the deadline; the record goes

The process is a session of its own (Ctrl-C on the terminal of `twin up` does not reach
it, it outlives `up`), with no inherited file descriptor but its log. It writes its own
record first thing (`announce`: pid, the kernel's start time of that pid, its command
line), so a `twin up` killed right after starting it still leaves a record `down` finds;
the record is replaced atomically, so a reader sees a whole one. It watches its lab
directory (`orphaned`) and leaves when the directory is gone or replaced: a `down` that
came before the record still leaves nothing running. `stop` signals only the process whose
pid and start time are recorded: a pid the kernel gave to another process since is left alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from twin.base import timeouts, wait
from twin.base.errors import TwinError
from twin.lifecycle import state


def started(pid: int) -> int | None:
    """The kernel's start time of process `pid` (clock ticks after boot), None when there is none
    (or only its zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # after the command's name, which may hold anything
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def read(recfile: Path) -> dict | None:
    """A process record, or None when there is none (or it cannot be read)."""
    try:
        doc = json.loads(state.read_text(recfile))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("pid"), int) else None


def alive(rec: dict | None) -> bool:
    """Is the process a record names still that process?"""
    if not rec:
        return False
    return started(rec["pid"]) is not None and started(rec["pid"]) == rec.get("started")


def announce(recfile: Path, **more: object) -> dict:
    """The running process's own record (pid, start time, command line and `more`), written atomically."""
    rec = {"pid": os.getpid(), "started": started(os.getpid()), "argv": sys.argv, **more}
    state.write_text(recfile, json.dumps(rec, indent=2))
    return rec


def orphaned(d: Path) -> Callable[[], bool]:
    """A test the process runs while it serves: True once directory `d` is gone or is another one."""
    first = d.stat().st_ino

    def gone() -> bool:
        try:
            return d.stat().st_ino != first
        except OSError:
            return True

    return gone


def spawn(
    recfile: Path, argv: list[str], log: Path, ready: Callable[[dict], bool], timeout: float = timeouts.SERVICE_START
) -> dict:
    """Start `argv` detached, its output to `log`; returns its record once `ready(record)` holds.
    TwinError with the end of its log when it exits first, or is not ready by the deadline
    (it is stopped then)."""
    recfile.unlink(missing_ok=True)
    with open(log, "ab") as out:
        p = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
            env=os.environ.copy(),
        )
    found: dict = {}

    def missing() -> list[str]:
        rec = read(recfile)
        if rec and rec["pid"] == p.pid and ready(rec):
            found.update(rec)
            return []
        if p.poll() is not None:
            raise TwinError(f"{' '.join(argv[-3:])} exited {p.returncode} as it started: {_tail(log)}")
        return [f"{argv[-1]}: not listening yet (pid {p.pid})"]

    try:
        wait.until(missing, timeout, "the service to listen", first=0.05, cap=0.2)
    except BaseException:
        _end(p.pid, started(p.pid))
        raise
    return found


def stop(recfile: Path, deadline: float = timeouts.SERVICE_STOP) -> bool:
    """Stop the process of a record (if it is still that process) and remove the record; True if
    one was stopped."""
    rec = read(recfile)
    was = alive(rec)
    if was and rec:
        _end(rec["pid"], rec["started"], deadline)
    recfile.unlink(missing_ok=True)
    return was


def _end(pid: int, start: int | None, deadline: float = timeouts.SERVICE_STOP) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if start is None or started(pid) != start:
            return
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        end = time.monotonic() + deadline
        while time.monotonic() < end and started(pid) == start:
            _reap(pid)
            time.sleep(0.02)
    _reap(pid)


def _reap(pid: int) -> None:
    """Collect the exit of a process this one started (else it stays a zombie until this one exits)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _tail(log: Path, lines: int = 5) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(nothing in its log)"
