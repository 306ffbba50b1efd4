"""RoCE QoS along every RoCE path, without Docker (issue 44, item 2): aipod from its own NVUE export
with `qos roce` on every hop, judged hop by hop (a hop whose class differs named, CNPs prioritised,
a hop without qos roce); the nodes' classes against the others'; and a congestion point a dual-homed
DPU's hosts cross on half their paths, driven all the same (steered by the source port)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from twin import nvue, topology
from twin.nvue import qoscheck
from twin.nvue import tree as nv_tree
from twin.nvue.export import export_node, exported
from twin.nvue.qos import Qos
from twin.verify import congestion

ROOT = Path(__file__).resolve().parents[2]
AIPOD = topology.load(ROOT / "topologies" / "aipod.yml")
ROCE = {"qos": {"roce": {"enable": "on", "mode": "lossless"}}}
GOOD = "RoCE (DSCP 26) in traffic class 3 lossless with ECN, CNPs (DSCP 48) in 6"


def nodes(**edits: dict) -> tuple[dict, dict]:
    """aipod's NVUE export with qos roce on every node, `edits` (node -> a `set` tree) on top, built."""
    nfs = {}
    for n in exported(AIPOD):
        tree = export_node(AIPOD, n)
        if edits.get(n) != {}:  # {}: this node without qos roce
            nv_tree.patch(tree, ROCE)
            nv_tree.patch(tree, edits.get(n) or {})
        nfs[n] = nvue.from_tree(tree, f"{n}/startup.yaml")
    built, _ = nvue.build(nfs, AIPOD, "netns")
    return built, {n: x.plane.qos for n, x in built.items() if isinstance(x.plane.qos, Qos)}


def dscp(node: str, d: int, sp: int) -> dict:
    return {node: {"qos": {"mapping": {"default-global": {"dscp": {str(d): {"switch-priority": sp}}}}}}}


def path(**edits: dict):
    built, on = nodes(**edits)
    (check,) = qoscheck._path(AIPOD, "dpu1", "dpu2", built, on)
    return check


def test_a_roce_path_is_every_hop_of_every_equal_cost_path_and_the_ports_to_the_hosts():
    assert qoscheck.route(AIPOD, "dpu1", "dpu2") == {
        "dpu1": ("p0", "p1"),
        "leaf1": ("swp4",),
        "leaf2": ("swp4",),
        "dpu2": ("pf0vf0", "pf0vf1", "pf0vf2"),
    }
    assert qoscheck.route(AIPOD, "dpu2", "dpu1", ("pf0vf0",))["dpu1"] == ("pf0vf0",)


def test_every_hop_alike_passes_and_says_the_hops():
    c = path()
    assert c.passed and c.name == "path dpu1 - dpu2", c.message
    assert c.message == f"every hop (dpu1, leaf1, leaf2, dpu2) puts {GOOD}"


def test_a_hop_whose_class_differs_is_named_with_both():
    c = path(**dscp("leaf2", 26, 0))
    assert not c.passed
    assert c.message == (
        "leaf2 puts RoCE (DSCP 26) in traffic class 0 lossy without ECN, CNPs (DSCP 48) in 6; "
        f"the path's other hops {GOOD}"
    )


def test_cnps_not_above_roce_are_not_prioritised():
    c = path(**dscp("leaf1", 48, 1))
    assert not c.passed
    assert "leaf1: CNPs (DSCP 48) in traffic class 1, not above RoCE's 3: not prioritised" in c.message, c.message
    assert c.message.startswith("leaf1 puts RoCE (DSCP 26) in traffic class 3 lossless with ECN, CNPs (DSCP 48) in 1")


def test_a_hop_without_qos_roce_is_named():
    c = path(leaf1={})
    assert not c.passed and c.message == "leaf1 runs no qos roce (no classes there: RoCE and CNPs alike)"


def test_the_classes_of_a_node_unlike_most_are_named_and_whether_roce_crosses_it():
    built, on = nodes(**dscp("spine1", 26, 0))
    checks = {c.name: c for c in qoscheck._classes(AIPOD, {n: x.plane for n, x in built.items()}, on)}
    assert [n for n, c in checks.items() if not c.passed] == ["spine1 classes"]
    assert checks["spine1 classes"].message == (
        "RoCE (DSCP 26) in traffic class 0 lossy, CNPs (DSCP 48) in 6; unlike the other 5 NVUE nodes "
        "(RoCE (DSCP 26) in traffic class 3 lossless, CNPs (DSCP 48) in 6); no RoCE path of the topology "
        "crosses spine1 while every link is up"
    )
    two = {"leaf1": dscp("leaf1", 26, 0)["leaf1"], "leaf2": dscp("leaf2", 26, 1)["leaf2"]}
    built, on = nodes(**two, **dscp("dpu1", 26, 2), **dscp("spine1", 26, 4))
    checks = {c.name: c for c in qoscheck._classes(AIPOD, {n: x.plane for n, x in built.items()}, on)}
    assert not any(c.passed for c in checks.values()), "no majority: each names the others"


@pytest.fixture
def dual_homed(tmp_path):
    doc = yaml.safe_load((ROOT / "topologies" / "aipod.yml").read_text())
    doc["congestion"] = [{"port": "leaf1:swp4", "above": "5000pps"}]
    f = tmp_path / "aipod.yml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    return topology.load(f)


def test_a_point_on_half_the_paths_is_driven_by_a_steered_pair(dual_homed):
    (probe,), unexercised = congestion.plan(dual_homed)
    assert unexercised == [] and not probe.every and probe.sport is None
    assert (probe.tenant, probe.src.host, probe.dst.host) == ("red", "host1a", "host2a")
    assert [probe.port(r) for r in range(3)] == [52000, 52001, 52002], "until steered"
    steered = congestion.Probe(probe.point, probe.tenant, probe.src, probe.dst, probe.payload, False, 52013)
    assert [steered.port(r) for r in range(3)] == [52013] * 3, "every run on the port that crosses it"
    assert [c.message for c in congestion.unsteered(probe)] == [
        "not judged: none of 18 UDP source ports led host1a -> host2a's frames out of leaf1:swp4 "
        "(ECMP sent them all another way)"
    ] * 3
