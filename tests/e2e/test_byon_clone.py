"""A twin cloned from production (issue 11): a running aipod stands in for the network; its
devices' own configs and `lldpctl -f json` of each (lldpd runs in every FRR node, as on a
switch) are all `twin clone` gets. The clone has the same fabric (kinds, ASNs, loopbacks,
cables with their port names, VTEP tier, tenants by L3VNI), comes up from those configs and
passes `twin verify`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from tests.e2e.conftest import leftovers, twin_cli
from twin.base import wait
from twin.lab import Lab

pytestmark = pytest.mark.e2e

CLONE = "t-by-clone"


def lldp_neighbours(lab: Lab, node: str) -> int:
    doc = json.loads(lab.node(node).check(["lldpctl", "-f", "json"]).stdout)
    found = doc.get("lldp", {}).get("interface") or []
    return len(found) if isinstance(found, list) else len(found.keys() if isinstance(found, dict) else [])


@pytest.fixture(scope="module")
def production(aipod, tmp_path_factory) -> Iterator[tuple[Lab, Path]]:
    """The running network (the default lab, shared with other modules: only read here) and what an
    operator pulls from it: frr.conf, daemons, LLDP per device."""
    lab = aipod
    routers = [n for n, node in lab.fabric.nodes.items() if node.runs_bgp]
    wait.until(
        lambda: [
            f"{n}: LLDP sees {lldp_neighbours(lab, n)} of {len(lab.fabric.nodes[n].fabric_ports)}"
            for n in routers
            if lldp_neighbours(lab, n) < len(lab.fabric.nodes[n].fabric_ports)
        ],
        30,
        "LLDP neighbours on every fabric port",
    )
    d = tmp_path_factory.mktemp("prod") / "pulled"
    for n in routers:
        (d / n).mkdir(parents=True)
        for f in ("frr.conf", "daemons"):
            (d / n / f).write_text((lab.dir / n / f).read_text())
        (d / n / "lldp.json").write_text(lab.node(n).check(["lldpctl", "-f", "json"]).stdout)
    yield lab, d


def test_the_clone_has_the_same_fabric_comes_up_from_its_configs_and_passes_verify(
    production, tmp_path, runtime, node_image
):
    lab, pulled = production
    out = tmp_path / "clone"
    p = twin_cli("clone", str(pulled), "-o", str(out), "--name", CLONE)
    assert p.returncode == 0, p.stderr
    assert "note: spines: spine1, spine2, the BGP devices sharing AS 65000 (RFC 7938)" in p.stderr
    assert "note: VTEPs (advertise-all-vni): dpu1, dpu2, so the fabric's VTEP tier is dpu" in p.stderr
    assert "note: tenant red: L3VNI 10100 (vrf red on dpu1, dpu2)" in p.stderr
    doc = yaml.safe_load((out / "topology.yml").read_text())
    original = lab.fabric
    routers = {n: x for n, x in original.nodes.items() if x.runs_bgp}
    assert doc["nodes"] == {n: {"kind": x.kind, "asn": x.asn, "loopback": x.loopback} for n, x in routers.items()}
    assert {frozenset(link) for link in doc["links"]} == {
        frozenset((str(link.a), str(link.b)))
        for link in original.links
        if link.a.node in routers and link.b.node in routers
    }
    assert doc["vtep"] == "dpu" and doc["tenants"] == {
        "red": {"l3vni": 10100, "segments": {}},
        "blue": {"l3vni": 10200, "segments": {}},
    }
    assert (out / "configs" / "leaf1" / "frr.conf").read_text() == (lab.dir / "leaf1" / "frr.conf").read_text()
    up = twin_cli("up", str(out / "topology.yml"), "--configs", str(out / "configs"), "--image", node_image)
    try:
        assert up.returncode == 0, up.stderr
        assert "(6 nodes run yours)" in up.stdout
        # not VTEPs in the clone (no hosts): their loopback comes from the kernel plane, as ifupdown2's would
        assert (
            f"{out / 'configs' / 'dpu1' / 'frr.conf'}: puts no 10.255.0.5/32 on lo; twin's kernel plane does"
            in up.stderr
        )
        v = twin_cli("verify", CLONE, "--json")
        assert v.returncode == 0, v.stdout[-2000:]
        checks = json.loads(v.stdout)["checks"]
        nodes = ("spine1", "spine2", "leaf1", "leaf2", "dpu1", "dpu2")
        # IPv4 and EVPN sessions, every one; every router's route to every loopback
        assert sorted(c["name"] for c in checks if c["group"] != "mtu") == sorted(
            [f"bgp {n}" for n in nodes] + [f"loopbacks {n}" for n in nodes]
        )
        assert len([c for c in checks if c["group"] == "mtu"]) == 8, "both ends of each of the 8 fabric links"
    finally:
        twin_cli("down", CLONE)
    assert leftovers(runtime, CLONE) == []
