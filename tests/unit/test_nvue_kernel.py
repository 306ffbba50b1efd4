"""NVUE's MTUs and ACLs compiled to what the node runs (issue 44, the kernel half): `link.mtu` as the
port's (or SVI bridge's) MTU step, last, undone to the plane's own MTU on day 2; ACLs as nftables
netdev chains in the port's namespace, a counter per rule, what twin would run half refused with
its NVUE path; the `mtu` verify group's needs from the topology."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from twin import nvue, topology
from twin.base.errors import TopologyError
from twin.nvue import acl as nv_acl
from twin.nvue import configs as nv_configs
from twin.nvue import routed
from twin.nvue import tree as nv_tree
from twin.nvue.plane import extras_delta
from twin.verify import mtu as verify_mtu

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests/golden/interop/nvue/samples"
FABRIC = topology.load(ROOT / "tests/e2e/nvue/samples.yml")
LEAF = nvue.read(SAMPLES / "leaf01" / "startup.yaml").tree
BLOCK = {
    "acl": {
        "BLOCK": {
            "type": "ipv4",
            "rule": {
                "10": {
                    "match": {"ip": {"protocol": "udp", "dest-ip": "10.1.10.103/32", "dest-port": {"4791": {}}}},
                    "action": {"deny": {}},
                },
                "20": {"match": {"ip": {"source-ip": "10.1.10.0/24", "dscp": 26}}, "action": {"set": {"dscp": 24}}},
                "30": {"action": {"permit": {}}},
            },
        }
    },
    "interface": {"swp1": {"acl": {"BLOCK": {"inbound": {}}}}, "swp51": {"acl": {"BLOCK": {"outbound": {}}}}},
}


def built(extra: dict, backend: str = "netns") -> nv_configs.NvueNode:
    tree = copy.deepcopy(LEAF)
    nv_tree.patch(tree, extra)
    nodes, _ = nvue.build({"leaf01": nvue.from_tree(tree, "leaf01/startup.yaml")}, FABRIC, backend)
    return nodes["leaf01"]


def refused(extra: dict) -> list[str]:
    with pytest.raises(TopologyError) as e:
        built(extra)
    return [f"{p.path}: {p.message}" for p in e.value.problems]


def test_link_mtu_is_the_ports_and_the_svis_last_and_undone_to_the_planes():
    x = built(
        {
            "interface": {
                "swp51": {"link": {"mtu": 1500}},
                "swp1": {"link": {"mtu": 9216}},
                "vlan10": {"link": {"mtu": 1500}},
            }
        }
    )
    cmds = [s.command() for s in x.plane.steps if s.op != "tc-batch"]  # the ports' traffic classes come last
    assert cmds[-3:] == [
        "ip -n red link set swp1 mtu 9216",
        "ip link set swp51 mtu 1500",
        "ip -n red link set br10 mtu 1500",
    ]
    assert cmds.index("ip link set swp1 netns red") < cmds.index("ip -n red link set swp1 mtu 9216")
    step = x.plane.extras[("mtu", "swp51")]
    assert step.args == {"mtu": 1500, "was": 9000} and x.plane.extras[("mtu", "swp1")].args["was"] == 8950
    assert x.plane.extras[("mtu", "br10")].args["was"] == 8950
    assert routed.undo(step).command() == "ip link set swp51 mtu 9000"
    add, remove = extras_delta(x.plane.extras, built({}).plane.extras, set(), set())
    assert {s.command() for s in remove} == {
        "ip link set swp51 mtu 9000",
        "ip -n red link set swp1 mtu 8950",
        "ip -n red link set br10 mtu 8950",
    } and add == []


def test_eth0s_link_mtu_is_the_management_ports_own_end_where_the_lab_has_its_network():
    """eth0 is twin's veth on the lab's management network (made at 1500): NVUE's MTU is set on the node's
    end, undone to 1500; a lab without that network keeps it, said."""
    tree = copy.deepcopy(LEAF)
    nv_tree.patch(tree, {"interface": {"eth0": {"link": {"mtu": 9216}}}})
    nf = nvue.from_tree(tree, "leaf01/startup.yaml")
    managed = FABRIC.model_copy(
        update={"nodes": {**FABRIC.nodes, "leaf01": FABRIC.nodes["leaf01"].model_copy(update={"mgmt": "10.250.0.3"})}}
    )
    x = nvue.build({"leaf01": nf}, managed, "netns")[0]["leaf01"]
    step = x.plane.extras[("mtu", "eth0")]
    assert step.command() == "nsenter --net=/run/twin/mgmt ip link set eth0 mtu 9216" and step in x.plane.steps
    assert routed.undo(step).command() == "nsenter --net=/run/twin/mgmt ip link set eth0 mtu 1500"
    at_1500 = copy.deepcopy(tree)
    nv_tree.patch(at_1500, {"interface": {"eth0": {"link": {"mtu": 1500}}}})
    same = nvue.build({"leaf01": nvue.from_tree(at_1500, "leaf01/startup.yaml")}, managed, "netns")[0]["leaf01"]
    assert ("mtu", "eth0") not in same.plane.extras, "the MTU it is made with needs no step"
    nodes, notes = nvue.build({"leaf01": nf}, FABRIC, "netns")
    assert ("mtu", "eth0") not in nodes["leaf01"].plane.extras
    assert any("interface.eth0.link.mtu: kept, not run" in n for n in notes), notes


def test_an_mtu_nvue_refuses_stays_refused():
    assert refused({"interface": {"swp51": {"link": {"mtu": 100000}}}}) == [
        "interface.swp51.link.mtu: 100000 is not an MTU of 552-9216 bytes"
    ]


def test_acls_compile_to_netdev_chains_in_the_ports_namespace_a_counter_per_rule():
    x = built(BLOCK)
    assert [(b.port, b.ns, b.way, b.chain) for b in x.plane.acls.bindings] == [
        ("swp1", "red", "inbound", "b0_in"),
        ("swp51", "", "outbound", "b1_out"),
    ]
    red, default = x.files["acl-red.nft"], x.files["acl.nft"]
    assert 'type filter hook ingress device "swp1" priority -500; policy accept;' in red
    assert (
        'ip daddr 10.1.10.103/32 ip protocol udp udp dport 4791 counter name "r0_10" '
        'log prefix "twin acl BLOCK rule 10" group 1715 drop comment "acl BLOCK rule 10"'
    ) in red, "a deny rule counts, logs a drop event (twin.config.droplog), drops"
    assert (
        'ip saddr 10.1.10.0/24 ip dscp 26 counter name "r0_20" ip dscp set 24 accept comment "acl BLOCK rule 20"' in red
    )
    assert 'meta protocol ip counter name "r0_30" accept comment "acl BLOCK rule 30"' in red
    assert "swp51" not in red and 'type filter hook egress device "swp51"' in default
    assert red.count("counter r0_") == 3 and red.startswith("# leaf01") and "delete table netdev twin_acl" in red
    cmds = [s.command() for s in x.plane.steps if s.op != "tc-batch"]
    assert cmds[-2:] == ["nft -f /etc/twin/acl.nft", "ip netns exec red nft -f /etc/twin/acl-red.nft"]
    assert routed.undo(x.plane.extras[("acl", "red")]).command() == (
        "ip netns exec red nft 'add table netdev twin_acl; delete table netdev twin_acl'"
    )
    changed = copy.deepcopy(BLOCK)
    changed["acl"]["BLOCK"]["rule"]["10"]["action"] = {"permit": {}}
    add, _ = extras_delta(x.plane.extras, built(changed).plane.extras, set(), set())
    assert {s.dev for s in add} == {"acl-red.nft", "acl.nft"}, "a changed ACL is loaded again"


def test_an_acl_decides_as_its_first_matching_rule():
    a = built(BLOCK).plane.acls.acls["BLOCK"]
    assert a.decide(nv_acl.Headers("10.1.10.101", "10.1.10.103", 17, 49152, 4791, 26)).seq == 10
    assert a.decide(nv_acl.Headers("10.1.10.101", "10.1.10.103", 6, 49152, 4791, 26)).seq == 20
    assert a.decide(nv_acl.Headers("10.1.20.102", "10.1.10.103", 6, 1, 2, 0)).seq == 30


def test_what_twin_would_run_half_is_refused_every_problem_with_its_path():
    bad = {
        "acl": {
            "X": {
                "rule": {
                    "1": {"match": {"ip": {"ttl": 1}}, "action": {"deny": {}}},
                    "2": {"match": {"ip": {"dest-port": {"22": {}}}}, "action": {"deny": {}}},
                    "3": {"match": {"ip": {"protocol": "tcp"}}},
                    "4": {"match": {"ip": {"tcp": {"flags": {"syn": {}}}}}, "action": {"deny": {}}},
                }
            },
            "M": {"type": "mac", "rule": {"1": {"action": {"deny": {}}}}},
        },
        "interface": {
            "swp1": {"acl": {"X": {"inbound": {}}, "NONE": {"inbound": {}}, "M": {"outbound": {"control-plane": {}}}}},
            "lo": {"acl": {"X": {"inbound": {}}}},
        },
    }
    assert refused(bad) == [
        "acl.X.rule.1: rule 1: match.ip.ttl is not run here: without it the rule would match more, or do less",
        "acl.X.rule.2.match.ip: rule 2 matches ports: it needs protocol tcp or udp",
        "acl.X.rule.3: rule 3 has no action (permit, deny, log, set dscp)",
        "acl.X.rule.4.match.ip: rule 4 matches TCP flags: it needs protocol tcp",
        "interface.lo.acl.X.inbound: lo is no port twin makes on this node: an ACL binds to a port, bond or SVI "
        "of the node",
        "interface.swp1.acl.M.outbound.control-plane: ACL M is of type mac: it matches frames on ports, bonds and "
        "SVIs, not the control plane",
        "interface.swp1.acl.NONE: ACL NONE is not declared in this file (acl.NONE)",
    ]


def test_nv_set_reaches_the_acl_places():
    assert nv_tree.words("acl BLOCK rule 10 action deny".split()) == (
        ("acl", "BLOCK", "rule", "10", "action", "deny"),
        {},
    )
    assert nv_tree.words("interface swp1 acl BLOCK inbound".split()) == (
        ("interface", "swp1", "acl", "BLOCK", "inbound"),
        {},
    )
    assert nv_tree.words("acl BLOCK rule 10 match ip dest-port 4791".split())[0][-1] == "4791"
    assert nv_tree.words("interface swp1 link mtu 9216".split()) == (("interface", "swp1", "link", "mtu"), "9216")


def test_the_mtu_groups_needs_come_from_the_topology():
    need = verify_mtu.needs(FABRIC)
    assert need[("leaf01", "swp51")] == (9000, "the topology's MTU of this link")
    assert need[("leaf01", "swp1")] == (8950, "server01's frames (red)") == need[("server01", "eth1")]
    jumbo = FABRIC.model_copy(
        update={
            "nodes": {
                **FABRIC.nodes,
                "server01": FABRIC.nodes["server01"].model_copy(
                    update={"ports": tuple(p.model_copy(update={"mtu": 9000}) for p in FABRIC.nodes["server01"].ports)}
                ),
            }
        }
    )
    assert verify_mtu.needs(jumbo)[("spine01", "swp1")] == (9050, "VXLAN frames of red (9000 + 50)")


def test_rules_render_only_their_own_text():
    r = nv_acl.Rule(5, "deny", log=True, proto=6, sports=(179,), dports=(22, 179))
    assert r.nft("A", "r0_5") == (
        'ip protocol tcp tcp sport 179 tcp dport { 22, 179 } counter name "r0_5" '
        'log prefix "acl A rule 5: " log prefix "twin acl A rule 5" group 1715 drop comment "acl A rule 5"'
    ), "NVUE's log to the kernel's log, twin's to its drop events"


def test_roce_qos_is_an_htb_per_cabled_port_with_dscp_filters_and_says_what_it_models():
    tree = copy.deepcopy(LEAF)
    nv_tree.patch(
        tree,
        {
            "qos": {
                "roce": {"enable": True, "mode": "lossless"},
                "mapping": {"default-global": {"dscp": {"10": {"switch-priority": 1}}}},
                "congestion-control": {
                    "default-global": {
                        "traffic-class": {"3": {"min-threshold": 40000, "max-threshold": 400000, "probability": 50}}
                    }
                },
            }
        },
    )
    nodes, notes = nvue.build({"leaf01": nvue.from_tree(tree, "leaf01/startup.yaml")}, FABRIC, "netns")
    x = nodes["leaf01"]
    q = x.plane.qos
    assert (q.mode, q.classes, q.lossless, q.ecn) == ("lossless", {26: 3, 48: 6, 10: 1}, {3}, {3: (40000, 400000, 50)})
    assert sorted(k[1] for k in x.plane.extras if k[0] == "qos") == ["swp1", "swp2", "swp51", "swp52"]
    batch = x.files["qos-swp51.tc"]
    assert batch.splitlines()[:2] == [
        "filter del dev swp51 parent 1:",
        "class replace dev swp51 parent 1: classid 1:1 htb rate 100gbit ceil 100gbit burst 1mb cburst 1mb "
        "quantum 60000",
    ], "the root is never replaced: the step makes it where the port has none"
    assert (
        "class replace dev swp51 parent 1:1 classid 1:16 htb rate 1gbit ceil 100gbit burst 1mb cburst 1mb "
        "quantum 60000 prio 1"
    ) in batch
    assert batch.count("class replace") == 9 and batch.count("pfifo") == 8, "every traffic class, whatever maps to it"
    assert "qdisc replace dev swp51 parent 1:13 handle 13: pfifo limit 10000" in batch, "lossless: deep"
    assert "qdisc replace dev swp51 parent 1:10 handle 10: pfifo limit 1000" in batch
    assert "filter add dev swp51 parent 1: protocol ip prio 27 u32 match ip dsfield 0x68 0xfc flowid 1:13" in batch
    assert "filter add dev swp51 parent 1: protocol ip prio 49 u32 match ip dsfield 0xc0 0xfc flowid 1:16" in batch
    step = x.plane.extras[("qos", "swp1")]
    assert step.command() == (
        "{ tc -n red qdisc show dev swp1 root | grep -q '^qdisc htb 1: root' || "
        "tc -n red qdisc replace dev swp1 root handle 1: htb default 10; } && tc -n red -batch /etc/twin/qos-swp1.tc"
    )
    assert routed.undo(step) is None, "a port's root is never taken away: a frame would be lost"
    assert (
        "leaf01: qos ECN thresholds (traffic class 3): kept, not run: marking CE at a queue depth needs RED "
        "(TWIN_NVUE_RED=on where the kernel has it)"
    ) in notes
    assert any("no pause frames in software" in n for n in notes)
    red = nvue.build({"leaf01": nvue.from_tree(tree, "leaf01/startup.yaml")}, FABRIC, "netns", red=True)[0]
    assert (
        "qdisc replace dev swp51 parent 1:13 handle 23: red limit 1600000 min 40000 max 400000 avpkt 1500 "
        "burst 106 probability 0.5 bandwidth 100gbit ecn"
    ) in red["leaf01"].files["qos-swp51.tc"]


def test_qos_turned_on_and_off_on_day_2_runs_each_ports_batch_again_and_replaces_no_root():
    off, on = built({}), built({"qos": {"roce": {"enable": True}}})
    add, remove = extras_delta(off.plane.extras, on.plane.extras, set(), set())
    assert sorted(s.args["port"] for s in add) == ["swp1", "swp2", "swp51", "swp52"] and remove == []
    add, remove = extras_delta(on.plane.extras, off.plane.extras, set(), set())
    assert [s.op for s in add] == ["tc-batch"] * 4 and remove == [], "off: the same classes, no filter, in place"
    assert not any("qdisc del" in s.command() or "root" in off.files[s.dev].split("\n", 1)[1] for s in add)
    assert off.files["qos-swp51.tc"].splitlines()[0] == "filter del dev swp51 parent 1:"


def test_qos_lossy_has_no_lossless_class_and_nvue_refuses_what_it_refuses():
    x = built({"qos": {"roce": {"mode": "lossy"}}})
    assert x.plane.qos.lossless == frozenset() and "pfifo limit 10000" not in x.files["qos-swp51.tc"]
    off = built({})
    assert off.plane.qos is None and sorted(f for f in off.files if f.startswith("qos-")) == [
        "qos-swp1.tc",
        "qos-swp2.tc",
        "qos-swp51.tc",
        "qos-swp52.tc",
    ], "the traffic classes are there with QoS off too"
    assert "filter add" not in off.files["qos-swp51.tc"] and "pfifo limit 10000" not in off.files["qos-swp51.tc"]
    assert refused({"qos": {"roce": {"mode": "fast"}, "mapping": {"default-global": {"dscp": {"64": {}}}}}}) == [
        "qos.mapping.default-global.dscp.64: '64' is not a DSCP (0-63)",
        "qos.roce.mode: 'fast' is not one of lossless, lossy",
    ]
