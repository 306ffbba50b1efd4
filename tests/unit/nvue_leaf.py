"""The NVUE samples' leaf01 as unit tests change it: its startup.yaml tree with patches laid over it,
built on the samples' fabric (tests/e2e/nvue/samples.yml) into what the node would run."""

from __future__ import annotations

import copy
from pathlib import Path

from twin import nvue, topology
from twin.nvue import tree as nv_tree
from twin.nvue.configs import NvueNode
from twin.nvue.load import NvueFile

ROOT = Path(__file__).resolve().parents[2]
FABRIC = topology.load(ROOT / "tests/e2e/nvue/samples.yml")
LEAF = nvue.read(ROOT / "tests/golden/interop/nvue/samples/leaf01/startup.yaml").tree


def tree(*extras: dict, base: dict = LEAF) -> dict:
    """`base` (leaf01's tree) with each of `extras` patched over it, in order."""
    t = copy.deepcopy(base)
    for e in extras:
        nv_tree.patch(t, e)
    return t


def built(*extras: dict) -> tuple[NvueFile, NvueNode]:
    """leaf01 with `extras`: its file and what it runs (TopologyError: every problem)."""
    nf = nvue.from_tree(tree(*extras), "leaf01/startup.yaml")
    return nf, nvue.build({"leaf01": nf}, FABRIC, "netns")[0]["leaf01"]
