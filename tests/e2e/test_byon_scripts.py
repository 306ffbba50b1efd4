"""Labs configured after deploy (issue 25): an EVPN-VXLAN containerlab lab (tests/e2e/labs/evpn-scripts,
a file named evpn-lab.yml) whose leafs are configured by a bound setup.sh once deployed and whose
hosts run a script as their command. `twin up --no-wait` returns once the nodes run, are wired and
FRR started, a failing `exec` is reported while the lab comes up; `twin wait` names what the scripts
have not made yet, then converges once they ran; the lab's own checks on its routers pass; a BGP
neighbor and a static route of the routers' configs are proved; Ctrl-C stops a bring-up with --keep."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin import prove
from twin.lab import Lab
from twin.runtime import kernel

pytestmark = pytest.mark.e2e

NAME = "t-by-evpn"
LAB = ROOT / "tests/e2e/labs/evpn-scripts"


@pytest.fixture(scope="module")
def deployed(tmp_path_factory, runtime, node_image):
    d = tmp_path_factory.mktemp("evpn") / "lab"
    shutil.copytree(LAB, d)
    p = twin_cli("up", str(d / "evpn-lab.yml"), "--name", NAME, "--image", node_image, "--no-wait")
    try:
        yield d, p
    finally:
        twin_cli("down", NAME)
    assert leftovers(runtime, NAME) == []


def test_no_wait_returns_deployed_and_a_failing_exec_is_reported_while_the_lab_goes_on(deployed):
    _, p = deployed
    assert p.returncode == 0, p.stderr
    assert f"lab {NAME} is deployed: 7 nodes running and wired, FRR started on 3" in p.stdout
    assert f"docker exec twin-{NAME}-NODE CMD" in p.stdout and f"twin wait {NAME}" in p.stdout
    assert (
        "note: spine1: exec `ip addr add 10.0.0.1/32 dev lo` exited 2: Error: ipv4: Address already assigned."
        in p.stderr
    )
    assert "image instead of quay.io/frrouting/frr:10.3.1 (spine1, leaf1, leaf2)" in p.stderr
    st = json.loads(twin_cli("status", NAME, "--json").stdout)
    assert st["status"] == "deployed" and not st["healthy"]
    lab = Lab.open(NAME)
    assert lab.node("h1").run(["ip", "-4", "-o", "addr", "show", "eth1"]).stdout.split()[3] == "10.1.1.11/24"
    logs = lab.runtime.containers(NAME)["h1"].logs()
    assert "h1: 10.1.1.11/24 via 10.1.1.1" in logs, logs  # its cmd ran once its port was up
    assert lab.node("leaf1").run(["cat", "/setup.sh"]).stdout.startswith("#!/bin/bash")  # bound, read-only
    assert lab.node("leaf1").run(["sh", "-c", "echo x > /setup.sh"]).rc != 0


def test_up_that_waits_on_what_only_its_scripts_make_says_how_to_go_on(deployed, runtime, node_image):
    d, _ = deployed
    name = "t-by-evpn-wait"  # the same lab, without --no-wait: its leafs' scripts never run (issue 36)
    p = twin_cli("up", str(d / "evpn-lab.yml"), "--name", name, "--image", node_image, "--timeout", "30")
    assert p.returncode == 1
    assert (
        f"error: lab {name} waits only for VRF or VXLAN devices that its routers' configs reference and nothing "
        f"of the lab makes (leaf1, leaf2): configured after deploy? `twin up {d / 'evpn-lab.yml'} --no-wait`, then "
        f"its scripts (`twin exec {name} NODE -- SCRIPT`), then `twin wait {name}`"
    ) in p.stderr, p.stderr
    assert leftovers(runtime, name) == []


def test_wait_names_what_the_scripts_have_not_made_then_converges_after_them(deployed):
    early = twin_cli("-v", "wait", NAME, "--timeout", "10")  # its first rounds read, on a busy host too
    assert early.returncode == 1
    assert "leaf1: L3VNI 1000 of VRF red is Down in zebra (no VRF or VXLAN device of it yet" in early.stderr, (
        early.stderr
    )
    for leaf in ("leaf1", "leaf2"):  # the containerlab habit, translated: docker exec clab-evpn-leafN /setup.sh
        p = twin_cli("exec", NAME, leaf, "--", "/setup.sh", check=True)
        assert f"{leaf}: EVPN overlay ready" in p.stdout and not p.stderr, p.stderr
    p = twin_cli("wait", NAME, check=True)
    assert f"lab {NAME} has converged" in p.stdout
    assert json.loads(twin_cli("status", NAME, "--json").stdout)["healthy"]
    log = Lab.open(NAME).node("leaf1").run(["cat", "/etc/frr/frr.log"])
    assert log.ok and "BGP" in log.stdout  # frr.conf logs into /etc/frr, as under containerlab


def test_the_labs_own_checks_on_its_routers_pass(deployed):
    d, _ = deployed
    p = twin_cli("verify", NAME, "--checks", str(d / "checks.yml"), "--json")
    doc = json.loads(p.stdout)
    assert p.returncode == 0, [c for c in doc["checks"] if not c["passed"]]
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["leaf1 peers with the spine"]["data"]["observed"]["states"] == {"eth1": "Established"}
    assert checks["blue reaches h4's subnet"]["data"]["observed"]["entries"][0]["nexthops"] == ["10.0.0.12"]
    assert checks["routes spine1"]["passed"] and checks["vnis leaf2"]["passed"]  # from the configs themselves


def test_a_vrf_device_on_this_kernel_is_named_with_the_way_out(deployed):
    p = twin_cli("exec", NAME, "leaf1", "--", "ip", "link", "add", "mgmt", "type", "vrf", "table", "1100")
    if "vrf" not in kernel.lacks("t-by-evpn-k"):
        assert p.returncode == 0
        return
    assert p.returncode == 2
    assert "twin: this kernel has no VRF devices (CONFIG_NET_VRF); instead: network namespaces as VRFs" in p.stderr


@pytest.mark.prove  # a slow proof: `make prove` runs it, `make test` does not
def test_a_bgp_neighbor_and_a_static_route_of_the_configs_are_proved(deployed):
    ctx = Lab.open(NAME).context()
    ids = {e.id for e in prove.elements(ctx)[0]}
    assert {"bgp-neighbor leaf1 eth1", "bgp-neighbor spine1 eth2", "static spine1 192.0.2.0/24"} <= ids
    proof = prove.prove(ctx, ["bgp-neighbor leaf1 eth1", "static spine1 *"])
    assert proof.passed and len(proof.outcomes) == 2, [(o.element.id, o.detail) for o in proof.outcomes]
    assert {o.check for o in proof.outcomes} == {"control: bgp leaf1 eth1", "control: routes spine1"}


def test_ctrl_c_stops_a_bring_up_with_keep_and_nothing_runs_on_in_its_nodes(tmp_path, runtime, node_image):
    name = "t-by-ctrlc-keep"
    topo = tmp_path / "slow.yml"
    topo.write_text(
        f"name: {name}\nnodes:\n  r1: {{kind: router}}\n"
        '  h1: {kind: host, exec: ["sleep 25", "touch /tmp/ran-on"]}\nlinks:\n  - [h1, r1]\n'
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "twin.cli", "up", str(topo), "--image", node_image, "--keep"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 60
        while not _sleeping(runtime, name) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)  # to twin alone, as a CI runner cancels a job
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
        assert proc.returncode == 130 and "interrupted" in err, err
        assert took < 10, f"Ctrl-C took {took:.1f}s"
        assert set(runtime.containers(name)) == {"r1", "h1"}, "--keep kept the nodes"
        h1 = Lab.open(name).node("h1")
        assert h1.run(["pgrep", "-f", "^sleep 25"]).rc == 1, "the exec under way was stopped"
        assert not h1.run(["test", "-e", "/tmp/ran-on"]).ok, "no later exec ran"
    finally:
        if proc.poll() is None:
            proc.kill()
        twin_cli("down", name)
    assert leftovers(runtime, name) == []


def _sleeping(runtime, name: str) -> bool:
    """Is h1's first exec under way (in its pid namespace: twin's commands run there, not in its cgroup)?"""
    c = runtime.containers(name).get("h1")
    return c is not None and c.status == "running" and c.exec(name).run(["pgrep", "-f", "^sleep 25"]).ok
