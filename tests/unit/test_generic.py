"""Routers of the user's own configs (issue 11): what an frr.conf declares, read as FRR reads it,
the adjacencies a router must have up (only where the far end runs the same protocol), its
daemons, FRR's JSON of each protocol, and the topology's router kind with `exec`."""

from __future__ import annotations

from pathlib import Path

import pytest

from twin import topology
from twin.base.errors import TopologyError
from twin.intent import Intent, frrconf
from twin.intent.generic import daemons_enabled, daemons_for
from twin.runtime import frr

ROOT = Path(__file__).resolve().parents[2]
FRR01 = ROOT / "tests/golden/interop/containerlab/frr01"


def test_an_ospf_config_with_network_statements_and_a_passive_interface():
    c = frrconf.parse((FRR01 / "router1" / "frr.conf").read_text())
    assert c.hostname == "router1" and c.routers == {"ospf"}
    assert c.ospf_interfaces() == {
        ("eth1", "default"): False,
        ("eth2", "default"): False,
        ("eth3", "default"): True,
    }  # lo is in no network statement
    assert c.addresses()["192.168.1.1"] == "eth1"


def test_bgp_instances_neighbors_groups_shutdowns_and_evpn():
    c = frrconf.parse("""\
router bgp 65001
 bgp router-id 10.0.0.1
 neighbor fabric peer-group
 neighbor fabric remote-as external
 neighbor swp1 interface peer-group fabric
 neighbor 10.0.0.3 remote-as 65003
 neighbor 10.0.0.3 shutdown
 neighbor off peer-group
 neighbor off shutdown
 neighbor 10.0.0.4 peer-group off
 address-family ipv4 unicast
  network 10.0.0.1/32
 exit-address-family
exit
!
router bgp 65001
 address-family l2vpn evpn
  advertise-all-vni
  vni 10101
   route-target import 1:1
  exit-vni
  route-target export 2:2
 exit-address-family
exit
router bgp 65001 vrf red
 address-family l2vpn evpn
  route-target import 65000:999
 exit-address-family
exit
vrf red
 vni 10100
exit-vrf
""")
    default, red = c.bgp
    assert (default.asn, default.router_id, default.networks) == (65001, "10.0.0.1", ["10.0.0.1/32"])
    assert [n.name for n in default.active()] == ["swp1"] and default.neighbors["swp1"].interface
    assert default.advertise_all_vni and default.vni_rts == {10101: {"import": ["1:1"]}}
    assert default.rts == {"export": ["2:2"]}
    assert red.vrf == "red" and red.rts == {"import": ["65000:999"]} and c.vrfs == {"red": 10100}
    assert daemons_for(c) == ["bgpd"]


def topo(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "t.yml"
    p.write_text(text)
    return p


LAB = """\
name: g
nodes:
  r1: {kind: router}
  r2: {kind: router}
  r3: {kind: router}
  h1: {kind: host, exec: ["ip addr add 10.9.0.2/24 dev eth1"]}
links:
  - [r1, r2]
  - [r1, r3]
  - [h1, r1]
"""


def test_igp_adjacencies_are_expected_only_where_the_far_end_runs_the_protocol(tmp_path):
    fabric = topology.load(topo(tmp_path, LAB))
    assert {p.name: p.role for p in fabric.nodes["r1"].ports} == {"eth1": "plain", "eth2": "plain", "eth3": "access"}
    assert fabric.nodes["h1"].exec == ("ip addr add 10.9.0.2/24 dev eth1",) and fabric.sessions() == []
    ospf = "interface {p}\n ip address {a}/30\n ip ospf area 0\n"
    files = {
        "r1": {
            "frr.conf": ospf.format(p="eth1", a="10.0.0.1")
            + ospf.format(p="eth2", a="10.0.0.5")
            + "interface eth3\n ip ospf area 0\n ip ospf passive\nrouter ospf\n"
            + "router bgp 1\n neighbor 10.0.0.2 remote-as 2\n",
            "daemons": "ospfd=yes\n",
        },
        "r2": {"frr.conf": ospf.format(p="eth1", a="10.0.0.2") + "router ospf\n", "daemons": "ospfd=yes\nbgpd=yes\n"},
        "r3": {"frr.conf": "interface eth1\n ip address 10.0.0.6/30\n", "daemons": ""},  # no OSPF at its end
    }
    g = Intent(fabric, files).generic
    assert [str(a) for a in g["r1"].adjacencies] == [
        "r1: BGP neighbor 10.0.0.2 to r2:eth1",
        "r1: OSPF on eth1 to r2:eth1",
    ]
    assert g["r1"].daemons == ("ospfd", "zebra")
    assert g["r1"].notes == ("r1: its frr.conf has BGP (10.0.0.2) but its daemons file does not enable bgpd",)
    assert [str(a) for a in g["r2"].adjacencies] == ["r2: OSPF on eth1 to r1:eth1"]
    assert g["r3"].adjacencies == () and g["r3"].daemons == ("zebra",)


def test_exec_entries_are_command_lines_and_routers_link_to_any_frr_node(tmp_path):
    with pytest.raises(TopologyError, match=r"t.yml:6: nodes.h1.exec\[1\]: must be text; got 7"):
        topology.load(topo(tmp_path, LAB.replace('"ip addr add 10.9.0.2/24 dev eth1"]', '"ip link", 7]')))
    bad = LAB.replace('exec: ["ip addr add 10.9.0.2/24 dev eth1"]', 'exec: ["echo \'unclosed", " "]') + "  - [h1, h1]\n"
    with pytest.raises(TopologyError) as e:
        topology.load(topo(tmp_path, bad))
    text = str(e.value)
    assert 'nodes.h1.exec[0]: "echo \'unclosed" cannot be split into words (No closing quotation)' in text
    assert "nodes.h1.exec[1]: ' ' is not a command" in text
    assert "links[3].endpoints: both ends are on h1" in text
    mixed = LAB.replace("  r3: {kind: router}", "  r3: {kind: spine}\n  l1: {kind: leaf}") + "  - [r3, l1]\n"
    ok = topology.load(topo(tmp_path, mixed))  # a spine links to a router as well as to its leaf
    assert {p.name: p.role for p in ok.nodes["r3"].ports} == {"swp1": "plain", "swp2": "fabric"}


def test_daemons_files_and_frrs_json_of_each_protocol():
    assert daemons_enabled("bgpd=yes\nospfd=no\n isisd=yes\n#ripd=yes\n") == ["bgpd", "isisd", "zebra"]
    ospf = {
        "default": {
            "vrfName": "default",
            "neighbors": {
                "10.10.10.2": [
                    {"nbrState": "2-Way/DROther", "ifaceName": "eth1:10.0.0.1"},
                    {"nbrState": "Full/DR", "ifaceName": "eth1:10.0.0.1"},
                ]
            },
        }
    }
    assert frr.adjacency_states("ospf", ospf) == {("default", "eth1"): "Full/DR"}
    assert frr.adjacency_states("ospf6", {"neighbors": [{"interfaceName": "eth1", "state": "ExStart"}]}) == {
        ("default", "eth1"): "ExStart"
    }
    isis = {"areas": [{"area": "T", "circuits": [{"interface": "eth1", "state": "Up"}]}]}
    assert frr.adjacency_states("isis", isis) == {("default", "eth1"): "Up"}
    bgp = {
        "default": {"vrfId": 0, "eth1": {"bgpState": "Established"}, "10.0.0.9": {"bgpState": "Active"}},
        "blue": {"vrfName": "blue", "10.9.9.9": {"bgpState": "Idle"}},
    }
    assert frr.adjacency_states("bgp", bgp) == {
        ("default", "eth1"): "Established",
        ("default", "10.0.0.9"): "Active",
        ("blue", "10.9.9.9"): "Idle",
    }


class _Dump:
    """Routes as pyroute2 hands them out (measured): an IPv4 route over BGP unnumbered has its IPv6
    next hop as RTA_VIA, a {family, addr} mapping, in each hop of its multipath."""

    def __init__(self, routes: list[dict]):
        self.routes = routes

    def route(self, cmd: str) -> list[dict]:
        assert cmd == "dump"
        return self.routes


def _via(addr: str, oif: int) -> dict:
    return {"gateway": None, "via": {"family": 10, "addr": addr}, "oif": oif}


def test_a_rib_of_ecmp_routes_over_ipv6_next_hops_is_compared_by_address_and_port():
    from twin.lifecycle.generic import RibWatch
    from twin.runtime import observe

    ecmp = {
        "family": 2,
        "table": 254,
        "dst": "10.0.0.21",
        "dst_len": 32,
        "proto": 186,
        "multipath": [_via("fe80::a8c1:abff:fe00:2", 3), _via("fe80::a8c1:abff:fe00:1", 2)],
    }
    single = {
        "family": 2,
        "table": 254,
        "dst": "10.0.0.22",
        "dst_len": 32,
        "proto": 186,
        "via": {"family": 10, "addr": "fe80::1"},
        "oif": 2,
    }
    rib = observe.rib(_Dump([ecmp, single]))
    assert rib == {
        (2, 254, "10.0.0.21", 32, 186, (("fe80::a8c1:abff:fe00:1", 2), ("fe80::a8c1:abff:fe00:2", 3))),
        (2, 254, "10.0.0.22", 32, 186, (("fe80::1", 2),)),
    }
    watch = RibWatch(quiet=0)
    assert watch.missing("leaf1", _Dump([ecmp, single])) == []  # the barrier's look at a router (issue 36)
    moved = {**single, "via": {"family": 10, "addr": "fe80::2"}}
    assert observe.rib(_Dump([ecmp, moved])) != rib  # a next hop that moved is a change


def test_remote_vteps_of_either_frr_sort_as_addresses():
    assert frr.normalize_vni({"vni": 10, "remoteVteps": [{"ip": "10.0.0.9", "flood": "HER"}, {"ip": "10.0.0.2"}]})[
        "remoteVteps"
    ] == ["10.0.0.2", "10.0.0.9"]
    assert frr.normalize_vni({"vni": 10, "numRemoteVteps": ["10.0.0.9", "10.0.0.2"]})["remoteVteps"] == [
        "10.0.0.2",
        "10.0.0.9",
    ]


def test_a_timeout_only_on_devices_the_labs_scripts_make_says_how_to_go_on_in_one_line():
    from twin.base.errors import ConvergenceTimeout
    from twin.lifecycle.generic import after_deploy

    vni = (
        "leaf1: L3VNI 1000 of VRF red is Down in zebra (no VRF or VXLAN device of it yet: has the script that "
        "makes them run?)"
    )
    e = after_deploy(ConvergenceTimeout("convergence", 60, [vni, vni.replace("leaf1", "leaf2")]), "evpn", "lab.yml")
    assert str(e).splitlines()[0] == (
        "lab evpn waits only for VRF or VXLAN devices that its routers' configs reference and nothing of the lab makes "
        "(leaf1, leaf2): configured after deploy? `twin up lab.yml --no-wait`, then its scripts (`twin exec evpn NODE "
        "-- SCRIPT`), then `twin wait evpn`"
    )
    assert str(e).splitlines()[1].startswith("convergence not reached after 60s; still missing (2):")
    other = ConvergenceTimeout("convergence", 60, [vni, "spine1: BGP neighbor eth1 to leaf1:eth1: not up (Idle)"])
    assert after_deploy(other, "evpn", "lab.yml") is other  # something else is missing: the list as it is
