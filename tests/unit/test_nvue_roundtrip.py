"""Twin's designs out as NVUE and back (issue 24): every shipped topology exported to NVUE, read
back and built gives what twin's own rendering gives, node by node, on both VRF backends: the
same kernel steps and bindings (the loopback set by the kernel, as ifupdown2 does, where twin's
frr.conf sets it through zebra), the same nftables, service, daemons and vtysh files, and the
same FRR configuration line for line in each instance and address family (comments, interface
descriptions and the layout of blocks aside)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from twin import nvue, topology
from twin.config import overlay, render
from twin.nvue.export import exported

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = sorted(p.name for p in (ROOT / "topologies").glob("*.yml"))
_LO = re.compile(r"^interface lo\n((?: .*\n)*?)exit", re.M)


def frr_lines(text: str) -> set[tuple[str, str, str]]:
    """(instance, address family, line) of every configuration line; interface blocks left out."""
    out, inst, af, skip = set(), "", "", False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("!") or line in ("exit", "exit-address-family", "exit-vrf", "end"):
            skip = skip and line != "exit"
            af = "" if line == "exit-address-family" else af
            inst = "" if line in ("exit", "exit-vrf") else inst
            continue
        if raw.startswith("interface "):
            skip = True
        if skip:
            continue
        if raw.startswith(("router ", "vrf ")):
            inst = line
        elif line.startswith("address-family "):
            af = line
        else:
            out.add((inst, af, line))
    return out


def lo_addresses(files: dict[str, str], steps) -> set[str]:
    m = _LO.search(files.get("frr.conf", ""))
    zebra = set(re.findall(r"ip address (\S+)", m.group(1))) if m else set()
    return zebra | {s.args["cidr"] for s in steps if s.op == "addr" and s.dev == "lo"}


@pytest.mark.parametrize("backend", ["netns", "vrf"])
@pytest.mark.parametrize("name", TOPOLOGIES)
def test_every_shipped_topology_round_trips_through_nvue(name, backend, tmp_path):
    fabric = topology.load(ROOT / "topologies" / name)
    texts, notes = nvue.export(fabric)
    assert sorted(texts) == sorted(exported(fabric)) and texts
    files = {}
    for node, text in texts.items():
        (tmp_path / node).mkdir()
        (tmp_path / node / nvue.STARTUP).write_text(text)
        files[node] = nvue.read(tmp_path / node / nvue.STARTUP)
        assert files[node].not_emulated == [], "twin's designs need nothing NVUE's subset does not emulate"
    nodes, build_notes = nvue.build(files, fabric, backend)
    assert build_notes == []
    twin = render.render_lab(fabric, backend)
    for node, x in nodes.items():
        mine, theirs = twin[node], x.files
        twin_steps = overlay.plan(fabric, node, backend)
        assert [s for s in x.plane.steps if s.dev != "lo"] == [s for s in twin_steps if s.dev != "lo"], node
        assert x.plane.bindings == overlay.bindings(fabric, node, backend), node
        assert (
            lo_addresses(theirs, x.plane.steps)
            == lo_addresses(mine, twin_steps)
            == {f"{fabric.nodes[node].loopback}/32"}
        ), node
        same = set(mine) - {"frr.conf", "interfaces.sh", "daemons"}
        assert {f: theirs[f] for f in same} == {f: mine[f] for f in same}, node
        # an NVUE node's daemons are a switch's whatever it holds yet (issues 33, 44): staticd, bfdd, ospfd, zebra -n
        enabled = [
            {ln.split("=")[0] for ln in f["daemons"].splitlines() if ln.endswith("=yes")} for f in (mine, theirs)
        ]
        assert enabled[1] - enabled[0] <= {"staticd", "bfdd", "ospfd"} and enabled[0] <= enabled[1], node
        assert (' -n"' in theirs["daemons"]) == (backend == "netns"), node
        # twin's own rendering spares a leaf's spines the routes they would drop (issue 35: FRR's CPU on a
        # 256-node Clos); NVUE has no such knob, so a node NVUE configures sends them, as Cumulus does
        ours = {x for x in frr_lines(mine["frr.conf"]) if not x[2].endswith(" sender-as-path-loop-detection")}
        assert frr_lines(theirs["frr.conf"]) == ours, node
    if name == "dpu-services.yml":
        assert any("DPU services" in n and "stay the topology's" in n for n in notes)
