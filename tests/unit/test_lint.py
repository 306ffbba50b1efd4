"""`twin lint` (issue 45): the user's configs against the topology's intent, without Docker.

Twin's own configs lint clean (every sample topology's NVUE export and rendered frr.conf files,
and any design hypothesis draws); each mistake an operator makes is named with its file, line,
value and why (tests/golden/lint/: the mistaken file and what twin lint says of it); the CLI's
exit codes, JSON and JUnit; `--strict` refuses a bring-up before anything is made; a failing
check of `twin verify` names the finding behind it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.lintcases import AIPOD, FRR, GOLDEN, NVUE, RULES, with_mistakes, write_dir
from tests.unit.fabrics import designs
from twin import nvue, topology
from twin.base.errors import TopologyError
from twin.change.plan import Plan
from twin.cli import main
from twin.config import userconf
from twin.config.render import render_lab
from twin.lab import Lab
from twin.lint import At, Finding, LintFailed, lint
from twin.lint.findings import explain
from twin.verify.result import Check, Report

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(p.name for p in (ROOT / "topologies").glob("*.yml"))
FILE = {"nvue": nvue.STARTUP, "frr": "frr.conf"}


def twins_own(fabric, dialect: str) -> dict[str, dict[str, str]]:
    if dialect == "nvue":
        return {n: {nvue.STARTUP: t} for n, t in nvue.export(fabric)[0].items()}
    return {n: {"frr.conf": f["frr.conf"]} for n, f in render_lab(fabric, "netns").items() if "frr.conf" in f}


@pytest.mark.parametrize("dialect", ["nvue", "frr"])
@pytest.mark.parametrize("name", SAMPLES)
def test_twins_own_configs_of_every_sample_lint_clean(name, dialect):
    fabric = topology.load(ROOT / "topologies" / name)
    files = twins_own(fabric, dialect)
    report = lint(fabric, files)
    assert (report.findings, report.problems) == ([], [])
    assert len(report.files) == len(files) > 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(designs())
def test_any_designs_own_export_and_rendering_lint_clean(doc):
    fabric = topology.load_document(doc, "hypothesis.yml")
    for dialect in ("nvue", "frr"):
        report = lint(fabric, twins_own(fabric, dialect))
        assert (dialect, report.findings, report.problems) == (dialect, [], [])


CASES = [("nvue", m.name) for m in NVUE] + [("frr", m.name) for m in FRR]


@pytest.mark.parametrize("dialect,mistake", CASES)
def test_each_mistake_is_named_with_its_file_line_value_and_why(dialect, mistake, golden):
    """The mistaken file as an operator has it, and what `twin lint FILE` says of it, are golden."""
    node = next(m.node for m in (NVUE if dialect == "nvue" else FRR) if m.name == mistake)
    text = with_mistakes(dialect, [mistake])[node]
    here = GOLDEN / dialect / mistake
    golden(here / node / FILE[dialect], text)
    name = FILE[dialect]
    report = lint(topology.load(AIPOD), {node: {name: text}}, {node: {name: f"{node}/{name}"}})
    golden(here / "findings.txt", "".join(f"{f}\n" for f in report.findings))
    assert report.problems == [] and report.findings
    assert {f.rule for f in report.findings} == {RULES[mistake]} and {f.node for f in report.findings} == {node}
    assert all(f.at.line for f in report.findings), "every finding names its line"


def test_the_issues_example_word_for_word():
    node, text = "dpu1", with_mistakes("nvue", ["vlan-vni"])["dpu1"]
    paths = {node: {nvue.STARTUP: "dpu1/startup.yaml"}}
    (f,) = lint(topology.load(AIPOD), {node: {nvue.STARTUP: text}}, paths).findings
    line = text.splitlines().index("                '10202': {}") + 1
    assert str(f) == (
        f"dpu1/startup.yaml:{line}: bridge vlan 20 -> VNI 10202: VLAN 20 carries red's db segment "
        "(10.1.2.0/24), whose VNI is 10102; 10202 is blue's db"
    )


def test_several_mistakes_on_one_node_are_each_named_once():
    files = with_mistakes("nvue", ["access-vlan", "svi-vrf", "ecmp-off"])
    report = lint(topology.load(AIPOD), {"dpu1": {nvue.STARTUP: files["dpu1"]}})
    assert sorted(f.rule for f in report.findings) == ["access-vlan", "ecmp", "svi-vrf"]


def test_a_file_twin_refuses_is_a_problem_with_its_line_and_the_rest_is_still_linted():
    files = with_mistakes("nvue", ["spine-asn"])
    files["dpu1"] = files["dpu1"].replace(
        "      pf0vf0_if:\n", "      pf0vf99_if:\n        type: swp\n      pf0vf0_if:\n", 1
    )
    report = lint(topology.load(AIPOD), {n: {nvue.STARTUP: t} for n, t in files.items()})
    assert [p.message for p in report.problems] == ["dpu1 has no port pf0vf99_if; its ports: p0-1,pf0hpf,pf0vf0-15"]
    assert report.problems[0].line and [f.rule for f in report.findings] == ["asn"]
    assert not report.passed()


def test_frr_facts_keep_their_lines_and_words():
    text = with_mistakes("frr", ["route-target-wrong"])["dpu1"]
    text = text.replace(
        " neighbor p1 interface peer-group fabric\n",
        " neighbor p1 interface peer-group fabric\n neighbor 10.0.0.9 remote-as 65000\n neighbor p0 shutdown\n",
    )
    (shut, rt) = lint(topology.load(AIPOD), {"dpu1": {"frr.conf": text}}).findings
    lines = text.splitlines()
    p0 = lines.index(" neighbor p0 interface peer-group fabric") + 1
    assert (shut.rule, shut.at.line, shut.at.text) == ("neighbor", p0, "neighbor p0 interface peer-group fabric")
    assert "shut down: the session dpu1 - leaf1 (dpu1:p0 - leaf1:swp3) stays down" in shut.why
    assert (rt.at.line, rt.at.text) == (
        lines.index("  route-target import 65000:999") + 1,
        "route-target import 65000:999",
    )


def test_a_leaf_vtep_lab_names_vlans_and_ports_as_the_leaf_does(tmp_path):
    fabric = topology.load(ROOT / "topologies" / "leaf-vtep.yml")
    texts = nvue.export(fabric)[0]
    bad = texts["leaf2"].replace("              access: 40\n", "              access: 30\n", 1)
    (f,) = lint(fabric, {"leaf2": {nvue.STARTUP: bad}}).findings
    assert f.rule == "access-vlan" and f.at.text == "interface swp12 -> VLAN 30"
    assert f.why.startswith(
        "swp12 leads to host2c, blue's db (10.1.2.12); VLAN 30 carries blue's web (VNI 10201); "
        "blue's db is VLAN 40 here"
    )


# --- the command line -----------------------------------------------------------------------
def test_twin_lint_exit_codes_json_and_junit(tmp_path):
    good, bad = write_dir(tmp_path / "good", "nvue", []), write_dir(tmp_path / "bad", "nvue", ["vlan-vni", "spine-asn"])
    run = CliRunner().invoke
    r = run(main, ["lint", "-t", str(AIPOD), str(good)])
    assert r.exit_code == 0 and r.output.startswith("twin lint: 0 findings in 6 files against"), r.output
    r = run(main, ["lint", "-t", str(AIPOD), str(bad)])
    assert r.exit_code == 0 and r.output.count("warning: ") == 2 and "--strict makes them errors" in r.output
    line = with_mistakes("nvue", ["vlan-vni"])["dpu1"].splitlines().index("                '10202': {}") + 1
    assert f"warning: {bad}/dpu1/startup.yaml:{line}: bridge vlan 20 -> VNI 10202: " in r.output
    r = run(main, ["lint", "-t", str(AIPOD), str(bad), "--strict", "--json", "--junit", str(tmp_path / "j.xml")])
    doc = json.loads(r.output)
    assert r.exit_code == 1 and doc["passed"] is False and doc["strict"] is True
    assert [(f["node"], f["rule"], f["line"]) for f in doc["findings"]] == [
        ("spine1", "asn", 26),
        ("dpu1", "vlan-vni", line),
    ]
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("6", "2")
    # a pre-commit hook gives the files it changed
    r = run(
        main,
        [
            "lint",
            "-t",
            str(AIPOD),
            str(bad / "dpu1" / "startup.yaml"),
            str(good / "leaf1" / "startup.yaml"),
            "--strict",
        ],
    )
    assert r.exit_code == 1 and r.output.count("error: ") == 1 and "in 2 files" in r.output


def test_twin_lint_of_what_cannot_be_read_is_an_error_naming_it(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    r = CliRunner().invoke(main, ["lint", "-t", str(AIPOD), str(tmp_path / "notes.txt"), "--json"])
    doc = json.loads(r.output)
    assert r.exit_code == 1 and doc["problems"][0]["message"].startswith("not a node's config file")
    (tmp_path / "d" / "leaf9").mkdir(parents=True)
    (tmp_path / "d" / "leaf9" / "frr.conf").write_text("router bgp 1\n")
    r = CliRunner().invoke(main, ["lint", "-t", str(AIPOD), str(tmp_path / "d")])
    assert r.exit_code == 1 and "no FRR node 'leaf9' in lab 'aipod'" in r.output
    r = CliRunner().invoke(main, ["lint", "-t", str(AIPOD)])
    assert r.exit_code == 1 and "nothing to lint" in r.output


def test_strict_up_refuses_before_anything_is_made(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_HOME", str(tmp_path / "home"))
    bad = write_dir(tmp_path / "bad", "frr", ["spine-asn"])
    lab = Lab.load(AIPOD, name="h45-strict", configs=bad)
    said = []
    with pytest.raises(LintFailed) as e:
        lab.up(strict=True, warn=said.append)
    assert said and said[0].findings and "spine2/frr.conf:29: router bgp 65102: 65102 is leaf2's ASN" in str(e.value)
    assert not (tmp_path / "home" / "labs" / "h45-strict").exists()
    with pytest.raises(TopologyError):  # LintFailed is a TopologyError: printed whole, exit 1
        raise e.value


# --- what the findings explain -------------------------------------------------------------
def findings_of(mistakes: list[str]) -> list[Finding]:
    files = with_mistakes("nvue", mistakes)
    return lint(topology.load(AIPOD), {n: {nvue.STARTUP: t} for n, t in files.items()}).findings


def test_a_failing_check_names_the_findings_that_explain_it_and_no_other():
    fs = findings_of(["vlan-vni", "evpn-off", "missing-neighbor"])
    rules = lambda *c: [f.rule for f in explain(*c, fs)]  # noqa: E731
    assert rules("control", "vni dpu1 10102", "VNI 10102 missing") == ["vlan-vni"]
    assert rules("control", "vni dpu2 10201", "VNI 10201 missing (zebra knows no VNI at all") == ["evpn"]
    assert rules("control", "vni dpu1 10101", "vni 10101.remoteVteps[0]: no item matches '10.255.0.6'") == ["evpn"]
    assert rules("control", "bgp leaf2", ".ipv4Unicast.peers.swp3: missing") == ["neighbor"]
    assert rules("control", "bgp dpu1", ".ipv4Unicast.peers.p1.state: expected 'Established'") == ["neighbor"]
    assert rules("control", "loopbacks leaf2", "no route to spine2's loopback 10.255.0.2/32") == []
    assert rules("control", "vrf dpu2 red", "missing 10.1.2.0/24 via 10.255.0.5") == ["vlan-vni", "evpn"]
    assert rules("control", "bgp spine1", ".ipv4Unicast.peers.swp1.state") == []


def test_verify_report_says_see_file_line():
    fs = findings_of(["spine-asn"])
    report = Report(
        "t",
        [
            Check("control", "bgp spine1", False, "swp1 Idle"),
            Check("control", "bgp leaf2", True),
            Check("control", "loopbacks dpu1", False, "no route to spine2's loopback 10.255.0.2/32"),
        ],
    )
    assert report.explain(fs) == 1
    c = report.checks[0]
    assert c.message == "swp1 Idle; see spine1/startup.yaml:26 (router bgp autonomous-system 65101)"
    assert c.data["lint"] == [str(fs[0])] and report.checks[2].message.endswith("10.255.0.2/32")
    assert Finding.of(json.loads(json.dumps(fs[0].as_dict()))) == fs[0]


def test_plan_says_the_findings_first():
    f = Finding("dpu1", "vlan-vni", At("cfg/dpu1/startup.yaml", 162, "bridge vlan 20 -> VNI 10202"), "why")
    p = Plan("aipod", lint=[f])
    assert p.text() == "warning: cfg/dpu1/startup.yaml:162: bridge vlan 20 -> VNI 10202: why\nlab aipod: no change"
    assert p.as_dict()["lint"][0]["line"] == 162


def test_a_containerlab_files_bound_configs_are_linted(tmp_path):
    bad = write_dir(tmp_path / "configs", "frr", ["spine-asn"])
    topo = topology.load(AIPOD)
    nodes = {
        n: {"kind": "linux", "image": "frr"}
        | ({"binds": [f"configs/{n}/frr.conf:/etc/frr/frr.conf"]} if (bad / n).is_dir() else {})
        for n in topo.nodes
    }
    links = [{"endpoints": [f"{x.a.node}:{x.a.port}", f"{x.b.node}:{x.b.port}"]} for x in topo.links]
    clab = tmp_path / "aipod.clab.yml"
    clab.write_text(yaml.safe_dump({"name": "aipod", "topology": {"nodes": nodes, "links": links}}))
    roles = ",".join(f"{n}={x.kind}" for n, x in topo.nodes.items())
    r = CliRunner().invoke(main, ["lint", "-t", str(clab), "--role", roles, "--json"])
    doc = json.loads(r.output)
    assert [(f["node"], f["rule"]) for f in doc["findings"]] == [("spine2", "asn")], r.output


def test_read_paths_takes_directories_and_files_and_names_every_problem(tmp_path):
    good = write_dir(tmp_path / "good", "frr", [])
    both = userconf.read_paths([good / "leaf1" / "frr.conf", good / "spine1" / "frr.conf"])
    assert sorted(both.files) == ["leaf1", "spine1"]
    assert both.path("leaf1", "frr.conf") == str(good / "leaf1" / "frr.conf")
    (tmp_path / "spine9.conf").write_text("router bgp 1\n")
    assert userconf.read_paths([tmp_path / "spine9.conf"]).files == {"spine9": {"frr.conf": "router bgp 1\n"}}
    with pytest.raises(TopologyError) as e:
        userconf.read_paths([tmp_path / "x.txt", tmp_path / "frr.conf"])
    assert len(e.value.problems) == 2


# --- whatever the files hold ---------------------------------------------------------------------
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=120,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TOKENS = [
    "10100",
    "10200",
    "10101",
    "10202",
    "65101",
    "65000",
    "4200000001",
    "10.255.0.9",
    "10.1.1.254/24",
    "red",
    "blue",
    "RED",
    "off",
    "on",
    "swp9",
    "p0_if",
    "pf0vf2_if",
    "1",
    "30",
    "*:10200",
    "ANY:10100",
    "",
    "x",
]
LINES = [
    "  maximum-paths 1",
    " neighbor p0 shutdown",
    "  route-target import 65000:10200",
    "  import vrf blue",
    "vrf red",
    " vni 10200",
    "router bgp 65101",
    "  no neighbor fabric activate",
    "no bgp default ipv4-unicast",
    " neighbor swp9 interface peer-group fabric",
    "  route-target both *:10100",
    "interface lo",
    " ip address 10.255.0.99/32",
    "exit",
    "address-family l2vpn evpn",
    "  advertise-all-vni",
]
EDITS = st.lists(st.tuples(st.integers(0, 400), st.sampled_from(TOKENS + LINES), st.booleans()), max_size=6)


def mutated(text: str, edits) -> str:
    """Lines replaced, inserted or cut, words swapped for others of the kind configs hold."""
    lines = text.splitlines()
    for at, token, insert in edits:
        i = at % len(lines)
        if insert:
            lines.insert(i, token)
        elif token in TOKENS and lines[i].split():
            words = lines[i].split(" ")
            words[at % len(words)] = token
            lines[i] = " ".join(words)
        else:
            del lines[i]
    return "\n".join(lines) + "\n"


def lints_cleanly(dialect: str, node: str, text: str) -> None:
    """A report, never an exception: its problems name the file, its findings a line of it (or none)."""
    name = FILE[dialect]
    report = lint(AIPOD_FABRIC, {node: {name: text}}, {node: {name: f"cfg/{node}/{name}"}})
    assert all(p.file == f"cfg/{node}/{name}" for p in report.problems)
    assert all(
        f.at.file == f"cfg/{node}/{name}"
        and (f.at.line is None or 0 < f.at.line <= text.count("\n") + 1)
        and len(str(f)) < 2000
        for f in report.findings
    )


AIPOD_FABRIC = topology.load(AIPOD)
OWN = {d: with_mistakes(d, []) for d in ("nvue", "frr")}


@FUZZ
@given(st.sampled_from(["dpu1", "dpu2", "leaf1", "spine2"]), EDITS)
def test_any_mutation_of_an_nvue_file_gives_findings_or_problems(node, edits):
    lints_cleanly("nvue", node, mutated(OWN["nvue"][node], edits))


@FUZZ
@given(st.sampled_from(["dpu1", "dpu2", "leaf1", "spine2"]), EDITS)
def test_any_mutation_of_an_frr_conf_gives_findings_or_problems(node, edits):
    lints_cleanly("frr", node, mutated(OWN["frr"][node], edits))


SWP = "      {}:\n        type: swp\n"
PEER = "              swp1:\n                type: unnumbered\n                peer-group: fabric\n"
BGP_ON = "        enable: on\n        autonomous-system: 65101\n"
EXPORT = "                route-export:\n                  to-evpn:\n                    enable: on\n      blue:"
RED_BGP = "            enable: on\n            address-family:\n              ipv4-unicast:\n"
MORE = [  # (node, old, new, rule, the first finding's value, a part of its why)
    (
        "leaf1",
        SWP.format("swp1") + "        link:\n          mtu: 9000\n",
        SWP.format("swp1") + "        link:\n          mtu: 1500\n",
        "mtu",
        "interface swp1 link mtu 1500",
        "the topology gives the link leaf1:swp1 - spine1:swp1 MTU 9000",
    ),
    (
        "leaf1",
        SWP.format("swp2") + "        link:\n",
        SWP.format("swp2") + "        link:\n          state: down\n",
        "neighbor",
        "interface swp2 link state down",
        "swp2 is the link to spine2:swp1: set down",
    ),
    (
        "spine1",
        "        router-id: 10.255.0.1\n",
        "        router-id: 10.255.0.1\n        graceful-shutdown: on\n",
        "drain",
        "router bgp graceful-shutdown on",
        "spine1 is not drained in the topology",
    ),
    (
        "dpu1",
        "              10.1.1.1/24: {}\n",
        "              10.1.1.254/24: {}\n",
        "gateway",
        "interface vlan10 gateway 10.1.1.254/24",
        "red's web gateway is 10.1.1.1/24 (the topology's)",
    ),
    (
        "dpu1",
        "            mac-address: 00:00:5e:00:01:01\n",
        "            mac-address: 00:00:5e:00:01:02\n",
        "gateway",
        "interface vlan10 VRR MAC 00:00:5e:00:01:02",
        "red's web gateway MAC is 00:00:5e:00:01:01",
    ),
    (
        "dpu1",
        EXPORT,
        EXPORT.replace(
            "      blue:",
            "                route-import:\n                  from-vrf:\n"
            "                    list:\n                      blue: {}\n      blue:",
        ),
        "leak",
        "vrf red route-import from-vrf blue",
        "VRF red (tenant red) takes the routes of VRF blue (blue's)",
    ),
    (
        "dpu1",
        RED_BGP,
        RED_BGP.replace(
            "            address-family:",
            "            route-import:\n              "
            "from-evpn:\n                route-target:\n                  ANY:10200: {}\n"
            "            address-family:",
        ),
        "leak",
        "vrf red route-import route-target ANY:10200",
        "10200 is blue's L3VNI: VRF red (tenant red) takes blue's",
    ),
    (
        "leaf2",
        PEER,
        PEER + "                remote-as: 65101\n",
        "neighbor",
        "neighbor swp1",
        "remote-as 65101: spine1:swp2 is spine1, whose AS is 65000",
    ),
    (
        "leaf1",
        BGP_ON,
        BGP_ON.replace("enable: on", "enable: off"),
        "neighbor",
        "no BGP",
        "leaf1 runs no BGP (no router bgp, or it is off): its sessions to dpu1, dpu2, spine1, spine2",
    ),
]


@pytest.mark.parametrize("node,old,new,rule,value,why", MORE, ids=[f"{m[3]}-{i}" for i, m in enumerate(MORE)])
def test_the_other_rules_name_their_line_too(node, old, new, rule, value, why):
    text = with_mistakes("nvue", [])[node]
    assert old in text
    f, *more = lint(AIPOD_FABRIC, {node: {nvue.STARTUP: text.replace(old, new, 1)}}).findings
    assert (f.rule, f.at.text) == (rule, value) and why in f.why, str(f)
    assert f.at.line or value == "no BGP"
    assert [x.rule for x in more] == (["leak"] if "ANY:10200" in value else [])  # and red's own not imported
