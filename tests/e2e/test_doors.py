"""Every lab-changing door under the lab's lock, and the doors around it (issue 23), on one small
tenant lab: a second writer (`rehearse`, `fault`, `apply`, `down`) is refused at once naming the
command and pid that hold the lock, while readers (`status`) go on; `apply` that grows a lab is
judged against the host's limits before anything is touched; the VRF backend is netns unless
asked, and the device backend is refused on a kernel without VRF devices, naming CONFIG_NET_VRF;
a lab made by the containerlab runtime is removed with no containerlab on PATH.

A writer is caught holding the lock (`locks.holder`) and frozen there with SIGSTOP, so the
second writer meets it whatever the machine's speed; SIGCONT lets it finish its work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin.base import wait
from twin.base.errors import ChangeRefused
from twin.lab import Lab
from twin.lifecycle import hostlimits, locks, state
from twin.runtime import kernel

pytestmark = pytest.mark.e2e
LAB = "t-doors"
TOPOLOGY = ROOT / "tests/e2e/doors.yml"


@pytest.fixture(scope="module")
def lab(make_lab):
    return make_lab(TOPOLOGY, LAB)


def variant(tmp_path: Path, name: str, edit) -> Path:
    """doors.yml changed by `edit(doc)`, written to tmp_path/name."""
    doc = yaml.safe_load(TOPOLOGY.read_text())
    edit(doc)
    f = tmp_path / name
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    return f


def with_host(doc: dict, host: str, port: str) -> None:
    doc["nodes"][host] = {"kind": "host"}
    doc["links"].append({"endpoints": [f"leaf1:{port}", f"{host}:eth1"]})
    doc["tenants"]["red"]["attachments"].append({"host": host, "segment": "web"})


def spawn(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "twin.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
        cwd=ROOT,
    )


def frozen_holding(p: subprocess.Popen, command: str) -> str:
    """Wait until `p` holds the lab's lock as `command`, then SIGSTOP it there; returns the holder text."""
    wait.until(
        lambda: [] if locks.holder(LAB).startswith(command) or p.poll() is not None else ["not yet"],
        120,
        f"{command} holding {LAB}'s lock",
        first=0.01,
        cap=0.02,
    )
    assert p.poll() is None, f"{command} ended before it was seen holding the lock: {p.communicate()}"
    p.send_signal(signal.SIGSTOP)
    holder = locks.holder(LAB)
    assert holder == f"{command} (pid {p.pid})", holder
    return holder


def refused(holder: str, *args: str) -> None:
    t0 = time.monotonic()
    r = twin_cli(*args)
    assert r.returncode == 1 and f"error: lab '{LAB}' is busy: {holder}; wait for it, or stop it first" in r.stderr, (
        args,
        r.stdout,
        r.stderr,
    )
    assert time.monotonic() - t0 < 15, "refused at once, not after waiting"


def finish(p: subprocess.Popen) -> tuple[int, str, str]:
    p.send_signal(signal.SIGCONT)
    out, err = p.communicate(timeout=300)
    return p.returncode, out, err


def test_rehearse_and_fault_are_refused_while_an_apply_holds_the_lock(lab, tmp_path):
    grown = variant(tmp_path, "grown.yml", lambda d: with_host(d, "host3", "swp11"))
    p = spawn("apply", LAB, str(grown))
    try:
        holder = frozen_holding(p, "twin apply")
        refused(holder, "fault", "link-down", LAB, "leaf1:swp1")
        refused(holder, "fault", "node-restart", LAB, "host2")
        refused(holder, "rehearse", LAB, "fault:daemon-kill:leaf2")
        refused(holder, "verify", LAB, "--prove", "--element", "nothing")
        refused(holder, "down", LAB)
        status = twin_cli("status", LAB, "--json")  # a reader never waits for a writer, and names it
        assert json.loads(status.stdout)["changing"] == holder
    finally:
        rc, out, err = finish(p)
    assert rc == 0 and "host3" in out, (out, err)
    assert "host3" in Lab(LAB).fabric.nodes


def test_apply_and_fault_are_refused_while_a_rehearsal_holds_it(lab, tmp_path):
    drained = variant(
        tmp_path, "drained.yml", lambda d: (with_host(d, "host3", "swp11"), d["nodes"]["spine1"].update(drain=True))
    )
    p = spawn("rehearse", LAB, str(drained), "--rollback", "--max-loss", "-1", "--json")
    try:
        holder = frozen_holding(p, f"twin rehearse {drained}")
        refused(holder, "apply", LAB, str(TOPOLOGY))
        refused(holder, "fault", "daemon-kill", LAB, "leaf2")
        refused(holder, "down", LAB)
    finally:
        rc, out, err = finish(p)
    rep = json.loads(out)
    assert not rep["error"] and rep["verify"] and rep["verify_rollback"], (rc, err)
    assert not Lab(LAB).fabric.nodes["spine1"].drain, "rolled back"


def test_apply_is_refused_while_a_fault_holds_it(lab):
    p = spawn("fault", "node-restart", LAB, "host3")
    try:
        holder = frozen_holding(p, "twin fault node-restart host3")
        refused(holder, "apply", LAB, str(TOPOLOGY))
        refused(holder, "rehearse", LAB, "fault:daemon-kill:leaf2")
    finally:
        rc, out, err = finish(p)
    assert rc == 0 and "node-restart host3" in out, (out, err)
    wait.until(lambda: Lab(LAB).missing(), 120, f"{LAB} whole again after the restart", first=0.5, cap=1)


def test_an_apply_that_grows_past_the_hosts_limits_is_refused_untouched(lab, tmp_path, monkeypatch):
    more = variant(tmp_path, "more.yml", lambda d: (with_host(d, "host3", "swp11"), with_host(d, "host4", "swp12")))
    grows = hostlimits.demand(Lab.load(more).loaded).nd_gc - hostlimits.demand(Lab(LAB).fabric).nd_gc
    assert grows > 0
    usage = hostlimits.Usage(nd=1000, mem_available_mib=1 << 20)  # this host as a tight one would be
    monkeypatch.setattr(hostlimits, "host_usage", lambda: usage)
    monkeypatch.setattr(hostlimits, "host_settings", lambda: {"net.ipv6.neigh.default.gc_thresh3": 1000 + grows - 1})
    before = (Lab(LAB).dir / state.FABRIC).read_text()
    with pytest.raises(ChangeRefused) as e:
        Lab(LAB).apply(more)
    assert (
        f"host limits too low for what the change adds: net.ipv6.neigh.default.gc_thresh3 = {1000 + grows - 1} "
        f"< {1000 + grows} needed ({grows} for this lab + 1000 in use now;"
    ) in str(e.value)
    assert (Lab(LAB).dir / state.FABRIC).read_text() == before and "host4" not in Lab(LAB).context().containers()


def test_the_vrf_backend_is_netns_and_the_device_backend_needs_vrf_devices(lab, runtime):
    assert Lab(LAB).backend == "netns" and Lab(LAB).status().vrf_backend == "netns"
    if kernel.vrf_devices("t-doors-dev"):
        pytest.skip("this kernel has VRF devices: the refusal below is for kernels without them")
    r = twin_cli("up", str(TOPOLOGY), "--name", "t-doors-dev", "--vrf-backend", "device")
    assert (
        r.returncode == 1
        and "--vrf-backend: the device VRF backend needs Linux VRF devices, but this kernel has "
        "no Linux VRF devices (CONFIG_NET_VRF is not set)"
        in r.stderr
    ), r.stderr
    assert leftovers(runtime, "t-doors-dev") == []
    v = twin_cli("validate", str(TOPOLOGY), "--json")
    assert json.loads(v.stdout)["vrf_backend"] == {
        "backend": "netns",
        "why": json.loads(v.stdout)["vrf_backend"]["why"],
        "vrf_devices": None,
    }


def test_a_containerlab_made_lab_is_removed_without_containerlab(lab, runtime):
    """As if `twin up --runtime containerlab` had made it (its record and export), with containerlab
    gone from PATH since: `twin down` removes every labelled container and the lab directory."""
    made = len(runtime.containers(LAB))
    st, _ = state.load(Lab(LAB).dir)
    st.runtime = "containerlab"
    state.save(Lab(LAB).dir, st)
    (Lab(LAB).dir / f"{LAB}.clab.yml").write_text(f"name: {LAB}\n")
    env = {**os.environ, "PATH": os.path.dirname(sys.executable)}  # no containerlab (nor clab) on it
    r = subprocess.run(
        [sys.executable, "-m", "twin.cli", "down", LAB], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert r.returncode == 0 and f"lab {LAB}: removed {made} containers" in r.stdout.replace("[bold]", ""), r.stderr
    assert leftovers(runtime, LAB) == []
