"""NVUE in (issue 24): NVIDIA's sample startup.yaml files (a Cumulus leaf's and a DOCA HBN DPU's,
tests/golden/interop/nvue/samples/) on the topology that wires them come up converged and pass
`twin verify`; each NVUE mistake, pushed onto the running lab with `twin apply --no-wait` as a CI job
would, fails `twin verify` naming what it breaks, and the good files applied again bring it back.
One lab for the module."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin import verify
from twin.base import wait
from twin.config.render import ZEBRA_DPLANE_LIMIT
from twin.lab import Lab

pytestmark = pytest.mark.e2e

NAME = "t-nvue-smp"
TOPOLOGY = ROOT / "tests/e2e/nvue/samples.yml"
SAMPLES = ROOT / "tests/golden/interop/nvue/samples"


@pytest.fixture(scope="module")
def lab(runtime, node_image):
    p = twin_cli("up", str(TOPOLOGY), "--name", NAME, "--configs", str(SAMPLES), "--image", node_image)
    try:
        assert p.returncode == 0, p.stdout + p.stderr
        assert "(2 nodes run yours)" in p.stdout
        yield Lab.open(NAME)
    finally:
        twin_cli("down", NAME)
    assert leftovers(runtime, NAME) == []


def mistake(tmp: Path, node: str, old: str, new: str) -> Path:
    """The samples with one mistake in `node`'s startup.yaml, as a change directory of that node."""
    (tmp / node).mkdir(parents=True)
    text = (SAMPLES / node / "startup.yaml").read_text()
    assert old in text
    (tmp / node / "startup.yaml").write_text(text.replace(old, new, 1))
    return tmp


def fails_naming(lab: Lab, needles: list[str], groups: tuple[str, ...] = ("control",)) -> list[str]:
    """Once `twin verify` (those groups) fails with every needle in a failed check, the failures."""
    said: list[str] = []

    def missing() -> list[str]:
        said[:] = [f"{c.name}: {c.message}" for c in verify.run(lab, only=list(groups)).failures()]
        return [
            f"no failed check says {n!r} (failed: {' | '.join(said)[:800]})"
            for n in needles
            if not any(n in s for s in said)
        ]

    wait.until(missing, 45, "twin verify naming the mistake", first=0.5, cap=2.0)
    return said


def back_to_good() -> None:
    good = twin_cli("apply", NAME, str(SAMPLES), "--json")
    assert good.returncode == 0 and json.loads(good.stdout)["converged"], good.stdout + good.stderr


def test_the_samples_come_up_converged_and_pass_verify(lab):
    assert lab.state.user_files == {"dpu1": ["startup.yaml"], "leaf01": ["startup.yaml"]}
    running = lab.node("dpu1").vtysh("show running-config")
    assert "neighbor p0 interface peer-group underlay" in running and "vni 4001" in running
    assert f"zebra dplane limit {ZEBRA_DPLANE_LIMIT}" in running, "as in twin's FRR dialect"
    assert "10.1.10.2/24" in lab.node("leaf01").check(["ip", "-n", "red", "addr", "show", "br10"]).stdout
    p = twin_cli("verify", NAME, "--json")
    assert p.returncode == 0, p.stdout[-3000:]
    doc = json.loads(p.stdout)
    assert doc["passed"] and {c["group"] for c in doc["checks"]} == {
        "control",
        "traffic",
        "isolation",
        "underlay",
        "mtu",
        "zerotrust",
        "arp",
        "lldp",  # each cabled port's LLDP neighbour as cabled (twin.nvue.lldpcheck)
    }
    assert "not emulated" not in doc


def test_a_vlan_mapped_to_the_wrong_vni_fails_verify_naming_it(lab, tmp_path):
    bad = mistake(
        tmp_path,
        "dpu1",
        "            '10':\n              vni:\n                '10': {}",
        "            '10':\n              vni:\n                '11': {}",
    )
    plan = twin_cli("plan", NAME, str(bad))
    assert plan.returncode == 0 and "dpu1: set bridge.domain.br_default.vlan.10.vni.11" in plan.stdout
    assert "ip link add vxlan11 netns red" in plan.stdout
    twin_cli("apply", NAME, str(bad), "--no-wait", check=True)
    said = fails_naming(
        lab,
        ["vni dpu1 10: VNI 10 missing", "evpn leaf01 red: no type-2 MAC", "red server01 -> server03"],
        ("control", "traffic"),
    )
    assert any("with route targets of VNI 11" in s for s in said)
    back_to_good()


def test_a_wrong_route_import_target_fails_verify_naming_it(lab, tmp_path):
    bad = mistake(
        tmp_path,
        "dpu1",
        "                route-export:\n                  to-evpn:\n                    enable: on\n      BLUE:",
        "                route-export:\n                  to-evpn:\n                    enable: on\n"
        "            route-import:\n              from-evpn:\n                route-target:\n"
        "                  65000:999: {}\n      BLUE:",
    )
    twin_cli("apply", NAME, str(bad), "--no-wait", check=True)
    assert "route-target import 65000:999" in lab.node("dpu1").vtysh("show running-config")
    fails_naming(
        lab,
        [
            "route-targets dpu1 red: imports route-target 65000:999 for VNI 4001, but leaf01 exports",
            "vrf dpu1 red: missing 10.1.10.101/32 via 10.10.10.1",
        ],
    )
    back_to_good()


def test_an_svi_in_the_wrong_vrf_fails_verify_naming_it(lab, tmp_path):
    bad = mistake(tmp_path, "leaf01", "          vrf: RED\n", "          vrf: BLUE\n")
    twin_cli("apply", NAME, str(bad), "--no-wait", check=True)
    fails_naming(
        lab,
        [
            "vni leaf01 10: vni 10.vrf: expected 'red', got 'blue'",
            "vrf leaf01 blue: unexpected 10.1.10.0/24 via connected",
            "vrf leaf01 red: missing 10.1.10.0/24 via connected",
        ],
    )
    back_to_good()


def test_evpn_enable_missing_on_one_vtep_fails_verify_naming_it(lab, tmp_path):
    bad = mistake(tmp_path, "dpu1", "    evpn:\n      enable: on\n", "")
    twin_cli("apply", NAME, str(bad), "--no-wait", check=True)
    assert "advertise-all-vni" not in lab.node("dpu1").vtysh("show running-config")
    fails_naming(
        lab,
        [
            "vni dpu1 10: VNI 10 missing (zebra knows no VNI at all: EVPN is off",
            "vni leaf01 10: vni 10.remoteVteps[0]: no item matches '10.10.20.1'",
        ],
    )
    back_to_good()  # the workloads' bindings are written again with EVPN on: the lab is whole again
    p = twin_cli("verify", NAME, "--only", "control", "--only", "traffic")
    assert p.returncode == 0, p.stdout[-3000:]


def test_a_change_nvue_refuses_touches_nothing(lab, tmp_path):
    bad = mistake(tmp_path, "leaf01", "              access: 10\n", "              access: 99\n")
    p = twin_cli("apply", NAME, str(bad))
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "interface.swp1.bridge.domain.br_default.access: VLAN 99 is not in bridge domain br_default" in p.stderr
    shutil.rmtree(bad)
    assert (Path(lab.dir) / "leaf01" / "startup.yaml").read_text().count("access: 10") == 1


def test_what_twin_does_not_emulate_is_kept_and_listed_by_apply_and_verify(lab, tmp_path):
    more = mistake(
        tmp_path,
        "leaf01",
        "    system:\n",
        "    qos:\n      roce:\n        enable: on\n    system:\n      message:\n        pre-login: twin lab\n",
    )
    p = twin_cli("apply", NAME, str(more))
    assert p.returncode == 0, p.stderr
    # RoCE QoS runs (issue 44); the login message is kept, not run, and said so
    assert "system.message: stored, not emulated" in p.stdout and "qos: stored" not in p.stdout, p.stdout
    v = twin_cli("verify", NAME, "--only", "control")
    assert v.returncode == 0 and "not emulated (kept in leaf01's NVUE, not run): system.message" in v.stdout
    back_to_good()
