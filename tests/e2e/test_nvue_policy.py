"""NVUE's BFD, BGP timers and VRF route leaking run and judged (issue 44): a lab whose switches all
run their NVUE export (tests/e2e/nvue/policy.yml), changed with `nv` in the nodes as an operator
would. BFD set on leaf1's uplink alone (the spine runs none) is named by verify's `protocols` group
(the session Down), and a `route-import from-vrf` of blue into red by the isolation group (red's RIB
holds blue's segment); BFD on both ends and the import removed, both pass, and the timers set run
(once the session is cleared: timers set on a running session wait for its next OPEN).
One lab for the module. After the deliberate leak the lab no longer matches intent: verify's groups
are called directly (`verify.run(lab, only=...)`), not `lab.wait()`.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.e2e.conftest import ROOT, nv_apply, nv_in, nvue_export_lab, twin_cli
from twin import verify
from twin.base import timeouts, wait
from twin.lab import Lab

pytestmark = pytest.mark.e2e

NAME = "t-nvue-policy"
TOPOLOGY = ROOT / "tests/e2e/nvue/policy.yml"
GROUPS = ["protocols", "isolation"]
UPLINK = ("vrf", "default", "router", "bgp", "neighbor", "swp51")
IMPORT = ("vrf", "red", "router", "bgp", "address-family", "ipv4-unicast", "route-import", "from-vrf")


@pytest.fixture(scope="module")
def lab(runtime, node_image, tmp_path_factory):
    with nvue_export_lab(runtime, node_image, tmp_path_factory.mktemp("nvue-policy"), TOPOLOGY, NAME) as lab:
        yield lab


def nv(node: str, *words: str) -> subprocess.CompletedProcess:
    return nv_in(NAME, node, *words)


def apply(node: str, *changes: tuple[str, ...]) -> None:
    nv_apply(NAME, node, *changes)


def failures(lab: Lab) -> dict[str, str]:
    report = verify.run(lab, only=GROUPS)
    return {c.name: c.message for c in report.failures()}


def settled(lab: Lab, want: set[str], flows: bool = False) -> dict[str, str]:
    """Verify's failures once they are `want` (BFD and BGP take a moment after an apply), and with `flows`
    any traffic check beside them (a flow's name has an arrow)."""
    got: dict[str, str] = {}

    def probe() -> list[str]:
        got.clear()
        got.update(failures(lab))
        names = {n for n in got if not (flows and " -> " in n)}
        return [] if names == want else [f"failing {sorted(got)}, expected {sorted(want)}: {got}"]

    wait.until(probe, timeouts.PROTOCOLS_UP, "verify's protocols and isolation groups", first=1.0, cap=3.0)
    return got


def test_bfd_on_one_end_and_a_route_import_are_named_and_their_fix_passes(lab):
    assert failures(lab) == {}, "the export verifies as it is"
    apply(
        "leaf1",
        ("set", *UPLINK, "bfd", "enable", "on"),
        ("set", *UPLINK, "bfd", "detect-multiplier", "4"),
        ("set", *UPLINK, "timers", "keepalive", "1"),
        ("set", *UPLINK, "timers", "hold", "3"),
        ("set", *IMPORT, "list", "blue"),
    )
    # timers set on a running session take effect once it is re-established, as on a switch: the operator clears it
    lab.node("leaf1").check(["vtysh", "-c", "clear bgp swp51"])
    frr = lab.node("leaf1").check(["vtysh", "-c", "show running-config"]).stdout
    assert " neighbor swp51 bfd profile nvue-4x300x300" in frr and " neighbor swp51 timers 1 3" in frr
    assert "  import vrf blue" in frr
    # BFD on one end: FRR does not bring up a session whose BFD peer never answers, so leaf1's only uplink
    # stays down and red's hosts across it lose their traffic: verify names that beside the cause
    got = settled(lab, {"bfd leaf1", "route leaks leaf1"}, flows=True)
    assert got["bfd leaf1"].startswith("swp51: BFD session Down (BFD 4 x 300/300 ms set; BGP "), got
    assert got["host1a (red) -> host2a (red) 10.1.1.12"] == "0/2 delivered", got
    assert (
        "leaf1: VRF red (red) holds 10.2.2.0/24 from VRF blue (blue): an import leaks blue into red"
        in got["route leaks leaf1"]
    ), got
    shown = nv("leaf1", "show", *UPLINK, "-o", "json").stdout
    assert '"bfd"' in shown and '"timers"' in shown, shown

    apply(
        "spine1",
        ("set", "vrf", "default", "router", "bgp", "neighbor", "swp1", "bfd", "enable", "on"),
        ("set", "vrf", "default", "router", "bgp", "neighbor", "swp1", "bfd", "detect-multiplier", "4"),
        ("set", "vrf", "default", "router", "bgp", "neighbor", "swp1", "timers", "keepalive", "1"),
        ("set", "vrf", "default", "router", "bgp", "neighbor", "swp1", "timers", "hold", "3"),
    )
    apply("leaf1", ("unset", "vrf", "red", "router", "bgp", "address-family", "ipv4-unicast", "route-import"))
    assert settled(lab, set()) == {}
    report = verify.run(lab, only=GROUPS)
    assert {c.name for c in report.checks if c.group == "protocols"} == {
        "bfd leaf1",
        "bfd spine1",
        "bgp timers leaf1",
        "bgp timers spine1",
    }


@pytest.mark.prove  # a slow proof: `make prove` runs it, `make test` does not
def test_the_proof_takes_bfd_and_timers_away_and_verify_names_each(lab):
    """`--prove` elements of what the nodes' NVUE sets beyond intent (issue 44): each neighbor's BFD and
    timers (leaf1's swp51, spine1's swp1, as the test before left them), taken away in FRR, named by the
    protocols group, put back by a reload of the file the node runs."""
    p = twin_cli("verify", NAME, "--prove", "--element", "bfd *", "--element", "bgp-timers *", "--json", timeout=600)
    proof = json.loads(p.stdout)
    by = {o["id"]: o for o in proof["outcomes"]}
    assert p.returncode == 0 and proof["caught"] == proof["proved"] == 4, p.stdout[-3000:] + p.stderr
    assert set(by) == {"bfd leaf1 swp51", "bfd spine1 swp1", "bgp-timers leaf1 swp51", "bgp-timers spine1 swp1"}
    assert all(o["caught"] and o["restored"] for o in by.values()), by
    assert by["bfd leaf1 swp51"]["check"] == "protocols: bfd leaf1"
    assert by["bgp-timers spine1 swp1"]["what"] == "neighbor swp1 timers on spine1"
    assert failures(lab) == {}, "put back: BFD and the timers run as set"
