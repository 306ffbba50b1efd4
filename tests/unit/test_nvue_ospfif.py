"""An interface's own OSPF settings (issue 44: `interface.<name>.router.ospf`): rendered as the `ip ospf`
lines ospfd shows (read back from FRR 10.3 on a node: sorted, FRR's unshown defaults left out) in a file
of their own that only ospfd is sent (FRR 10.3's zebra -n aborts on an interface block: frr.conf holds
none); what FRR itself refuses refused with the NVUE path; the reload's two halves around frr-reload.py
(`twin.runtime.ospfdif`: what ospfd lets go before, what it takes after); verify naming what keeps an
adjacency from Full (passive on one end, the network type, MD5 authentication), on ospfd's JSON of a real
node (`tests/unit/frr/`); and the `--prove` elements of each end's own area and network type."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.unit.nvue_leaf import built, tree
from twin import nvue, topology
from twin.base.errors import TopologyError
from twin.nvue import prove as nv_prove
from twin.nvue import routing
from twin.nvue import tree as nv_tree
from twin.nvue.ospf import Port
from twin.runtime import ospfdif

ROOT = Path(__file__).resolve().parents[2]
POLICY = topology.load(ROOT / "tests/e2e/nvue/policy.yml")
UNNUMBERED = {
    "vrf": {"default": {"router": {"ospf": {"router-id": "10.10.10.1"}}}},
    "interface": {
        "lo": {"router": {"ospf": {"area": 0, "passive": "on"}}},
        "swp51": {
            "ip": {"address": {"10.10.10.1/32": {}}},
            "router": {
                "ospf": {
                    "area": 0,
                    "network-type": "point-to-point",
                    "cost": 20,
                    "priority": 1,  # FRR's default: ospfd never shows it
                    "mtu-ignore": "on",
                    "timers": {"hello-interval": 5, "dead-interval": 20, "retransmit-interval": 5},
                    "authentication": {"enable": "on", "message-digest-key": 1, "md5-key": "s3cr#t!"},
                }
            },
        },
        "swp52": {"router": {"ospf": {"enable": "off", "area": 0}}},
        "vlan10": {"router": {"ospf": {"area": "0.0.0.1", "passive": "on"}}},
    },
}


def test_an_interfaces_ospf_settings_are_ospfds_lines_in_a_file_of_their_own():
    nf, x = built(UNNUMBERED)
    assert nf.not_emulated == []
    assert x.files["ospfd-interfaces.conf"].split("\n", 1)[1] == (
        "interface br10 vrf red\n ip ospf area 0.0.0.1\n ip ospf passive\nexit\n!\n"  # an SVI: its bridge, its VRF
        "interface lo\n ip ospf area 0.0.0.0\n ip ospf passive\nexit\n!\n"
        "interface swp51\n ip ospf area 0.0.0.0\n ip ospf authentication message-digest\n ip ospf cost 20\n"
        " ip ospf dead-interval 20\n ip ospf hello-interval 5\n ip ospf message-digest-key 1 md5 s3cr#t!\n"
        " ip ospf mtu-ignore\n ip ospf network point-to-point\nexit\n!\n"
    ), "sorted as ospfd shows them; swp52's OSPF is off; priority 1 and retransmit 5 are defaults FRR never shows"
    frr = x.files["frr.conf"]
    assert "\ninterface " not in frr, "no interface block in frr.conf: FRR 10.3's zebra -n aborts on one"
    assert "router ospf\n ospf router-id 10.10.10.1\nexit\n" in frr
    assert "router ospf vrf red\nexit\n" in frr, "an interface's area runs in its VRF's instance, made for it"
    none = built()[1].files["ospfd-interfaces.conf"]
    assert none.startswith("! leaf01:") and "interface" not in none.split("\n", 1)[1], "there, empty: a reload empties"
    off = built(UNNUMBERED, {"router": {"ospf": {"enable": "off"}}})[1].files
    assert "router ospf" not in off["frr.conf"] and "ip ospf" not in off["ospfd-interfaces.conf"]


def test_dead_interval_minimal_is_frrs_one_line():
    p = Port("swp1", "default", "0.0.0.0", dead="minimal", multiplier=4)
    assert p.lines() == ["ip ospf area 0.0.0.0", "ip ospf dead-interval minimal hello-multiplier 4"]


def test_what_frr_refuses_of_an_interfaces_ospf_is_refused_with_its_nvue_path():
    with pytest.raises(TopologyError) as e:
        built(
            {
                "vrf": {"default": {"router": {"ospf": {"area": {0: {"network": {"10.10.10.1/32": {}}}}}}}},
                "interface": {
                    "swp51": {"ip": {"address": {"10.0.1.0/31": {}}}, "router": {"ospf": {"area": 0}}},
                    "lo": {"router": {"ospf": {"network-type": "point-to-point"}}},
                    "swp52": {
                        "router": {
                            "ospf": {
                                "timers": {"dead-interval": "minimal", "hello-interval": 1},
                                "authentication": {"enable": "on", "md5-key": "k"},
                            }
                        }
                    },
                },
            }
        )
    assert sorted(f"{p.path}: {p.message}" for p in e.value.problems) == [
        "interface.lo.router.ospf.network-type: the loopback runs OSPF as a loopback: FRR sets no network type there",
        "interface.swp51.router.ospf.area: VRF default's OSPF puts interfaces in areas by network "
        "(vrf.default.router.ospf.area.*.network): FRR takes an interface's area or networks in one instance, not "
        "both",
        "interface.swp52.router.ospf.authentication.message-digest-key: FRR takes an MD5 key with its key id: both "
        "or neither",
        "interface.swp52.router.ospf.timers.hello-interval: dead-interval minimal sends its hellos every "
        "1/hello-multiplier s: no hello-interval with it",
        "interface.swp52.router.ospf.timers.hello-multiplier: dead-interval minimal needs hello-multiplier 2-10 "
        "(FRR's is 2-20)",
    ]
    _, found = nv_tree.check(
        tree({"interface": {"swp51": {"router": {"ospf": {"authentication": {"md5-key": "two words"}}}}}})
    )
    assert [str(f) for f in found if not f.stored] == [
        "interface.swp51.router.ospf.authentication.md5-key: 'two words' is not an MD5 key: 1-16 printable "
        "characters, no space"
    ]


# --- ospfd's interface blocks brought to the file around frr-reload.py (twin.runtime.ospfdif) ------------
RUNNING = """Building configuration...
!
frr version 10.3
hostname leaf1
!
interface lo
 ip ospf area 0.0.0.0
exit
!
interface swp51
 ip ospf area 0.0.0.1
 ip ospf hello-interval 5
 ip ospf message-digest-key 1 md5 old
 ip ospf network point-to-point
exit
!
interface swp9 vrf red
 ip ospf passive
exit
!
router ospf
 ospf router-id 10.255.0.2
exit
!
end
"""
WANTED = """! leaf1: ospfd's interface settings
interface lo
 ip ospf area 0.0.0.0
exit
!
interface swp51
 ip ospf area 0.0.0.0
 ip ospf hello-interval 3
 ip ospf message-digest-key 1 md5 new
 ip ospf network point-to-point
exit
!
"""


def test_the_reload_takes_away_before_and_adds_after():
    run, want = ospfdif.blocks(RUNNING), ospfdif.blocks(WANTED)
    assert run["interface swp9 vrf red"] == ["ip ospf passive"] and "router ospf" not in str(run)
    assert ospfdif.commands(run, want, adds=False) == [
        ["interface swp51", "no ip ospf area", "no ip ospf message-digest-key 1"],  # FRR's 'remove first' lines
        ["interface swp9 vrf red", "no ip ospf passive"],  # never `no interface`: FRR refuses it for a live one
    ], "a hello interval is overwritten, not taken away first: the adjacency keeps its timers meanwhile"
    assert ospfdif.commands(run, want, adds=True) == [
        ["interface swp51", "ip ospf area 0.0.0.0", "ip ospf hello-interval 3", "ip ospf message-digest-key 1 md5 new"]
    ]
    assert ospfdif.left(run, want)[:2] == [
        "ospfd runs, not in ospfd-interfaces.conf: interface swp51: ip ospf area 0.0.0.1",
        "ospfd runs, not in ospfd-interfaces.conf: interface swp51: ip ospf hello-interval 5",
    ]
    assert ospfdif.left(want, want) == [] and ospfdif.commands(want, want, adds=False) == []
    assert ospfdif.key("ip ospf dead-interval minimal hello-multiplier 4") == "ip ospf dead-interval"


# --- verify's judgement, on ospfd's JSON of a real node ---------------------------------------------------
def docs() -> dict:
    fx = json.loads((ROOT / "tests/unit/frr/ospf-spine1-leaf1.json").read_text())
    return {case: {n: (d["interfaces"], d["neighbors"]) for n, d in fx[case].items()} for case in fx}


A, B = routing.End("leaf1", "swp51", "default", "0.0.0.0"), routing.End("spine1", "swp1", "default", "0.0.0.0")


def port(doc: tuple, node_port: str, **ospfd: object) -> tuple:
    out = copy.deepcopy(doc)
    out[0]["default"]["interfaces"][node_port].update(ospfd)
    return out


def test_verify_names_a_passive_end_and_a_network_type_with_nvues_names():
    d = docs()
    passive = port(d["mismatch"]["leaf1"], "swp51", area="0.0.0.0", timerPassiveIface=True)
    assert routing.adjacency(A, passive, B, d["mismatch"]["spine1"]) == [
        "leaf1 swp51 - spine1 swp1: no adjacency: passive on leaf1 swp51 (it sends no hello), not on spine1 swp1 "
        "(OSPF forms none unless they match)"
    ]
    p2p = port(d["mismatch"]["leaf1"], "swp51", area="0.0.0.0", networkType="POINTOPOINT")
    assert routing.adjacency(A, p2p, B, d["mismatch"]["spine1"]) == [
        "leaf1 swp51 - spine1 swp1: no adjacency: network type point-to-point on leaf1 swp51, broadcast on spine1 "
        "swp1 (OSPF forms none unless they match)"
    ]
    full = port(d["full"]["leaf1"], "swp51", networkType="POINTOPOINT")
    assert routing.adjacency(A, full, B, d["full"]["spine1"]) == [
        "leaf1 swp51 - spine1 swp1: Full, but network type point-to-point on leaf1 swp51, broadcast on spine1 "
        "swp1: their LSAs describe the link apart"
    ]


def test_verify_names_md5_authentication_without_its_keys():
    d, keyed = docs(), routing.End("leaf1", "swp51", "default", "0.0.0.0", key=(3, "secret"))
    leaf = port(d["mismatch"]["leaf1"], "swp51", area="0.0.0.0")
    assert routing.adjacency(keyed, leaf, B, d["mismatch"]["spine1"]) == [
        "leaf1 swp51 - spine1 swp1: no adjacency: MD5 authentication on leaf1 swp51 (key id 3), none on spine1 swp1 "
        "(OSPF forms none unless they match)"
    ]
    other = routing.End("spine1", "swp1", "default", "0.0.0.0", key=(3, "other"))
    said = routing.adjacency(keyed, leaf, other, d["mismatch"]["spine1"])
    assert said == [
        "leaf1 swp51 - spine1 swp1: no adjacency: MD5 keys differ (key id 3 on both) (OSPF forms none unless they "
        "match)"
    ]
    assert "secret" not in str(said) + repr(keyed), "a key is never shown"


def ospf_nodes(spine: dict, leaf: dict) -> dict:
    texts, _ = nvue.export(POLICY)
    trees = {n: nvue.read(f"{n}/startup.yaml", t).tree for n, t in texts.items()}
    nfs = {
        "spine1": nvue.from_tree(tree(spine, base=trees["spine1"]), "spine1/startup.yaml"),
        "leaf1": nvue.from_tree(tree(leaf, base=trees["leaf1"]), "leaf1/startup.yaml"),
        "leaf2": nvue.from_tree(trees["leaf2"], "leaf2/startup.yaml"),
    }
    return nvue.build(nfs, POLICY, "netns")[0]


def unnumbered(address: str, **ospf: object) -> dict:
    return {"ip": {"address": {address: {}}}, "router": {"ospf": {"area": 0, "network-type": "point-to-point", **ospf}}}


def test_verify_judges_links_whose_ends_run_ospf_by_their_own_area_and_proves_each():
    nodes = ospf_nodes(
        {"interface": {"swp1": unnumbered("10.255.0.1/32")}},
        {"interface": {"swp51": unnumbered("10.255.0.2/32", passive="on")}},
    )
    leaf, spine = routing.End("leaf1", "swp51", "default", "0.0.0.0", passive=True), B
    assert routing.ospf_links(nodes, POLICY) == [(leaf, spine)]
    own = nodes["leaf1"].plane.conf.ospf.ports["swp51"]
    assert [(k, how[0].text()) for k, _, _, how in nv_prove._ospf_breaks(leaf, own, None, "")] == [
        ("ospf-interface leaf1 swp51", "vtysh -d ospfd: interface swp51 / no ip ospf area"),
        ("ospf-network-type leaf1 swp51", "vtysh -d ospfd: interface swp51 / no ip ospf network"),
    ]
    both = ospf_nodes(
        {"interface": {"swp1": unnumbered("10.255.0.1/32", passive="on")}},
        {"interface": {"swp51": unnumbered("10.255.0.2/32", passive="on")}},
    )
    assert routing.ospf_links(both, POLICY) == [], "both ends passive: no adjacency is what both declare"
