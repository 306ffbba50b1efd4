"""Twin's designs out as NVUE and back up (issue 24): aipod (DPU VTEPs, HBN port names) and
leaf-vtep (Cumulus leaf VTEPs) exported with `twin export --format nvue`, brought up from those
startup.yaml files, converge and pass `twin verify` with every check group twin's own rendering
passes; an NVUE directory is rehearsed like any change (RoCE flows running, nothing lost), with
what it holds that twin does not emulate listed. The labs one after the other."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin import nvue
from twin.nvue import tree as nv_tree

pytestmark = pytest.mark.e2e

GROUPS = {"control", "traffic", "isolation", "underlay", "mtu", "zerotrust", "arp", "lldp"}


def up_from_nvue(topology: str, name: str, d, image: str) -> None:
    ex = twin_cli("export", str(ROOT / topology), "--format", "nvue", "-o", str(d))
    assert ex.returncode == 0, ex.stderr
    p = twin_cli("up", str(ROOT / topology), "--name", name, "--configs", str(d), "--image", image)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"({len(list(d.glob('*/startup.yaml')))} nodes run yours)" in p.stdout


def verified(name: str) -> dict:
    p = twin_cli("verify", name, "--json")
    assert p.returncode == 0, p.stdout[-3000:]
    doc = json.loads(p.stdout)
    assert doc["passed"] and {c["group"] for c in doc["checks"]} == GROUPS
    return doc


def test_aipod_from_its_nvue_export_converges_verifies_and_rehearses_an_nvue_change(tmp_path, runtime, node_image):
    name, d = "t-nvue-aipod", tmp_path / "nvue"
    try:
        up_from_nvue("topologies/aipod.yml", name, d, node_image)
        doc = verified(name)
        assert len([c for c in doc["checks"] if c["group"] == "control"]) >= 20
        # day 2 in NVUE: leaf1's peers retry sooner, and a banner twin keeps but does not run
        change = tmp_path / "change"
        (change / "leaf1").mkdir(parents=True)
        nf = nvue.read(d / "leaf1" / "startup.yaml")
        tree = nv_tree.set_path(
            nf.tree, ("vrf", "default", "router", "bgp", "peer-group", "fabric", "timers", "connection-retry"), 5
        )
        nv_tree.set_path(tree, ("system", "message", "pre-login"), "lab leaf")
        (change / "leaf1" / "startup.yaml").write_text(nvue.dump(tree, nf.header))
        r = twin_cli("rehearse", name, str(change), "--json", timeout=600)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
        report = json.loads(r.stdout)
        assert report["passed"]
        said = json.dumps(report)
        assert "leaf1: set vrf.default.router.bgp.peer-group.fabric.timers.connection-retry 5" in said
        assert "system.message: stored, not emulated" in said
        assert (
            "neighbor fabric timers connect 5"
            in twin_cli("exec", name, "leaf1", "--", "vtysh", "-c", "show running-config").stdout
        )
    finally:
        twin_cli("down", name)
    assert leftovers(runtime, name) == []


def test_leaf_vtep_from_its_nvue_export_converges_and_verifies(tmp_path, runtime, node_image):
    name, d = "t-nvue-leafvtep", tmp_path / "nvue"
    try:
        up_from_nvue("topologies/leaf-vtep.yml", name, d, node_image)
        verified(name)
    finally:
        twin_cli("down", name)
    assert leftovers(runtime, name) == []
