"""NVUE's ACLs beyond a port (issue 44): bound to an SVI (a chain on the bridge twin makes for it, in its
VRF's namespace), to a bond the lab makes, to the control plane (`table inet twin_acl` on the input and
output hooks of every namespace running it, or one interface's); of type ipv6 as well as ipv4; what is
kept (a bond or SVI not made, Cumulus's own control-plane ACLs); what verify's acl group reckons they meet
(`twin.nvue.aclflows`: the flows an SVI routes, the BGP and BFD sessions a rule leaves no way to open);
and no value of NVUE's becoming a foreign nftables line."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import twin.dialects  # noqa: F401  (NVUE registered: its planes and elements)
from tests.unit.test_nvue_beyond import BONDED, bonded
from tests.unit.test_nvue_kernelprove import lab_with
from twin import nvue, topology
from twin.base.errors import TopologyError
from twin.config.steps import Step
from twin.nvue import aclflows, kernelcheck, routed
from twin.nvue import tree as nv_tree
from twin.nvue.acl import Headers, Rule
from twin.nvue.aclbind import Binding
from twin.nvue.configs import running
from twin.observe.nflog import Logged
from twin.observe.reasons import Place, drop_event
from twin.prove import elements
from twin.prove.element import Kernel, NftRule

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests/golden/interop/nvue/samples"
FABRIC = topology.load(ROOT / "tests/e2e/nvue/samples.yml")
LEAF = nvue.read(SAMPLES / "leaf01" / "startup.yaml").tree
ACLFAB = topology.load(ROOT / "tests/e2e/nvue/acl.yml")  # leaf1 routes red's web (host1a) to its db (host1b)
ROCE = {"protocol": "udp", "dest-port": {"4791": {}}}
BGP_IN, BGP_OUT = {"protocol": "tcp", "dest-port": {"179": {}}}, {"protocol": "tcp", "source-port": {"179": {}}}


def acl(name: str, kind: str, *rules: tuple[dict, str]) -> dict:
    """ACL `name` of `kind`: each (match ip, action) a rule, numbered 10, 20, ...; then permit."""
    rs = {str(10 * (i + 1)): {"match": {"ip": m}, "action": {a: {}}} for i, (m, a) in enumerate(rules)}
    rs[str(10 * (len(rules) + 1))] = {"action": {"permit": {}}}
    return {"acl": {name: {"type": kind, "rule": rs}}}


def leaf(*patches: dict, backend: str = "netns", unset: tuple[str, ...] = ()) -> Any:
    tree = copy.deepcopy(LEAF)
    if unset:
        nv_tree.unset_path(tree, unset)
    for p in patches:
        nv_tree.patch(tree, p)
    nodes, notes = nvue.build({"leaf01": nvue.from_tree(tree, "leaf01/startup.yaml")}, FABRIC, backend)
    nodes["leaf01"].notes = notes
    return nodes["leaf01"]


def refused(*patches: dict) -> list[str]:
    with pytest.raises(TopologyError) as e:
        leaf(*patches)
    return [f"{p.path}: {p.message}" for p in e.value.problems]


def acl_leaf(*patches: dict, bfd: bool = False) -> Any:
    """leaf1 of tests/e2e/nvue/acl.yml from its own NVUE export, patched."""
    texts, _ = nvue.export(ACLFAB)
    tree = nvue.read("leaf1/startup.yaml", texts["leaf1"]).tree
    for p in patches:
        nv_tree.patch(tree, p)
    if bfd:
        nv_tree.patch(
            tree, {"vrf": {"default": {"router": {"bgp": {"peer-group": {"fabric": {"bfd": {"enable": "on"}}}}}}}}
        )
    return nvue.build({"leaf1": nvue.from_tree(tree, "leaf1/startup.yaml")}, ACLFAB, "netns")[0]["leaf1"]


# --- SVIs ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend, ns, file", [("netns", "red", "acl-red.nft"), ("vrf", "", "acl.nft")])
def test_an_svi_acl_is_a_chain_on_its_bridge_in_its_vrfs_namespace(backend, ns, file):
    x = leaf(
        acl("R", "ipv4", (ROCE, "deny")),
        {"interface": {"vlan10": {"acl": {"R": {"inbound": {}, "outbound": {}}}}}},
        backend=backend,
    )
    assert [(b.place, b.dev, b.ns, b.chain) for b in x.plane.acls.bindings] == [
        ("vlan10", "br10", ns, "b0_in"),
        ("vlan10", "br10", ns, "b1_out"),
    ]
    text = x.files[file]
    assert 'type filter hook ingress device "br10" priority -500; policy accept;' in text
    assert 'type filter hook egress device "br10" priority -500; policy accept;' in text
    assert "# acl R inbound on vlan10" in text


def test_an_svi_or_bond_the_node_does_not_make_keeps_its_acl_and_says_so():
    x = leaf(
        acl("R", "ipv4", (ROCE, "deny")),
        {
            "interface": {
                "vlan30": {"type": "svi", "vlan": 30, "ip": {"vrf": "RED", "address": {"10.1.30.2/24": {}}}},
                "bond1": {"type": "bond", "bond": {"member": {"swp1": {}}}, "acl": {"R": {"inbound": {}}}},
            },
            "bridge": {"domain": {"br_default": {"vlan": {"30": {"vni": {"30": {}}}}}}},
        },
        {"interface": {"vlan30": {"acl": {"R": {"outbound": {}}}}}},
        unset=("interface", "swp1", "bridge"),
    )
    assert x.plane.acls.bindings == []
    assert (
        "leaf01: interface.vlan30.acl.R.outbound: kept, not run (vlan30 is not made on leaf01: no host of the "
        "topology is in VLAN 30 there)" in x.notes
    )
    assert "leaf01: interface.bond1.acl.R.inbound: kept, not run (the bond is stored, not made here)" in x.notes


def test_a_bond_the_lab_makes_runs_its_acl_on_the_bond():
    f = bonded(*BONDED, "acl R type ipv4", "acl R rule 10 action deny", "interface bond1 acl R inbound")
    x = nvue.build({"leaf01": f}, FABRIC, "vrf", bonds=True)[0]["leaf01"]
    (b,) = x.plane.acls.bindings
    assert (b.place, b.dev, b.ns) == ("bond1", "bond1", "")
    assert 'type filter hook ingress device "bond1"' in x.files["acl.nft"]
    run = x.plane.as_run(FABRIC)
    assert aclflows.crossing(run, "leaf01", x.plane, b, x.plane.acls.acls["R"].rules[0]) == [
        ("server01", "server03")
    ], "the flows of the host on the bond's member"


def test_an_svi_acl_meets_the_flows_it_routes_never_what_its_vlan_bridges():
    x = acl_leaf(
        acl("R", "ipv4", (ROCE, "deny")),
        {
            "interface": {
                "vlan10": {"acl": {"R": {"inbound": {}, "outbound": {}}}},
                "vlan20": {"acl": {"R": {"inbound": {}}}},
            }
        },
    )
    run = x.plane.as_run(ACLFAB)
    r = x.plane.acls.acls["R"].rules[0]
    got = {(b.place, b.way): aclflows.crossing(run, "leaf1", x.plane, b, r) for b in x.plane.acls.bindings}
    assert got == {
        ("vlan10", "inbound"): [("host1a", "host1b")],  # web's host to db: routed in through web's SVI
        ("vlan10", "outbound"): [("host1b", "host1a")],  # db's host to web: routed out into web
        ("vlan20", "inbound"): [("host1b", "host1a")],
    }
    samples = leaf(acl("R", "ipv4", (ROCE, "deny")), {"interface": {"vlan10": {"acl": {"R": {"inbound": {}}}}}})
    (b,) = samples.plane.acls.bindings
    assert aclflows.crossing(samples.plane.as_run(FABRIC), "leaf01", samples.plane, b, r) == [], (
        "server01 -> server03 is bridged in VLAN 10 (one segment): it never meets the SVI"
    )


# --- the control plane -------------------------------------------------------------------------------
CP = {"system": {"control-plane": {"acl": {"CP": {"inbound": {}}}}}}


def test_a_control_plane_acl_runs_on_input_in_every_namespace_of_the_control_plane():
    x = leaf(acl("CP", "ipv6", (BGP_IN, "deny"), (BGP_OUT, "deny")), CP)
    assert [(b.place, b.ns, b.chain, b.family) for b in x.plane.acls.bindings] == [
        ("control-plane", "", "b0_in", "inet"),
        ("control-plane/blue", "blue", "b0_in", "inet"),
        ("control-plane/red", "red", "b0_in", "inet"),
    ], "the node's own namespace and each VRF's (netns backend)"
    text = x.files["acl-cp.nft"]
    assert text.splitlines()[3:7] == [
        "table inet twin_acl",
        "delete table inet twin_acl",
        "table inet twin_acl {",
        "\tcounter r0_10 {",
    ]
    assert "\t\ttype filter hook input priority -500; policy accept;\n" in text
    assert '\t\tiif "lo" accept comment "twin: the node to itself"\n' in text
    assert "\t\tudp dport 4789 accept comment" in text, "VXLAN: a switch's ASIC carries it, not its CPU"
    assert (
        '\t\tmeta nfproto ipv6 meta l4proto tcp tcp dport 179 counter name "r0_10" '
        'log prefix "twin acl CP rule 10" group 1715 drop comment "acl CP rule 10"\n'
    ) in text
    assert '\t\tmeta nfproto ipv6 counter name "r0_30" accept comment "acl CP rule 30"\n' in text
    assert set(x.files) >= {"acl-cp.nft", "acl-cp-red.nft", "acl-cp-blue.nft"} and "acl.nft" not in x.files
    step = x.plane.extras[("acl-cp", "red")]
    assert step.command() == "ip netns exec red nft -f /etc/twin/acl-cp-red.nft"
    assert routed.undo(step) == Step("nft-delete", "inet twin_acl", "red")
    dev = leaf(acl("CP", "ipv6", (BGP_IN, "deny")), CP, backend="vrf")
    assert [b.place for b in dev.plane.acls.bindings] == ["control-plane"], "VRF devices: one namespace"


def test_the_management_namespace_runs_the_control_plane_acl_too():
    fab = FABRIC.model_copy(
        update={
            "mgmt": topology.load(ROOT / "topologies/aipod.yml").mgmt
            or __import__("ipaddress").ip_network("10.250.0.0/24"),
            "nodes": {**FABRIC.nodes, "leaf01": FABRIC.nodes["leaf01"].model_copy(update={"mgmt": "10.250.0.11"})},
        }
    )
    tree = copy.deepcopy(LEAF)
    for p in (acl("CP", "ipv4", ({"protocol": "tcp", "dest-port": {"8765": {}}}, "deny")), CP):
        nv_tree.patch(tree, p)
    x = nvue.build({"leaf01": nvue.from_tree(tree, "leaf01/startup.yaml")}, fab, "vrf")[0]["leaf01"]
    assert [b.place for b in x.plane.acls.bindings] == ["control-plane", "control-plane/mgmt"]
    assert (
        x.plane.extras[("acl-cp", "mgmt")].command() == "nsenter --net=/run/twin/mgmt nft -f /etc/twin/acl-cp-mgmt.nft"
    )


def test_one_interfaces_control_plane_acl_returns_what_else_arrives():
    x = leaf(
        acl("CP", "ipv6", (BGP_IN, "deny")),
        {
            "interface": {
                "swp51": {"acl": {"CP": {"inbound": {"control-plane": {}}, "outbound": {"control-plane": {}}}}}
            }
        },
    )
    assert [(b.place, b.ns, b.hook) for b in x.plane.acls.bindings] == [
        ("swp51 control-plane", "", "input"),
        ("swp51 control-plane", "", "output"),
    ]
    text = x.files["acl-cp.nft"]
    assert '\t\tiifname != "swp51" meta sdifname != "swp51" return comment "twin: swp51 only"\n' in text
    assert '\t\toifname != "swp51" return comment "twin: swp51 only"\n' in text


def test_cumulus_own_control_plane_acls_are_kept_others_undeclared_refused():
    x = leaf(
        {
            "system": {
                "control-plane": {"acl": {"acl-default-dos": {"inbound": {}}, "acl-default-whitelist": {"inbound": {}}}}
            }
        }
    )
    assert x.plane.acls.bindings == []
    assert (
        "leaf01: system.control-plane.acl.acl-default-dos: kept, not run (Cumulus Linux's own control-plane ACL, "
        "not in this file)" in x.notes
    )
    assert refused({"system": {"control-plane": {"acl": {"NOPE": {"inbound": {}}}}}}) == [
        "system.control-plane.acl.NOPE: ACL NOPE is not declared in this file (acl.NOPE)"
    ]


def test_ipv6_acls_see_ipv6_only_and_what_nvue_refuses_stays_refused():
    r = Rule(10, "deny", src="fe80::/10", proto=6, dports=(179,), v=6)
    assert r.nft("A", "r0_10") == (
        'ip6 saddr fe80::/10 meta l4proto tcp tcp dport 179 counter name "r0_10" '
        'log prefix "twin acl A rule 10" group 1715 drop comment "acl A rule 10"'
    )
    assert Rule(1, "permit", proto=17, v=6).nft("A", "c").startswith("meta protocol ip6 meta l4proto udp counter")
    assert Rule(1, "permit", v=6).nft("A", "c", "inet").startswith("meta nfproto ipv6 counter")
    assert Rule(1, "permit").nft("A", "c", "inet").startswith("meta nfproto ipv4 counter")
    assert r.matches(Headers("fe80::1", "fe80::2", 6, 40000, 179, 48)) and not r.matches(
        Headers("10.0.0.1", "10.0.0.2", 6, 1, 179, 0)
    )
    assert not Rule(1, "deny").matches(Headers("fe80::1", "fe80::2", 6, 1, 179, 0)), "an ipv4 ACL never meets IPv6"
    assert refused(
        {
            "acl": {
                "V4": {
                    "type": "ipv4",
                    "rule": {"1": {"match": {"ip": {"source-ip": "fe80::/10"}}, "action": {"deny": {}}}},
                }
            }
        },
        {
            "acl": {
                "V6": {"type": "ipv6", "rule": {"1": {"match": {"ip": {"protocol": "icmp"}}, "action": {"deny": {}}}}}
            }
        },
    ) == [
        "acl.V4.rule.1.match.ip.source-ip: rule 1: fe80::/10 is not IPv4 (an ipv4 ACL)",
        "acl.V6.rule.1.match.ip.protocol: rule 1: ICMP is IPv4's: an ipv6 ACL matches icmpv6 (58)",
    ]


def test_an_acl_deny_is_a_drop_event_naming_acl_and_rule():
    logged = Logged(
        time=1.0,
        prefix="twin acl CP rule 10",
        indev=3,
        outdev=None,
        physindev=None,
        physoutdev=None,
        hw_protocol=0x86DD,
        hook=1,
        family=10,
        hwaddr="",
        hwheader=b"",
        payload=b"",
    )
    e = drop_event(FABRIC, Place("leaf01", "", {3: "swp51"}), logged)
    assert (e["port"], e["code"], e["reason"], e["direction"]) == ("swp51", "acl", "acl CP rule 10", "in")


# --- what the acl group reckons a rule cuts ------------------------------------------------------------
def cut(x: Any) -> dict[str, tuple[bool, list[tuple[str, int, str]]]]:
    return {
        s.named: (s.cut, [(b.place, r.seq, p.what) for b, r, p in s.drops])
        for s in aclflows.sessions(ACLFAB, "leaf1", x.plane)
    }


def test_a_bgp_session_is_cut_when_no_way_to_open_it_remains():
    one = acl_leaf(acl("CP", "ipv6", (BGP_IN, "deny")), CP)
    assert cut(one) == {
        "BGP with spine1 on swp51": (False, [("control-plane", 10, "BGP from spine1 (TCP to port 179)")])
    }, "leaf1 still connects to spine1's port 179"
    both = acl_leaf(acl("CP", "ipv6", (BGP_IN, "deny"), (BGP_OUT, "deny")), CP)
    assert cut(both) == {
        "BGP with spine1 on swp51": (
            True,
            [
                ("control-plane", 20, "BGP from spine1 (TCP from port 179)"),
                ("control-plane", 10, "BGP from spine1 (TCP to port 179)"),
            ],
        )
    }
    port = acl_leaf(
        acl("P", "ipv6", ({"protocol": "tcp"}, "deny")), {"interface": {"swp51": {"acl": {"P": {"outbound": {}}}}}}
    )
    assert cut(port)["BGP with spine1 on swp51"][0], "the port's egress drops both ways' packets to the peer"
    v4 = acl_leaf(acl("CP", "ipv4", (BGP_IN, "deny"), (BGP_OUT, "deny")), CP)
    assert cut(v4) == {"BGP with spine1 on swp51": (False, [])}, "unnumbered BGP is IPv6: an ipv4 ACL never meets it"


def test_bfd_is_cut_when_either_way_is():
    x = acl_leaf(acl("CP", "ipv6", ({"protocol": "udp", "dest-port": {"3784": {}}}, "deny")), CP, bfd=True)
    got = cut(x)
    assert got["BFD with spine1 on swp51"] == (True, [("control-plane", 10, "BFD from spine1 (UDP to port 3784)")])
    assert got["BGP with spine1 on swp51"] == (False, [])


# --- TCP flags and ECN --------------------------------------------------------------------------------
SYN = {"protocol": "tcp", "tcp": {"flags": {"syn": {}}}}  # SYN set: a connection's first packet, and its answer
SYN_ONLY = {"protocol": "tcp", "tcp": {"flags": {"syn": {}}, "mask": {"syn": {}, "ack": {}}}}  # the first alone
SVI_IN = {"interface": {"vlan10": {"acl": {"E": {"inbound": {}}}}}}


def test_tcp_flags_and_ecn_run_as_nftables_own_matches():
    x = leaf(
        acl(
            "F",
            "ipv4",
            ({**SYN_ONLY, "dest-port": {"22": {}}}, "deny"),
            ({"protocol": "udp", "ecn": {"ip-ect": 3}}, "deny"),
            ({"protocol": "tcp", "ecn": {"flags": {"tcp-cwr": {}, "tcp-ece": {}}}}, "log"),
            ({"protocol": "tcp", "tcp": {"flags": {"none": {}}}}, "deny"),
        ),
        {"interface": {"swp51": {"acl": {"F": {"inbound": {}}}}}},
    )
    text = x.files["acl.nft"]
    assert "ip protocol tcp tcp dport 22 tcp flags & (syn | ack) == syn counter" in text
    assert "ip protocol udp ip ecn ce counter" in text
    assert "ip protocol tcp tcp flags & (ecn | cwr) == (ecn | cwr) counter" in text
    assert "tcp flags & (fin | syn | rst | psh | ack | urg) == 0x0 counter" in text, "flags none: a null scan"
    six = leaf(
        acl("F6", "ipv6", ({"protocol": "udp", "ecn": {"ip-ect": 2}}, "deny")),
        {"interface": {"swp51": {"acl": {"F6": {"inbound": {}}}}}},
    )
    assert "meta l4proto udp ip6 ecn ect0 counter" in six.files["acl.nft"]


def test_tcp_flags_need_protocol_tcp_and_must_lie_within_their_mask():
    assert refused(acl("F", "ipv4", ({"tcp": {"flags": {"syn": {}}}}, "deny"))) == [
        "acl.F.rule.10.match.ip: rule 10 matches TCP flags: it needs protocol tcp"
    ]
    assert refused(
        acl("F", "ipv4", ({"protocol": "tcp", "tcp": {"flags": {"syn": {}}, "mask": {"ack": {}}}}, "deny"))
    ) == ["acl.F.rule.10.match.ip.tcp: rule 10: its TCP flags must be within its mask"]
    assert refused(acl("F", "ipv4", ({"protocol": "tcp", "tcp": {"flags": {"bogus": {}}}}, "deny")))


def test_a_bgp_session_is_judged_packet_by_packet_on_its_tcp_flags():
    """Denying SYN to the control plane: under a mask of SYN and ACK only a connection's first packet, so the
    peer cannot connect but leaf1 can (its SYN goes out, the SYN-ACK comes back); SYN alone under SYN's own
    mask drops the SYN-ACK too: no way to open it remains."""
    first = acl_leaf(acl("CP", "ipv6", (SYN_ONLY, "deny")), CP)
    assert cut(first) == {
        "BGP with spine1 on swp51": (False, [("control-plane", 10, "BGP from spine1 (TCP to port 179)")])
    }
    both = acl_leaf(acl("CP", "ipv6", (SYN, "deny")), CP)
    assert cut(both) == {
        "BGP with spine1 on swp51": (
            True,
            [
                ("control-plane", 10, "BGP from spine1 (TCP from port 179)"),
                ("control-plane", 10, "BGP from spine1 (TCP to port 179)"),
            ],
        )
    }
    rst = acl_leaf(acl("CP", "ipv6", ({"protocol": "tcp", "tcp": {"flags": {"rst": {}}}}, "deny")), CP)
    assert cut(rst) == {"BGP with spine1 on swp51": (False, [])}, "no packet of an opening carries RST"


def test_an_ecn_match_decides_twins_roce_flows_by_their_ect0():
    x = acl_leaf(acl("E", "ipv4", ({**ROCE, "ecn": {"ip-ect": 2}}, "deny")), SVI_IN)
    b = x.plane.acls.bindings[0]
    r = x.plane.acls.acls["E"].rules[0]
    assert aclflows.crossing(x.plane.as_run(ACLFAB), "leaf1", x.plane, b, r) == [("host1a", "host1b")]
    ce = acl_leaf(acl("E", "ipv4", ({**ROCE, "ecn": {"ip-ect": 3}}, "deny")), SVI_IN)
    b, r = ce.plane.acls.bindings[0], ce.plane.acls.acls["E"].rules[0]
    assert aclflows.crossing(ce.plane.as_run(ACLFAB), "leaf1", ce.plane, b, r) == [], "only CE-marked frames"


# --- mac ACLs -----------------------------------------------------------------------------------------
HOST1A = "02:38:c8:47:57:04"  # host1a's MAC in tests/e2e/nvue/acl.yml


def mac_acl(name: str, *rules: tuple[dict, str]) -> dict:
    rs = {str(10 * (i + 1)): {"match": {"mac": m}, "action": {a: {}}} for i, (m, a) in enumerate(rules)}
    rs[str(10 * (len(rules) + 1))] = {"action": {"permit": {}}}
    return {"acl": {name: {"type": "mac", "rule": rs}}}


def test_a_mac_acl_matches_the_ethernet_header_in_the_ports_netdev_chain():
    x = acl_leaf(
        mac_acl(
            "M",
            ({"source-mac": HOST1A.upper(), "protocol": "ipv4"}, "deny"),
            ({"dest-mac": "01:80:c2:00:00:00", "dest-mac-mask": "ff:ff:ff:00:00:00"}, "log"),
            ({"protocol": 0x88CC}, "permit"),
        ),
        {"interface": {"swp10": {"acl": {"M": {"inbound": {}}}}}},
    )
    text = x.files["acl-red.nft"]
    assert f"ether saddr {HOST1A} ether type ip counter" in text
    assert "ether daddr & ff:ff:ff:00:00:00 == 01:80:c2:00:00:00 counter" in text
    assert "ether type 0x88cc counter" in text
    ((b, r),) = [(b, r) for b in x.plane.acls.bindings for r in x.plane.acls.acls["M"].rules if r.seq == 10]
    assert aclflows.crossing(x.plane.as_run(ACLFAB), "leaf1", x.plane, b, r) == [("host1a", "host1b")]


def test_a_mac_rule_decides_tenant_flows_by_the_macs_their_frames_carry_where_they_meet_it():
    """host1a -> host1b is routed by leaf1: in on swp10 its frames go to web's gateway MAC, out of the SVI of db
    they come from db's; a rule on the gateway's MAC meets the first, one on host1a's the first only."""
    gw = "00:00:5e:00:01:01"
    into = acl_leaf(mac_acl("M", ({"dest-mac": gw}, "deny")), {"interface": {"swp10": {"acl": {"M": {"inbound": {}}}}}})
    (b,) = into.plane.acls.bindings
    r = into.plane.acls.acls["M"].rules[0]
    assert aclflows.crossing(into.plane.as_run(ACLFAB), "leaf1", into.plane, b, r) == [("host1a", "host1b")]
    out = acl_leaf(
        mac_acl("M", ({"source-mac": HOST1A}, "deny")), {"interface": {"swp11": {"acl": {"M": {"outbound": {}}}}}}
    )
    (b,) = out.plane.acls.bindings
    r = out.plane.acls.acls["M"].rules[0]
    assert aclflows.crossing(out.plane.as_run(ACLFAB), "leaf1", out.plane, b, r) == [], "routed: from the gateway"


def test_a_mac_acl_is_refused_on_the_control_plane_and_with_ip_matches_set_dscp_or_a_vlan():
    assert refused(mac_acl("M", ({"protocol": "arp"}, "deny")), CP_M) == [
        "system.control-plane.acl.M: ACL M is of type mac: it matches frames on ports, bonds and SVIs, not the "
        "control plane"
    ]
    bad = {"acl": {"M": {"type": "mac", "rule": {"10": {"match": {"mac": {"vlan": 10}}, "action": {"deny": {}}}}}}}
    (said,) = refused(bad)
    assert said.startswith("acl.M.rule.10: rule 10: match.mac.vlan is not run in a mac ACL here"), said
    ip = {"acl": {"M": {"type": "mac", "rule": {"10": {"match": {"ip": {"dscp": 26}}, "action": {"deny": {}}}}}}}
    assert refused(ip)[0].startswith("acl.M.rule.10: rule 10: match.ip is not run in a mac ACL here")


def test_bgp_frames_are_matched_by_the_macs_of_the_ports_eui64_link_local_addresses():
    spine = "02:00:00:00:00:aa"
    x = acl_leaf(
        mac_acl("M", ({"source-mac": spine, "protocol": "ipv6"}, "deny")),
        {"interface": {"swp51": {"acl": {"M": {"inbound": {}}}}}},
    )
    assert aclflows.needs_addresses(x.plane.acls)
    assert aclflows.eui64("fe80::ff:fe00:aa") == spine and aclflows.eui64("fe80::1") == ""
    got = aclflows.sessions(ACLFAB, "leaf1", x.plane, {"swp51": ("fe80::1", "fe80::ff:fe00:aa")})
    assert [(s.named, s.cut) for s in got] == [("BGP with spine1 on swp51", True)], "every frame from spine1"
    got = aclflows.sessions(ACLFAB, "leaf1", x.plane, {"swp51": ("fe80::1", "fe80::ff:fe00:bb")})
    assert [(s.cut, s.drops) for s in got] == [(False, [])]


CP_M = {"system": {"control-plane": {"acl": {"M": {"inbound": {}}}}}}


# --- no value of NVUE's becomes a foreign nftables line ----------------------------------------------
FUZZ = settings(
    derandomize=True, database=None, deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow]
)
NASTY = [
    "x\n}",
    "1\nchain x",
    "10.0.0.0/8\n",
    "fe80::/10 }",
    '"',
    "ANY",
    "tcp",
    "udp",
    "-1",
    "65536",
    "",
    "a b",
    "\x00",
    "x" * 300,
]
PLACES: dict[str, Any] = {
    "source-ip": lambda v: {"source-ip": v},
    "dest-ip": lambda v: {"dest-ip": v},
    "dest-port": lambda v: {"protocol": "tcp", "dest-port": {v: {}}},
    "source-port": lambda v: {"protocol": "udp", "source-port": {v: {}}},
    "protocol": lambda v: {"protocol": v},
    "dscp": lambda v: {"dscp": v},
    "tcp-flags": lambda v: {"protocol": "tcp", "tcp": {"flags": {v: {}}}},
    "tcp-mask": lambda v: {"protocol": "tcp", "tcp": {"flags": {"syn": {}}, "mask": {v: {}, "syn": {}}}},
    "ip-ect": lambda v: {"ecn": {"ip-ect": v}},
    "ecn-flags": lambda v: {"protocol": "tcp", "ecn": {"flags": {v: {}}}},
}
MAC_PLACES = ("source-mac", "dest-mac", "protocol", "source-mac-mask")


def nft_files(kind: str, key: str, value: Any) -> dict[str, str]:
    cp = {"system": {"control-plane": {"acl": {"A": {"outbound": {}}}}}}
    x = leaf(
        acl("A", kind, (PLACES[key](value), "deny")), cp, {"interface": {"vlan10": {"acl": {"A": {"outbound": {}}}}}}
    )
    return {k: v for k, v in x.files.items() if k.startswith("acl")}


@FUZZ
@given(
    st.sampled_from(["ipv4", "ipv6"]),
    st.sampled_from(sorted(PLACES)),
    st.sampled_from(NASTY) | st.text(max_size=30) | st.integers(-5, 2**33),
)
def test_no_value_becomes_a_foreign_nft_line(kind: str, key: str, value: Any):
    """Whatever reaches a place of a rule, the files are refused with that rule named, or have exactly the lines
    they have with DSCP 26 there: only the rule's own line differs, a match of its own words before the same
    counter, log, verdict and comment."""
    only_the_rule_differs(lambda: nft_files(kind, key, value), nft_files(kind, "dscp", 26), ("ip", "ip6", "meta"))


def only_the_rule_differs(build: Any, base: dict[str, str], words: tuple[str, ...]) -> None:
    """`build()` is refused with rule 10 of ACL A named, or its files have exactly `base`'s lines but that rule's
    own: a match starting with one of `words` (or none at all) before the same counter, log, verdict, comment."""
    try:
        got = build()
    except TopologyError as e:
        assert all(p.path.startswith("acl.A.rule.10") for p in e.problems), [str(p) for p in e.problems]
        return
    assert set(got) == set(base)
    for f, text in got.items():
        old, new = base[f].splitlines(), text.splitlines()
        assert len(old) == len(new), f
        for a, b in zip(old, new):
            if a == b:
                continue
            tail = a[a.index(' counter name "') :]
            assert b.startswith("\t\t") and b.endswith(tail[1:]) and b.count('"') == a.count('"'), (a, b)
            assert b == "\t\t" + tail[1:] or b.split()[0] in words, b  # no match at all: the rule matches any


def mac_files(key: str, value: Any) -> dict[str, str]:
    m = {key: value} | ({"source-mac": "02:00:00:00:00:01"} if key == "source-mac-mask" else {})
    x = leaf(mac_acl("A", (m, "deny")), {"interface": {"swp51": {"acl": {"A": {"inbound": {}}}}}})
    return {k: v for k, v in x.files.items() if k.startswith("acl")}


@FUZZ
@given(st.sampled_from(MAC_PLACES), st.sampled_from(NASTY) | st.text(max_size=30) | st.integers(-5, 2**49))
def test_no_value_of_a_mac_acl_becomes_a_foreign_nft_line(key: str, value: Any):
    """A mac rule's place: refused with the rule named, or the rule's own line alone differs from the same rule
    matching ARP, a match on the Ethernet header before the same counter, log, verdict and comment."""
    only_the_rule_differs(lambda: mac_files(key, value), mac_files("protocol", "arp"), ("ether",))


def test_binding_names_its_place():
    b = Binding("control-plane", "", "red", "inbound", "CP", 3, True)
    assert (b.place, b.hooked, b.chain, b.family) == ("control-plane/red", "the control plane's input", "b3_in", "inet")


def test_rules_looking_at_addresses_decide_on_the_sessions_link_local_ones():
    near = acl("CP", "ipv6", ({"source-ip": "fe80::aa/128", "protocol": "tcp"}, "deny"))
    x = acl_leaf(near, CP)
    got = aclflows.sessions(ACLFAB, "leaf1", x.plane, {"swp51": ("fe80::1", "fe80::aa")})
    assert [(s.named, s.cut) for s in got] == [("BGP with spine1 on swp51", True)], "every packet from spine1"
    got = aclflows.sessions(ACLFAB, "leaf1", x.plane, {"swp51": ("fe80::1", "fe80::bb")})
    assert [(s.cut, s.drops) for s in got] == [(False, [])], "another peer's address"
    assert aclflows.needs_addresses(x.plane.acls) and not aclflows.needs_addresses(acl_leaf(CP_BGP, CP).plane.acls)


CP_BGP = acl("CP", "ipv6", (BGP_IN, "deny"), (BGP_OUT, "deny"))


def test_svi_and_control_plane_acls_are_proof_elements_named_by_their_checks(tmp_path):
    ctx = lab_with(
        tmp_path,
        acl("G", "ipv4", ({"dest-ip": "192.0.2.9/32"}, "deny")),
        {
            "interface": {"vlan10": {"acl": {"G": {"inbound": {}}}}},
            "system": {"control-plane": {"acl": {"G": {"outbound": {}}}}},
        },
    )
    els, exempt = elements(ctx)
    ids = {e.id: e for e in els if e.id.startswith("acl-")}
    assert sorted(ids) == [
        "acl-rule leaf01 control-plane outbound G 10",
        "acl-rule leaf01 control-plane/blue outbound G 10",
        "acl-rule leaf01 control-plane/red outbound G 10",
        "acl-rule leaf01 vlan10 inbound G 10",
        "acl-table leaf01 blue control-plane",
        "acl-table leaf01 default control-plane",
        "acl-table leaf01 red",
        "acl-table leaf01 red control-plane",
    ]
    cp = ids["acl-table leaf01 red control-plane"]
    assert cp.breaks == (Kernel("leaf01", (Step("nft-delete", "inet twin_acl", "red"),)),)
    assert cp.restored_by == "ip netns exec red nft -f /etc/twin/acl-cp-red.nft"
    assert cp.names(
        "acl: leaf01 red control-plane: the control-plane ACLs of leaf01 are not loaded (table inet twin_acl in "
        "namespace red): x"
    )
    assert not ids["acl-table leaf01 red"].names(
        "acl: leaf01 red control-plane: the control-plane ACLs of x are not loaded"
    )
    rule = ids["acl-rule leaf01 control-plane/red outbound G 10"]
    assert rule.breaks == (
        NftRule(
            "leaf01",
            "red",
            "acl G rule 10",
            "inet twin_acl",
            "b1_out",
            'ip daddr 192.0.2.9/32 counter name "r1_10" accept comment "acl G rule 10"',
        ),
    )
    assert rule.names("acl: leaf01 control-plane/red outbound acl G rule 10: does not run: rule 10 in chain b1_out ...")
    assert ("ACL permit rule", "leaf01 vlan10 inbound G 20") in {(x.kind, x.where) for x in exempt}
    listing = [
        {"chain": {"name": "b1_out"}},
        {"rule": {"chain": "b1_out", "comment": "acl G rule 10", "expr": [{"accept": None}]}},
    ]
    b = next(
        b
        for b in running(ctx.dir, ctx.fabric, ctx.backend)["leaf01"].plane.acls.bindings
        if b.place == "control-plane/red"
    )
    assert kernelcheck.not_running(b, Rule(10, "deny"), listing) == (
        "rule 10 in chain b1_out (the control plane's output) does not drop: accept"
    )
