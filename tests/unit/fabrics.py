"""Topologies the unit tests build rather than keep as files."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import strategies as st

from twin.topology import Fabric, load


def clos(tmp_path: Path, spines: int, leafs: int, name: str = "big") -> Fabric:
    """An eBGP Clos of `spines` x `leafs`, every leaf cabled to every spine (loopbacks from a /22:
    up to 1,024 nodes)."""
    nodes = {f"spine{i}": {"kind": "spine"} for i in range(1, spines + 1)}
    nodes |= {f"leaf{i}": {"kind": "leaf"} for i in range(1, leafs + 1)}
    links = [[f"spine{s}", f"leaf{leaf}"] for leaf in range(1, leafs + 1) for s in range(1, spines + 1)]
    f = tmp_path / f"{name}.yml"
    f.write_text(
        yaml.safe_dump({"name": name, "defaults": {"loopback_pool": "10.255.0.0/22"}, "nodes": nodes, "links": links})
    )
    return load(f)


@st.composite
def designs(draw) -> dict:
    """A valid topology document of any shape twin designs: 1-3 spines, 1-4 leafs, VTEPs on DPUs
    (1-3, each dual- or single-homed) or on the leafs, drained nodes, 0-3 tenants with 1-3
    segments and their hosts anywhere (overlapping address plans, as the default lab's)."""
    spines, leafs = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    nodes = {f"spine{i}": {"kind": "spine"} for i in range(1, spines + 1)}
    nodes |= {f"leaf{i}": {"kind": "leaf"} for i in range(1, leafs + 1)}
    links = [[f"spine{s}", f"leaf{x}"] for x in range(1, leafs + 1) for s in range(1, spines + 1)]
    vtep = draw(st.sampled_from(["dpu", "leaf"]))
    if vtep == "dpu":
        for i in range(1, draw(st.integers(1, 3)) + 1):
            nodes[f"dpu{i}"] = {"kind": "dpu"}
            ups = draw(st.sets(st.integers(1, leafs), min_size=1, max_size=2))
            links += [[f"leaf{x}", f"dpu{i}"] for x in sorted(ups)]
    for name in draw(st.sets(st.sampled_from(sorted(nodes)), max_size=1)):
        nodes[name]["drain"] = True
    vteps = sorted(n for n, x in nodes.items() if x["kind"] == vtep)
    tenants: dict = {}
    overlap = draw(st.booleans())  # every tenant with the same address plan, as the default lab's
    for t in range(1, draw(st.integers(0, 3)) + 1):
        plan = 1 if overlap else t
        segs = {
            f"s{k}": {"subnet": f"10.{k}.{plan}.0/24", "l2vni": 1000 * t + k}
            for k in range(1, draw(st.integers(1, 3)) + 1)
        }
        attachments = []
        for h in range(draw(st.integers(1, 4))):
            host, seg = f"h{t}x{h}", draw(st.sampled_from(sorted(segs)))
            nodes[host] = {"kind": "host"}
            links.append([draw(st.sampled_from(vteps)), host])
            attachments.append({"host": host, "segment": seg, "address": f"10.{seg[1:]}.{plan}.{10 + h}"})
        tenants[f"t{t}"] = {"l3vni": 1000 * t, "segments": segs, "attachments": attachments}
    return {"name": "hyp", "vtep": vtep, "nodes": nodes, "links": links, "tenants": tenants}
