"""Node names as the user wrote them (issue 27): a containerlab file's `PC1` is node pc1 in twin;
`twin exec LAB PC1`, traffic, faults, checks files and the Python API take the user's spelling."""

from __future__ import annotations

from pathlib import Path

import pytest

from twin.base.errors import TwinError
from twin.lifecycle.context import LabContext
from twin.topology import load
from twin.topology.checks import load_checks
from twin.topology.names import match_node, node_key, resolve_node

ROOT = Path(__file__).resolve().parents[2]


def test_a_name_is_matched_as_twin_writes_names():
    assert node_key("PC1") == "pc1" and node_key("Leaf_1.a") == "leaf-1-a"
    assert match_node("pc1", ["pc1", "pc2"]) == ["pc1"]
    assert match_node("PC1", ["pc1", "pc2"]) == ["pc1"]
    assert match_node("leaf_1", ["leaf-1"]) == ["leaf-1"]
    assert match_node("pc9", ["pc1"]) == []


def test_an_exact_name_wins_and_an_ambiguous_one_is_refused_naming_both():
    assert resolve_node("a-b", ["a-b", "a_b"], "lab") == "a-b"
    with pytest.raises(TwinError, match=r"'A-B' could be node a-b or a_b; type it exactly"):
        resolve_node("A-B", ["a_b", "a-b"], "lab")
    with pytest.raises(TwinError, match=r"lab 'lab' has no node 'pc9'; nodes: pc1, pc2"):
        resolve_node("pc9", ["pc1", "pc2"], "lab")  # in the order the lab has them


def context():
    fabric = load(ROOT / "topologies/aipod.yml")
    return LabContext("aipod", Path("/nonexistent"), fabric, "netns", runtime=None)


def test_the_lab_context_resolves_typed_nodes():
    c = context()
    assert c.node("LEAF1") == "leaf1" and c.node("Host1a") == "host1a"
    with pytest.raises(TwinError, match="has no node 'leaf9'"):
        c.node("leaf9")


def test_a_fault_target_is_the_lab_s_name():
    import twin.change  # noqa: F401  (registers the faults)
    from twin.change.base import REGISTRY

    c = context()
    port = next(iter(c.fabric.nodes["leaf1"].ports_by_name))
    assert REGISTRY["link-down"].parse(c, f"LEAF1:{port}", [], "test").target == f"leaf1:{port}"
    assert REGISTRY["node-stop"].parse(c, "Spine1", [], "test").target == "spine1"


def test_a_checks_file_names_nodes_as_the_user_wrote_them(tmp_path):
    f = tmp_path / "checks.yml"
    f.write_text("checks:\n- {name: up, type: exec, node: LEAF1, command: 'true'}\n")
    (spec,) = load_checks(f, load(ROOT / "topologies/aipod.yml")).checks
    assert spec.node == "leaf1"
