"""`twin verify LAB --prove` on a real lab: verify notices every element broken in turn, and the
lab is whole again afterwards (issue 16). The suite proves one element of every kind; `make prove`
runs the whole proof of aipod (its last run is in docs/verify.md)."""

from __future__ import annotations

import json
import socket
import xml.etree.ElementTree as ET

import pytest

from tests.e2e.conftest import twin_cli
from twin import prove, verify
from twin.config import overlay
from twin.lifecycle import barrier

pytestmark = pytest.mark.e2e

# one element of every kind, on both DPUs and both tenants
SAMPLE = [
    "port-rule dpu1:pf0vf0 spoofed MAC",
    "port-rule dpu2:pf0vf2 not IPv4",
    "port-rule dpu1:pf0vf1 spoofed ARP IP",
    "port-rule dpu2:pf0vf0 VXLAN from a workload",
    "l2vni-device dpu2 10201",
    "l2vni-vni dpu1 10101",
    "l3vni-device dpu2 10100",
    "l3vni-vni dpu1 10200",
    "l3vni dpu2 blue",
    "advertise-all-vni dpu1",
    "type5 dpu2 red",
    "redistribute dpu1 blue",
    "rt-import dpu1 10101",
    "rt-export dpu2 10200",
    "session leaf1:swp1",
    "session dpu2:p1",
    "loopback spine2",
    "loopback dpu1",
    "gateway-mac dpu2 br10202",
    "gateway-address dpu1 br10102",
    "arp-suppression dpu2 vxlan10201",
    "tos dpu2 vxlan10100",
    "mtu dpu1 vxlan10101",
    "mtu dpu2 br10200",
    "mtu leaf2 swp3",
    "mtu host2b eth1",
    "mtu dpu1 pf0vf2",
    "maximum-paths dpu2",
    "multipath-relax dpu1",
    "hash-policy dpu2",
    "hash-fields dpu1",
    "membership dpu2:pf0vf1",
]


@pytest.fixture(scope="module")
def lab(aipod):
    return aipod  # the default lab this module shares with others: it puts back what it breaks


def test_every_kind_of_element_is_caught_by_the_check_that_should_catch_it(lab):
    proof = prove.prove(lab, SAMPLE)
    assert [o.element.id for o in proof.outcomes] == sorted(
        SAMPLE, key=[e.id for e in prove.elements(lab.context())[0]].index
    )
    assert proof.passed, "\n".join(
        f"{o.element.id}: caught {o.caught}, restored {o.restored}: {o.detail}"
        for o in proof.outcomes
        if not (o.caught and o.restored)
    )
    assert proof.score == f"caught {len(SAMPLE)} of {len(SAMPLE)}" and proof.total == 176
    assert len({o.element.kind for o in proof.outcomes}) == 25, "every kind"
    by = {o.element.id: o.check for o in proof.outcomes}
    assert by["port-rule dpu1:pf0vf0 spoofed MAC"] == "zerotrust: host1a: spoofed MAC"
    assert by["session dpu2:p1"] == "control: bgp dpu2"
    assert by["arp-suppression dpu2 vxlan10201"].startswith("arp: host2b resolves")
    assert by["tos dpu2 vxlan10100"].startswith("underlay: red host2a -> ")
    assert by["hash-policy dpu2"].startswith("underlay: ") and "every path dpu2 ->" in by["hash-policy dpu2"]
    # and the lab is whole again, with no neighbour left on the port taken out of its bridge
    ctx = lab.context()
    assert barrier.missing(ctx) == []
    ((t, a),) = [
        (t, a) for t in lab.fabric.tenants.values() for a in t.attachments if (a.vtep, a.port) == ("dpu2", "pf0vf1")
    ]
    with ctx.ipr("dpu2", overlay.tenant_ns(t, ctx.backend)) as ipr:
        (port,) = ipr.link_lookup(ifname="pf0vf1")
        assert [n.get_attr("NDA_DST") for n in ipr.get_neighbours(family=socket.AF_INET, ifindex=port)] == []
    assert verify.run(lab).passed


def test_cli_prove_writes_json_and_junit_and_a_miss_exits_1(lab, tmp_path):
    junit = tmp_path / "prove.xml"
    p = twin_cli(
        "verify",
        lab.name,
        "--prove",
        "--element",
        "port-rule dpu1:pf0vf0 spoofed IP",
        "--element",
        "loopback leaf1",
        "--json",
        "--junit",
        str(junit),
    )
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(p.stdout)
    assert doc["score"] == "caught 2 of 2" and doc["passed"] and doc["elements"] == 176
    rule = doc["outcomes"][0]
    assert rule["check"] == "zerotrust: host1a: spoofed IP" and rule["restored"]
    assert "nft delete rule bridge twin_ports ingress handle" in rule["broken_by"]
    assert any(x["kind"] == "fabric MTU" and x["where"] == "spine1:swp1" for x in doc["exempt"])
    suites = ET.parse(junit).getroot()
    assert suites.get("tests") == "2" and suites.get("failures") == "0"
    # with only the control group, nothing can notice a port rule gone: a miss, exit 1, named
    p = twin_cli("verify", lab.name, "--prove", "--only", "control", "--element", "port-rule dpu2:pf0vf1 spoofed MAC")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "MISSED port-rule dpu2:pf0vf1 spoofed MAC" in p.stdout and "caught 0 of 1" in p.stdout
    bad = twin_cli("verify", lab.name, "--prove", "--element", "no-such-element*")
    assert bad.returncode == 1 and "no element matches no-such-element*" in bad.stderr
    assert verify.run(lab, only=["zerotrust", "control"]).passed, "restored after the miss too"
