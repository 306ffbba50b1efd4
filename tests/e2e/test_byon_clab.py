"""containerlab labs in (issue 11): containerlab's own examples, run by `twin up LAB.clab.yml`.
frr01 (3 FRR routers on OSPF with their own frr.conf/daemons bound in, 3 Linux PCs set up by
`exec`) comes up converged and the PCs reach each other; clos01 (SR Linux leafs and spine)
is refused with the way out, and with that role mapping comes up as a converged twin fabric."""
from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin.lab import Lab

pytestmark = pytest.mark.e2e

CLAB = ROOT / "tests/golden/interop/containerlab"
PCS = {"pc1": "192.168.11.2", "pc2": "192.168.12.2", "pc3": "192.168.13.2"}


def test_frr01_comes_up_converged_and_its_pcs_reach_each_other(runtime, node_image):
    name = "t-by-frr01"
    p = twin_cli("up", str(CLAB / "frr01/frr01.clab.yml"), "--name", name, "--image", node_image)
    try:
        assert p.returncode == 0, p.stderr
        assert "6 adjacencies of 3 routers up" in p.stdout and "(3 nodes run yours)" in p.stdout
        assert "note: node names as twin writes them (lowercase): PC1 is pc1, PC2 is pc2, PC3 is pc3" in p.stderr
        assert "instead of quay.io/frrouting/frr:10.5.1 (router1, router2, router3)" in p.stderr
        lab = Lab.open(name)
        assert lab.node("router1").vtysh("show running-config").count("network 192.168.") == 3  # its own file
        for src, ip in PCS.items():
            for dst, addr in PCS.items():
                if src != dst:
                    res = lab.node(src).run(["ping", "-c1", "-W2", addr])
                    assert res.ok, f"{src} -> {dst} ({addr}): {res.stdout}{res.stderr}"
        v = twin_cli("verify", name, "--json")
        assert v.returncode == 0, v.stdout[-2000:]
        checks = {c["name"]: c for c in json.loads(v.stdout)["checks"]}
        assert checks["ospf router1 eth1"]["data"] == {"state": checks["ospf router1 eth1"]["data"]["state"],
                                                     "peer": "router2:eth1", "vrf": "default"}
        assert "ospf router1 eth3" not in checks          # passive, towards PC1
        assert checks["daemons router1"]["data"]["expected"] == ["ldpd", "ospfd", "zebra"]   # its daemons file
    finally:
        twin_cli("down", name)
    assert leftovers(runtime, name) == []


def test_clos01_is_refused_with_the_way_out_then_comes_up_with_the_role_mapping(runtime, node_image):
    name = "t-by-clos01"
    clos = str(CLAB / "clos01.clab.yml")
    p = twin_cli("up", clos, "--name", name, "--image", node_image)
    assert p.returncode == 1 and leftovers(runtime, name) == []
    assert "3 node(s) of kinds twin cannot run: leaf1 (nokia_srlinux), leaf2 (nokia_srlinux), spine " \
           "(nokia_srlinux); map them to twin's kinds, and twin renders their day-0 config: " \
           "--role leaf1=leaf,leaf2=leaf,spine=spine" in p.stderr
    p = twin_cli("up", clos, "--name", name, "--image", node_image, "--role", "leaf1=leaf,leaf2=leaf",
                 "--role", "spine=spine")
    try:
        assert p.returncode == 0, p.stderr
        assert "5 nodes, 4 BGP sessions Established" in p.stdout
        st = json.loads(twin_cli("status", name, "--json", check=True).stdout)
        assert st["healthy"] and {r["node"]: r["kind"] for r in st["nodes"]} == {
            "leaf1": "leaf", "leaf2": "leaf", "spine": "spine", "client1": "host", "client2": "host"}
        lab = Lab.open(name)
        assert {p.name for p in lab.fabric.nodes["spine"].ports} == {"e1-1", "e1-2"}   # names as given
        assert twin_cli("verify", name).returncode == 0
    finally:
        twin_cli("down", name)
    assert leftovers(runtime, name) == []
