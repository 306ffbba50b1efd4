"""The user's automation runs against the twin unchanged: a real ansible-playbook
over `twin inventory`, through the Docker connection, pushing FRR changes with
frr-reload; `twin verify` then judges the result.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.e2e.conftest import ROOT
from twin import verify
from twin.base import wait
from twin.base.errors import TwinError
from twin.cli.inventory import inventory_cmd
from twin.interop.inventory import inventory
from twin.lab import Lab
from twin.pytest_plugin import assert_frr_json

pytestmark = pytest.mark.e2e

LAB = "t-h1-ansible"
PLAYBOOKS = Path(__file__).resolve().parent / "ansible"
BIN = Path(sys.executable).parent
COMMUNITY = "64512:100"  # what loopback_community.yml sets (its default)
FRR_KINDS = {"spine", "leaf", "dpu"}


@pytest.fixture(scope="module")
def lab(make_lab):
    lab = make_lab("topologies/aipod.yml", LAB)
    yield lab
    lab.down()


@pytest.fixture(scope="module")
def inventory_file(lab, tmp_path_factory) -> Path:
    """The Ansible inventory, written by the CLI command as a user would."""
    out = tmp_path_factory.mktemp("inventory")
    res = CliRunner().invoke(inventory_cmd, [LAB, "-o", str(out), "--connection", "docker"])
    assert res.exit_code == 0, res.output
    return out / "inventory.yml"


def playbook(inv: Path, name: str, *args: str, tmp: Path) -> subprocess.CompletedProcess:
    """Run a playbook of tests/e2e/ansible with the venv's ansible-playbook; assert it succeeded."""
    exe = BIN / "ansible-playbook"
    if not exe.exists():
        pytest.skip("ansible is not installed: pip install -e '.[test]'")
    env = {
        **os.environ,
        "LC_ALL": "C.UTF-8",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_HOME": str(tmp / "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(tmp / "ansible-tmp"),
        "ANSIBLE_FORKS": "8",
    }
    p = subprocess.run(
        [str(exe), "-i", str(inv), str(PLAYBOOKS / name), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
        timeout=300,
    )
    assert p.returncode == 0, f"ansible-playbook {name} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
    return p


def recap(out: str) -> dict[str, dict[str, int]]:
    """PLAY RECAP lines -> {host: {"ok": n, "changed": n, "failed": n, ...}}."""
    return {
        m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
        for m in re.finditer(r"^(\S+)\s+:\s+(ok=.*)$", out, re.M)
    }


# --- the inventory, without a running lab ------------------------------------


def test_ansible_inventory_is_what_ansible_reads():
    lab = Lab.load(ROOT / "topologies/aipod.yml", name="t-h1-inv")
    files = inventory(lab, "ansible")
    assert list(files) == ["inventory.yml"]
    doc = yaml.safe_load(files["inventory.yml"])
    groups = doc["all"]["children"]
    assert {k: sorted(g["hosts"]) for k, g in groups.items() if "hosts" in g} == {
        "spine": ["spine1", "spine2"],
        "leaf": ["leaf1", "leaf2"],
        "dpu": ["dpu1", "dpu2"],
        "host": ["host1a", "host1b", "host1c", "host2a", "host2b", "host2c"],
    }
    assert sorted(groups["frr"]["children"]) == ["dpu", "leaf", "spine"]
    assert groups["dpu"]["hosts"]["dpu1"] == {
        "ansible_connection": "community.docker.docker",
        "ansible_host": "twin-t-h1-inv-dpu1",
        "ansible_python_interpreter": "/usr/bin/python3",
        "twin_lab": "t-h1-inv",
        "kind": "dpu",
        "asn": 4200000001,
        "loopback": "10.255.0.5",
    }
    assert "asn" not in groups["host"]["hosts"]["host1a"] and "loopback" not in groups["host"]["hosts"]["host1a"]

    exe = BIN / "ansible-inventory"
    if not exe.exists():
        pytest.skip("ansible is not installed: pip install -e '.[test]'")
    p = subprocess.run(
        [str(exe), "-i", "/dev/stdin", "--list"],
        input=files["inventory.yml"],
        capture_output=True,
        text=True,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    seen = json.loads(p.stdout)
    assert sorted(seen["frr"]["children"]) == ["dpu", "leaf", "spine"]
    assert seen["_meta"]["hostvars"]["leaf2"]["asn"] == 65102
    assert seen["_meta"]["hostvars"]["host2c"]["ansible_host"] == "twin-t-h1-inv-host2c"


def test_nornir_inventory_loads_in_nornir(tmp_path):
    lab = Lab.load(ROOT / "topologies/aipod.yml", name="t-h1-inv")
    files = inventory(lab, "nornir")
    assert sorted(files) == ["defaults.yaml", "groups.yaml", "hosts.yaml"]
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    simple = pytest.importorskip("nornir.plugins.inventory.simple")
    inv = simple.SimpleInventory(
        host_file=str(tmp_path / "hosts.yaml"),
        group_file=str(tmp_path / "groups.yaml"),
        defaults_file=str(tmp_path / "defaults.yaml"),
    ).load()
    assert sorted(inv.hosts) == sorted(lab.fabric.nodes)
    dpu1, host1a = inv.hosts["dpu1"], inv.hosts["host1a"]
    assert (dpu1.hostname, dpu1.platform, dpu1["asn"], dpu1["loopback"], dpu1["kind"], dpu1["lab"]) == (
        "twin-t-h1-inv-dpu1",
        "frr",
        4200000001,
        "10.255.0.5",
        "dpu",
        "t-h1-inv",
    )
    assert [g.name for g in dpu1.groups] == ["dpu", "frr"]
    assert (host1a.hostname, host1a.platform, host1a["kind"]) == ("twin-t-h1-inv-host1a", "linux", "host")
    assert sorted(h for h, v in inv.hosts.items() if v.platform == "frr") == sorted(
        n for n, node in lab.fabric.nodes.items() if node.kind in FRR_KINDS
    )


def test_unknown_format_names_the_formats(tmp_path):
    lab = Lab.load(ROOT / "topologies/aipod.yml", name="t-h1-inv")
    with pytest.raises(TwinError, match="unknown inventory format 'salt'; formats: ansible, nornir, nvue"):
        inventory(lab, "salt")
    res = CliRunner().invoke(inventory_cmd, ["t-h1-nolab"])
    assert res.exit_code == 1 and "no lab named 't-h1-nolab'" in res.output


# --- real playbooks on a running lab -----------------------------------------


def test_cli_prints_the_inventory_of_a_running_lab(lab, inventory_file):
    res = CliRunner().invoke(inventory_cmd, [LAB, "--connection", "docker"])
    assert res.exit_code == 0
    assert res.output == inventory_file.read_text()
    res = CliRunner().invoke(inventory_cmd, [LAB, "--format", "nornir"])
    assert res.exit_code == 2 and "-o/--output" in res.output


def test_a_routine_change_goes_live_and_the_fabric_still_passes(lab, inventory_file, tmp_path, request):
    p = playbook(inventory_file, "loopback_community.yml", tmp=tmp_path)
    routers = {n: node for n, node in lab.fabric.nodes.items() if node.kind in FRR_KINDS}
    done = recap(p.stdout)
    assert sorted(done) == sorted(routers), p.stdout  # the play ran on every FRR node, only there
    assert all(r["failed"] == 0 and r["unreachable"] == 0 and r["changed"] >= 1 for r in done.values()), p.stdout

    # live in FRR: the running config of every node, and the community on the routes it announces
    for name, node in routers.items():
        running = lab.node(name).vtysh("show running-config")
        assert f"network {node.loopback}/32 route-map LOOPBACK-OUT" in running, f"{name}:\n{running}"
        assert f"set community {COMMUNITY}" in running, f"{name}:\n{running}"
        # what the node runs is what the lab directory holds (bind-mounted /etc/frr)
        assert "route-map LOOPBACK-OUT" in (lab.dir / name / "frr.conf").read_text()
    for prefix in lab.fabric.expected_loopbacks("dpu1").values():
        assert_frr_json(
            lab.node("dpu1"),
            f"show bgp ipv4 unicast {prefix} json",
            {"prefix": prefix, "paths": [{"valid": True, "community": {"list": [COMMUNITY]}}]},
            timeout=30,
        )

    # (with the netns VRF backend this needs the image's frr-reload patch: twin/images/node/frr-reload-netns.py)
    report = verify.run(lab)
    assert report.failures() == [], "\n".join(f"{c.group} {c.name}: {c.message}" for c in report.failures())
    assert report.passed and set(report.groups()) == {
        "control",
        "traffic",
        "isolation",
        "underlay",
        "mtu",
        "zerotrust",
        "arp",
    }


def test_a_harmful_change_fails_verify_naming_the_cause(lab, inventory_file, tmp_path):
    """Dropping advertise-all-vni on dpu1: sessions stay up, but dpu1 leaves the overlay."""

    def failures() -> set[tuple[str, str]]:
        return {(c.name, c.message) for c in verify.run(lab, only=["control"]).failures()}

    before = failures()
    p = playbook(inventory_file, "break_evpn.yml", "--limit", "dpu1", tmp=tmp_path)
    assert sorted(recap(p.stdout)) == ["dpu1"], p.stdout
    assert "advertise-all-vni" not in lab.node("dpu1").vtysh("show running-config")
    assert "advertise-all-vni" in lab.node("dpu2").vtysh("show running-config")  # --limit held

    # dpu2 must lose dpu1 as remote VTEP of every segment they share, and say so
    dpu1_vtep = lab.fabric.nodes["dpu1"].loopback
    shared = sorted(
        s.l2vni
        for t in lab.fabric.tenants.values()
        for s in t.segments.values()
        if set(t.segment_vteps(s.name)) == {"dpu1", "dpu2"}
    )
    assert shared  # the default lab stretches web of red and blue over both DPUs

    def named() -> list[str]:
        new = failures() - before
        found = {vni for vni in shared for name, msg in new if name == f"vni dpu2 {vni}" and repr(dpu1_vtep) in msg}
        return [
            f"no failure of vni dpu2 {vni} naming the missing VTEP {dpu1_vtep}" for vni in shared if vni not in found
        ]

    wait.until(named, 30, "verify naming dpu1's VTEP as missing on dpu2")
    report = verify.run(lab, only=["control"])
    assert not report.passed
    messages = {c.name: c.message for c in report.failures()}
    for vni in shared:
        assert f"remoteVteps[0]: no item matches {dpu1_vtep!r}" in messages[f"vni dpu2 {vni}"], messages
