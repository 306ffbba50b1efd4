"""The loader's limits: whatever the bytes, a Fabric or a TopologyError with file and line."""

import json
from pathlib import Path

import pytest
import yaml

from twin.base.errors import TopologyError
from twin.topology import LAB_NAME_RULE, ValidationReport, check_lab_name, load, names, validate, yaml_safe
from twin.topology.problems import dotted, listing, quoted

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = sorted((ROOT / "topologies").glob("*.yml"))
BASE = "name: t\nnodes:\n  spine1: {kind: spine}\n  leaf1: {kind: leaf}\nlinks:\n  - [spine1, leaf1]\n"


def problems_of(tmp_path, data: bytes | str, name: str | None = None):
    path = tmp_path / "t.yml"
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    with pytest.raises(TopologyError) as exc:
        load(path, name=name)
    assert all(p.file == str(path) for p in exc.value.problems)
    return exc.value.problems


def test_a_file_above_one_mib_is_refused_before_parsing(tmp_path):
    (p,) = problems_of(tmp_path, BASE + "#" * (1 << 20))
    assert "larger than 1 MiB (1048576 bytes)" in p.message and "not parsed" in p.message


@pytest.mark.parametrize(
    "data, line, words",
    [
        ("name: t\n".encode("utf-16"), 1, "UTF-16"),
        ("name: t\n".encode("utf-32"), 1, "UTF-32"),
        ("name: t\nnodes: x\n".encode("utf-16-le"), 1, "NUL byte"),
        ("name: t\n# caf\xe9\n".encode("latin-1"), 2, "not UTF-8"),
        (b"name: t\n\n\x00\x01\x02", 3, "NUL byte"),
        (bytes(range(128, 256)), 1, "not UTF-8"),
        (b"name: t\nnodes: {a\x07: {kind: spine}}\n", 2, "U+0007"),
        (b"name: t\nx: \xc2\x85\n", 2, "U+0085"),  # NEL: a line break to YAML, not to editors
    ],
)
def test_bytes_that_are_not_utf8_text_give_the_line(tmp_path, data, line, words):
    (p,) = problems_of(tmp_path, data)
    assert p.line == line and words in p.message


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "holds no topology"),
        ("# only a comment\n", "holds no topology"),
        ("~\n", "holds no topology"),
        ("- a\n", "holds a list"),
        ("42\n", "holds a number (42)"),
        ("'x'\n", "holds text ('x')"),
    ],
)
def test_a_root_that_is_no_mapping_is_refused(tmp_path, text, words):
    (p,) = problems_of(tmp_path, text)
    assert words in p.message and "a topology is a mapping with keys" in p.message


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        "[" * 5000 + "]" * 5000,
        "a:\n" + "".join("  " * i + "a:\n" for i in range(1, 500)),
        "x: " + "{a: " * 3000 + "1" + "}" * 3000,
    ],
)
def test_deep_nesting_is_refused_without_recursion(tmp_path, text):
    (p,) = problems_of(tmp_path, text)
    assert "nesting deeper than 64 levels" in p.message


def test_anchors_and_aliases_are_refused_so_no_bomb_can_expand(tmp_path):
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
    )
    for text in (laughs, "a: &a [*a]\n", BASE + "x: *nothing\n"):
        (p,) = problems_of(tmp_path, text)
        assert "anchors and aliases (&name, *name) are not supported" in p.message


@pytest.mark.parametrize("value", ["9" * 5000, "1:" * 100_000 + "1", "0x" + "f" * 100, "1" + "0" * 40 + ".5"])
def test_absurd_numbers_are_refused_before_conversion(tmp_path, value):
    (p,) = problems_of(tmp_path, BASE.replace("{kind: spine}", "{kind: spine, asn: " + value + "}"))
    assert p.path == "nodes.spine1.asn" and p.line == 3 and "characters" in p.message
    assert len(p.message) < 200


@pytest.mark.parametrize(
    "value, words",
    [
        ("!!int abc", "not a valid whole number"),
        ("0b_", "not a valid whole"),
        ("!!float x", "not a valid number"),
        ("!!bool maybe", "not a valid boolean"),
        ("!!timestamp x", "'!!timestamp' is not supported"),
        ("!!python/name:os.system ''", "is not supported"),
    ],
)
def test_explicit_tags_and_odd_numbers_are_problems(tmp_path, value, words):
    (p,) = problems_of(tmp_path, BASE.replace("{kind: spine}", "{kind: spine, asn: " + value + "}"))
    assert words in p.message and p.line == 3


def test_dates_stay_text(tmp_path):
    path = tmp_path / "t.yml"
    path.write_text(BASE + "description: 2024-01-01\n")
    data, _ = yaml_safe.read_yaml(path)
    assert data["description"] == "2024-01-01"


def test_a_duplicate_key_names_both_lines(tmp_path):
    problems = problems_of(tmp_path, BASE.replace("links:", "  spine1: {kind: leaf}\nlinks:"))
    (p,) = problems
    assert p.message == "key 'spine1' is defined twice (lines 3 and 5); keep one" and p.path == "nodes"


def test_too_many_values_are_refused(tmp_path):
    (p,) = problems_of(tmp_path, "name: t\nlinks:\n" + "- [a,b]\n" * 40_000)
    assert f"more than {yaml_safe.MAX_VALUES} values" in p.message


@pytest.mark.parametrize("topology", TOPOLOGIES, ids=lambda p: p.stem)
def test_both_yaml_parsers_read_the_same_data_and_lines(topology, monkeypatch):
    fast = yaml_safe.read_yaml(topology)
    monkeypatch.setattr(yaml_safe, "_FAST_LOADER", yaml.SafeLoader)
    assert yaml_safe.read_yaml(topology) == fast


@pytest.mark.parametrize("text", ["a: {b: 1\n", "name: x\n\tnodes: {}\n", "a: @x\n", "[1, 2\n"])
def test_a_syntax_error_reads_the_same_with_or_without_libyaml(tmp_path, monkeypatch, text):
    fast = problems_of(tmp_path, text)
    monkeypatch.setattr(yaml_safe, "_FAST_LOADER", yaml.SafeLoader)
    assert problems_of(tmp_path, text) == fast


def test_values_in_messages_are_cut_and_escaped():
    assert quoted("x" * 500) == "'" + "x" * 56 + "..."
    assert quoted("a\nb") == "'a\\nb'" and quoted(True) == "true" and quoted(None) == "null"
    assert dotted(("nodes", "leaf1", "asn")) == "nodes.leaf1.asn"
    assert dotted(("nodes", "a\nb")) == "nodes['a\\nb']" and dotted(("links", 3, "mtu")) == "links[3].mtu"
    assert listing([f"n{i}" for i in range(20)], 3) == "n0, n1, n2, ... and 17 more"


def test_check_lab_name_is_the_one_rule():
    assert check_lab_name("aipod") is None and check_lab_name("a-1") is None
    for bad in ("aipod\n", "Aipod", "-a", "a-", "", "x" * 17, "a b", "a\x00", None, 5):
        assert check_lab_name(bad) == f"lab name {quoted(bad)} is not allowed: {LAB_NAME_RULE}"


@pytest.mark.parametrize(
    "check, good, bad",
    [
        (names.check_node_name, ["leaf1", "a", "x" * 24], ["leaf1\n", "Leaf1", "-a", "x" * 25, "a_b"]),
        (
            names.check_port_name,
            ["swp1", "eth0.100", "p_0"],
            ["swp1\n", "lo", ".", "..", "br100", "vxlan5", "twin0", "x" * 16, "a b", "a/b"],
        ),
        (names.check_vrf_name, ["red", "t_1"], ["red\n", "default", "lo", "br10", "vxlan10", "twinx", "1red", "Red"]),
        (names.check_tenant_name, ["red", "blue-2"], ["red\n", "Red", "9red", "x" * 16]),
        (names.check_segment_name, ["web", "x" * 32], ["web\n", "Web", "x" * 33, "we b"]),
        (
            names.check_mac,
            ["00:00:5e:00:01:01", "02:AA:bb:cc:dd:ee"],
            ["00:00:5e:00:01:01\n", "01:00:5e:00:00:01", "00:00:00:00:00:00", "0:0:0:0:0:1"],
        ),
    ],
)
def test_name_rules_match_in_full(check, good, bad):
    assert [g for g in good if check(g)] == []
    assert [b for b in bad if check(b) is None] == []


def test_auto_assigned_asns_skip_as_trans_and_reach_the_last_asn(tmp_path):
    path = tmp_path / "t.yml"
    path.write_text(
        "name: t\ndefaults: {asn: {leaf: 23455, dpu: 4294967294}}\nnodes:\n  spine1: {kind: spine}\n"
        "  leaf1: {kind: leaf}\n  leaf2: {kind: leaf}\n  dpu1: {kind: dpu}\n  dpu2: {kind: dpu}\n"
        "links: [[spine1, leaf1], [spine1, leaf2], [leaf1, dpu1], [leaf2, dpu2]]\n"
    )
    fabric = load(path)
    assert [fabric.nodes[n].asn for n in ("leaf1", "leaf2", "dpu1", "dpu2")] == [23455, 23457, 4294967294, 4294967295]


def test_one_wrong_link_does_not_make_islands(tmp_path):
    problems = problems_of(tmp_path, BASE + "  - [spine1, nope]\n  - endpoints: [spine1, leaf1]\n    mtu: true\n")
    assert [p.path for p in problems] == ["links[1].endpoints[1]", "links[2].mtu"]


def test_a_loopback_inside_a_tenant_subnet_is_fine(tmp_path):
    path = tmp_path / "t.yml"
    path.write_text(
        "name: t\nvtep: leaf\nnodes:\n  spine1: {kind: spine, loopback: 10.1.1.200}\n"
        "  leaf1: {kind: leaf}\n  h1: {kind: host}\nlinks: [[spine1, leaf1], [leaf1, h1]]\n"
        "tenants:\n  red:\n    l3vni: 5\n    segments: {web: {subnet: 10.1.1.0/24, l2vni: 6}}\n"
        "    attachments: [{host: h1, segment: web}]\n"
    )
    assert load(path).nodes["spine1"].loopback == "10.1.1.200"


def test_validate_reports_a_valid_fabric_with_its_summary():
    report = validate(ROOT / "topologies" / "aipod.yml")
    assert isinstance(report, ValidationReport) and report.valid and report.fabric is not None
    data = json.loads(json.dumps(report.to_dict()))
    assert data == {
        "file": str(ROOT / "topologies" / "aipod.yml"),
        "valid": True,
        "problems": [],
        "summary": {
            "nodes": {"spine": 2, "leaf": 2, "dpu": 2, "host": 6},
            "links": 14,
            "sessions": 8,
            "tenants": 2,
            "vteps": 2,
        },
    }


def test_validate_reports_every_problem_without_raising(monkeypatch):
    monkeypatch.chdir(ROOT)
    report = validate("tests/golden/invalid/bad-links.yml", name="Bad Name")
    assert not report.valid and report.fabric is None and report.summary() is None
    data = report.to_dict()
    assert data["valid"] is False and data["summary"] is None and len(data["problems"]) == 7
    assert data["problems"][0] == {
        "file": "tests/golden/invalid/bad-links.yml",
        "line": None,
        "column": None,
        "path": "--name",
        "message": f"lab name 'Bad Name' is not allowed: {LAB_NAME_RULE}",
    }
    assert all(set(p) == {"file", "line", "column", "path", "message"} for p in data["problems"])
