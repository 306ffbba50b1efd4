"""Bring your own configs (issue 11): aipod booted from a directory of the user's FRR files
(twin's own rendering, edited) converges and passes `twin verify`; a line FRR refuses is
named with its file:line before anything exists; and each deliberate mistake of a config
(a wrong peer interface, a missing advertise-all-vni, a wrong route target) fails
`twin verify` naming it, and `twin apply` names it first by its file and line (`twin lint`'s
finding, which `twin verify` names as the cause: `see FILE:LINE`). One lab for the module; the
mistakes go in with `twin apply --no-wait`, as a CI job would push a candidate config onto a twin."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin import topology, verify
from twin.base import wait
from twin.config.render import render_lab
from twin.lab import Lab

pytestmark = pytest.mark.e2e

NAME = "t-by-cfg"
AIPOD = ROOT / "topologies/aipod.yml"
EDIT = " neighbor fabric description twin-by-configs"  # the user's own touch, visible in FRR


def write_configs(d: Path) -> Path:
    """twin's own rendering of aipod as a user's config directory, edited: both layouts
    (<node>/frr.conf + daemons, and <node>.conf), every router with a line of its own."""
    files = render_lab(topology.load(AIPOD), "netns")
    for node, fs in files.items():
        if "frr.conf" not in fs:
            continue
        conf = fs["frr.conf"].replace(
            " neighbor fabric remote-as external\n", f" neighbor fabric remote-as external\n{EDIT}\n"
        )
        if node == "spine2":
            (d / "spine2.conf").write_text(conf)
            continue
        (d / node).mkdir(parents=True)
        (d / node / "frr.conf").write_text(conf)
        (d / node / "daemons").write_text(fs["daemons"])
    return d


def mistake(good: Path, d: Path, node: str, old: str, new: str) -> Path:
    """The same directory with one mistake in `node`'s frr.conf (`old` -> `new`)."""
    shutil.copytree(good, d)
    f = d / node / "frr.conf"
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new, 1))
    return d


@pytest.fixture(scope="module")
def configs(tmp_path_factory) -> Path:
    return write_configs(tmp_path_factory.mktemp("byon") / "configs")


@pytest.fixture(scope="module")
def lab(configs, runtime, node_image):
    p = twin_cli("up", str(AIPOD), "--name", NAME, "--configs", str(configs), "--image", node_image)
    try:
        assert p.returncode == 0, p.stderr
        assert "(6 nodes run yours)" in p.stdout
        yield Lab.open(NAME)
    finally:
        twin_cli("down", NAME)
    assert leftovers(runtime, NAME) == []


def test_a_line_frr_refuses_is_named_with_its_file_and_line_and_nothing_is_created(
    configs, tmp_path, runtime, node_image
):
    bad = mistake(configs, tmp_path / "bad", "leaf1", " neighbor swp1 interface", " neighbor swp1 interfacee")
    lines = (bad / "leaf1" / "frr.conf").read_text().splitlines()
    line = lines.index(" neighbor swp1 interfacee peer-group fabric") + 1
    p = twin_cli("up", str(AIPOD), "--name", "t-by-refused", "--configs", str(bad), "--image", node_image)
    assert p.returncode == 1
    assert "FRR refuses the configs in" in p.stderr and "nothing was created" in p.stderr
    assert f"{bad / 'leaf1' / 'frr.conf'}:{line}: % Unknown command" in p.stderr
    assert "interfacee peer-group fabric" in p.stderr
    assert leftovers(runtime, "t-by-refused") == []
    v = twin_cli("validate", str(AIPOD), "--configs", str(bad), "--name", "t-by-refused", "--json")  # for CI
    assert v.returncode == 1 and json.loads(v.stdout)["problems"] == [
        {
            "file": str(bad / "leaf1" / "frr.conf"),
            "line": line,
            "column": None,
            "path": "",
            "message": "% Unknown command[28]:  neighbor swp1 interfacee peer-group fabric",
        }
    ]
    assert leftovers(runtime, "t-by-refused") == []


def test_aipod_from_the_users_configs_converges_runs_them_and_passes_verify(lab, configs):
    for node in ("spine1", "spine2", "leaf1", "dpu2"):
        assert "description twin-by-configs" in lab.node(node).vtysh("show running-config")
    assert lab.state.user_files == {
        n: ["daemons", "frr.conf"] for n in ("dpu1", "dpu2", "leaf1", "leaf2", "spine1")
    } | {"spine2": ["frr.conf"]}
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
    }
    assert [c for c in doc["checks"] if c["name"].startswith("route-targets")] and all(
        c["passed"] for c in doc["checks"] if c["name"].startswith("route-targets")
    )


def fails_naming(lab: Lab, needles: list[str]) -> str:
    """Once `twin verify --only control` fails with every needle in one failed check each, its output."""

    def missing() -> list[str]:
        failed = " | ".join(f"{c.name}: {c.message}" for c in verify.run(lab, only=["control"]).failures())
        return [f"no failed check says {n!r} (failed: {failed[:800]})" for n in needles if n not in failed]

    wait.until(missing, 45, "twin verify naming the mistake", first=0.5, cap=2.0)
    p = twin_cli("verify", NAME, "--only", "control")
    assert p.returncode == 1
    return p.stdout


def apply_warned(bad: Path, node: str, line_text: str, value: str, why: str) -> str:
    """`twin apply --no-wait` of a mistaken directory says `twin lint`'s finding first (a warning:
    the lab's verdict decides), naming the file and the line `line_text` is; returns how `twin
    verify` names it as the cause of a failing check."""
    line = (bad / node / "frr.conf").read_text().splitlines().index(line_text) + 1
    p = twin_cli("apply", NAME, str(bad), "--no-wait", check=True)
    where = f"{bad / node / 'frr.conf'}:{line}"
    assert f"warning: {where}: {value}: {why}" in p.stderr, p.stderr
    return f"see {where} ({value})"


def first_bgp(bad: Path, node: str) -> str:
    return next(ln for ln in (bad / node / "frr.conf").read_text().splitlines() if ln.startswith("router bgp "))


def back_to_good(configs: Path) -> None:
    p = twin_cli("apply", NAME, str(configs), "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["converged"], p.stdout + p.stderr


def test_a_wrong_route_target_fails_verify_naming_it(lab, configs, tmp_path):
    bad = mistake(
        configs,
        tmp_path / "rt",
        "dpu1",
        "  advertise ipv4 unicast\n",
        "  advertise ipv4 unicast\n  route-target import 65000:999\n",
    )
    see = apply_warned(
        bad,
        "dpu1",
        "  route-target import 65000:999",
        "route-target import 65000:999",
        "none of VRF red's import route targets (65000:999) names red's VNI 10100",
    )
    out = fails_naming(
        lab,
        [
            "route-targets dpu1 red: imports route-target 65000:999 for VNI 10100, but dpu2 exports",
            "vrf dpu1 red: missing 10.1.1.12/32 via 10.255.0.6",
            see,
        ],
    )
    assert "FAIL control: route-targets dpu1 red" in out
    back_to_good(configs)


def test_a_wrong_peer_interface_fails_verify_naming_it(lab, configs, tmp_path):
    bad = mistake(configs, tmp_path / "peer", "leaf1", " neighbor swp1 interface", " neighbor swp9 interface")
    see = apply_warned(
        bad, "leaf1", first_bgp(bad, "leaf1"), "no BGP neighbor on swp1", "swp1 is the link to spine1:swp1"
    )
    out = fails_naming(lab, ["bgp leaf1: .ipv4Unicast.peers.swp1: missing", "FRR has neighbor swp9, on no link", see])
    assert "bgp spine1: .ipv4Unicast.peers.swp1.state: expected 'Established'" in out
    st = twin_cli("status", NAME)
    assert st.returncode == 1
    assert "leaf1: BGP session on swp1 to spine1 is not configured (FRR has no neighbor swp1; it has swp9" in st.stdout
    back_to_good(configs)


def test_a_missing_advertise_all_vni_fails_verify_naming_it(lab, configs, tmp_path):
    # last: FRR 10.3 does not take the local workloads' bindings back once EVPN is on again
    bad = mistake(configs, tmp_path / "evpn", "dpu2", "  advertise-all-vni\n", "")
    see = apply_warned(
        bad,
        "dpu2",
        first_bgp(bad, "dpu2"),
        "no advertise-all-vni (address-family l2vpn evpn)",
        "dpu2 is a VTEP of red and blue",
    )
    out = fails_naming(
        lab,
        [
            "vni dpu2 10101: VNI 10101 missing (zebra knows no VNI at all: EVPN is off;",
            "vni dpu1 10101: vni 10101.remoteVteps[0]: no item matches '10.255.0.6'",
            see,
        ],
    )
    assert "`advertise-all-vni`" in out
