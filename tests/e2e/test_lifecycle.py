"""Lab lifecycle against the real engine: failed and killed bring-ups, two labs side by side."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin.base.errors import ConvergenceTimeout
from twin.config.render import render_lab
from twin.lab import Lab

pytestmark = pytest.mark.e2e


def test_killed_up_is_cleaned_by_down_even_without_its_state(runtime, node_image):
    name = "t-killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "twin.cli", "up", "tests/e2e/small.yml", "--name", name, "--image", node_image],
        cwd=ROOT,
        env=os.environ.copy(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while len(runtime.containers(name)) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, "up finished before it could be killed"
        assert runtime.containers(name), "no container appeared"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    time.sleep(1)  # let the engine finish creating what the killed client had asked for
    assert runtime.containers(name), "the killed up left containers for down to find"
    shutil.rmtree(os.path.join(os.environ["TWIN_HOME"], "labs", name), ignore_errors=True)
    p = twin_cli("down", name, check=True)
    assert "removed" in p.stdout
    assert leftovers(runtime, name) == []


def test_failed_up_names_what_is_missing_and_leaves_nothing(runtime, node_image, tmp_path):
    """spine1's own config lacks its neighbor on swp2 (to leaf2): the lab can never converge."""
    lab = Lab.load(ROOT / "tests/e2e/small.yml", name="t-timeout")
    conf = render_lab(lab.fabric)["spine1"]["frr.conf"]
    assert " neighbor swp2 interface peer-group fabric\n" in conf
    (tmp_path / "spine1.conf").write_text(conf.replace(" neighbor swp2 interface peer-group fabric\n", ""))
    with pytest.raises(ConvergenceTimeout) as exc:
        lab.up(image=node_image, timeout=15, configs=tmp_path)
    text = str(exc.value)
    assert any(m.startswith("spine1: BGP session on swp2 to leaf2") for m in exc.value.missing), text
    assert any(m.startswith("leaf2: no route to leaf1's loopback") for m in exc.value.missing), text
    assert "convergence (BGP sessions, loopback routes) not reached" in text
    nodes = set(lab.fabric.nodes)
    assert exc.value.missing and all(m.split(":")[0] in nodes for m in exc.value.missing), text
    # each line names a node and what it lacks: a session (with FRR's state when FRR answers) or a route
    assert all("BGP session on" in m or "no route to" in m or "FRR not answering" in m for m in exc.value.missing)
    assert any("no route to" in m for m in exc.value.missing), text
    assert leftovers(runtime, "t-timeout") == []


def test_invalid_topology_creates_nothing(runtime, tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("name: t-bad\nnodes:\n  s1: {kind: spine}\n  l1: {kind: lef}\nlinks:\n  - [s1, l1]\n")
    p = twin_cli("up", str(bad))
    assert p.returncode == 1
    assert f"{bad}:4: nodes.l1.kind: unknown kind 'lef'; known kinds: spine, leaf, dpu, host, router" in p.stderr
    assert leftovers(runtime, "t-bad") == []


def test_two_labs_run_side_by_side_without_touching_each_other(make_lab, runtime):
    with ThreadPoolExecutor(2) as pool:
        a, b = pool.map(lambda n: make_lab("tests/e2e/small.yml", n), ["t-pair-a", "t-pair-b"])
    assert a.missing() == [] and b.missing() == []
    assert set(runtime.containers("t-pair-a")) == set(runtime.containers("t-pair-b")) == set(a.fabric.nodes)
    # same node names and addresses in both labs, each in its own namespaces
    peers = a.node("leaf1").vtysh_json("show bgp summary json")[0]["ipv4Unicast"]["peers"]
    assert peers["swp1"]["state"] == "Established"
    twin_cli("down", "t-pair-a", check=True)
    assert leftovers(runtime, "t-pair-a") == []
    assert len(runtime.containers("t-pair-b")) == 5
    assert b.missing() == [], "lab b still converged after lab a went down"
    twin_cli("down", "t-pair-b", check=True)
    assert leftovers(runtime, "t-pair-b") == []
