"""NVUE's ACLs on an SVI and on the control plane, run and judged (issue 44): a lab whose switches run
their NVUE export (tests/e2e/nvue/acl.yml: leaf1 routes tenant red's web, host1a, to its db, host1b, and
peers with spine1), given with `nv` the mistakes operators make, each named by `twin verify`'s acl group,
then fixed with `nv` and passing:
- an inbound ACL on SVI vlan10 (web) that denies RoCEv2 (UDP 4791): host1a -> host1b, routed in through
  that SVI, is dropped and counted, and the check names the ACL and rule; host1a's bridged traffic is not
  the SVI's to judge;
- control-plane ACLs that deny BGP (an ipv6 one: TCP to and from port 179; twin's underlay is unnumbered,
  IPv6 link-local) and the NVUE API on the management address (an ipv4 one: TCP 8765): the checks name
  the session they cut and both rules; bgpd loses spine1 once its hold time (3 s here) runs out; the API on
  leaf1's management address no longer answers, as on a Cumulus switch; twin's own way in (`nv` over a
  unix socket, run in the node as `twin exec` runs it) still applies the fix, and BGP comes back;
- a mac ACL on host1a's port denying IPv4 from its MAC, named by the flows it drops;
- a control-plane rule denying TCP SYN under SYN's own mask: BGP, once cleared, cannot open again; under a
  mask of SYN and ACK leaf1's own connection opens it.
One lab for the module."""

from __future__ import annotations

import json
import shlex
import socket
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import ROOT, nvue_export_lab
from twin import prove, verify

pytestmark = pytest.mark.e2e

NAME = "t-nvue-acl"
TOPOLOGY = ROOT / "tests/e2e/nvue/acl.yml"
DEADLINE = 30.0  # BGP down once its hold time runs out, up again once the ACL is gone


def short_hold(d: Path) -> None:
    """leaf1's export with BGP's hold time at 3 s (keepalive 1 s), NVUE's `timers` of its peer group, so a
    session an ACL cuts goes down in 3 s, not Cumulus's default 9 (spine1 takes the lower hold)."""
    f = d / "leaf1" / "startup.yaml"
    doc = yaml.safe_load(f.read_text())
    group = doc[-1]["set"]["vrf"]["default"]["router"]["bgp"]["peer-group"]["fabric"]
    group.setdefault("timers", {}).update({"keepalive": 1, "hold": 3})
    f.write_text(yaml.safe_dump(doc, sort_keys=False))


@pytest.fixture(scope="module")
def lab(runtime, node_image, tmp_path_factory):
    d = tmp_path_factory.mktemp("nvue-acl")
    with nvue_export_lab(runtime, node_image, d, TOPOLOGY, NAME, edit=short_hold) as lab:
        yield lab


def nv(lab, *words: str) -> str:
    """`nv WORDS` in leaf1 through the node's exec seam (nsenter, as `twin exec` does: no network, and
    none of a CLI's start-up), `nv` talking to the NVUE service over its unix socket."""
    return lab.node("leaf1").check(["nv", *words], timeout=60).stdout


def nv_apply(lab, *changes: tuple[str, ...]) -> None:
    """The `nv` edits and `nv config apply -y` in one exec of leaf1."""
    script = " && ".join(shlex.join(["nv", *c]) for c in [*changes, ("config", "apply", "-y")])
    lab.node("leaf1").check(["sh", "-c", script], timeout=60)


def failing(lab, *groups: str) -> dict[str, str]:
    return {f"{c.group} {c.name}": c.message for c in verify.run(lab, only=list(groups)).failures()}


def bgp_state(lab) -> str:
    doc = json.loads(lab.node("leaf1").check(["vtysh", "-c", "show bgp summary json"]).stdout)
    return doc["ipv4Unicast"]["peers"]["swp51"]["state"]


def until(what, want, deadline: float = DEADLINE):
    t0 = time.monotonic()
    while (got := what()) != want and time.monotonic() - t0 < deadline:
        time.sleep(0.5)
    return got


def api_answers(address: str) -> bool:
    """Whether the NVUE API on a management address takes a connection (port 8765)."""
    try:
        socket.create_connection((address, 8765), timeout=1).close()
        return True
    except OSError:
        return False


def drops_web_to_db(lab, check: str) -> None:
    """The acl group fails `check` alone: host1a -> host1b dropped, all 4 frames, and counted."""
    said = failing(lab, "acl")
    assert list(said) == [check], said
    msg = said[check]
    assert msg.startswith(
        "drops host1a -> host1b, which the topology says must pass: 4/4 frames of host1a -> host1b dropped, counted "
    ), msg
    assert int(msg.rsplit("counted ", 1)[1]) >= 4


def test_an_svi_acl_that_denies_roce_is_named_then_fixed(lab):
    acl = ("acl", "ROCE")
    nv_apply(
        lab,
        ("set", *acl, "type", "ipv4"),
        ("set", *acl, "rule", "10", "match", "ip", "protocol", "udp"),
        ("set", *acl, "rule", "10", "match", "ip", "dest-port", "4791"),
        ("set", *acl, "rule", "10", "action", "deny"),
        ("set", *acl, "rule", "20", "action", "permit"),
        ("set", "interface", "vlan10", "acl", "ROCE", "inbound"),
    )
    drops_web_to_db(lab, "acl leaf1 vlan10 inbound acl ROCE rule 10")
    shown = nv(lab, "show", "interface", "vlan10", "acl", "-o", "json")
    assert json.loads(shown)["ROCE"]["inbound"]["rule"]["10"]["packets"] >= 4, shown
    nv_apply(lab, ("unset", "interface", "vlan10", "acl"))
    assert failing(lab, "acl", "traffic") == {}


def test_eth0s_link_mtu_is_set_on_the_management_port_and_put_back(lab):
    node = lab.node("leaf1")

    def mtu() -> int:
        shown = node.check(["nsenter", "--net=/run/twin/mgmt", "ip", "-o", "link", "show", "eth0"]).stdout
        return int(shown.split(" mtu ")[1].split()[0])  # eth0 is in VRF mgmt's namespace

    assert mtu() == 1500
    nv_apply(lab, ("set", "interface", "eth0", "link", "mtu", "9000"))
    assert mtu() == 9000
    assert api_answers(str(lab.fabric.nodes["leaf1"].mgmt)), "the API on the management address still answers"
    nv_apply(lab, ("unset", "interface", "eth0", "link", "mtu"))
    assert mtu() == 1500


def test_a_mac_acl_on_a_host_port_that_denies_its_ipv4_frames_is_named_then_fixed(lab):
    """A mac ACL inbound on host1a's port (swp10) denying IPv4 from host1a's MAC: its RoCE to host1b (routed,
    to web's gateway MAC) is dropped and counted, named by the rule; the fix passes the traffic group."""
    mac = lab.fabric.tenants["red"].attachments[0].mac
    rule = ("acl", "HOSTMAC", "rule")
    nv_apply(
        lab,
        ("set", "acl", "HOSTMAC", "type", "mac"),
        ("set", *rule, "10", "match", "mac", "source-mac", mac),
        ("set", *rule, "10", "match", "mac", "protocol", "ipv4"),
        ("set", *rule, "10", "action", "deny"),
        ("set", *rule, "20", "action", "permit"),
        ("set", "interface", "swp10", "acl", "HOSTMAC", "inbound"),
    )
    drops_web_to_db(lab, "acl leaf1 swp10 inbound acl HOSTMAC rule 10")
    shown = json.loads(nv(lab, "show", "interface", "swp10", "acl", "-o", "json"))
    assert shown["HOSTMAC"]["inbound"]["rule"]["10"]["packets"] >= 4, shown
    assert "packets" in shown["HOSTMAC"]["inbound"]["rule"]["20"], shown
    nv_apply(lab, ("unset", "interface", "swp10", "acl"), ("unset", "acl", "HOSTMAC"))
    assert failing(lab, "acl", "traffic") == {}


def test_control_plane_acls_that_cut_bgp_and_the_api_are_named_and_twin_still_applies_the_fix(lab):
    mgmt = lab.fabric.nodes["leaf1"].mgmt
    assert mgmt and api_answers(mgmt), "the NVUE API answers on leaf1's management address"
    bgp, api = ("acl", "BGP"), ("acl", "API")
    nv_apply(
        lab,
        ("set", *bgp, "type", "ipv6"),
        ("set", *bgp, "rule", "10", "match", "ip", "protocol", "tcp"),
        ("set", *bgp, "rule", "10", "match", "ip", "dest-port", "179"),
        ("set", *bgp, "rule", "10", "action", "deny"),
        ("set", *bgp, "rule", "20", "match", "ip", "protocol", "tcp"),
        ("set", *bgp, "rule", "20", "match", "ip", "source-port", "179"),
        ("set", *bgp, "rule", "20", "action", "deny"),
        ("set", *api, "type", "ipv4"),
        ("set", *api, "rule", "10", "match", "ip", "protocol", "tcp"),
        ("set", *api, "rule", "10", "match", "ip", "dest-port", "8765"),
        ("set", *api, "rule", "10", "action", "deny"),
        ("set", "system", "control-plane", "acl", "BGP", "inbound"),
        ("set", "system", "control-plane", "acl", "API", "inbound"),
    )
    assert not api_answers(mgmt), "the API on the management address is cut, as on a Cumulus switch"
    assert until(lambda: bgp_state(lab) != "Established", True), "spine1 lost once the hold time ran out"
    said = failing(lab, "acl")
    for seq, other in ((10, 20), (20, 10)):
        msg = said.pop(f"acl leaf1 control-plane inbound acl BGP rule {seq}")
        assert msg.startswith("cuts BGP with spine1 on swp51: drops BGP from spine1 (TCP "), msg
        assert f"(with rule {other}): no way to open it remains, and the topology says it must be up" in msg, msg
        assert "; bgpd has it Established" not in msg and int(msg.rsplit("counted ", 1)[1]) >= 0, msg
    assert said == {}, "the API's rule cuts nothing the topology says must pass (twin's own ways are not network)"
    counted = nv(lab, "show", "system", "control-plane", "acl", "-o", "json")
    rules = json.loads(counted)["BGP"]["inbound"]["rule"]
    assert rules["10"]["packets"] + rules["20"]["packets"] > 0, counted
    nv_apply(lab, ("unset", "system", "control-plane", "acl"))  # over nv's unix socket: the API is cut
    assert until(lambda: bgp_state(lab), "Established") == "Established"
    assert api_answers(mgmt)
    assert until(lambda: failing(lab, "control"), {}) == {}, "spine1's routes learned again"


def test_a_tcp_flag_rule_that_stops_bgp_from_opening_is_named_and_its_mask_fixes_it(lab):
    """Denying SYN (under SYN's own mask) on the control plane leaves the session that is up (its packets carry
    ACK) but stops any from opening: verify names it at once, and once BGP is cleared it stays down, the SYNs
    counted. Under a mask of SYN and ACK only a connection's first packet is denied: leaf1's own connection
    (its SYN goes out, spine1's SYN-ACK comes back) opens it again, and verify says why the rule cuts nothing."""
    syn = ("acl", "SYN", "rule", "10")
    nv_apply(
        lab,
        ("set", "acl", "SYN", "type", "ipv6"),
        ("set", *syn, "match", "ip", "protocol", "tcp"),
        ("set", *syn, "match", "ip", "tcp", "flags", "syn"),
        ("set", *syn, "match", "ip", "tcp", "mask", "syn"),
        ("set", *syn, "action", "deny"),
        ("set", "system", "control-plane", "acl", "SYN", "inbound"),
    )
    said = failing(lab, "acl")
    msg = said.pop("acl leaf1 control-plane inbound acl SYN rule 10")
    assert msg.startswith(
        "cuts BGP with spine1 on swp51: drops BGP from spine1 (TCP from port 179), BGP from spine1 (TCP to port "
        "179): no way to open it remains"
    ), msg
    assert said == {}
    lab.node("leaf1").check(["vtysh", "-c", "clear bgp *"])
    assert until(lambda: bgp_state(lab) != "Established", True), "the session cleared cannot open again"
    held = time.monotonic() + 4  # a few connection attempts each way (connect timer 2 s)
    while time.monotonic() < held:
        assert bgp_state(lab) != "Established", "a SYN got through"
        time.sleep(0.5)
    counted = json.loads(nv(lab, "show", "system", "control-plane", "acl", "-o", "json"))["SYN"]["inbound"]
    assert counted["rule"]["10"]["packets"] > 0, counted
    nv_apply(lab, ("set", *syn, "match", "ip", "tcp", "mask", "ack"))  # SYN and ACK examined: SYN-ACK passes
    assert until(lambda: bgp_state(lab), "Established") == "Established"
    assert until(lambda: failing(lab, "control"), {}) == {}, "spine1's routes learned again"
    rep = verify.run(lab, only=["acl"])
    assert rep.passed, [c.message for c in rep.failures()]
    (check,) = [c for c in rep.checks if c.name == "leaf1 control-plane inbound acl SYN rule 10"]
    assert check.message.startswith(
        "denies no flow the topology says must pass; it drops BGP from spine1 (TCP to port 179), and BGP with "
        "spine1 on swp51 opens the other way"
    ), check.message
    nv_apply(lab, ("unset", "system", "control-plane", "acl"), ("unset", "acl", "SYN"))
    assert until(lambda: failing(lab, "acl", "control"), {}) == {}


@pytest.mark.prove
def test_the_proof_breaks_each_svi_and_control_plane_acl_element(lab):
    """`make prove`: an ACL whose deny rule no intended flow meets, inbound on SVI vlan20 and outbound on the
    control plane: each table and each deny rule broken, named by its check, put back; the lab verifies."""
    guard = ("acl", "GUARD")
    nv_apply(
        lab,
        ("set", *guard, "type", "ipv4"),
        ("set", *guard, "rule", "10", "match", "ip", "dest-ip", "192.0.2.9/32"),
        ("set", *guard, "rule", "10", "action", "deny"),
        ("set", *guard, "rule", "20", "action", "permit"),
        ("set", "interface", "vlan20", "acl", "GUARD", "inbound"),
        ("set", "system", "control-plane", "acl", "GUARD", "outbound"),
    )
    assert failing(lab, "acl") == {}
    proof = prove.prove(lab, ["acl-*"])
    by = {o.element.id: o for o in proof.outcomes}
    assert set(by) == {
        "acl-table leaf1 red",
        "acl-rule leaf1 vlan20 inbound GUARD 10",
        *(f"acl-table leaf1 {ns} control-plane" for ns in ("default", "red", "mgmt")),
        *(f"acl-rule leaf1 control-plane{ns} outbound GUARD 10" for ns in ("", "/red", "/mgmt")),
    }, sorted(by)
    assert proof.passed, [(i, o.detail) for i, o in by.items() if not (o.caught and o.restored)]
    assert failing(lab, "acl") == {}
