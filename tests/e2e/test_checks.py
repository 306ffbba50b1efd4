"""The user's own verdicts on one default lab (t-ck): a checks file with passing and failing
checks of every type, the topology's checks: section, a behaviour baseline compared after a
no-op change and after a change that removes a route, rehearse with a baseline, summaries and
evidence written and read back, and a leaked route caught by a negative check.

The lab is the plugin's `twin_lab` (the module's `twin_topology` marker), so the passing
checks also run as the plugin runs them: one test per check (`twin_checks`).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin import verify
from twin.pytest_plugin import twin_checks
from twin.topology.checks import load_checks

LAB = "t-ck"
HERE = Path(__file__).parent
PASSING, FAILING = HERE / "checks" / "passing.yml", HERE / "checks" / "failing.yml"
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.usefixtures("twin_home"),
    pytest.mark.twin_topology("topologies/aipod.yml", name=LAB, timeout=120),
]


@pytest.fixture(scope="module", autouse=True)
def nothing_left_after_the_module(runtime):
    """Set up before the plugin's twin_lab, so torn down after it: the lab must be gone."""
    yield
    assert leftovers(runtime, LAB) == []


# one test per check of the file, as a user's test module would have it
test_passing_check = twin_checks("checks/passing.yml")


def variant(tmp_path: Path, name: str, edit) -> Path:
    topo = yaml.safe_load((ROOT / "topologies/aipod.yml").read_text())
    edit(topo)
    path = tmp_path / f"{name}.yml"
    path.write_text(yaml.safe_dump(topo, sort_keys=False))
    return path


def test_passing_and_failing_checks_of_every_type_in_one_report(twin_lab, tmp_path):
    """Both files at once, with the control group: one table, JUnit, JSON, summary, evidence."""
    out = {k: tmp_path / f"verify.{k}" for k in ("xml", "md", "json")}
    p = twin_cli(
        "verify",
        LAB,
        "--checks",
        str(PASSING),
        "--checks",
        str(FAILING),
        "--only",
        "checks",
        "--only",
        "control",
        "--junit",
        str(out["xml"]),
        "--summary",
        str(out["md"]),
        "--evidence",
        str(out["json"]),
    )
    assert p.returncode == 1, p.stdout + p.stderr
    failing = [c.name for c in load_checks(FAILING).checks]
    passing = [c.name for c in load_checks(PASSING).checks]
    assert (
        {c.type for c in load_checks(FAILING).checks}
        == {c.type for c in load_checks(PASSING).checks}
        == {"bgp_session", "bgp_prefixes", "route", "ping", "roce", "frr_json", "exec"}
    )
    # the table and the JUnit file: the derived control group passes, exactly the failing checks fail
    assert f"FAILED: {len(failing)} checks" in p.stdout
    suites = {s.get("name"): s for s in ET.parse(out["xml"]).getroot()}
    assert set(suites) == {"checks", "control"} and suites["control"].get("failures") == "0"
    cases = {c.get("name"): c.find("failure") for c in suites["checks"]}
    assert sorted(n for n, f in cases.items() if f is not None) == sorted(failing)
    assert sorted(n for n, f in cases.items() if f is None) == sorted(passing)
    msg = {n: f.get("message") for n, f in cases.items() if f is not None}
    assert msg["red has no host2a"].startswith("10.1.1.12/32 in VRF red on dpu1: present: bgp via 10.255.0.6")
    assert "after convergence" in msg["red web cannot ping"]
    assert "1 of 1 echo requests answered" in msg["red web cannot ping"]
    assert "2 of 2 delivered; seen at host2b (2)" in msg["RoCE blue host1b to host2b blocked"]
    assert "expected via 10.255.0.5" in msg["red reaches host2a via dpu1"]
    assert ".type: expected 'L3', got 'L2'" in msg["VNI 10101 is L3"]
    m = re.search(r"swp1: (\d+) accepted \(expected at least 50\)", msg["leaf1 keeps 50 prefixes from spine1"])
    assert m and 0 < int(m[1]) < 50, msg["leaf1 keeps 50 prefixes from spine1"]  # aipod's few loopbacks
    assert "ipv4 session on swp1 is Established" in msg["leaf1 with spine1 down"]
    assert "exited 1, expected 0" in msg["false succeeds"]
    # the summary: the verdict first, then every failure with its evidence, then the tables
    md = out["md"].read_text()
    assert md.startswith(f"## twin verify {LAB}: FAILED\n\n**FAILED**: {len(failing)} of ")
    assert md.index("### Failures") < md.index("### Groups") < md.index("### Your checks")
    for name in failing:
        assert f"#### checks: {name}" in md
    assert "`t-ck/dpu1`: `vtysh -c 'show ip route vrf red json'` exited 0" in md
    # the evidence: every command behind each check, raw output, exit code and timing
    ev = json.loads(out["json"].read_text())
    assert ev["passed"] is False and ev["lab"] == LAB and "--checks" in ev["command"]
    by_label: dict[str, list] = {}
    for c in ev["commands"]:
        by_label.setdefault(c["label"], []).append(c)
    assert {f"checks: {n}" for n in passing + failing if "RoCE" not in n} <= set(by_label)
    assert "control" in by_label, "the derived group's commands are recorded too"
    false = by_label["checks: false succeeds"][-1]
    assert false["cmd"] == ["sh", "-c", "false"] and false["rc"] == 1 and false["node"] == f"{LAB}/dpu1"
    ping = by_label["checks: red web cannot ping"][-1]
    assert ping["rc"] == 0 and "1 received" in ping["stdout"] and ping["seconds"] > 0 and ping["started"] > 0


def test_a_bad_checks_file_is_refused_with_every_problem(twin_lab, tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "checks:\n  - {name: a, type: ping, from: host9, to: 10.1.1.300}\n"
        "  - {name: a, type: route, node: dpu1, prefix: 10.1.1.0/24, expect: maybe}\n"
    )
    p = twin_cli("verify", LAB, "--checks", str(bad))
    assert p.returncode == 1 and p.stdout == ""
    assert f"error: 3 problems in {bad}" in p.stderr
    assert f"{bad}:2: checks[0].from: no node named 'host9'" in p.stderr
    assert f"{bad}:2: checks[0].to: '10.1.1.300' is not an IPv4 or IPv6 address" in p.stderr
    assert f"{bad}:3: checks[1].expect: must be 'present' or 'absent'; got 'maybe'" in p.stderr


def test_the_topology_checks_section_is_run_by_verify(twin_lab, tmp_path):
    """Applying a topology that only adds checks records them: `twin verify` runs them, no --checks."""
    section = yaml.safe_load(PASSING.read_text())["checks"][:2]
    with_checks = variant(tmp_path, "with-checks", lambda t: t.update(checks=section))
    res = twin_lab.apply(with_checks)
    assert res.converged and res.changes == ["checks: the topology's checks: section changed (2 checks now)"]
    report = verify.run(twin_lab, only=["checks"])
    assert [c.name for c in report.checks] == [c["name"] for c in section] and report.passed
    assert twin_lab.apply(ROOT / "topologies/aipod.yml").converged
    assert twin_lab.fabric.checks == ()


def detach_host2c(topo: dict) -> None:
    topo["tenants"]["blue"]["attachments"] = [
        a for a in topo["tenants"]["blue"]["attachments"] if a["host"] != "host2c"
    ]


def test_a_baseline_names_the_route_a_change_removes_and_nothing_after_a_no_op(twin_lab, tmp_path):
    base = tmp_path / "baseline.json"
    p = twin_cli("baseline", "record", LAB, "-o", str(base), check=True)
    doc = json.loads(base.read_text())
    assert re.search(r"6 nodes, 32 sessions, \d+ routes, 10 VNIs", p.stdout), p.stdout
    dpu1 = doc["nodes"]["dpu1"]
    assert dpu1["routes"]["blue"]["10.1.2.12/32"] == {"protocol": "bgp", "nexthops": ["10.255.0.6"]}
    assert dpu1["sessions"]["default"]["evpn p0"]["state"] == "Established"
    assert dpu1["vnis"]["10101"]["remote_vteps"] == ["10.255.0.6"] and dpu1["vnis"]["10100"]["type"] == "L3"
    # a no-op change: the same topology again
    assert twin_lab.apply(ROOT / "topologies/aipod.yml").changes == []
    p = twin_cli("baseline", "compare", LAB, str(base))
    assert p.returncode == 0 and "MATCHES the baseline" in p.stdout, p.stdout + p.stderr
    # a change that takes host2c (blue's db) away: the rest is intended, host2c's route is named
    assert twin_lab.apply(variant(tmp_path, "detach", detach_host2c)).converged
    allow = tmp_path / "allow.yml"
    allow.write_text(
        yaml.safe_dump(
            {
                "allow": [
                    {
                        "what": "prefixes",
                        "key": "evpn *",
                        "change": "changed",
                        "reason": "EVPN counts follow the tenants",
                    },
                    {"node": "dpu2", "vrf": "blue", "change": "disappeared", "reason": "blue's db leaves dpu2"},
                    {"node": "dpu1", "vrf": "blue", "key": "10.1.2.0/24", "change": "disappeared"},
                ]
            }
        )
    )
    md, js = tmp_path / "compare.md", tmp_path / "compare-evidence.json"
    p = twin_cli(
        "baseline",
        "compare",
        LAB,
        str(base),
        "--allow",
        str(allow),
        "--settle",
        "2",
        "--json",
        "--summary",
        str(md),
        "--evidence",
        str(js),
    )
    assert p.returncode == 1, p.stdout + p.stderr
    result = json.loads(p.stdout)
    unallowed = [d for d in result["differences"] if not d["allowed_by"]]
    assert [(d["node"], d["vrf"], d["what"], d["key"], d["change"]) for d in unallowed] == [
        ("dpu1", "blue", "route", "10.1.2.12/32", "disappeared")
    ]
    assert unallowed[0]["before"] == "bgp via 10.255.0.6" and unallowed[0]["after"] is None
    allowed = {(d["node"], d["what"], d["key"]) for d in result["differences"] if d["allowed_by"]}
    assert ("dpu2", "vni", "10202") in allowed and ("spine1", "prefixes", "evpn swp1") in allowed
    text = md.read_text()
    assert text.startswith(f"## twin baseline compare {LAB}: FAILED\n\n**FAILED**: 1 difference(s) not allowed")
    assert "| dpu1 | blue | route | 10.1.2.12/32 | disappeared | bgp via 10.255.0.6 | - |" in text
    assert "| blue's db leaves dpu2 |" in text
    assert {c["label"] for c in json.loads(js.read_text())["commands"]} == {"baseline"}
    # without the allow file, every difference is named; back to the topology, every route, session
    # and VNI is as before. What moves after such churn is which of two equal paths a spine prefers
    # (the DPUs hang off both leafs), so how many EVPN prefixes a leaf accepts from it: allowed
    p = twin_cli("baseline", "compare", LAB, str(base), "--settle", "0")
    assert p.returncode == 1 and "DIFFERS: " in p.stdout and " 0 allowed" in p.stdout
    assert twin_lab.apply(ROOT / "topologies/aipod.yml").converged
    allow.write_text("allow:\n  - {what: prefixes, change: changed, reason: best-path tie-breaks after churn}\n")
    p = twin_cli("baseline", "compare", LAB, str(base), "--allow", str(allow), "--json")
    result = json.loads(p.stdout)
    assert p.returncode == 0 and result["passed"], p.stdout
    assert {d["what"] for d in result["differences"]} <= {"prefixes"}, result["differences"]


def test_rehearse_compares_with_the_baseline_after_the_change_and_the_rollback(twin_lab, tmp_path):
    """Draining spine1 moves the leafs' routes to each other onto spine2: allowed, named in the
    report; after the rollback the lab matches the baseline again."""
    base = tmp_path / "baseline.json"
    twin_cli("baseline", "record", LAB, "-o", str(base), check=True)
    drain = variant(tmp_path, "drain", lambda t: t["nodes"]["spine1"].update(drain=True))
    allow = tmp_path / "allow.yml"
    allow.write_text(
        "allow:\n  - {node: 'leaf*', what: route, change: changed, reason: drained spine1}\n"
        "  - {what: prefixes, change: changed, reason: best-path tie-breaks after churn}\n"
    )
    md, js = tmp_path / "rehearse.md", tmp_path / "rehearse-evidence.json"
    p = twin_cli(
        "rehearse",
        LAB,
        str(drain),
        "--baseline",
        str(base),
        "--allow",
        str(allow),
        "--rollback",
        "--json",
        "--summary",
        str(md),
        "--evidence",
        str(js),
        timeout=600,
    )
    rep = json.loads(p.stdout)
    assert p.returncode == 0, json.dumps(rep["verdicts"], indent=1) + p.stderr
    changed = {(d["node"], d["key"]): (d["before"], d["after"]) for d in rep["baseline"]["differences"]}
    # leaf1 reaches leaf2 over both spines and both DPUs; drained, spine1 (swp1) is no longer a way
    assert changed[("leaf1", "10.255.0.4/32")] == ("bgp via swp1, swp2, swp3, swp4", "bgp via swp2, swp3, swp4")
    assert {d["allowed_by"] for d in rep["baseline"]["differences"] if d["what"] == "route"} == {"drained spine1"}
    # after the rollback every route is back; which equal path a router prefers (so what its peers
    # accept from it) may have moved, as the allow file says
    assert rep["baseline_rollback"]["passed"]
    assert {d["what"] for d in rep["baseline_rollback"]["differences"]} <= {"prefixes"}
    verdicts = {v["criterion"]: v["passed"] for v in rep["verdicts"]}
    assert verdicts["baseline after the change: no difference not allowed"]
    assert verdicts["baseline after rollback: no difference not allowed"]
    text = md.read_text()
    assert text.startswith(f"## twin rehearse {LAB}: PASSED")
    assert "### Baseline after the change" in text
    assert "| leaf1 | default | route | 10.255.0.4/32 | changed | bgp via swp1, swp2, swp3, swp4 |" in text
    labels = {c["label"] for c in json.loads(js.read_text())["commands"]}
    assert {"baseline", "control"} <= labels


def test_a_leaked_route_breaks_the_negative_route_check(twin_lab):
    """dpu1 imports blue's routes into red: blue's host2c/32 appears in red, and the check that it
    never shows up there fails naming it; once the import is gone it holds again. The leaked route is
    not selected (its next hop is blue's). Blue reuses red's addresses, so the import also brings
    blue's host2b 10.1.1.12/32 beside red's host2a: when bgpd prefers blue's, red's type-2 route to
    host2a is gone from red and the lab is, truly, not converged; the check names the leak either way."""
    asn = twin_lab.fabric.nodes["dpu1"].asn
    blue_rt = f"{twin_lab.fabric.nodes['dpu2'].asn & 0xFFFF}:10200"
    spec = next(c for c in load_checks(PASSING).checks if c.name == "blue's host2c never shows up in red")
    leak = spec.model_copy(update={"timeout": 30.0})
    dpu1 = twin_lab.node("dpu1")
    dpu1.vtysh(
        "configure terminal", f"router bgp {asn} vrf red", "address-family l2vpn evpn", f"route-target import {blue_rt}"
    )
    try:
        (check,) = verify.run(twin_lab, only=["checks"], checks=[leak]).checks
        assert not check.passed
        assert check.message.startswith("10.1.2.12/32 in VRF red on dpu1: present: bgp"), check.message
        assert (
            "into the 3s window after convergence" in check.message
            or "the lab had not converged after 30s" in check.message
        ), check.message
        assert check.data["observed"]["entries"][0]["selected"] is False, check.data
    finally:
        dpu1.vtysh(
            "configure terminal",
            f"router bgp {asn} vrf red",
            "address-family l2vpn evpn",
            f"no route-target import {blue_rt}",
        )
    (check,) = verify.run(twin_lab, only=["checks"], checks=[spec]).checks
    assert check.passed, check.message
