"""Baselines, comparisons, allow files, evidence and Markdown summaries, without a lab: FRR's
JSON as FRR 10.3 prints it, and a stand-in container behind the one execution seam."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from twin.base.errors import TopologyError, TwinError
from twin.runtime.exec import NodeExec, carried, labelled, recording
from twin.topology.allow import AllowRule, load_allow
from twin.verify import baseline as B
from twin.verify.baseline_file import load_baseline
from twin.verify.compare import Comparison, differences
from twin.verify.markdown import comparison_md, evidence_doc, report_md
from twin.verify.result import Check, Report

SUMMARY = {
    "default": {
        "ipv4Unicast": {"peers": {"swp1": {"state": "Established", "pfxRcd": 2, "pfxSnt": 6}}},
        "l2VpnEvpn": {"peers": {"swp1": {"state": "Established", "pfxRcd": 0, "pfxSnt": 24}}},
    },
    "red": {},
}
ROUTES = {
    "default": {
        "10.255.0.6/32": [
            {
                "protocol": "bgp",
                "selected": True,
                "nexthops": [
                    {"ip": "fe80::8e:cbff:fe17:d4e2", "afi": "ipv6", "interfaceName": "p0"},
                    {"ip": "fe80::44fc:1eff:fec6:26ae", "afi": "ipv6", "interfaceName": "p1"},
                ],
            }
        ],
        "10.255.0.5/32": [
            {
                "protocol": "connected",
                "selected": True,
                "nexthops": [{"directlyConnected": True, "interfaceName": "lo"}],
            }
        ],
    },
    "red": {
        "10.1.1.1/32": [{"protocol": "local", "selected": True, "nexthops": [{"directlyConnected": True}]}],
        "10.1.1.12/32": [
            {"protocol": "bgp", "selected": True, "nexthops": [{"ip": "10.255.0.6", "interfaceName": "br10100"}]},
            {"protocol": "static", "selected": False, "nexthops": [{"ip": "10.9.9.9"}]},
        ],
    },
}
ROUTES6 = {"default": {"fe80::/64": [{"protocol": "connected", "selected": True, "nexthops": []}]}}
VNIS = [
    {
        "vni": 10101,
        "type": "L2",
        "tenantVrf": "red",
        "numMacs": 2,
        "numArpNd": 2,
        "remoteVteps": [{"ip": "10.255.0.6", "flood": "HER"}],
    },
    {"vni": 10100, "type": "L3", "tenantVrf": "red", "state": "Up", "routerMac": "0e:fa:bb:5f:77:29"},
]


def doc(**changes) -> dict:
    node = {"sessions": B.sessions(SUMMARY), "routes": B.routes(ROUTES, ROUTES6), "vnis": B.vnis(VNIS)}
    node.update(changes)
    return {"format": B.FORMAT, "lab": "x", "recorded": "now", "nodes": {"dpu1": node}}


def test_a_node_is_recorded_without_what_changes_by_itself():
    d = doc()["nodes"]["dpu1"]
    assert d["sessions"] == {
        "default": {
            "ipv4 swp1": {"state": "Established", "accepted": 2, "sent": 6},
            "evpn swp1": {"state": "Established", "accepted": 0, "sent": 24},
        }
    }
    assert d["routes"]["default"] == {
        "10.255.0.5/32": {"protocol": "connected", "nexthops": ["lo"]},
        "10.255.0.6/32": {"protocol": "bgp", "nexthops": ["p0", "p1"]},
    }
    assert d["routes"]["red"] == {"10.1.1.12/32": {"protocol": "bgp", "nexthops": ["10.255.0.6"]}}, (
        "FRR 10's local routes and unselected entries are left out"
    )
    assert d["vnis"] == {
        "10100": {"type": "L3", "vrf": "red", "state": "Up"},
        "10101": {"type": "L2", "vrf": "red", "remote_vteps": ["10.255.0.6"], "macs": 2, "neighbours": 2},
    }
    assert "fe80::/64" not in d["routes"]["default"] and "routerMac" not in json.dumps(d)


def test_differences_per_node_and_vrf_with_the_rule_that_allows_each():
    before = doc()
    after = doc()
    node = after["nodes"]["dpu1"]
    del node["routes"]["red"]["10.1.1.12/32"]
    node["routes"]["red"]["10.1.3.0/24"] = {"protocol": "bgp", "nexthops": ["10.255.0.6"]}
    node["routes"]["default"]["10.255.0.6/32"]["nexthops"] = ["p1"]
    node["sessions"]["default"]["ipv4 swp1"] = {"state": "Idle", "accepted": None, "sent": None}
    allow = [
        AllowRule(what="route", vrf="red", key="10.1.3.*", change="appeared", reason="new subnet"),
        AllowRule(what="prefixes"),
    ]
    diffs = differences(before, after, allow)
    got = [(d.vrf, d.what, d.key, d.change, d.allowed_by) for d in diffs]
    assert got == [
        ("default", "prefixes", "ipv4 swp1", "changed", "allowed: what=prefixes"),
        ("default", "route", "10.255.0.6/32", "changed", ""),
        ("default", "session", "ipv4 swp1", "changed", ""),
        ("red", "route", "10.1.1.12/32", "disappeared", ""),
        ("red", "route", "10.1.3.0/24", "appeared", "new subnet"),
    ]
    cmp = Comparison("x", "x", "now", diffs)
    assert not cmp.passed and cmp.counts() == {"disappeared": 1, "appeared": 0, "changed": 2}
    assert "dpu1 vrf default: route 10.255.0.6/32 changed: bgp via p0, p1 -> bgp via p1" in cmp.text()
    assert "dpu1 vrf red: route 10.1.1.12/32 disappeared (was bgp via 10.255.0.6)" in cmp.text()
    md = comparison_md(cmp)
    assert md.startswith("## twin baseline compare x: FAILED\n\n**FAILED**: 3 difference(s) not allowed")
    assert md.index("### Not allowed") < md.index("### Allowed")
    assert "| dpu1 | red | route | 10.1.3.0/24 | appeared | - | bgp via 10.255.0.6 | new subnet |" in md
    assert differences(before, doc()) == [] and comparison_md(Comparison("x", "x", "now")).startswith(
        "## twin baseline compare x: PASSED"
    )


def test_an_allow_file_is_read_like_a_topology(tmp_path):
    f = tmp_path / "allow.yml"
    f.write_text("allow:\n  - {vrf: green, change: appeared, reason: new tenant}\n  - {what: routes, chnage: x}\n")
    with pytest.raises(TopologyError) as e:
        load_allow(f)
    assert (
        f"{f}:3: allow[1].what: must be 'session', 'prefixes', 'route', 'vni', 'adjacency' or 'any'; got 'routes'"
    ) in str(e.value)
    assert f"{f}:3: allow[1].chnage: unknown field; allowed: node, vrf, what, key, change, reason" in str(e.value)
    f.write_text("allow:\n  - {vrf: green, change: appeared, reason: new tenant}\n")
    (rule,) = load_allow(f)
    assert rule.matches("dpu1", "green", "vni", "10301", "appeared")
    assert not rule.matches("dpu1", "red", "vni", "1", "appeared")
    f.write_text("rules: []\n")
    with pytest.raises(TopologyError, match="an allow file is a mapping with one key, allow"):
        load_allow(f)


def test_a_file_that_is_no_baseline_is_refused(tmp_path):
    f = tmp_path / "b.json"
    f.write_text("{}")
    with pytest.raises(TwinError, match='not a twin baseline .no "format": "twin-baseline/1" with nodes.'):
        load_baseline(f)
    f.write_text("nope")
    with pytest.raises(TwinError, match="not a twin baseline .not JSON"):
        load_baseline(f)
    f.write_text(json.dumps(doc()))
    assert load_baseline(f)["nodes"]["dpu1"]["vnis"]["10101"]["macs"] == 2


class Local(NodeExec):
    """The execution seam, its commands run on the test host instead of inside a node."""

    def __init__(self, where: str):
        super().__init__(container=None, where=where)

    def argv(self, cmd: list[str]) -> list[str]:
        return cmd


def test_the_execution_seam_records_only_when_asked_and_carries_into_threads():
    ex = Local("lab/dpu1")
    ex.run(["sh", "-c", "echo before"])
    with recording() as rec:
        with labelled("checks: one"):
            ex.run(["sh", "-c", "echo ran true"])
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(carried(lambda c: ex.run(["sh", "-c", c])), ["echo ran a", "echo oops >&2; false"]))
            with ThreadPoolExecutor(1) as pool:  # work not carried is not this context's
                pool.submit(ex.run, ["sh", "-c", "echo lost"]).result()
        ex.run(["sh", "-c", "echo unlabelled"])
    ex.run(["sh", "-c", "echo after"])
    got = [(e.label, e.cmd[-1], e.rc, e.stdout, e.stderr) for e in rec.entries]
    assert sorted(got) == sorted(
        [
            ("checks: one", "echo ran true", 0, "ran true\n", ""),
            ("checks: one", "echo ran a", 0, "ran a\n", ""),
            ("checks: one", "echo oops >&2; false", 1, "", "oops\n"),
            ("", "echo unlabelled", 0, "unlabelled\n", ""),
        ]
    )
    assert [e.seq for e in rec.entries] == [1, 2, 3, 4] and all(e.node == "lab/dpu1" for e in rec.entries)
    assert all(e.seconds >= 0 and e.started > 1e9 for e in rec.entries)
    ev = evidence_doc(rec, "twin verify lab", "lab", False)
    assert json.loads(json.dumps(ev))["commands"][0]["cmd"] == ["sh", "-c", "echo ran true"]


def test_a_verify_summary_puts_the_verdict_first_then_failures_with_their_evidence():
    ex = Local("lab/dpu1")
    with recording() as rec, labelled("checks: route gone"):
        ex.run(["echo", "show ip route vrf red json"])
    report = Report(
        "lab",
        [
            Check(
                "checks",
                "route gone",
                False,
                "10.1.2.12/32 in VRF red on dpu1: present: bgp via 10.255.0.6",
                {"type": "route", "spec": {"name": "route gone", "type": "route", "node": "dpu1", "expect": "absent"}},
            ),
            Check("checks", "ping | pipe", True, "3 of 3 answered", {"type": "ping"}),
            Check("control", "bgp dpu1", True),
        ],
        seconds={"checks": 3.2, "control": 0.4},
    )
    md = report_md(report, rec)
    assert md.startswith("## twin verify lab: FAILED\n\n**FAILED**: 1 of 3 checks failed in 2 group(s), 3.6s")
    assert md.index("### Failures") < md.index("#### checks: route gone") < md.index("### Groups")
    assert "> 10.1.2.12/32 in VRF red on dpu1: present: bgp via 10.255.0.6" in md
    assert "expected: `type: route, node: dpu1, expect: absent`" in md
    assert "`lab/dpu1`: `echo 'show ip route vrf red json'` exited 0 in" in md
    assert "| ping \\| pipe | ping | pass | 3 of 3 answered |" in md, "a pipe in a cell does not break the table"
