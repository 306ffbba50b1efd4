"""An EVPN lab on a BGP-unnumbered Clos, as its authors write it (issue 36; tests/e2e/labs/evpn-unnumbered):
eBGP unnumbered underlay (RFC 5549: IPv4 routes over IPv6 next hops, ECMP over both spines), the
spines iBGP route reflectors of the overlay for leafs that speak AS 65000 through `local-as`, two
L2VNIs whose devices the leafs make by `exec` (brctl, ip), hosts configured by `exec` (one with an
interfaces file and ifup). It ended `twin up` in an internal error (a TypeError comparing the
routers' RIBs); it comes up converged and its hosts reach each other over both VNIs."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin.lab import Lab

pytestmark = pytest.mark.e2e

NAME = "t-by-evpnun"
LAB = ROOT / "tests/e2e/labs/evpn-unnumbered"


@pytest.fixture(scope="module")
def lab(tmp_path_factory, runtime, node_image):
    d = tmp_path_factory.mktemp("evpnun") / "lab"
    shutil.copytree(LAB, d)
    p = twin_cli("up", str(d / "evpn-l2.clab.yml"), "--name", NAME, "--image", node_image)
    try:
        yield p
    finally:
        twin_cli("down", NAME)
    assert leftovers(runtime, NAME) == []


def test_it_comes_up_converged_without_an_internal_error(lab):
    assert lab.returncode == 0, lab.stderr[-3000:]
    assert "internal error" not in lab.stderr
    assert f"lab {NAME} is up: 8 nodes, 16 adjacencies of 4 routers up" in lab.stdout
    assert not [line for line in lab.stderr.splitlines() if "exec `" in line], lab.stderr  # brctl, ifup ran
    assert (
        "twin's node image instead of quay.io/frrouting/frr:9.1.0 (spine1, spine2, leaf1, leaf2); "
        "wbitt/network-multitool:alpine-extra (h1, h2, h3, h4): not on this engine"
    ) in lab.stderr


def test_the_overlay_is_ibgp_to_the_route_reflectors_over_an_ecmp_unnumbered_underlay(lab):
    leaf1 = Lab.open(NAME).node("leaf1")
    doc = json.loads(leaf1.vtysh("show bgp l2vpn evpn summary json"))
    peers = doc["peers"]
    assert {p: (v["state"], v["remoteAs"], v["localAs"]) for p, v in peers.items()} == {
        "10.0.0.1": ("Established", 65000, 65000),
        "10.0.0.2": ("Established", 65000, 65000),
    }
    route = leaf1.run(["ip", "-j", "route", "show", "10.0.0.12/32"]).stdout
    hops = json.loads(route)[0]["nexthops"]
    assert sorted(h["dev"] for h in hops) == ["eth1", "eth2"]  # ECMP over both spines ...
    assert all(h["via"]["host"].startswith("fe80:") for h in hops), hops  # ... to IPv6 next hops (RFC 5549)
    vnis = json.loads(leaf1.vtysh("show evpn vni json"))
    assert {v: (e["type"], e["numRemoteVteps"]) for v, e in vnis.items()} == {"100": ("L2", 1), "200": ("L2", 1)}


@pytest.mark.parametrize(
    "src,dst", [("h1", "192.168.100.13"), ("h3", "192.168.100.11"), ("h2", "192.168.200.14"), ("h4", "192.168.200.12")]
)
def test_hosts_reach_each_other_over_each_l2vni(lab, src, dst):
    res = Lab.open(NAME).node(src).run(["ping", "-c2", "-W2", dst])
    assert res.ok and " 0% packet loss" in res.stdout, res.stdout + res.stderr


def test_the_vnis_stay_apart_and_its_routers_pass_verify(lab):
    node = Lab.open(NAME).node("h1")
    node.run(["ip", "addr", "add", "192.168.200.99/24", "dev", "eth1"]).check()  # h1 into VNI 200's subnet
    try:
        assert not node.run(["ping", "-c1", "-W1", "192.168.200.14"]).ok, "VNI 100 reached a host of VNI 200"
    finally:
        node.run(["ip", "addr", "del", "192.168.200.99/24", "dev", "eth1"]).check()
    v = twin_cli("verify", NAME, "--json")
    assert v.returncode == 0, v.stdout[-2000:]
    checks = {c["name"]: c for c in json.loads(v.stdout)["checks"]}
    assert checks["bgp leaf1 10.0.0.1"]["passed"] and checks["bgp spine2 eth2"]["passed"]
