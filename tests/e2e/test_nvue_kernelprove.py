"""`--prove` of the kernel half NVUE runs (issue 44): a lab whose switches all run their NVUE export
(tests/e2e/nvue/policy.yml), given with `nv` in the nodes an ACL (a deny rule no intended flow meets,
bound inbound on leaf1's host port and outbound on its uplink), `qos roce` on both leafs and the
spine (every hop of the RoCE path: the qos group names one without it) and `link.mtu 9216` on leaf1's
uplink. The lab verifies; the proof breaks each ACL table, each deny rule,
each DSCP the qos group sends and the MTU, each named by the check that judges it, and puts each back
as the node's plane applies it: the lab verifies again, swp51 at NVUE's 9216, not the topology's 9000.
A slow proof: `make prove` runs it, `make test` does not. One lab for the module."""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e.conftest import ROOT, nv_apply, nvue_export_lab
from twin import prove, verify

pytestmark = [pytest.mark.e2e, pytest.mark.prove]

NAME = "hp-nvkprove"
TOPOLOGY = ROOT / "tests/e2e/nvue/policy.yml"
GROUPS = ["acl", "qos", "mtu"]
GUARD = ("acl", "GUARD")
ELEMENTS = {
    "acl-table leaf1 default": "acl: leaf1 default",
    "acl-table leaf1 red": "acl: leaf1 red",
    "acl-rule leaf1 swp10 inbound GUARD 10": "acl: leaf1 swp10 inbound acl GUARD rule 10",
    "acl-rule leaf1 swp51 outbound GUARD 10": "acl: leaf1 swp51 outbound acl GUARD rule 10",
    "qos-dscp leaf1 26": "qos: leaf1 RoCE class",
    "qos-dscp leaf1 48": "qos: leaf1 CNP class",
    "qos-dscp leaf2 26": "qos: leaf2 RoCE class",
    "qos-dscp leaf2 48": "qos: leaf2 CNP class",
    "link-mtu leaf1 swp51": "mtu: leaf1:swp51 - spine1:swp1",
}


@pytest.fixture(scope="module")
def lab(runtime, node_image, tmp_path_factory):
    with nvue_export_lab(runtime, node_image, tmp_path_factory.mktemp("nvue-kprove"), TOPOLOGY, NAME) as lab:
        nv_apply(
            NAME,
            "leaf1",
            ("set", *GUARD, "type", "ipv4"),
            ("set", *GUARD, "rule", "10", "match", "ip", "protocol", "udp"),
            ("set", *GUARD, "rule", "10", "match", "ip", "dest-ip", "192.0.2.9/32"),
            ("set", *GUARD, "rule", "10", "match", "ip", "dest-port", "4791"),
            ("set", *GUARD, "rule", "10", "action", "deny"),
            ("set", *GUARD, "rule", "20", "action", "permit"),
            ("set", "interface", "swp10", "acl", "GUARD", "inbound"),
            ("set", "interface", "swp51", "acl", "GUARD", "outbound"),
            ("set", "interface", "swp51", "link", "mtu", "9216"),
            ("set", "qos", "roce", "enable", "on"),
        )
        nv_apply(NAME, "leaf2", ("set", "qos", "roce", "enable", "on"))
        nv_apply(NAME, "spine1", ("set", "qos", "roce", "enable", "on"))  # every hop of the RoCE path
        yield lab


def mtu(lab, node: str, port: str) -> int:
    return json.loads(lab.node(node).check(["ip", "-j", "link", "show", port]).stdout)[0]["mtu"]


def test_the_proof_breaks_each_acl_qos_and_mtu_element_and_verify_names_each(lab):
    rep = verify.run(lab, only=GROUPS)
    assert rep.passed, [f"{c.group}: {c.name}: {c.message}" for c in rep.failures()]
    assert mtu(lab, "leaf1", "swp51") == 9216
    t0 = time.monotonic()
    proof = prove.prove(lab, ["acl-*", "qos-*", "link-mtu *"])
    took = time.monotonic() - t0
    by = {o.element.id: o for o in proof.outcomes}
    print(
        f"--prove of {len(by)} NVUE kernel elements: {took:.0f}s; per element: "
        + ", ".join(f"{i} {o.seconds.get('total')}s" for i, o in by.items())
    )
    assert set(by) == set(ELEMENTS), sorted(by)
    assert proof.passed, "\n".join(
        f"{o.element.id}: caught {o.caught}, restored {o.restored}: {o.detail}; failing: "
        + "; ".join(f"{c.group}: {c.name}: {c.message}" for c in o.also_failed)
        for o in proof.outcomes
        if not (o.caught and o.restored)
    )
    assert {i: o.check for i, o in by.items()} == ELEMENTS
    rule = by["acl-rule leaf1 swp10 inbound GUARD 10"].named_by[0].message
    assert rule == "does not run: rule 10 in chain b0_in (swp10's ingress) does not drop: accept", rule
    assert "not loaded" in by["acl-table leaf1 red"].named_by[0].message
    assert "did not leave swp51 by traffic class 3" in by["qos-dscp leaf1 26"].named_by[0].message
    assert "leaf1 swp51 mtu 1500 < 9000" in by["link-mtu leaf1 swp51"].named_by[0].message
    kept = {(x.kind, x.where) for x in proof.exempt}
    assert ("ACL permit rule", "leaf1 swp10 inbound GUARD 20") in kept
    assert ("QoS ECN marking", "leaf1 traffic class 3") in kept
    # put back as NVUE runs them: the lab verifies, swp51 at NVUE's MTU, the ACL's tables loaded again
    rep = verify.run(lab, only=GROUPS)
    assert rep.passed, [f"{c.group}: {c.name}: {c.message}" for c in rep.failures()]
    assert mtu(lab, "leaf1", "swp51") == 9216
    assert took < 150, f"the proof took {took:.0f}s"


def test_twins_own_mtu_element_of_that_port_puts_back_nvues_mtu(lab):
    """twin's own element of the uplink's MTU (a fabric port on tenant paths, named by the underlay group)
    puts back the MTU the node runs, NVUE's `link.mtu` 9216, not the topology's 9000."""
    proof = prove.prove(lab, ["mtu leaf1 swp51"])
    (o,) = proof.outcomes
    assert proof.passed and o.check.startswith("underlay: "), (o.check, o.detail)
    assert o.element.restored_by == "ip link set swp51 mtu 9216"
    assert mtu(lab, "leaf1", "swp51") == 9216
