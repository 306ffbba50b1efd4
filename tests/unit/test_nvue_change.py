"""Day 2 on a lab whose nodes run NVUE, worked out without a lab (pure, on a lab directory as
`twin up --configs` leaves it): an NVUE directory becomes the kernel steps that take each node's
plane from its running startup.yaml to the new one and back (the undo), with the VNIs zebra knows
after each; an edited topology keeps the NVUE nodes' files and planes their startup.yaml's."""

from __future__ import annotations

from pathlib import Path

from twin import nvue, topology
from twin.change.declarative import TopologyChange
from twin.config import render, userconf
from twin.lifecycle import state
from twin.lifecycle.context import LabContext
from twin.nvue.change.nvue_change import NvueChange

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests/golden/interop/nvue/samples"
TOPOLOGY = ROOT / "tests/e2e/nvue/samples.yml"


def running_lab(tmp_path: Path) -> LabContext:
    """The lab directory of the samples' lab as `twin up --configs` writes it (no containers)."""
    fabric = topology.load(TOPOLOGY)
    configs = userconf.load(SAMPLES, fabric)
    nodes, _ = nvue.build(nvue.read_configs(configs), fabric, "netns")
    d = tmp_path / "lab"
    files = render.render_lab(fabric, "netns") | {n: x.files for n, x in nodes.items()}
    state.save(
        d, state.LabState(name="nvsamples", topology=str(TOPOLOGY), image="", user_files=configs.owned()), fabric
    )
    state.write_files(d, files)
    return LabContext("nvsamples", d, fabric, "netns", runtime=None)


def change_dir(tmp_path: Path, node: str, old: str, new: str) -> Path:
    d = tmp_path / "change"
    (d / node).mkdir(parents=True)
    text = (SAMPLES / node / "startup.yaml").read_text()
    assert old in text
    (d / node / "startup.yaml").write_text(text.replace(old, new, 1))
    return d


def test_an_nvue_change_is_the_kernel_steps_between_two_planes_both_ways(tmp_path):
    ctx = running_lab(tmp_path)
    d = change_dir(tmp_path, "leaf01", "          vrf: RED\n", "          vrf: BLUE\n")
    change = NvueChange.load(ctx, d, userconf.read_dir(d))
    w = change.work(ctx)
    add = [s.command() for s in w.deltas["leaf01"].add]
    assert add.index("ip -n red link del vxlan10") < add.index(
        "ip link add vxlan10 netns blue index 16777226 mtu 8950 type vxlan id 10 local 10.10.10.1 dstport 4789 "
        "nolearning tos inherit ttl 64"
    ), "VNI 10 is let go in red before blue takes it"
    assert "ip -n blue addr add 10.1.10.2/24 dev br10" in add, "the SVI's own address comes along"
    assert "leaf01: set interface.vlan10.ip.vrf BLUE" in w.plan.changes
    assert w.reload == [], "FRR's configuration is the same: only the kernel plane changes"
    assert set(w.plan.diffs["leaf01"]) == {"interfaces.sh", "nftables-blue.nft", "nftables-red.nft", "startup.yaml"}
    undo = [s.command() for s in w.undo["leaf01"].add]
    assert any(c.startswith("ip link add vxlan10 netns red") for c in undo)
    assert (w.old_vnis["leaf01"], w.vnis["leaf01"]) == ({10, 20, 4001, 4002}, {10, 20, 4002}), (
        "red has no host left on leaf01: its L3VNI is not made there"
    )
    assert "dpu1" not in w.deltas and w.files.get("dpu1") == w.old_files.get("dpu1")  # only its node


def test_an_edited_topology_keeps_the_nvue_nodes_planes(tmp_path):
    ctx = running_lab(tmp_path)
    text = TOPOLOGY.read_text().replace("      - {host: server03, segment: vlan10, address: 10.1.10.103}\n", "")
    edited = tmp_path / "edited.yml"
    edited.write_text(text)
    w = TopologyChange(topology.load(edited)).work(ctx)
    assert "rendered by twin from its NVUE configuration" in w.files["dpu1"]["frr.conf"]
    assert w.files["dpu1"]["startup.yaml"] == w.old_files["dpu1"]["startup.yaml"]
    gone = [s.command() for s in w.deltas["dpu1"].add + w.deltas["dpu1"].remove]
    assert "ip -n red link del br10" in gone and "ip -n red link set pf0vf0 nomaster" in gone
    assert "leaf01" not in w.deltas, "leaf01's plane does not change"
