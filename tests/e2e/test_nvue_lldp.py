"""NVUE's LLDP run by the node's lldpd and judged (issue 44): a lab whose switches all run their NVUE
export (tests/e2e/nvue/policy.yml: 1 spine, 2 leafs), changed with `nv` and the REST API as an operator
would. `nv show interface swp51 lldp` on leaf1 names the spine as lldpd sees it; `service lldp
tx-interval` and `tx-hold-multiplier` set through a REST revision run (lldpd's configuration, the TTL the
spine holds leaf1 for); leaf1's uplink set down (Cumulus Linux 5.9's only NVUE switch that stops LLDP on
a port: 5.11's `lldp state` is refused) is named by verify's `lldp` group at both ends, and passes once
it is up again; `--prove` replaces leaf2's system name and the group names it at the far end. Day 2 on
the same lab (NVUE's, beyond LLDP): `nv show service lldp` shows the keys NVUE stores (`dot1-tlv`, `mode`)
beside lldpd's timers; `system hostname` applied to a running node in seconds (its UTS name, FRR's, lldpd's)
and verify still passes; `qos roce` turned on and off under RoCE flows loses no frame.
One lab for the module; verify's lldp group is called directly (the port set down
breaks the fabric on purpose).
"""

from __future__ import annotations

import json
import time

import pytest
import requests

from tests.e2e.conftest import ROOT, nv_apply, nv_in, nvue_export_lab, twin_cli
from tests.e2e.test_nvue_live import revision
from twin import verify
from twin.base import timeouts, wait
from twin.lab import Lab
from twin.nvue import service as nvue_service
from twin.traffic import stream

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


@pytest.mark.prove  # a slow proof: `make prove` runs it, `make test` does not
def test_the_proof_breaks_a_nodes_system_name_and_the_lldp_group_names_it(lab):
    p = twin_cli("verify", NAME, "--prove", "--element", "lldp leaf2", "--json", timeout=600)  # one of 3: ~8 s each
    proof = json.loads(p.stdout)
    assert p.returncode == 0 and proof["caught"] == proof["proved"] == 1, p.stdout[-3000:] + p.stderr
    (o,) = proof["outcomes"]
    assert o["caught"] and o["restored"] and o["check"] == "lldp: spine1 swp2", o
    assert failures(lab) == {}  # leaf1 sends its own name again, with the timers its NVUE declares


# --- day 2 on the same lab: what NVUE stores shown, a host name, RoCE QoS on and off under traffic -----------
def test_nv_show_service_lldp_shows_what_nvue_stores_beside_what_lldpd_runs(lab):
    nv_apply(
        NAME,
        "leaf2",
        ("set", "service", "lldp", "dot1-tlv", "on"),
        ("set", "service", "lldp", "mode", "force-send-lldp"),
    )
    assert shown("leaf2", "service", "lldp") == {
        "tx-interval": 5,  # lldpd's
        "tx-hold-multiplier": 4,
        "dot1-tlv": "on",  # applied: kept, not run (docs/nvue.md says why)
        "mode": "force-send-lldp",
        "twin": {"system-name": "leaf2", "ttl": 20, "stored": ["dot1-tlv", "mode"]},
    }


def test_a_host_name_set_on_a_running_node_is_applied_in_seconds_and_verify_still_passes(lab):
    """The node's UTS name, /etc/hostname, frr.conf's and lldpd's system name; FRR's daemons keep the name
    they started with until FRR starts again (bgpd tells its peers that one), which verify takes too."""
    t0 = time.monotonic()
    nv_apply(NAME, "leaf2", ("set", "system", "hostname", "leaf2-sw"))
    took = time.monotonic() - t0
    assert took < 30, f"the apply took {took:.0f} s"  # it waited 120 s for FRR and was rolled back
    node = lab.node("leaf2")
    got = node.check(["sh", "-c", "hostname; cat /etc/hostname; grep ^hostname /etc/frr/frr.conf"])
    assert got.stdout.splitlines() == ["leaf2-sw", "leaf2-sw", "hostname leaf2-sw"]
    assert shown("leaf2", "system")["hostname"] == "leaf2-sw"
    assert settled(lab, set()) == {}  # the lldp group takes leaf2 and its NVUE's leaf2-sw alike

    def seen() -> list[str]:  # spine1's lldpd has the new name at leaf2's next LLDPDU (every 5 s)
        n = shown("spine1", "interface", "swp2", "lldp")["neighbor"]
        return [] if n.get("leaf2-sw", {}).get("port", {}).get("name") == "swp51" else [f"spine1 swp2 sees {n}"]

    wait.until(seen, 15, "spine1 seeing leaf2-sw on swp2", first=0.5, cap=1.0)
    rep = verify.run(lab, only=["control"])
    assert rep.passed, [c.message for c in rep.failures()]
    nv_apply(NAME, "leaf2", ("unset", "system", "hostname"))
    assert node.check(["hostname"]).stdout.strip() == "leaf2" and shown("leaf2", "system")["hostname"] == "leaf2"
    print(f"\nsystem hostname applied in {took:.1f} s")


def test_roce_qos_turned_on_and_off_under_traffic_loses_no_frame(lab):
    """Every cabled port of an NVUE node has its HTB root from `twin up`: `qos roce` on or off runs the port's
    batch again (classes and filters in place), never a new root qdisc, which drops what the port sends."""
    node = lab.node("leaf1")

    def root() -> tuple[str, int]:
        out = node.check(["tc", "-s", "qdisc", "show", "dev", "swp51", "root"]).stdout
        return out.split(" root")[0], int(out.split(" pkt")[0].rsplit(" ", 1)[1])

    kind, sent = root()
    assert kind == "qdisc htb 1:", "made at twin up, QoS off"
    flows = stream.pair_flows(lab.fabric, [("host1a", "host2a"), ("host2a", "host1a")])
    with stream.Stream(lab, flows, interval=0.001) as s:  # 1,000 frames/s each way, across swp51 and swp10
        s.hold(0.3)
        nv_apply(NAME, "leaf1", ("set", "qos", "roce", "enable", "on"))
        assert "flowid 1:13" in node.check(["tc", "filter", "show", "dev", "swp51"]).stdout  # RoCE in class 3
        nv_apply(NAME, "leaf1", ("set", "qos", "roce", "enable", "off"))
        s.hold(0.3)
    assert node.check(["tc", "filter", "show", "dev", "swp51"]).stdout == ""
    kind, after = root()
    assert kind == "qdisc htb 1:" and after > sent, "the same root qdisc all along: its counter went on"
    assert [(r.src, r.lost) for r in s.results] == [("host1a", 0), ("host2a", 0)], [r.outages for r in s.results]
    assert min(r.sent for r in s.results) > 2000
    print(f"\nqos on and off under {len(flows)} flows: {[(r.sent, r.lost) for r in s.results]}")
