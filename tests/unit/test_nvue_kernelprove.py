"""`--prove` elements of the kernel half NVUE runs (issue 44), without Docker: on the NVUE samples' lab
with leaf01 given an ACL, `qos roce` and `link.mtu` (as an applied revision writes its files), which
elements its plane gives, how each is broken and put back (the plane's own steps), which are exempt
and why, and that each names the very line its verify check writes; the `acl` group's reading of the
table as the kernel holds it (a deny rule turned accept, gone, its chain gone)."""

from __future__ import annotations

import copy

import twin.dialects  # noqa: F401  (NVUE registered: its planes and elements)
from tests.unit.test_nvue_change import running_lab
from twin import nvue
from twin.config.steps import Step
from twin.lifecycle import state
from twin.nvue import kernelcheck, kernelprove
from twin.nvue import tree as nv_tree
from twin.nvue.acl import Rule
from twin.nvue.aclbind import Binding
from twin.nvue.configs import running
from twin.prove import elements
from twin.prove.element import Kernel, NftRule
from twin.runtime import nft_of_counters, nft_rules

GUARD = {
    "acl": {
        "GUARD": {
            "type": "ipv4",
            "rule": {
                "10": {
                    "match": {"ip": {"protocol": "udp", "dest-ip": "192.0.2.9/32", "dest-port": {"4791": {}}}},
                    "action": {"deny": {}},
                },
                "20": {"action": {"permit": {}}},
            },
        }
    },
    "interface": {
        "swp1": {"acl": {"GUARD": {"inbound": {}}}},
        "swp51": {"acl": {"GUARD": {"outbound": {}}}, "link": {"mtu": 9216}},
        "vlan10": {"link": {"mtu": 9100}},
    },
    "qos": {"roce": {"enable": "on"}, "mapping": {"default-global": {"dscp": {"10": {"switch-priority": 1}}}}},
}


def lab_with(tmp_path, *patches: dict):
    """The samples' lab with leaf01's startup.yaml patched, as the revision's apply writes its files."""
    ctx = running_lab(tmp_path)
    tree = copy.deepcopy(nvue.read(str(ctx.dir / "leaf01" / "startup.yaml")).tree)
    for p in patches:
        nv_tree.patch(tree, p)
    built, _ = nvue.build({"leaf01": nvue.from_tree(tree, "leaf01 revision 2")}, ctx.fabric, ctx.backend)
    state.write_files(ctx.dir, {"leaf01": built["leaf01"].files})
    return ctx


def test_the_acl_qos_and_mtu_of_an_nvue_node_are_elements_broken_and_put_back_as_its_plane_runs_them(tmp_path):
    ctx = lab_with(tmp_path, GUARD)
    els, exempt = elements(ctx)
    ids = {e.id: e for e in els}
    mine = sorted(i for i in ids if i.startswith(("acl-", "qos-", "link-mtu ")))
    assert mine == [
        "acl-rule leaf01 swp1 inbound GUARD 10",
        "acl-rule leaf01 swp51 outbound GUARD 10",
        "acl-table leaf01 default",
        "acl-table leaf01 red",
        "link-mtu leaf01 swp51",
        "qos-dscp leaf01 26",
        "qos-dscp leaf01 48",
    ], "dpu1 runs no ACL, no QoS, no link.mtu: none of its own"
    table = ids["acl-table leaf01 red"]
    assert table.breaks == (Kernel("leaf01", (Step("nft-delete", "netdev twin_acl", "red"),)),)
    assert table.restored_by == "ip netns exec red nft -f /etc/twin/acl-red.nft", "the node's own file, loaded again"
    assert table.names("acl: leaf01 red: the ACLs of leaf01 are not loaded (table netdev twin_acl in namespace red): x")
    assert not table.names("acl: leaf01 default: the ACLs of leaf01 are not loaded (table netdev twin_acl): x")
    rule = ids["acl-rule leaf01 swp51 outbound GUARD 10"]
    assert rule.breaks == (
        NftRule(
            "leaf01",
            "",
            "acl GUARD rule 10",
            "netdev twin_acl",
            "b1_out",
            'ip daddr 192.0.2.9/32 ip protocol udp udp dport 4791 counter name "r1_10" accept '
            'comment "acl GUARD rule 10"',
        ),
    ), "the same rule, its match and counter kept, accepting"
    assert rule.restored_by == "nft -f /etc/twin/acl.nft"
    assert rule.names(
        "acl: leaf01 swp51 outbound acl GUARD rule 10: does not run: rule 10 in chain b1_out (swp51's egress) ..."
    )
    assert not rule.names("acl: leaf01 swp51 outbound acl GUARD rule 10: denies no flow the topology says must pass")
    roce = ids["qos-dscp leaf01 26"]
    assert roce.what == "DSCP 26 (RoCE) to traffic class 3 on swp51, swp52 of leaf01"
    assert roce.how == (
        "tc filter del dev swp51 parent 1: protocol ip prio 27; tc filter del dev swp52 parent 1: protocol ip prio 27"
    )
    assert roce.restored_by == "; ".join(
        f"{{ tc qdisc show dev {p} root | grep -q '^qdisc htb 1: root' || tc qdisc replace dev {p} root handle 1: "
        f"htb default 10; }} && tc -batch /etc/twin/qos-{p}.tc"
        for p in ("swp51", "swp52")
    ), "the batch again, on the HTB root the port has"
    assert roce.names(
        "qos: leaf01 RoCE class: RoCE frames (DSCP 26) of server01 -> server03 did not leave swp51, swp52 by "
        "traffic class 3: it grew by 0 of 4; by class: {0: 4, 3: 0, 6: 4}"
    )
    assert not ids["qos-dscp leaf01 48"].names("qos: leaf01 RoCE class: RoCE frames (DSCP 26) ... did not leave ")
    link = ids["link-mtu leaf01 swp51"]
    assert (link.how, link.restored_by) == ("ip link set swp51 mtu 1500", "ip link set swp51 mtu 9216")
    assert link.names(
        "mtu: leaf01:swp51 - spine01:swp1: leaf01 swp51 mtu 1500 < 9000 needed by the topology's MTU of this link; "
        "its ends differ (leaf01:swp51 1500, spine01:swp1 9000)"
    )
    assert ids["mtu leaf01 swp51"].restored_by == "ip link set swp51 mtu 9216", "twin's own element puts back NVUE's"
    why = {(x.kind, x.where): x.why for x in exempt}
    assert why[("ACL permit rule", "leaf01 swp1 inbound GUARD 20")].startswith("verify's acl group judges what")
    assert why[("QoS DSCP map", "leaf01 DSCP 10")] == "verify sends RoCE (DSCP 26) and CNP (DSCP 48) only"
    assert why[("QoS DSCP map", "leaf01 swp1, swp2")].startswith("ports towards hosts")
    assert why[("QoS ECN marking", "leaf01 traffic class 3")].endswith("kept, not run (no RED qdisc: TWIN_NVUE_RED)")
    assert why[("NVUE link MTU", "leaf01 vlan10")].startswith("not an end of a link of the topology (an SVI")


def test_a_dscp_in_class_0_and_a_node_without_them_give_no_element(tmp_path):
    ctx = lab_with(
        tmp_path,
        {"qos": {"roce": {"enable": "on"}, "mapping": {"default-global": {"dscp": {"26": {"switch-priority": 0}}}}}},
    )
    nodes = running(ctx.dir, ctx.fabric, ctx.backend)
    els, exempt = kernelprove.elements(ctx, nodes)
    assert [e.id for e in els] == ["qos-dscp leaf01 48"]
    assert ("QoS DSCP map", "leaf01 DSCP 26", "in traffic class 0, where it goes without a filter too") in {
        (x.kind, x.where, x.why) for x in exempt
    }
    assert kernelprove.elements(ctx, {"dpu1": nodes["dpu1"]}) == ([], [])


LISTING = [
    {"table": {"family": "netdev", "name": "twin_acl"}},
    {"counter": {"family": "netdev", "name": "r0_10", "table": "twin_acl", "packets": 7, "bytes": 0}},
    {"chain": {"family": "netdev", "table": "twin_acl", "name": "b0_in", "hook": "ingress"}},
    {
        "rule": {
            "chain": "b0_in",
            "comment": "acl GUARD rule 10",
            "expr": [{"match": {"op": "==", "left": {}, "right": "udp"}}, {"counter": "r0_10"}, {"drop": None}],
        }
    },
    {"rule": {"chain": "b0_in", "comment": "acl GUARD rule 20", "expr": [{"counter": "r0_20"}, {"accept": None}]}},
]


def test_the_acl_group_reads_each_deny_rule_as_the_kernel_holds_it():
    assert nft_rules(LISTING) == {"b0_in": {"acl GUARD rule 10": "drop", "acl GUARD rule 20": "accept"}}
    assert nft_of_counters(LISTING) == {"r0_10": 7}
    b, r = Binding("swp1", "swp1", "red", "inbound", "GUARD", 0), Rule(10, "deny")
    assert kernelcheck.not_running(b, r, LISTING) == ""
    turned = copy.deepcopy(LISTING)
    turned[3]["rule"]["expr"][-1] = {"accept": None}
    assert kernelcheck.not_running(b, r, turned) == "rule 10 in chain b0_in (swp1's ingress) does not drop: accept"
    assert kernelcheck.not_running(b, r, LISTING[:3]) == "chain b0_in (swp1's ingress) has no rule 10"
    assert kernelcheck.not_running(b, r, LISTING[:2]) == "the kernel has no chain b0_in (swp1's ingress)"


def test_a_qos_filter_is_taken_off_at_its_own_preference():
    assert Step("nofilter", "swp51", "red", {"parent": "1:", "prio": 27}).command() == (
        "tc -n red filter del dev swp51 parent 1: protocol ip prio 27"
    )
