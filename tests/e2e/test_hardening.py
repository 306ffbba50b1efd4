"""Crash safety and concurrency against the real engine: `up` killed (SIGKILL) at each stage
then `down` leaves nothing; Ctrl-C stops a bring-up within seconds and cleans up; a second
`up` of the same lab is refused by its lock and never touches the first; `up` on a lab that
exists says whether it is this topology, converged, or what differs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyroute2 import netns

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin.base import wait
from twin.config.naming import probe_netns
from twin.runtime import kernel

pytestmark = pytest.mark.e2e

SMALL = "tests/e2e/small.yml"


@pytest.fixture(autouse=True)
def clean_slate(runtime):
    """A test that failed before may have left its lab: each starts from nothing."""
    for name in ("t-kill-crea", "t-kill-cont", "t-kill-conv", "t-ctrlc", "t-lock", "t-exists", "t-probe-left"):
        if leftovers(runtime, name):
            twin_cli("down", name)


def spawn(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "twin.cli", *args],
        cwd=ROOT,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def state_of(name: str) -> dict:
    try:
        return json.loads((Path(os.environ["TWIN_HOME"]) / "labs" / name / "state.json").read_text())
    except (OSError, ValueError):
        return {}


def settled(runtime, name: str) -> None:
    """Until the engine has finished what a killed client asked of it: the lab's containers
    stop changing."""
    seen: list[set[str]] = []

    def changing() -> list[str]:
        seen.append(set(runtime.containers(name)))
        return [] if len(seen) > 2 and seen[-1] == seen[-2] == seen[-3] else ["containers still changing"]

    wait.until(changing, 30, f"{name}: containers settled", first=0.3, cap=0.3)


STAGES = {
    "creating": lambda runtime, name: state_of(name).get("status") == "creating",
    "containers": lambda runtime, name: len(runtime.containers(name)) >= 2,
    "converging": lambda runtime, name: state_of(name).get("status") == "converging",
}


@pytest.mark.parametrize("stage", list(STAGES))
def test_up_killed_at_any_stage_then_down_leaves_nothing(stage, runtime, node_image):
    name = f"t-kill-{stage[:4]}"
    proc = spawn("up", SMALL, "--name", name, "--image", node_image)
    try:
        wait.until(
            lambda: [] if STAGES[stage](runtime, name) or proc.poll() is not None else [stage],
            60,
            f"{name}: stage {stage}",
            first=0.01,
            cap=0.02,
        )
        assert proc.poll() is None, f"up finished before stage {stage} could be caught"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    settled(runtime, name)
    p = twin_cli("down", name, check=True)
    assert "removed" in p.stdout or stage == "creating"
    assert leftovers(runtime, name) == []


def test_ctrl_c_stops_up_within_seconds_and_cleans_up(runtime, node_image):
    name = "t-ctrlc"
    proc = spawn("up", SMALL, "--name", name, "--image", node_image)
    wait.until(
        lambda: [] if len(runtime.containers(name)) >= 2 or proc.poll() is not None else ["containers"],
        60,
        f"{name}: containers",
        first=0.01,
        cap=0.02,
    )
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - t0
    assert proc.returncode == 130, (out, err)
    assert took < 20, f"Ctrl-C took {took:.1f}s to stop and clean up"
    assert "interrupted" in err
    assert leftovers(runtime, name) == []


def test_a_second_up_of_the_same_lab_is_refused_and_leaves_the_first_alone(runtime, node_image):
    name = "t-lock"
    first = spawn("up", SMALL, "--name", name, "--image", node_image)
    try:
        wait.until(
            lambda: [] if runtime.containers(name) or first.poll() is not None else ["containers"],
            60,
            f"{name}: first up under way",
            first=0.01,
            cap=0.02,
        )
        assert first.poll() is None, "up finished before it could be held"
        first.send_signal(signal.SIGSTOP)  # held mid-way with its lock: still under way however slow the rest
        try:
            second = twin_cli("up", SMALL, "--name", name, "--image", node_image)
            assert second.returncode == 1 and f"lab '{name}' is busy: twin up (pid {first.pid})" in second.stderr
            down = twin_cli("down", name)
            assert down.returncode == 1 and "is busy" in down.stderr, "down waits its turn too"
        finally:
            first.send_signal(signal.SIGCONT)
        out, err = first.communicate(timeout=180)
        assert first.returncode == 0, err
        assert "is up" in out
        st = json.loads(twin_cli("status", name, "--json", check=True).stdout)
        assert st["healthy"] and len(st["nodes"]) == 5, st
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        twin_cli("down", name)
    assert leftovers(runtime, name) == []


def test_up_on_an_existing_lab_tells_what_differs(make_lab, runtime, tmp_path):
    lab = make_lab(SMALL, "t-exists")
    same = twin_cli("up", SMALL, "--name", "t-exists")
    assert same.returncode == 0 and "already up and converged from this topology" in same.stderr
    other = tmp_path / "other.yml"
    other.write_text((ROOT / SMALL).read_text().replace("  - [dpu1, host1]\n", ""))
    p = twin_cli("up", str(other), "--name", "t-exists")
    assert p.returncode == 1 and "is up from another topology" in p.stderr and "remove link" in p.stderr, p.stderr
    lab.runtime.containers("t-exists")["leaf2"].stop(timeout=1)
    half = twin_cli("up", SMALL, "--name", "t-exists")
    assert half.returncode == 1 and "exists but is not healthy" in half.stderr and "leaf2" in half.stderr, half.stderr
    status = twin_cli("status", "t-exists")
    assert status.returncode == 1 and "leaf2: container exited" in status.stdout
    twin_cli("down", "t-exists", check=True)
    assert leftovers(runtime, "t-exists") == []


def test_a_probe_namespace_left_by_a_killed_up_is_cleaned(runtime):
    """Named probe namespaces are what twin made before its probes ran in a thread's own namespace."""
    name = "t-probe-left"
    netns.create(probe_netns(name))
    try:
        assert kernel.vrf_devices(name) in (True, False), "a stale probe namespace does not break up"
        assert probe_netns(name) in netns.listnetns(), "probes use a namespace of their own thread, not this name"
        twin_cli("down", name, check=True)  # one an older twin's killed `up` left is removed
        assert probe_netns(name) not in netns.listnetns()
    finally:
        if probe_netns(name) in netns.listnetns():
            netns.remove(probe_netns(name))
    assert leftovers(runtime, name) == []
