"""FRR's boot in a node that stalls for real (issue 46): `twin up` names the node, the step and the daemon,
boots that node's FRR again once and converges; a second stall ends the bring-up naming them.

The stall is made as a host does it to a daemon it starves, only longer: the test watches the host's
/proc for leaf1's mgmtd (the node's own pid namespace) from the moment its container runs, and stops it
(SIGSTOP) as soon as it is there: the node's boot (twin-nodectl) waits for mgmtd to answer, or its
config load blocks on it, until twin's bound for a step passes. twin up runs off a terminal, as a CI
job does, with -v: every progress line is in its stderr.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, leftovers, said, twin_cli
from twin.config.naming import container_name

pytestmark = pytest.mark.e2e
SMALL = Path(__file__).parent / "small.yml"


def daemon_pids(container_pid: int, name: str) -> set[int]:
    """Host pids of the processes called `name` in the pid namespace of `container_pid`."""
    try:
        ns = os.readlink(f"/proc/{container_pid}/ns/pid")
    except OSError:
        return set()
    out = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{d}/ns/pid") == ns and Path(f"/proc/{d}/comm").read_text().strip() == name:
                out.add(int(d))
        except OSError:
            continue
    return out


class Staller(threading.Thread):
    """Stops `daemon` of `node` (SIGSTOP) each time a new one appears, `times` times."""

    def __init__(self, runtime, lab: str, node: str, daemon: str, times: int):
        super().__init__(daemon=True)
        self.runtime, self.name_, self.daemon_, self.times = runtime, container_name(lab, node), daemon, times
        self.stopped: list[int] = []
        self.end = threading.Event()

    def run(self) -> None:
        pid = 0
        while not self.end.is_set() and len(self.stopped) < self.times:
            if not pid:
                try:
                    c = self.runtime.client.containers.get(self.name_)
                    pid = c.attrs["State"]["Pid"]
                except Exception:  # noqa: BLE001  (not made yet)
                    pass
            for p in sorted(daemon_pids(pid, self.daemon_) - set(self.stopped) if pid else ())[:1]:
                os.kill(p, signal.SIGSTOP)
                self.stopped.append(p)
                while os.path.exists(f"/proc/{p}") and not self.end.is_set():  # one a boot: until twin's reboot
                    time.sleep(0.05)
            time.sleep(0.005)


def up(runtime, lab: str, image: str, times: int) -> tuple[subprocess.CompletedProcess, Staller]:
    staller = Staller(runtime, lab, "leaf1", "mgmtd", times)
    staller.start()
    try:
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "twin.cli",
                "-v",
                "up",
                str(SMALL),
                "--name",
                lab,
                "--image",
                image,
                "--timeout",
                "400",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
            env={**os.environ, "TWIN_FRR_STEP": "5"},  # a stall is seen 3x sooner than by default
        )
    finally:
        staller.end.set()
        staller.join()
    return p, staller


def test_a_stalled_boot_is_named_booted_again_once_and_the_lab_converges(runtime, node_image):
    lab = "t-boot-once"
    try:
        p, staller = up(runtime, lab, node_image, times=1)
        assert len(staller.stopped) == 1
        assert p.returncode == 0, p.stderr[-3000:]
        line = next(x for x in p.stderr.splitlines() if "FRR's boot stalled" in x)
        assert "leaf1: FRR's boot stalled" in line and "mgmtd stopped (SIGSTOP)" in line, line
        assert line.rstrip().endswith(": booting its FRR again"), line
        assert "note: FRR's boot stalled and was booted again on 1 node(s): leaf1" in said(p.stderr)
        assert f"lab {lab} is up" in p.stdout
    finally:
        twin_cli("down", lab)
    assert leftovers(runtime, lab) == []


def test_a_boot_that_stalls_again_ends_the_bring_up_naming_the_node_and_the_daemon(runtime, node_image):
    lab = "t-boot-twice"
    try:
        p, staller = up(runtime, lab, node_image, times=2)
        assert len(staller.stopped) == 2
        assert p.returncode == 1, p.stderr[-3000:]
        error = next(x for x in said(p.stderr) if x.startswith("error: "))
        assert "leaf1: FRR's boot stalled" in error, error
        assert "mgmtd stopped (SIGSTOP)" in error and "it had stalled once already and was booted again" in error
    finally:
        twin_cli("down", lab)
    assert leftovers(runtime, lab) == []
