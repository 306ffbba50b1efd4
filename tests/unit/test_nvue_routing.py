"""NVUE's OSPF and static routes (issue 44): a VRF's OSPF instance (router-id, area networks) and static
routes in NVUE's own form (`via`, `distance.<n>.via`, `tag`, `flag onlink`) rendered as the lines FRR
shows (read back from FRR 10.3 on a node), values checked by their NVUE type (and no value, whatever
text it holds, becomes a line of its own), an interface's OSPF settings in ospfd's own file; and
verify's readers of ospfd's and zebra's JSON (taken from a real node: `tests/unit/frr/`) naming an
area mismatch across a link with both values, and a static route whose next hop is unreachable."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.nvue_leaf import FABRIC, built, tree
from twin import nvue, topology
from twin.base.errors import TopologyError
from twin.nvue import plane as nv_plane
from twin.nvue import routing
from twin.nvue import tree as nv_tree
from twin.nvue.model import Static
from twin.nvue.ospf import area_id

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests/unit/frr"
POLICY = topology.load(ROOT / "tests/e2e/nvue/policy.yml")  # every switch NVUE's (its export)
OSPF = {
    "router": {"ospf": {"router-id": "10.10.10.1"}},
    "interface": {
        "swp51": {
            "ip": {"address": {"10.0.1.0/31": {}}},
            "router": {"ospf": {"network-type": "point-to-point", "timers": {"hello-interval": 5}}},
        }
    },
    "vrf": {
        "default": {
            "router": {
                "ospf": {
                    "area": {
                        0: {"network": {"10.0.1.1/31": {}, "10.10.10.1/32": {}}},
                        "0.0.0.7": {"network": {"10.7.0.0/16": {}}},
                    }
                }
            }
        },
        "BLUE": {"router": {"ospf": {"router-id": "10.10.10.9", "area": {1: {"network": {"10.1.20.0/24": {}}}}}}},
    },
}
STATICS = {
    "vrf": {
        "default": {
            "router": {
                "static": {
                    "192.0.2.0/24": {"via": {"10.0.1.1": {}}, "distance": {20: {"via": {"blackhole": {}}}}},
                    "198.51.100.128/25": {
                        "tag": 7,
                        "distance": {"20": {"via": {"10.0.1.1": {"interface": "swp51", "flag": "onlink"}}}},
                    },
                }
            }
        },
        "RED": {"router": {"static": {"203.0.113.0/24": {"via": {"reject": {}}, "tag": "none"}}}},
    }
}


def test_a_vrfs_ospf_runs_and_an_interfaces_own_settings_run_in_ospfd_alone():
    nf, x = built(OSPF, STATICS)
    assert nf.not_emulated == [], "an interface's OSPF settings run (twin.nvue.ospf): nothing is only stored"
    assert x.files["ospfd-interfaces.conf"].endswith(
        "interface swp51\n ip ospf hello-interval 5\n ip ospf network point-to-point\nexit\n!\n"
    )
    assert "ospfd=yes" in x.files["daemons"], "ospfd runs on every NVUE node: OSPF set later is a reload"
    assert "ospfd=yes" in built()[1].files["daemons"] and "router ospf" not in built()[1].files["frr.conf"]


def test_ospf_renders_as_frr_shows_it_one_instance_per_vrf():
    frr = built(OSPF)[1].files["frr.conf"]
    assert (
        "router ospf\n ospf router-id 10.10.10.1\n network 10.0.1.0/31 area 0.0.0.0\n"
        " network 10.10.10.1/32 area 0.0.0.0\n network 10.7.0.0/16 area 0.0.0.7\nexit\n!\n"
    ) in frr
    assert "router ospf vrf blue\n ospf router-id 10.10.10.9\n network 10.1.20.0/24 area 0.0.0.1\nexit\n" in frr
    assert "\ninterface " not in frr, "no interface block: FRR 10.3's zebra -n aborts on one"
    off = built(OSPF, {"router": {"ospf": {"enable": "off"}}})[1].files["frr.conf"]
    assert "router ospf" not in off
    assert area_id(0) == area_id("0") == "0.0.0.0" and area_id("0.0.0.7") == "0.0.0.7" and area_id(256) == "0.0.1.0"


def test_static_routes_in_nvues_form_render_as_frr_shows_them():
    frr = built(STATICS)[1].files["frr.conf"]
    assert "ip route 192.0.2.0/24 10.0.1.1\nip route 192.0.2.0/24 blackhole 20\n" in frr
    assert "ip route 198.51.100.128/25 10.0.1.1 swp51 tag 7 20 onlink\n" in frr  # FRR's own order, read back
    assert "vrf red\n vni 4001\n ip route 203.0.113.0/24 reject\nexit-vrf\n" in frr


DPU1 = nvue.read(ROOT / "tests/golden/interop/nvue/samples/dpu1/startup.yaml").tree


def dpu1(*extras: dict) -> dict[str, str]:
    """The samples' dpu1 (DOCA HBN: its ports p0_if, p1_if, pf0vf0_if...) with `extras`: the files it runs."""
    nf = nvue.from_tree(tree(*extras, base=DPU1), "dpu1/startup.yaml")
    return nvue.build({"dpu1": nf}, FABRIC, "netns")[0]["dpu1"].files


def test_an_interface_next_hop_is_the_nodes_kernel_device_not_its_nvue_name():
    """HBN's p0_if is the BlueField's p0 in the node's kernel, and an SVI is the bridge twin makes for it:
    FRR (staticd, a route map's `match interface`) names the device the kernel has."""
    via = lambda nh, port, **more: {"via": {nh: {"interface": port, **more}}}  # noqa: E731
    files = dpu1(
        {
            "vrf": {
                "default": {
                    "router": {
                        "static": {
                            "198.51.100.0/24": via("10.0.2.1", "p0_if", flag="onlink"),
                            "198.51.100.128/25": via("10.0.2.3", "p1"),  # the BlueField's own name, as HBN takes it
                        }
                    }
                },
                "RED": {"router": {"static": {"203.0.113.0/24": via("10.1.10.50", "vlan10")}}},
            },
            "router": {
                "policy": {
                    "route-map": {"UP": {"rule": {"10": {"action": {"permit": {}}, "match": {"interface": "p0_if"}}}}}
                }
            },
        }
    )
    frr = files["frr.conf"]
    assert "ip route 198.51.100.0/24 10.0.2.1 p0 onlink\n" in frr
    assert "ip route 198.51.100.128/25 10.0.2.3 p1\n" in frr
    assert "vrf red\n vni 4001\n ip route 203.0.113.0/24 10.1.10.50 br10\nexit-vrf\n" in frr
    assert " match interface p0\n" in frr
    assert "_if" not in "".join(ln for ln in frr.splitlines() if not ln.startswith("!"))


def test_an_interface_next_hop_the_node_has_not_is_refused():
    with pytest.raises(TopologyError) as e:
        dpu1(
            {
                "vrf": {
                    "default": {"router": {"static": {"198.51.100.0/24": {"via": {"10.0.2.1": {"interface": "swp9"}}}}}}
                }
            }
        )
    assert [f"{p.path}: {p.message}" for p in e.value.problems] == [
        "vrf.default.router.static['198.51.100.0/24'].via['10.0.2.1'].interface: dpu1 has no interface swp9: its "
        "ports are p0-1,pf0hpf,pf0vf0-15, its other interfaces lo, vlan10, vlan20"
    ]


def test_ospf_and_static_values_are_checked_by_their_nvue_type():
    bad = {
        "router": {"ospf": {"router-id": "10.1"}},
        "interface": {
            "swp51": {"router": {"ospf": {"area": "x", "network-type": "p2p", "timers": {"hello-interval": 0}}}}
        },
        "vrf": {
            "default": {
                "router": {
                    "ospf": {"area": {"bb": {"network": {"10.0.0.0": {}}}}},
                    "static": {
                        "192.0.2.0/24": {"distance": {0: {"via": {"10.0.0.1": {}}}}, "tag": 0, "via": {"x y": {}}}
                    },
                }
            }
        },
    }
    _, found = nv_tree.check(tree(bad))
    assert sorted(str(f) for f in found if not f.stored) == [
        "interface.swp51.router.ospf.area: 'x' is not an OSPF area: 0-4294967295 or dotted like 0.0.0.1",
        "interface.swp51.router.ospf.network-type: 'p2p' is not one of broadcast, non-broadcast, point-to-point, "
        "point-to-multipoint",
        "interface.swp51.router.ospf.timers.hello-interval: 0 is not 1-65535 seconds",
        "router.ospf.router-id: '10.1' is not an IPv4 address (a router id)",
        "vrf.default.router.ospf.area.bb: 'bb' is not an OSPF area: 0-4294967295 or dotted like 0.0.0.1",
        "vrf.default.router.static['192.0.2.0/24'].distance.0: 0 is not an administrative distance (1-255)",
        "vrf.default.router.static['192.0.2.0/24'].tag: 0 is not a tag (1-4294967295) or none",
        "vrf.default.router.static['192.0.2.0/24'].via['x y']: 'x y' is not an IP address, blackhole or reject",
    ]


def test_what_nvue_or_frr_refuses_is_refused_on_the_node():
    with pytest.raises(TopologyError) as e:
        built(
            {
                "vrf": {
                    "mgmt": {"router": {"ospf": {"enable": "on"}}},
                    "default": {"router": {"static": {"192.0.2.0/24": {"via": {"10.0.1.1": {"flag": "onlink"}}}}}},
                }
            }
        )
    assert sorted(f"{p.path}: {p.message}" for p in e.value.problems) == [
        "vrf.default.router.static['192.0.2.0/24'].via['10.0.1.1'].flag: onlink needs the interface the next hop "
        "is on (interface)",
        "vrf.mgmt.router.ospf: the management VRF runs no OSPF here: it is the node's management network (eth0)",
    ]


# every text that could reach an FRR line from these places: refused, or rendered on its own line, never a new one
texts = st.text(max_size=40) | st.sampled_from(
    [
        "10.0.0.1\nrouter bgp 1",
        "0\n!",
        "10.0.0.0/8 area 0\nexit",
        "swp1\r\nip route 0.0.0.0/0 blackhole",
        "x\x00y",
        "1.2.3.4 ",
    ]
)


@settings(
    derandomize=True, database=None, deadline=None, max_examples=120, suppress_health_check=[HealthCheck.too_slow]
)
@given(texts, texts, texts, texts, texts)
def test_no_value_becomes_a_foreign_line_of_frr_conf(rid, area, net, via, port):
    extra = {
        "router": {"ospf": {"router-id": rid}},
        "vrf": {
            "default": {
                "router": {
                    "ospf": {"area": {area: {"network": {net: {}}}}},
                    "static": {"192.0.2.0/24": {"via": {via: {"interface": port}}}},
                }
            }
        },
    }
    try:
        frr = built(extra)[1].files["frr.conf"]
    except TopologyError:
        return
    plain = built()[1].files["frr.conf"].splitlines()
    new = [ln for ln in frr.splitlines() if ln not in plain]
    assert all(
        ln.startswith(("router ospf", " ospf router-id ", " network ", "ip route 192.0.2.0/24 ", "exit", "!"))
        for ln in new
    ), new
    assert sum(ln.startswith("ip route") for ln in new) == 1 and sum(" network " in ln for ln in new) <= 1


# --- verify's readers, on FRR's JSON of a real node ------------------------------------------------------
def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def test_verify_names_an_area_mismatch_across_a_link_with_both_values():
    fx = fixture("ospf-spine1-leaf1.json")
    a, b = routing.End("leaf1", "swp51", "default", "0.0.0.1"), routing.End("spine1", "swp1", "default", "0.0.0.0")
    doc = {case: {n: (d["interfaces"], d["neighbors"]) for n, d in fx[case].items()} for case in fx}
    assert routing.adjacency(a, doc["mismatch"]["leaf1"], b, doc["mismatch"]["spine1"]) == [
        "leaf1 swp51 - spine1 swp1: no adjacency: area 0.0.0.1 on leaf1 swp51, 0.0.0.0 on spine1 swp1 (OSPF forms "
        "none unless they match)"
    ]
    assert routing.adjacency(a, doc["full"]["leaf1"], b, doc["full"]["spine1"]) == []
    hello = copy.deepcopy(doc["mismatch"]["spine1"])
    hello[0]["default"]["interfaces"]["swp1"].update(area="0.0.0.1", timerMsecs=5000, timerDeadSecs=20)
    assert routing.adjacency(a, doc["mismatch"]["leaf1"], b, hello) == [
        "leaf1 swp51 - spine1 swp1: no adjacency: hello 10 s on leaf1 swp51, 5 s on spine1 swp1; dead 40 s on leaf1 "
        "swp51, 20 s on spine1 swp1 (OSPF forms none unless they match)"
    ]
    gone = ({"default": {"interfaces": {}}}, doc["full"]["spine1"][1])
    assert routing.adjacency(a, doc["full"]["leaf1"], b, gone) == [
        "spine1 swp1: ospfd runs no OSPF on it (area 0.0.0.0 set)"
    ]


def test_verify_judges_the_links_both_ends_run_ospf_on():
    texts, _ = nvue.export(POLICY)
    trees = {n: nvue.read(f"{n}/startup.yaml", t).tree for n, t in texts.items()}
    spine = {
        "interface": {"swp1": {"ip": {"address": {"10.0.1.1/31": {}}}}},
        "vrf": {"default": {"router": {"ospf": {"area": {0: {"network": {"10.0.1.0/31": {}}}}}}}},
    }
    leaf = {
        "interface": {"swp51": {"ip": {"address": {"10.0.1.0/31": {}}}}},
        "vrf": {"default": {"router": {"ospf": {"area": {1: {"network": {"10.0.1.0/31": {}}}}}}}},
    }
    nfs = {
        "spine1": nvue.from_tree(tree(spine, base=trees["spine1"]), "spine1/startup.yaml"),
        "leaf1": nvue.from_tree(tree(leaf, base=trees["leaf1"]), "leaf1/startup.yaml"),
        "leaf2": nvue.from_tree(trees["leaf2"], "leaf2/startup.yaml"),
    }
    nodes, _ = nvue.build(nfs, POLICY, "netns")
    assert routing.ospf_links(nodes, POLICY) == [
        (routing.End("leaf1", "swp51", "default", "0.0.0.1"), routing.End("spine1", "swp1", "default", "0.0.0.0"))
    ]


def test_verify_names_a_static_route_whose_next_hop_is_unreachable():
    fx = fixture("leaf1-static.json")
    r, nht = fx["static"], fx["nht"]
    assert routing.static_problem("default", Static("192.0.2.0/24", "10.99.99.1"), r, nht) == (
        "192.0.2.0/24 via 10.99.99.1: inactive: its next hop 10.99.99.1 is unreachable (VRF default has no route to "
        "it), so zebra installs nothing"
    )
    assert routing.static_problem("default", Static("198.51.100.0/24", "10.255.0.1", distance=5), r, nht) == ""
    assert routing.static_problem("default", Static("203.0.113.0/24", "blackhole"), r, nht) == ""
    assert routing.static_problem("red", Static("192.0.2.0/24", "10.1.1.12"), r, nht) == ""
    assert routing.static_problem("blue", Static("192.0.2.0/24", "10.1.1.12"), r, nht) == (
        "192.0.2.0/24 via 10.1.1.12 in VRF blue: not in the RIB"
    )
    floating = Static("198.51.100.0/24", "10.255.0.1", distance=5)
    backup = copy.deepcopy(r)
    backup["default"]["198.51.100.0/24"].insert(
        0, {**backup["default"]["198.51.100.0/24"][0], "distance": 1, "nexthops": [{"blackhole": True}]}
    )
    backup["default"]["198.51.100.0/24"][1]["selected"] = False
    assert routing.static_problem("default", floating, backup, nht) == "", "a floating static is as meant"


def test_the_management_vrfs_static_routes_are_the_kernels_in_its_namespace():
    from twin.topology import mgmt as mgmt_net

    fabric = mgmt_net.resolve(FABRIC)
    assert fabric.mgmt is not None and fabric.nodes["leaf01"].mgmt
    gw, subnet = fabric.mgmt.gateway, fabric.mgmt.subnet
    extra = {"vrf": {"mgmt": {"router": {"static": {"198.18.0.5/15": {"via": {gw: {}}}}}}}}
    nf = nvue.from_tree(tree(extra), "leaf01/startup.yaml")
    x = nvue.build({"leaf01": nf}, fabric, "netns")[0]["leaf01"]
    cmds = [s.command() for s in x.plane.steps]
    assert f"nsenter --net=/run/twin/mgmt ip route add 198.18.0.0/15 via {gw} dev eth0" in cmds
    assert "mgmt" not in x.files["frr.conf"] and nf.not_emulated == []
    assert routing.mgmt_declared(x.plane) == [Static("198.18.0.5/15", gw)]
    (step,) = [s for k, s in x.plane.extras.items() if k[0] == "mgmt-route"]
    assert nv_plane.routed.undo(step).command() == (
        f"nsenter --net=/run/twin/mgmt ip route del 198.18.0.0/15 via {gw} dev eth0"
    )
    bad = {
        "vrf": {
            "mgmt": {
                "router": {
                    "static": {
                        "198.18.0.0/15": {"via": {"10.99.0.1": {}, "blackhole": {}}, "distance": {5: {"via": {gw: {}}}}}
                    }
                }
            }
        }
    }
    with pytest.raises(TopologyError) as e:
        nvue.build({"leaf01": nvue.from_tree(tree(bad), "leaf01/startup.yaml")}, fabric, "netns")
    at = "vrf.mgmt.router.static['198.18.0.0/15']"
    assert sorted(f"{p.path}: {p.message}" for p in e.value.problems) == [
        f"{at}.distance.5.via['{gw}']: a route of the management VRF is the kernel's, out of eth0: no other "
        "interface, distance or tag",
        f"{at}.via.blackhole: a route of the management VRF goes through an address on the management network, not "
        "a blackhole or reject (the kernel's, in the management namespace)",
        f"{at}.via['10.99.0.1']: 10.99.0.1 is not on the management network ({subnet}): eth0 cannot reach it",
    ]
