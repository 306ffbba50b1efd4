"""Golden tests of validation messages: one case per invalid topology file."""

from pathlib import Path

import pytest

from twin.base.errors import TopologyError
from twin.kinds import KINDS
from twin.topology import load

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"

CASES = sorted(p.stem for p in (GOLDEN / "invalid").glob("*.yml"))


@pytest.mark.parametrize("case", CASES)
def test_invalid_topology_reports_every_problem(case, golden, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(TopologyError) as exc:
        load(Path("tests/golden/invalid") / f"{case}.yml")
    golden(GOLDEN / "invalid" / f"{case}.expected", str(exc.value) + "\n")


def test_every_problem_names_file_place_and_line(monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(TopologyError) as exc:
        load("tests/golden/invalid/bad-fields.yml")
    problems = exc.value.problems
    assert len(problems) >= 6, "all problems are reported at once"
    assert all(p.file == "tests/golden/invalid/bad-fields.yml" for p in problems)
    paths = {p.path for p in problems}
    assert {
        "name",
        "colour",
        "nodes.spine1.asn",
        "nodes.spine1.color",
        "nodes.leaf1.asn",
        "nodes.host1.asn",
        "links[0].mtu",
        "links[1].endpoints",
    } <= paths
    assert all(p.line for p in problems)


def test_unknown_kind_lists_known_kinds(monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(TopologyError) as exc:
        load("tests/golden/invalid/unknown-kind.yml")
    (p,) = exc.value.problems
    assert p.path == "nodes.leaf1.kind" and p.line == 4
    assert f"known kinds: {', '.join(KINDS)}" in p.message


def test_bad_yaml_gives_the_line(monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(TopologyError) as exc:
        load("tests/golden/invalid/bad-yaml.yml")
    (p,) = exc.value.problems
    assert p.line == 4 and "not valid YAML" in p.message


def test_missing_file_is_a_topology_error(tmp_path):
    with pytest.raises(TopologyError, match="cannot read the topology file"):
        load(tmp_path / "nope.yml")


def test_name_override_is_validated():
    with pytest.raises(TopologyError, match=r"--name: lab name 'Not OK'"):
        load(ROOT / "topologies" / "aipod.yml", name="Not OK")


def test_only_bgp_nodes_can_be_drained(monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(TopologyError) as exc:
        load("tests/golden/invalid/drained-host.yml")
    (p,) = exc.value.problems
    assert p.path == "nodes.host1.drain" and p.line == 6
    assert "cannot be drained" in p.message and "spine, leaf, dpu" in p.message
