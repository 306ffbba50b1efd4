"""Clabernetes export: the Topology CR and its ConfigMaps, checked against the CRD's fields."""

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.clabschema import CLAB_SCHEMA
from twin.base.errors import TwinError
from twin.config.render import render_lab
from twin.interop import export_clabernetes
from twin.interop.clabernetes import CONFIGMAP_MAX, build_clabernetes
from twin.interop.containerlab import build_containerlab
from twin.topology import load

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests/golden/interop/clabernetes/topology.schema.json").read_text())
TOPOLOGIES = sorted(p.name for p in (ROOT / "topologies").glob("*.yml"))
IMAGE = "twin-node:test"


def validator(definition: str) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator({**SCHEMA, "$ref": f"#/definitions/{definition}"})


def manifests(topology: str, tmp_path: Path, **kw) -> list[dict]:
    fabric = load(ROOT / "topologies" / topology)
    path = export_clabernetes(fabric, render_lab(fabric), tmp_path, image=IMAGE, **kw)
    assert path.name == f"{fabric.name}.clabernetes.yml"
    return list(yaml.safe_load_all(path.read_text()))


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_manifests_match_the_crd(topology, tmp_path):
    docs = manifests(topology, tmp_path)
    *configmaps, topo = docs
    assert topo["kind"] == "Topology" and all(d["kind"] == "ConfigMap" for d in configmaps)
    for doc, definition in [(topo, "topology")] + [(c, "configmap") for c in configmaps]:
        errors = list(validator(definition).iter_errors(doc))
        assert not errors, "\n".join(f"{doc['metadata']['name']} {list(e.path)}: {e.message}" for e in errors)


def test_crd_check_can_fail(tmp_path):
    *_, topo = manifests("aipod.yml", tmp_path)
    topo["spec"]["deployment"]["filesFromConfigMap"]["leaf1"][0]["mode"] = "rw"
    topo["spec"]["definitions"] = topo["spec"].pop("definition")
    messages = sorted(e.message for e in validator("topology").iter_errors(topo))
    assert messages == [
        "'definition' is a required property",
        "'rw' is not one of ['read', 'execute']",
        "Additional properties are not allowed ('definitions' was unexpected)",
    ]


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_the_topology_is_the_containerlab_export_and_every_bind_has_its_file(topology, tmp_path):
    fabric = load(ROOT / "topologies" / topology)
    *configmaps, topo = manifests(topology, tmp_path)
    clab = build_containerlab(fabric, render_lab(fabric), image=IMAGE)
    assert topo["spec"]["definition"]["containerlab"] == clab.text()
    inner = yaml.safe_load(topo["spec"]["definition"]["containerlab"])
    assert not list(jsonschema.Draft7Validator(CLAB_SCHEMA).iter_errors(inner))
    data = {c["metadata"]["name"]: c["data"] for c in configmaps}
    mounted = {}
    for files in topo["spec"]["deployment"]["filesFromConfigMap"].values():
        for f in files:
            mounted[f["filePath"]] = data[f["configMapName"]][f["configMapPath"]]
    assert mounted == {f"{n}/{name}": text for n, fs in clab.files.items() for name, text in fs.items()}
    for name, node in inner["topology"]["nodes"].items():
        for bind in node["binds"]:
            src = bind.split(":")[0]
            assert src in mounted or any(p.startswith(src + "/") for p in mounted), f"{name}: {bind} has no file"


def test_start_script_is_executable_and_the_rest_read_only(tmp_path):
    *_, topo = manifests("aipod.yml", tmp_path)
    modes = {f["filePath"]: f["mode"] for f in topo["spec"]["deployment"]["filesFromConfigMap"]["dpu1"]}
    assert modes.pop("dpu1/twin-start.sh") == "execute"
    assert set(modes.values()) == {"read"} and "dpu1/frr.conf" in modes


def test_namespace_is_set_on_every_manifest_when_given(tmp_path):
    docs = manifests("leaf-vtep.yml", tmp_path, namespace="labs")
    assert {d["metadata"].get("namespace") for d in docs} == {"labs"}
    assert {d["metadata"].get("namespace") for d in manifests("leaf-vtep.yml", tmp_path)} == {None}


def test_a_node_whose_files_exceed_a_configmap_is_refused():
    fabric = load(ROOT / "topologies" / "leaf-vtep.yml")
    files = render_lab(fabric)
    files["spine1"]["frr.conf"] += "!" * CONFIGMAP_MAX
    with pytest.raises(TwinError, match="spine1: its files .* exceed a ConfigMap"):
        build_clabernetes(fabric, files, image=IMAGE)
