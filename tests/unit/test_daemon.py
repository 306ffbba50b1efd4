"""A lab's long-lived process (`twin.lifecycle.daemon`, what the NVUE service runs as): started
detached, recorded by itself, stopped exactly (never another process that got its pid), gone
when its lab directory goes, and still found and stopped after the command that started it
was SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from twin.base import wait
from twin.base.errors import TwinError
from twin.lifecycle import daemon

CHILD = r"""
import sys, time
from pathlib import Path
from twin.lifecycle import daemon
rec, d = Path(sys.argv[1]), Path(sys.argv[2])
gone = daemon.orphaned(d)
daemon.announce(rec)
time.sleep(0.2)
daemon.announce(rec, listeners={"x": {"port": 1}})
while not gone():
    time.sleep(0.05)
"""


def spawn(tmp: Path) -> tuple[dict, Path]:
    d = tmp / "lab"
    d.mkdir(exist_ok=True)
    rec = d / "service.json"
    return daemon.spawn(
        rec, [sys.executable, "-c", CHILD, str(rec), str(d)], d / "service.log", ready=lambda r: "listeners" in r
    ), rec


def gone(pid: int) -> list[str]:
    return [] if daemon.started(pid) is None else [f"pid {pid} still runs"]


def test_a_spawned_process_records_itself_and_stop_ends_exactly_it(tmp_path):
    rec, f = spawn(tmp_path)
    assert rec["listeners"] == {"x": {"port": 1}} and daemon.alive(rec)
    assert os.getsid(rec["pid"]) == rec["pid"]  # a session of its own: Ctrl-C of `up` does not reach it
    assert daemon.stop(f) and not f.exists()
    wait.until(lambda: gone(rec["pid"]), 30, "the process to end")
    assert not daemon.stop(f)  # nothing recorded, nothing stopped


def test_a_record_whose_pid_is_another_process_now_is_left_alone(tmp_path):
    rec, f = spawn(tmp_path)
    f.write_text(json.dumps({**rec, "started": rec["started"] - 1}))  # as if the kernel gave the pid again
    assert not daemon.alive(daemon.read(f)) and not daemon.stop(f)
    assert daemon.started(rec["pid"]) == rec["started"]  # it was not signalled
    f.write_text(json.dumps(rec))
    assert daemon.stop(f)


def test_it_leaves_when_its_lab_directory_goes(tmp_path):
    rec, f = spawn(tmp_path)
    for p in sorted((tmp_path / "lab").iterdir()):
        p.unlink()
    (tmp_path / "lab").rmdir()
    wait.until(lambda: gone(rec["pid"]), 30, "the process to leave with its directory")


def test_a_process_that_dies_as_it_starts_is_reported_with_its_log(tmp_path):
    d = tmp_path / "lab"
    d.mkdir()
    with pytest.raises(TwinError, match="exited 1 as it started: .*no listener for you"):
        daemon.spawn(
            d / "service.json",
            [sys.executable, "-c", "import sys; sys.exit('no listener for you')"],
            d / "service.log",
            ready=lambda r: True,
        )


def test_after_the_starting_command_is_killed_the_process_is_still_found_and_stopped(tmp_path):
    starter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"""
import sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from pathlib import Path
from tests.unit.test_daemon import spawn
spawn(Path({str(tmp_path)!r}))
print("started", flush=True)
time.sleep(60)
""",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert starter.stdout.readline().strip() == "started"
    starter.send_signal(signal.SIGKILL)
    starter.wait()
    f = tmp_path / "lab" / "service.json"
    rec = daemon.read(f)
    time.sleep(0.2)
    assert daemon.alive(rec)  # it outlived the SIGKILL of what started it
    assert daemon.stop(f)
    wait.until(lambda: gone(rec["pid"]), 30, "the process to end")
