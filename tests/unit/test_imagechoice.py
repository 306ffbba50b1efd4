"""Which image each node runs (issue 36): a node's own where the engine has it (auto), its own or
nothing (own), twin's (twin); the topology's `defaults.images` and a containerlab file's images."""

from __future__ import annotations

import pytest
import yaml

from twin import topology
from twin.base.errors import TopologyError, TwinError
from twin.interop.clab_import import import_clab
from twin.lifecycle import imagechoice
from twin.runtime.base import ImageFacts

FRR, OLD, HOST = "quay.io/frrouting/frr:9.1.0", "frrouting/frr:v7.5.1", "wbitt/network-multitool:alpine-extra"


def fabric(tmp_path, images: str | None = None):
    doc = {
        "name": "own",
        "nodes": {
            "r1": {"kind": "router", "image": FRR},
            "r2": {"kind": "router", "image": OLD},
            "h1": {"kind": "host", "image": HOST},
            "h2": {"kind": "host"},
        },
        "links": [["r1", "r2"], ["h1", "r1"], ["h2", "r2"]],
    }
    if images:
        doc["defaults"] = {"images": images}
    f = tmp_path / "own.yml"
    f.write_text(yaml.safe_dump(doc))
    return topology.load(f)


FACTS = {FRR: ImageFacts(True), OLD: ImageFacts(False), HOST: ImageFacts(True, twin=True)}


def test_auto_runs_each_own_image_the_engine_has_and_says_which_it_lacks(tmp_path):
    f = fabric(tmp_path)
    c = imagechoice.resolve(f, None, lambda names: {n: FACTS[n] for n in names})
    assert c.own == {"r1": FRR, "h1": HOST} and c.starts_itself == {"r1"}  # h1's is built from twin's
    assert c.notes == [
        f"own image {HOST}: h1",
        f"own image {FRR}: r1",  # in the fabric's order
        f"twin's node image instead of {OLD} (r2): not on this engine (no registry is asked; "
        "`docker pull` or build it, then `twin up` again; --images own insists)",
    ]
    run = c.fabric(f)
    assert {n: x.image for n, x in run.nodes.items()} == {"r1": FRR, "r2": None, "h1": HOST, "h2": None}
    assert f.nodes["r2"].image == OLD  # the lab's own fabric keeps what it names


def test_own_refuses_a_missing_image_and_twin_asks_the_engine_nothing(tmp_path):
    asked = []
    with pytest.raises(TwinError) as e:
        imagechoice.resolve(fabric(tmp_path, "own"), None, lambda names: asked.append(names) or FACTS)
    assert str(e.value) == (
        f"lab 'own': --images own, but this engine has no {OLD} (r2); `docker pull IMAGE` (or "
        "`docker build -t IMAGE`), or --images auto to run twin's node image for them"
    )
    c = imagechoice.resolve(fabric(tmp_path, "own"), "twin", lambda names: asked.append(names) or FACTS)
    assert asked == [{FRR, OLD, HOST}] and c.own == {}
    assert c.notes == [
        f"every node runs twin's node image instead of {HOST} (h1); {FRR} (r1); {OLD} (r2) (--images twin)"
    ]


def test_a_bad_mode_and_a_bad_image_reference_are_refused(tmp_path):
    with pytest.raises(TopologyError) as e:
        fabric(tmp_path, "mine")
    assert "defaults.images" in str(e.value) and "'twin', 'own' or 'auto'" in str(e.value)
    f = tmp_path / "lab.clab.yml"
    f.write_text("name: bad\ntopology:\n  nodes:\n    r1: {kind: linux, image: 'Quay.io/FRR/frr:9 1'}\n")
    with pytest.raises(TopologyError) as e:
        topology.load_document(import_clab(f).doc, str(f))
    assert (
        "nodes.r1.image: image 'Quay.io/FRR/frr:9 1' is not allowed: a Docker image reference: "
        "[REGISTRY[:PORT]/]PATH[:TAG][@DIGEST]"
    ) in str(e.value)
