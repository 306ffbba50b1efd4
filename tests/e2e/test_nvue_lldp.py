"""NVUE's LLDP run by the node's lldpd and judged (issue 44): a lab whose switches all run their NVUE
export (tests/e2e/nvue/policy.yml: 1 spine, 2 leafs), changed with `nv` and the REST API as an operator
would. `nv show interface swp51 lldp` on leaf1 names the spine as lldpd sees it; `service lldp
tx-interval` and `tx-hold-multiplier` set through a REST revision run (lldpd's configuration, the TTL the
spine holds leaf1 for); leaf1's uplink set down (Cumulus Linux 5.9's only NVUE switch that stops LLDP on
a port: 5.11's `lldp state` is refused) is named by verify's `lldp` group at both ends, and passes once
it is up again; `--prove` replaces leaf2's system name and the group names it at the far end.
One lab for the module; verify's lldp group is called directly (the port set down
breaks the fabric on purpose).
"""

from __future__ import annotations

import json

import pytest
import requests

from tests.e2e.conftest import ROOT, nv_apply, nv_in, nvue_export_lab, twin_cli
from tests.e2e.test_nvue_live import revision
from twin import verify
from twin.base import timeouts, wait
from twin.lab import Lab
from twin.nvue import service as nvue_service

pytestmark = pytest.mark.e2e

NAME = "t-hl-lldp"
TOPOLOGY = ROOT / "tests/e2e/nvue/policy.yml"


@pytest.fixture(scope="module")
def lab(runtime, node_image, tmp_path_factory):
    with nvue_export_lab(runtime, node_image, tmp_path_factory.mktemp("nvue-lldp"), TOPOLOGY, NAME) as lab:
        yield lab


def shown(node: str, *path: str) -> dict:
    return json.loads(nv_in(NAME, node, "show", *path, "-o", "json").stdout)


def failures(lab: Lab) -> dict[str, str]:
    return {c.name: c.message for c in verify.run(lab, only=["lldp"]).failures()}


def settled(lab: Lab, want: set[str]) -> dict[str, str]:
    """The lldp group's failures once they are `want` (BGP and LLDP take a moment once a port is up)."""
    got: dict[str, str] = {}

    def probe() -> list[str]:
        got.clear()
        got.update(failures(lab))
        return [] if set(got) == want else [f"failing {sorted(got)}, expected {sorted(want)}: {got}"]

    wait.until(probe, timeouts.PROTOCOLS_UP, "verify's lldp group", first=0.5, cap=2.0)
    return got


def test_every_cabled_port_sees_its_neighbor_as_nv_show_says(lab):
    report = verify.run(lab, only=["lldp"])
    assert report.passed and len(report.checks) == 4, report.failures()  # 2 links, both ends; hosts run no lldpd
    n = shown("leaf1", "interface", "swp51", "lldp")["neighbor"]["spine1"]
    assert (n["chassis"]["system-name"], n["port"]["name"], n["port"]["type"], n["port"]["ttl"]) == (
        "spine1",
        "swp1",
        "ifname",
        20,  # twin's lldpd: 5 s x 4
    )
    assert shown("leaf1", "service", "lldp") == {
        "tx-interval": 5,
        "tx-hold-multiplier": 4,
        "twin": {"system-name": "leaf1", "ttl": 20},
    }


def test_timers_set_through_a_rest_revision_run_in_lldpd(lab):
    rec = nvue_service.require(lab.dir, NAME)
    s = requests.Session()
    s.auth = (nvue_service.USER, nvue_service.password(lab.dir))
    s.verify, s.trust_env = str(nvue_service.root(lab.dir) / "cert.pem"), False
    base = f"https://127.0.0.1:{rec['listeners']['leaf1']['port']}/nvue_v1"
    _, doc = revision(base, s, "service/lldp", {"tx-interval": 10, "tx-hold-multiplier": 3})
    assert doc["state"] == "applied", doc
    assert s.get(f"{base}/service/lldp").json() == {
        "tx-interval": 10,
        "tx-hold-multiplier": 3,
        "twin": {"system-name": "leaf1", "ttl": 30},
    }
    assert shown("spine1", "interface", "swp1", "lldp", "neighbor", "leaf1", "port")["ttl"] == 30
    assert failures(lab) == {}  # each end held for what the far end's NVUE declares


def test_a_port_set_down_is_named_at_both_ends_and_passes_up_again(lab):
    p = twin_cli("exec", NAME, "leaf1", "--", "nv", "set", "interface", "swp51", "lldp", "state", "disabled")
    assert p.returncode == 1 and "interface.swp51.lldp.state: no such place in NVUE's object tree" in p.stderr
    nv_apply(NAME, "leaf1", ("set", "interface", "swp51", "link", "state", "down"))
    got = settled(lab, {"leaf1 swp51", "spine1 swp1"})
    assert got["spine1 swp1"] == (
        "sees no LLDP neighbour; the topology cables leaf1 swp51 there (leaf1's NVUE sets swp51 link state down)"
    )
    assert got["leaf1 swp51"].startswith("down (its NVUE sets interface swp51 link state down)")
    nv_apply(NAME, "leaf1", ("unset", "interface", "swp51", "link", "state"))
    settled(lab, set())
    assert shown("leaf1", "interface", "swp51", "lldp")["neighbor"]["spine1"]["port"]["name"] == "swp1"


def test_the_proof_breaks_a_nodes_system_name_and_the_lldp_group_names_it(lab):
    p = twin_cli("verify", NAME, "--prove", "--element", "lldp leaf2", "--json", timeout=600)  # one of 3: ~8 s each
    proof = json.loads(p.stdout)
    assert p.returncode == 0 and proof["caught"] == proof["proved"] == 1, p.stdout[-3000:] + p.stderr
    (o,) = proof["outcomes"]
    assert o["caught"] and o["restored"] and o["check"] == "lldp: spine1 swp2", o
    assert failures(lab) == {}  # leaf1 sends its own name again, with the timers its NVUE declares
