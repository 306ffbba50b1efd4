"""Topologies the unit tests build rather than keep as files."""
from __future__ import annotations

from pathlib import Path

import yaml

from twin.topology import Fabric, load


def clos(tmp_path: Path, spines: int, leafs: int, name: str = "big") -> Fabric:
    """An eBGP Clos of `spines` x `leafs`, every leaf cabled to every spine (loopbacks from a /22:
    up to 1,024 nodes)."""
    nodes = {f"spine{i}": {"kind": "spine"} for i in range(1, spines + 1)}
    nodes |= {f"leaf{i}": {"kind": "leaf"} for i in range(1, leafs + 1)}
    links = [[f"spine{s}", f"leaf{leaf}"] for leaf in range(1, leafs + 1) for s in range(1, spines + 1)]
    f = tmp_path / f"{name}.yml"
    f.write_text(yaml.safe_dump({"name": name, "defaults": {"loopback_pool": "10.255.0.0/22"},
                                 "nodes": nodes, "links": links}))
    return load(f)
