"""Interop against the real engine: NVIDIA Air's samples imported and brought up converged;
a running lab exported for containerlab by its name, schema-valid, from its recorded intent."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from tests.clabschema import CLAB_SCHEMA
from tests.e2e.conftest import ROOT, leftovers, twin_cli

pytestmark = pytest.mark.e2e

AIR = ROOT / "tests/golden/interop/air"


@pytest.mark.parametrize("sample", ["demo.json", "demo.dot"])
def test_air_samples_import_and_come_up_converged(sample, tmp_path, runtime, node_image):
    name = f"t-air-{sample.split('.')[1]}"
    p = twin_cli("import", str(AIR / sample), "-o", str(tmp_path), "--name", name, check=True)
    topo = tmp_path / f"{name}.yml"
    assert f"wrote {topo}: 5 nodes, 4 links" in p.stdout
    try:
        twin_cli("up", str(topo), "--image", node_image, check=True)
        st = json.loads(twin_cli("status", name, "--json", check=True).stdout)
        assert st["healthy"] and st["missing"] == []
        rows = {r["node"]: r for r in st["nodes"]}
        assert rows["spine01"]["sessions_up"] == rows["spine01"]["sessions_expected"] == 2
        assert {rows[n]["kind"] for n in ("server01", "server02")} == {"host"}
    finally:
        twin_cli("down", name)
    assert leftovers(runtime, name) == []


def test_a_running_lab_exports_for_containerlab_by_its_name(make_lab, tmp_path):
    lab = make_lab("tests/e2e/small.yml", "t-exp")
    twin_cli("export", "t-exp", "--format", "containerlab", "-o", str(tmp_path), check=True)
    doc = yaml.safe_load((tmp_path / "t-exp.clab.yml").read_text())
    assert list(jsonschema.Draft7Validator(CLAB_SCHEMA).iter_errors(doc)) == []
    assert set(doc["topology"]["nodes"]) == set(lab.fabric.nodes)
    assert (tmp_path / "leaf1" / "frr.conf").read_text() == (lab.dir / "leaf1" / "frr.conf").read_text()
    bad = twin_cli("export", "t-nolab", "--format", "air-json", "-o", str(tmp_path))
    assert bad.returncode == 2 and "neither a topology file nor a lab here" in bad.stderr
