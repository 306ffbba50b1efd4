"""Draining a node from the topology: the default lab with spine1 in BGP graceful
shutdown (RFC 8326). Its sessions stay up, its paths lose everywhere (LOCAL_PREF 0)
and `twin verify` proves it carries none of the tenants' traffic."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from twin import verify

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lab(make_lab, tmp_path_factory):
    doc = yaml.safe_load((ROOT / "topologies" / "aipod.yml").read_text())
    doc["nodes"]["spine1"]["drain"] = True
    path = tmp_path_factory.mktemp("drain") / "aipod-drain.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    lab = make_lab(path, "t-drain")
    yield lab
    lab.down()


def test_a_drained_spine_passes_verify_and_carries_nothing(lab):
    assert lab.fabric.drained() == ["spine1"]
    report = verify.run(lab)
    assert report.failures() == [], "control (sessions stay up), traffic, isolation, underlay, zerotrust"
    under = [c for c in report.checks if c.group == "underlay"]
    assert len(under) == 4
    for c in under:
        assert c.data["packets_per_drained_node"] == {"spine1": 0}, c.name
        assert "drained spine1 carried 0 frames" in c.message, c.name
        assert c.data["delivered"] > 0 and "spine1" not in c.data["packets_per_spine"], c.name
        uplinks = c.data["packets_per_uplink"]
        assert len(uplinks) == 2 and all(n > 0 for n in uplinks.values()), "both leafs still carry the flows"


def test_paths_via_the_drained_spine_lose(lab):
    assert " bgp graceful-shutdown\n" in lab.node("spine1").vtysh("show running-config"), "FRR runs the drain"
    lo = {n: lab.fabric.nodes[n].loopback + "/32" for n in ("leaf2", "dpu1", "dpu2")}
    via_spine1 = {}
    for leaf in ("leaf1", "leaf2"):
        (doc,) = lab.node(leaf).vtysh_json("show bgp ipv4 unicast json")
        for prefix, paths in doc["routes"].items():
            if prefix == lab.fabric.nodes["spine1"].loopback + "/32":
                continue  # spine1's own loopback: every path to it is drained, so it still wins
            for p in paths:
                if {h.get("hostname") for h in p.get("nexthops", [])} == {"spine1"}:
                    via_spine1[(leaf, prefix)] = p
    assert via_spine1, "spine1 still advertises: its sessions are up"
    for (leaf, prefix), p in via_spine1.items():
        assert p.get("locPrf") == 0, f"{leaf} {prefix} via spine1: {p}"
        assert not p.get("bestpath") and not p.get("multipath"), f"{leaf} {prefix} via spine1 is still used: {p}"
    # a DPU loopback (the VTEPs' next hop) learned via spine1 on a leaf: whichever leaf spine1 did not learn it from
    assert {(leaf, prefix) for leaf, prefix in via_spine1 if prefix in (lo["dpu1"], lo["dpu2"])}
    # leaf1 -> leaf2 crosses the spines: only spine2 (and the DPUs) are left in the multipath
    (doc,) = lab.node("leaf1").vtysh_json(f"show bgp ipv4 unicast {lo['leaf2']} json")
    by_peer = {p["peer"]["hostname"]: p for p in doc["paths"]}
    assert by_peer["spine1"]["community"]["list"] == ["gracefulShutdown"] and by_peer["spine1"]["locPrf"] == 0
    used = {h for h, p in by_peer.items() if p.get("bestpath") or p.get("multipath")}
    assert used == {"spine2", "dpu1", "dpu2"}
