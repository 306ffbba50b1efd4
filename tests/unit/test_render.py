"""Golden tests of the derived fabric and the rendered day-0 configs, one case per topology."""
import json
from pathlib import Path

import pytest

from twin.render import render_lab
from twin.topology import load

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "render"
CASES = {
    "aipod": "topologies/aipod.yml",
    "fabric-4x8": "topologies/fabric-4x8.yml",
    "overrides": "tests/golden/render/overrides.yml",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_configs_match_golden(case, golden, monkeypatch):
    monkeypatch.chdir(ROOT)
    fabric = load(CASES[case])
    golden(GOLDEN / case / "fabric.json", json.dumps(fabric.model_dump(), indent=2) + "\n")
    rendered = render_lab(fabric)
    for node, files in rendered.items():
        for name, text in files.items():
            golden(GOLDEN / case / node / name, text)
    # no stale golden files for nodes/files that are no longer rendered
    on_disk = {p.relative_to(GOLDEN / case).as_posix() for p in (GOLDEN / case).rglob("*") if p.is_file()}
    assert on_disk - {"fabric.json"} == {f"{n}/{f}" for n, fs in rendered.items() for f in fs}


def test_defaults_are_derived(monkeypatch):
    monkeypatch.chdir(ROOT)
    f = load("tests/golden/render/overrides.yml")
    n = f.nodes
    assert n["s1"].asn == n["s2"].asn == 64600, "spines share their tier's ASN"
    assert (n["l1"].asn, n["l2"].asn, n["d1"].asn) == (64701, 64700, 64800)
    assert n["d1"].loopback == "192.168.100.1"
    assert [n[x].loopback for x in ("s1", "s2", "l1", "l2")] == [
        "192.168.100.2", "192.168.100.3", "192.168.100.4", "192.168.100.5"], "pool skips explicit addresses"
    assert [p.name for p in n["l2"].ports] == ["swp1", "swp7", "swp2", "swp3"], "auto ports skip explicit ones"
    assert [p.name for p in n["d1"].ports] == ["p0", "p1", "pf0vf0"], "DPU: uplinks p0.., host side pf0vfN"
    mtus = {(l.a.node, l.b.node): l.mtu for l in f.links}
    assert mtus[("s1", "l1")] == 9100 and mtus[("s2", "l2")] == 1500 and mtus[("d1", "h1")] == 9000
    assert n["h1"].asn is None and n["h1"].loopback is None and n["h1"].ports[0].role == "access"


def test_sessions_and_reachability_follow_from_the_topology(monkeypatch):
    monkeypatch.chdir(ROOT)
    f = load("topologies/aipod.yml")
    assert len(f.sessions()) == 16, "one per side of each of the 8 fabric links"
    assert {str(s) for s in f.sessions("dpu1")} == {"dpu1:p0 -> leaf1", "dpu1:p1 -> leaf2"}
    # spines share an ASN, so eBGP loop prevention keeps their loopbacks from each other
    assert "spine2" not in f.expected_loopbacks("spine1")
    assert set(f.expected_loopbacks("dpu1")) == {"spine1", "spine2", "leaf1", "leaf2", "dpu2"}
