"""`twin clone` (issue 11): cables from LLDP (lldpd's own JSON, as twin's nodes print it) or CSV,
and a fabric inferred from the devices' frr.conf: spines from the ASN they share, leafs and
DPUs by tier, VTEPs, tenants by L3VNI, hosts seen only by their neighbours; what cannot be
inferred is asked for, never guessed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twin import topology
from twin.base.errors import TopologyError
from twin.config.render import render_lab
from twin.interop import neighbors
from twin.interop.clone import clone

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests/golden/clone"
AIPOD = topology.load(ROOT / "topologies/aipod.yml")


def test_lldpd_json_gives_each_ports_neighbour_by_name_and_interface():
    cables, problems = neighbors.from_lldp("leaf1", (GOLDEN / "leaf1.lldp.json").read_text(), "leaf1.lldp.json")
    assert problems == [] and [(c.port, c.peer, c.peer_port) for c in cables] == [
        ("swp1", "spine1", "swp1"),
        ("swp2", "dpu1", "p0"),
    ]
    one = {
        "lldp": {
            "interface": {
                "eth1": {
                    "chassis": {"r2.example.net": {"id": {"type": "mac", "value": "x"}}},
                    "port": {"id": {"type": "mac", "value": "y"}, "descr": "eth7"},
                }
            }
        }
    }
    cables, _ = neighbors.from_lldp("r1", json.dumps(one), "r1")  # one interface: an object, not a list
    assert [(c.port, c.peer, c.peer_port) for c in cables] == [("eth1", "r2.example.net", "eth7")]
    (bad,) = neighbors.from_lldp("r1", "{", "r1.json")[1]
    assert bad.message.startswith("not JSON: Expecting property name") and (bad.line, bad.column) == (1, 2)


def test_csv_rows_and_cables_seen_from_both_ends_or_contradicting():
    cables, problems = neighbors.from_csv(
        "device,port,peer,peer_port\nleaf1,swp1,spine1,swp1\nspine1,swp1,leaf1,swp1\n# a comment\nleaf1,swp2,spine2\n",
        "links.csv",
    )
    assert [str(p) for p in problems] == ["links.csv:5: expected device,port,peer,peer_port; got 'leaf1,swp2,spine2'"]
    links, problems = neighbors.links(cables + [neighbors.Cable("leaf9", "swp1", "spine1", "swp1", "x.csv:1")])
    assert links == [(("leaf1", "swp1"), ("spine1", "swp1"))]
    assert "spine1:swp1 contradicts links.csv:2" in str(problems[0])


def pulled(d: Path, fabric=AIPOD, csv: bool = True) -> Path:
    """What an operator pulls from a network: each router's files, and a CSV of its cables."""
    for node, files in render_lab(fabric, "netns").items():
        if "frr.conf" in files:
            (d / node).mkdir(parents=True)
            (d / node / "frr.conf").write_text(files["frr.conf"])
    if csv:
        (d / "cables.csv").write_text(
            "".join(f"{link.a.node},{link.a.port},{link.b.node},{link.b.port}\n" for link in fabric.links)
        )
    return d


def test_aipod_is_cloned_with_its_kinds_asns_loopbacks_cables_vtep_tier_and_tenants(tmp_path):
    c = clone(pulled(tmp_path / "prod"), name="copy")
    fabric = topology.load_document(c.doc, c.source)
    for n, node in AIPOD.nodes.items():
        got = fabric.nodes[n]
        assert (got.kind, got.asn, got.loopback) == (node.kind, node.asn, node.loopback), n
        assert {(p.name, p.peer_node, p.peer_port) for p in got.ports} == {
            (p.name, p.peer_node, p.peer_port) for p in node.ports
        }, n
    assert c.doc["vtep"] == "dpu" and {t: (x.vrf, x.l3vni) for t, x in fabric.tenants.items()} == {
        "red": ("red", 10100),
        "blue": ("blue", 10200),
    }
    notes = "\n".join(c.notes)
    assert "spines: spine1, spine2, the BGP devices sharing AS 65000 (RFC 7938)" in notes
    assert "leafs: leaf1, leaf2 (1 tier(s) below the spines)" in notes
    assert "hosts (seen by their neighbours, no config of their own): host1a, host1b, host1c, host2a" in notes
    assert "tenant red: L3VNI 10100 (vrf red on dpu1, dpu2); its segments" in notes
    assert set(c.configs.files) == {"spine1", "spine2", "leaf1", "leaf2", "dpu1", "dpu2"}


def test_what_cannot_be_inferred_is_asked_for(tmp_path):
    small = topology.load(ROOT / "tests/e2e/small.yml")  # one spine: no ASN is shared
    d = pulled(tmp_path / "small", small)
    with pytest.raises(TopologyError) as e:
        clone(d, name="copy")
    assert (
        "cannot tell the spines: no ASN is shared by devices not cabled to each other; name them: "
        "--role SPINE=spine (BGP devices: dpu1, leaf1, leaf2, spine1)" in str(e.value)
    )
    c = clone(d, name="copy", roles={"spine1": "spine"})
    assert {n: s["kind"] for n, s in c.doc["nodes"].items()} == {
        "spine1": "spine",
        "leaf1": "leaf",
        "leaf2": "leaf",
        "dpu1": "dpu",
        "host1": "host",
    }
    with pytest.raises(TopologyError) as e:
        clone(d, roles={"spine1": "spine", "leaf1": "switch", "x9": "leaf"}, name="Bad Name")
    text = str(e.value)
    assert "--role: leaf1: unknown kind 'switch'" in text and "--role: x9: no device 'x9'" in text
    assert "'Bad Name'" in text and "give --name" in text
    (d / "cables.csv").unlink()
    with pytest.raises(TopologyError, match="no neighbour data: expected <device>/lldp.json"):
        clone(d, name="copy", roles={"spine1": "spine"})
