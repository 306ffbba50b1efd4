"""Twin's designs out as NVUE and back (issues 24, 44): every shipped topology exported to NVUE, read
back and built gives what twin's own rendering gives, node by node, on both VRF backends, as shipped
and with MTUs and BGP timers of their own (the topology's `mtu`, `host_mtu` and a link's own, the timers
`twin up` scales for a busy host): the same kernel steps and bindings (the loopback set by the kernel,
as ifupdown2 does, where twin's frr.conf sets it through zebra), the same MTU on every device, each one
twin sets declared as NVUE's `link.mtu`, the same nftables, service, daemons (watchfrr's timeouts too)
and vtysh files, and the same FRR configuration line for line in each instance and address family
(comments, interface descriptions and the layout of blocks aside), BGP timers among them. And whatever
design twin takes, its export holds no key NVUE's schema refuses or twin stores without running it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.fabrics import designs
from tests.unit.fuzzing import fuzz
from twin import nvue, topology
from twin.config import overlay, render
from twin.config.steps import Step
from twin.nvue import mtu as nvue_mtu
from twin.nvue import tree as nv_tree
from twin.nvue.export import export_node, exported
from twin.topology.model import BgpTimers, Fabric

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = sorted(p.name for p in (ROOT / "topologies").glob("*.yml"))
_LO = re.compile(r"^interface lo\n((?: .*\n)*?)exit", re.M)
SCALED = BgpTimers(keepalive=6, hold=18)  # what `twin up` gives a lab on a host twice too busy for it


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


def mtus(fabric: Fabric, node: str, steps: list[Step]) -> dict[str, int]:
    """Every device's MTU as the node's kernel has it once `steps` ran: a port's link's (the veth is made
    with it), then what a step makes a device with or sets."""
    out = {p.name: p.mtu for p in fabric.nodes[node].ports}
    out.update({s.dev: s.args["mtu"] for s in steps if "mtu" in s.args})
    return out


def own_mtus(doc: dict) -> dict:
    """A topology document with MTUs of its own: fabric 9100, hosts 1500, its first link 9216 and its last
    (a host's, in every shipped topology) 1400."""
    doc = dict(doc, defaults={**(doc.get("defaults") or {}), "mtu": 9100, "host_mtu": 1500})
    links = [dict(x) if isinstance(x, dict) else {"endpoints": x} for x in doc["links"]]
    links[0]["mtu"], links[-1]["mtu"] = 9216, 1400
    return dict(doc, links=links)


def shipped(name: str, variant: str) -> Fabric:
    if variant == "as shipped":
        return topology.load(ROOT / "topologies" / name)
    doc = own_mtus(yaml.safe_load((ROOT / "topologies" / name).read_text()))
    return topology.load_document(doc, name).model_copy(update={"timers": SCALED})


def shaped(steps: list) -> set[str]:
    """The ports a workload's rate limit shapes: no traffic classes there."""
    return {s.dev for s in steps if s.op in ("tbf", "ingress")}


@pytest.mark.parametrize("variant", ["as shipped", "own MTUs and timers"])
@pytest.mark.parametrize("backend", ["netns", "vrf"])
@pytest.mark.parametrize("name", TOPOLOGIES)
def test_every_shipped_topology_round_trips_through_nvue(name, backend, variant, tmp_path):
    fabric = shipped(name, variant)
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
        # the same steps, and every cabled port's traffic classes (RoCE QoS off: no filter, twin.nvue.qos)
        classes = [s for s in x.plane.steps if s.op == "tc-batch"]
        assert [s for s in x.plane.steps if s.dev != "lo" and s not in classes] == [
            s for s in twin_steps if s.dev != "lo"
        ], node
        assert {s.args["port"] for s in classes} == {p.name for p in fabric.nodes[node].ports} - shaped(twin_steps)
        assert x.plane.bindings == overlay.bindings(fabric, node, backend), node
        assert (
            lo_addresses(theirs, x.plane.steps)
            == lo_addresses(mine, twin_steps)
            == {f"{fabric.nodes[node].loopback}/32"}
        ), node
        # every MTU twin sets (each port's, each segment's bridge and VXLAN device) is the export's, and NVUE
        # declares it: each port's and SVI's link.mtu is the MTU twin gives that device
        kernel = mtus(fabric, node, twin_steps)
        assert mtus(fabric, node, x.plane.steps) == kernel, node
        where = nvue_mtu.places(x.plane, backend)
        declared = {
            where[n][1]: m for n, i in files[node].tree["interface"].items() if (m := nv_tree.get(i, ("link", "mtu")))
        }
        assert {p.name for p in fabric.nodes[node].ports} <= set(declared), node
        assert declared == {d: kernel[d] for d in declared}, node
        assert x.plane.qos is None and set(x.plane.kfiles) == {s.dev for s in classes}, "no RoCE QoS, no ACL"
        assert not any("filter add" in t for t in x.plane.kfiles.values()), "every frame in traffic class 0"
        same = set(mine) - {"frr.conf", "interfaces.sh", "daemons"}
        assert {f: theirs[f] for f in same} == {f: mine[f] for f in same}, node
        # an NVUE node's daemons are a switch's whatever it holds yet (issues 33, 44): staticd, bfdd, ospfd, zebra -n
        enabled = [
            {ln.split("=")[0] for ln in f["daemons"].splitlines() if ln.endswith("=yes")} for f in (mine, theirs)
        ]
        assert enabled[1] - enabled[0] <= {"staticd", "bfdd", "ospfd"} and enabled[0] <= enabled[1], node
        assert (' -n"' in theirs["daemons"]) == (backend == "netns"), node
        watchfrr = [
            [ln for ln in f["daemons"].splitlines() if ln.startswith("watchfrr_options")] for f in (mine, theirs)
        ]
        assert watchfrr[0] == watchfrr[1], node
        # twin's own rendering spares a leaf's spines the routes they would drop (issue 35: FRR's CPU on a
        # 256-node Clos) and sends a new session's first routes sooner (issue 46: coalesce-time, but on a host
        # busy for the lab); NVUE has no such knobs, so a node NVUE configures does as Cumulus does
        ours = {
            x
            for x in frr_lines(mine["frr.conf"])
            if not x[2].endswith(" sender-as-path-loop-detection") and not x[2].startswith("coalesce-time ")
        }
        assert frr_lines(theirs["frr.conf"]) == ours, node
        assert ("coalesce-time " in mine["frr.conf"]) == (fabric.timers is None), node
        assert (" neighbor fabric timers 6 18\n" in theirs["frr.conf"]) == (fabric.timers == SCALED), node
    if name == "dpu-services.yml":
        assert any("DPU services" in n and "stay the topology's" in n for n in notes)


@st.composite
def designs_with_mtus(draw) -> tuple[dict, BgpTimers | None]:
    """Any design twin takes (`tests.unit.fabrics.designs`), with MTUs of its own (the topology's, some
    links' own: a host's fits in VXLAN over the fabric's) and, maybe, BGP timers scaled as `twin up`
    scales them (3 k / 9 k s, k up to 20)."""
    doc = draw(designs())
    fab = draw(st.integers(1330, 9216))
    doc["defaults"] = {"mtu": fab, "host_mtu": draw(st.integers(1280, fab - 50))}
    own = {True: st.none() | st.integers(1280, fab - 50), False: st.none() | st.integers(fab, 9216)}
    doc["links"] = [
        {"endpoints": x, **({"mtu": m} if (m := draw(own[x[1].startswith("h")])) else {})} for x in doc["links"]
    ]
    k = draw(st.none() | st.integers(2, 20))
    return doc, BgpTimers(keepalive=3 * k, hold=9 * k) if k else None


@fuzz(60)
@given(designs_with_mtus())
def test_no_design_exports_a_key_nvue_refuses_or_twin_only_stores(drawn):
    doc, timers = drawn
    fabric = topology.load_document(doc, "hypothesis.yml").model_copy(update={"timers": timers})
    for node in exported(fabric):
        tree = export_node(fabric, node)
        _, found = nv_tree.check(tree)
        assert [str(f) for f in found] == [], node  # neither refused nor stored, not emulated
        nodes, notes = nvue.build({node: nvue.from_tree(tree, f"{node}/startup.yaml")}, fabric, "netns")
        x = nodes[node]
        assert notes == [] and mtus(fabric, node, x.plane.steps) == mtus(
            fabric, node, overlay.plan(fabric, node, "netns")
        ), node
        runs = {
            ln.strip() for ln in x.files["frr.conf"].splitlines() if re.fullmatch(r" neighbor \S+ timers \d+ \d+", ln)
        }
        assert runs == ({f"neighbor fabric timers {timers.keepalive} {timers.hold}"} if timers else set()), node


def test_the_export_of_a_lab_carries_the_timers_twin_up_scaled_for_its_host(tmp_path, monkeypatch):
    """`twin export LAB --format nvue`: the lab's recorded design, with the BGP timers `twin up` gave it on a
    busy host, written as NVUE holds them (each peer group's keepalive and hold)."""
    from click.testing import CliRunner

    from twin.cli import main
    from twin.lifecycle import state

    monkeypatch.setenv("TWIN_HOME", str(tmp_path / "home"))
    fabric = topology.load(ROOT / "topologies" / "dpu-services.yml").model_copy(update={"timers": SCALED})
    state.save(state.labdir("hx-busy"), state.LabState(name="hx-busy", topology="dpu-services.yml", image="x"), fabric)
    res = CliRunner().invoke(main, ["export", "hx-busy", "--format", "nvue", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    for node, kinds_ in (("dpu1", ["fabric"]), ("spine1", ["fabric", "internet"])):  # spine1 is cabled to inet
        tree = nvue.read(tmp_path / "out" / node / nvue.STARTUP).tree
        groups = tree["vrf"]["default"]["router"]["bgp"]["peer-group"]
        assert {g: p["timers"] for g, p in groups.items()} == {
            g: {"connection-retry": 2, "keepalive": 6, "hold": 18} for g in kinds_
        }, node
