"""NVUE's route policy run and judged (issue 44): a lab whose switches all run their NVUE export
(tests/e2e/nvue/policy.yml: spine1, leaf1 and leaf2 VTEPs), changed with `nv` in a node as an operator
would. An outbound route map on leaf1's uplink whose first rule denies what leaf1 originates (an
AS-path list matching `^$`) withholds leaf1's loopback from spine1: verify's `protocols` group names the
map, the rule and the prefix; `nv show router policy` shows the map bgpd runs. The list's expression
fixed (`_65102$`: only what comes from leaf2), the map's edit reaches the session and verify passes,
spine1 holding leaf1's loopback with the community the map's second rule sets.
One lab for the module; verify's protocols group is called directly, as the lab misses its loopback
route meanwhile (the control group would say so too).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.e2e.conftest import ROOT, nv_in, nvue_export_lab
from twin import verify
from twin.base import timeouts, wait
from twin.lab import Lab

pytestmark = pytest.mark.e2e

NAME = "t-nvue-routemap"
TOPOLOGY = ROOT / "tests/e2e/nvue/policy.yml"
POLICY = ("router", "policy")
UPLINK = ("vrf", "default", "router", "bgp", "neighbor", "swp51", "address-family", "ipv4-unicast", "policy")


@pytest.fixture(scope="module")
def lab(runtime, node_image, tmp_path_factory):
    with nvue_export_lab(runtime, node_image, tmp_path_factory.mktemp("nvue-routemap"), TOPOLOGY, NAME) as lab:
        yield lab


def nv(node: str, *words: str) -> subprocess.CompletedProcess:
    return nv_in(NAME, node, *words)


def settled(lab: Lab, want: set[str]) -> dict[str, str]:
    """The protocols group's failures once they are `want` (an applied map reaches its session in ~1 s)."""
    got: dict[str, str] = {}

    def probe() -> list[str]:
        got.clear()
        got.update({c.name: c.message for c in verify.run(lab, only=["protocols"]).failures()})
        return [] if set(got) == want else [f"failing {sorted(got)}, expected {sorted(want)}: {got}"]

    wait.until(probe, timeouts.PROTOCOLS_UP, "verify's protocols group", first=1.0, cap=3.0)
    return got


def test_a_route_map_withholding_the_leafs_loopback_is_named_and_its_fix_passes(lab):
    loopback = f"{lab.fabric.nodes['leaf1'].loopback}/32"
    assert settled(lab, set()) == {}, "the export verifies as it is"
    for words in [
        ("as-path-list", "LOCAL", "rule", "10", "action", "permit"),
        ("as-path-list", "LOCAL", "rule", "10", "aspath-exp", "^$"),
        ("route-map", "UPLINK", "rule", "10", "action", "deny"),
        ("route-map", "UPLINK", "rule", "10", "match", "as-path-list", "LOCAL"),
        ("route-map", "UPLINK", "rule", "20", "action", "permit"),
        ("route-map", "UPLINK", "rule", "20", "set", "community", "65101:1"),
    ]:
        nv("leaf1", "set", *POLICY, *words)
    nv("leaf1", "set", *UPLINK, "outbound", "route-map", "UPLINK")
    nv("leaf1", "config", "apply", "-y")
    got = settled(lab, {"route policy leaf1"})
    assert got["route policy leaf1"] == (
        f"leaf1 swp51 out: route-map UPLINK rule 10 (deny, as-path-list LOCAL) "
        f"withholds {loopback} (leaf1's loopback) from spine1: the fabric needs it"
    )
    shown = json.loads(nv("leaf1", "show", "router", "policy", "-o", "json").stdout)
    assert shown["as-path-list"] == {"LOCAL": {"rule": {"10": {"action": "permit", "aspath-exp": "^$"}}}}
    assert shown["route-map"]["UPLINK"]["rule"]["10"]["match"] == ["as-path LOCAL"]
    assert shown["route-map"]["UPLINK"]["rule"]["20"]["set"] == ["community 65101:1"]

    # the fix: the list matches only what comes from leaf2 (its entry replaced at the same seq)
    nv("leaf1", "set", *POLICY, "as-path-list", "LOCAL", "rule", "10", "aspath-exp", "_65102$")
    nv("leaf1", "config", "apply", "-y")
    assert settled(lab, set()) == {}
    report = verify.run(lab, only=["protocols"])
    assert [(c.name, c.passed) for c in report.checks] == [("route policy leaf1", True)]
    held = lab.node("spine1").check(["vtysh", "-c", f"show bgp ipv4 unicast {loopback} json"]).stdout
    assert json.loads(held)["paths"][0]["community"]["list"] == ["65101:1"], held
