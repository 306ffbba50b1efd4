"""What a failed bring-up still misses, by node and kind, a dozen in full (issue 45, item 1), and the
progress line's nodes holding convergence back (issue 46)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from twin.base.errors import ConvergenceTimeout
from twin.base.missing import group, kind_of, lines, to_dicts
from twin.cli import upreport
from twin.lifecycle.progress import holdups

MISSING = [
    "dpu1: tenant red: no type-2 route to host2a 10.1.1.12/32 via dpu2",
    "dpu1: tenant red: no type-5 route to db 10.1.2.0/24",
    "dpu1: tenant blue: no type-3 flood entry to dpu2 (10.255.0.6) on L2VNI 10201 (web)",
    "dpu2: VNI 10101 not known to zebra",
    "leaf1: BGP session on swp1 to spine1 is Active",
    "leaf1: no route to spine2's loopback 10.255.0.2/32",
    "leaf2: FRR not answering yet (exit 1)",
    *[f"spine{i}: BGP session on swp{j} to leaf{j} is Idle" for i in (1, 2) for j in (1, 2, 3, 4)],
]


def test_items_are_grouped_by_node_then_kind_tenants_apart():
    assert [(g.node, g.kind, len(g.items)) for g in group(MISSING)] == [
        ("dpu1", "EVPN routes (tenant red)", 2),
        ("dpu1", "EVPN routes (tenant blue)", 1),
        ("dpu2", "VNIs", 1),
        ("leaf1", "sessions", 1),
        ("leaf1", "loopback routes", 1),
        ("leaf2", "FRR", 1),
        ("spine1", "sessions", 4),
        ("spine2", "sessions", 4),
    ]
    assert kind_of("route to dpu2's loopback 10.255.0.6/32 over p0, not yet over p0, p1") == "loopback routes"
    assert kind_of("bgpd started none of its 2 sessions (all Idle, never up)") == "sessions"


def test_a_dozen_in_full_then_the_rest_counted():
    got = lines(MISSING)
    assert sum(1 for line in got if line.startswith("  - ")) == 12
    assert got[:3] == [
        "dpu1, EVPN routes (tenant red) (2):",
        "  - dpu1: tenant red: no type-2 route to host2a 10.1.1.12/32 via dpu2",
        "  - dpu1: tenant red: no type-5 route to db 10.1.2.0/24",
    ]
    assert got[-3:] == ["spine2, sessions (4):", "  - spine2: BGP session on swp1 to leaf1 is Idle", "  ... and 3 more"]
    assert lines(MISSING, shown=11)[-1] == "... and 1 more group: spine2, sessions 4"


def test_the_timeout_says_every_group_without_v_and_json_holds_every_item():
    e = ConvergenceTimeout("convergence (BGP sessions, loopback routes)", 45, MISSING)
    text = str(e)
    assert text.splitlines()[0] == (
        "convergence (BGP sessions, loopback routes) not reached after 45s; still missing (15):"
    )
    assert "  leaf2, FRR (1):\n    - leaf2: FRR not answering yet (exit 1)" in text
    assert sum(g["count"] for g in to_dicts(MISSING)) == len(MISSING) == sum(len(g["items"]) for g in e.groups())


def test_up_reports_the_groups_in_json_and_junit(tmp_path, capsys):
    e = ConvergenceTimeout("convergence", 45, MISSING, ["host: load average 9.0 on 2 cores"])
    upreport.write("aipod", True, str(tmp_path / "up.xml"), error=e, kept=True)
    doc = json.loads(capsys.readouterr().out)
    assert (doc["status"], doc["kept"], doc["missing_count"], doc["causes"]) == (
        "failed",
        True,
        15,
        ["host: load average 9.0 on 2 cores"],
    )
    assert doc["missing"][0] == {"node": "dpu1", "kind": "EVPN routes (tenant red)", "count": 2, "items": MISSING[:2]}
    cases = ET.parse(tmp_path / "up.xml").getroot().iter("testcase")
    named = {c.get("name"): c.find("failure").get("message") for c in cases}
    assert named["leaf1 sessions"] == "1 missing: leaf1: BGP session on swp1 to spine1 is Active"
    assert named["host-level causes"] == "host: load average 9.0 on 2 cores" and len(named) == 9


def test_the_progress_line_names_the_nodes_holding_it_back_and_what():
    left = {
        "leaf1": MISSING[4:6],
        "leaf246": ["leaf246: FRR not answering yet (exit 1)"],
        "spine1": MISSING[7:11],
        "spine2": MISSING[11:],
        "dpu2": MISSING[3:4],
    }
    assert holdups(left) == (
        "spine1: sessions 4; spine2: sessions 4; leaf1: sessions 1, loopback routes 1 (+2 more nodes)"
    )
    one = ["leaf246: FRR not answering yet (exit 1)"]
    assert holdups({"leaf246": one}) == one[0]
