"""NVUE's model beyond twin's tenants (issue 33): a switch's ports exist whether cabled or not (the
platform's list), SVIs in the default VRF with their VRR, plain L3 VRFs with static routes and BGP,
the management VRF, BGP neighbors named by an interface without `type`, `router policy` prefix lists
and route maps on neighbors, and what stays stored (system message and timezone, service dns, ntp
and syslog, bonds, MLAG, EVPN multihoming); what NVUE refuses stays refused, every problem at once."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from twin import nvue, topology
from twin.base.errors import TopologyError
from twin.nvue import configs as nv_configs
from twin.nvue import plane as nv_plane
from twin.nvue import routed
from twin.nvue import tree as nv_tree

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests/golden/interop/nvue/samples"
FABRIC = topology.load(ROOT / "tests/e2e/nvue/samples.yml")
LEAF = nvue.read(SAMPLES / "leaf01" / "startup.yaml").tree


def built(extra: dict, backend: str = "netns") -> nv_configs.NvueNode:
    tree = copy.deepcopy(LEAF)
    nv_tree.patch(tree, extra)
    nodes, _ = nvue.build({"leaf01": nvue.from_tree(tree, "leaf01/startup.yaml")}, FABRIC, backend)
    return nodes["leaf01"]


def refused(extra: dict) -> list[str]:
    with pytest.raises(TopologyError) as e:
        built(extra)
    return [f"{p.path}: {p.message}" for p in e.value.problems]


def commands(x: nv_configs.NvueNode) -> list[str]:
    """The node's steps but its ports' traffic classes (last: test_nvue_kernel's)."""
    return [s.command() for s in x.plane.steps if s.op != "tc-batch"]


def test_a_port_no_cable_reaches_exists_with_no_carrier():
    x = built(
        {
            "interface": {
                "swp10": {"type": "swp", "link": {"state": "up"}},
                "swp11": {"type": "swp", "link": {"state": "down"}},
            }
        }
    )
    assert x.plane.uncabled == ["swp10", "swp11"] and x.plane.devices["swp10"] == "swp10"
    cmds = commands(x)
    assert cmds[0] == "[ -e /run/netns/twin-uncabled ] || ip netns add twin-uncabled", "made before anything"
    (port,) = [s for s in x.plane.steps if s.op == "port" and s.dev == "swp10"]
    assert port.command() == (
        f"ip link add swp10 index {routed.PORT_INDEX + 18} address {port.args['mac']} type "
        f"veth peer name swp10 index {routed.PORT_INDEX + 19} address {port.args['peer_mac']} "
        "netns twin-uncabled"
    )
    assert port.args["mac"] != port.args["peer_mac"] and port.args["mac"].startswith("02:")
    assert "ip link set swp10 up" in cmds and "ip link set swp11 down" in cmds
    assert "ip link add swp10 " in x.files["interfaces.sh"]
    assert routed.platform(FABRIC, "leaf01")[-1] == "swp64" and routed.platform(FABRIC, "dpu1")[:3] == [
        "p0",
        "p1",
        "pf0hpf",
    ]


def test_a_topology_gives_the_platform_its_ports(tmp_path):
    f = tmp_path / "t.yml"
    text = (ROOT / "tests/e2e/nvue/samples.yml").read_text()
    f.write_text(text.replace("leaf01: {kind: leaf,", "leaf01: {kind: leaf, platform_ports: 'swp1-4,swp49-56',"))
    fabric = topology.load(f)
    assert routed.platform(fabric, "leaf01") == [f"swp{i}" for i in (1, 2, 3, 4, *range(49, 57))]
    f.write_text(text.replace("leaf01: {kind: leaf,", "leaf01: {kind: leaf, platform_ports: 'swp1-8',"))
    with pytest.raises(TopologyError) as e:
        topology.load(f)
    assert [p.message for p in e.value.problems] == [
        "swp51, swp52 are cabled but not among the platform's ports (swp1-8)"
    ]


def test_an_svi_in_the_default_vrf_is_routed_in_the_underlay_with_its_vrr():
    x = built(
        {
            "interface": {
                "swp10": {"type": "swp", "bridge": {"domain": {"br_default": {"access": 100}}}},
                "vlan100": {
                    "type": "svi",
                    "vlan": 100,
                    "ip": {
                        "address": {"10.100.0.2/24": {}},
                        "vrr": {"enable": True, "mac-address": "00:00:5e:00:01:64", "address": {"10.100.0.1/24": {}}},
                    },
                },
            },
            "bridge": {"domain": {"br_default": {"vlan": {"100": {}}}}},
        }
    )
    cmds = commands(x)
    at = cmds.index("ip link add vlan100 address 00:00:5e:00:01:64 mtu 9000 type bridge")
    assert cmds[at + 1 : at + 6] == [
        "ip link set swp10 master vlan100",
        "ip link set swp10 up",
        "ip addr add 10.100.0.2/24 dev vlan100",
        "ip addr add 10.100.0.1/24 dev vlan100",
        "ip link set vlan100 up",
    ]
    assert x.plane.fabric.tenants_on("leaf01"), "the tenants are as before"


def test_a_plain_vrf_has_its_ports_static_routes_and_bgp():
    x = built(
        {
            "interface": {"swp12": {"type": "swp", "ip": {"vrf": "EXT", "address": {"10.9.0.1/31": {}}}}},
            "vrf": {
                "EXT": {
                    "router": {
                        "static": {"10.200.0.0/24": {"via": {"10.9.0.0": {}}}},
                        "bgp": {
                            "enable": True,
                            "neighbor": {"10.9.0.0": {"remote-as": "external"}},
                            "address-family": {"ipv4-unicast": {"redistribute": {"static": {"enable": True}}}},
                        },
                    }
                },
                "default": {"router": {"static": {"192.0.2.0/24": {"distance": {200: {"via": {"blackhole": {}}}}}}}},
            },
        }
    )  # NVUE's form: distance.<n>.via
    cmds = commands(x)
    assert cmds[-5:] == [
        "ip netns add EXT",
        "ip -n EXT link set lo up",
        "ip link set swp12 netns EXT",
        "ip -n EXT addr add 10.9.0.1/31 dev swp12",
        "ip -n EXT link set swp12 up",
    ]
    frr = x.files["frr.conf"]
    assert "ip route 192.0.2.0/24 blackhole 200\n" in frr
    assert "vrf EXT\n ip route 10.200.0.0/24 10.9.0.0\nexit-vrf\n" in frr
    block = frr[frr.index("router bgp 65101 vrf EXT") :]
    assert " neighbor 10.9.0.0 remote-as external\n" in block and "  redistribute static\n" in block
    dev = built(
        {
            "vrf": {"EXT": {"router": {"static": {"10.200.0.0/24": {"via": {"10.9.0.0": {}}}}}}},
            "interface": {"swp12": {"ip": {"vrf": "EXT", "address": {"10.9.0.1/31": {}}}}},
        },
        "vrf",
    )
    assert [c for c in commands(dev) if "EXT" in c][:3] == [
        f"ip link add EXT type vrf table {routed.PLAIN_TABLE + 1}",
        "ip link set EXT up",
        "ip link set swp12 master EXT",
    ]


def test_the_management_vrf_is_the_management_network():
    x = built({"vrf": {"mgmt": {"router": {"static": {"0.0.0.0/0": {"via": {"192.168.200.1": {}}}}}}}})
    assert "mgmt" not in x.files["frr.conf"] and not [c for c in commands(x) if "mgmt" in c]
    assert sorted(
        refused(
            {
                "vrf": {"mgmt": {"evpn": {"vni": {"4009": {}}}}},
                "interface": {"swp12": {"ip": {"vrf": "mgmt", "address": {"10.9.0.1/31": {}}}}},
            }
        )
    ) == [
        "interface.swp12.ip.vrf: only eth0 is in the management VRF",
        "vrf.mgmt.evpn.vni: the management VRF carries no EVPN: it is the node's management network (eth0)",
    ]


def test_a_neighbor_named_by_an_interface_needs_no_type_and_a_policy_is_frrs():
    tree = {
        "router": {
            "policy": {
                "prefix-list": {
                    "LOOPBACKS": {
                        "rule": {"10": {"action": "permit", "match": {"10.10.0.0/16": {"max-prefix-len": 32}}}}
                    }
                },
                "route-map": {
                    "FROM-SPINE": {
                        "rule": {
                            "10": {
                                "action": {"permit": {}},
                                "match": {"ip-prefix-list": "LOOPBACKS"},
                                "set": {"local-preference": 200},
                            },
                            "20": {"action": "deny"},
                        }
                    }
                },
            }
        },
        "vrf": {
            "default": {
                "router": {
                    "bgp": {
                        "neighbor": {
                            "swp10": {"peer-group": "underlay"},
                            "swp51": {
                                "address-family": {"ipv4-unicast": {"policy": {"inbound": {"route-map": "FROM-SPINE"}}}}
                            },
                        },
                        "address-family": {
                            "ipv4-unicast": {"redistribute": {"connected": {"route-map": "FROM-SPINE"}}}
                        },
                    }
                }
            }
        },
    }
    frr = built(tree).files["frr.conf"]
    for line in [
        "ip prefix-list LOOPBACKS seq 10 permit 10.10.0.0/16 le 32",
        "route-map FROM-SPINE permit 10",
        " match ip address prefix-list LOOPBACKS",
        " set local-preference 200",
        "route-map FROM-SPINE deny 20",
        " neighbor swp10 interface peer-group underlay",
        "  neighbor swp51 route-map FROM-SPINE in",
        "  redistribute connected route-map FROM-SPINE",
    ]:
        assert line + "\n" in frr, line
    assert frr.index("ip prefix-list") < frr.index("route-map FROM-SPINE") < frr.index("router bgp 65101")


def test_what_nvue_refuses_of_policies_is_named_at_once():
    said = refused(
        {
            "router": {
                "policy": {
                    "route-map": {
                        "RM": {
                            "rule": {
                                "10": {"action": "permit", "match": {"ip-prefix-list": "NOPE", "origin": "igp"}},
                                "20": {"set": {"weight": 5}},
                            }
                        }
                    }
                }
            },
            "vrf": {
                "default": {
                    "router": {
                        "bgp": {
                            "neighbor": {
                                "swp51": {
                                    "address-family": {
                                        "ipv4-unicast": {"policy": {"outbound": {"prefix-list": "MISSING"}}}
                                    }
                                }
                            }
                        }
                    }
                }
            },
        }
    )
    assert sorted(said) == sorted(
        [
            "vrf.default.router.bgp.neighbor.swp51.address-family.ipv4-unicast.policy.outbound.prefix-list: no "
            "prefix-list MISSING in router.policy.prefix-list",
            "router.policy.route-map.RM.rule.10.match.origin: match origin is not emulated: the rule "
            "would match more than it says; twin does not run it half",
            "router.policy.route-map.RM.rule.10.match.ip-prefix-list: no prefix-list NOPE in router.policy.prefix-list",
            "router.policy.route-map.RM.rule.20.action: a rule needs an action: permit or deny",
        ]
    )


def test_stored_places_are_kept_with_the_notice():
    tree = copy.deepcopy(LEAF)
    nv_tree.patch(
        tree,
        {
            "system": {"message": {"pre-login": "Welcome\nto leaf01"}, "timezone": "Europe/Paris"},
            "service": {
                "dns": {"mgmt": {"server": {"192.0.2.53": {}}}},
                "ntp": {"mgmt": {"server": {"pool.ntp.org": {"iburst": "on"}}}},
                "syslog": {"mgmt": {"server": {"192.0.2.514": {"port": 514}}}},
            },
            "interface": {
                "bond1": {"bond": {"member": {"swp10": {}, "swp11": {}}, "mlag": {"id": 1}}},
                "swp10": {"evpn": {"multihoming": {"segment": {"local-id": 1}}}},
            },
            "mlag": {"enable": "on", "peer-ip": "linklocal"},
        },
    )
    nf = nvue.from_tree(tree, "t")
    assert sorted(nv_tree.show(p) for p in nf.not_emulated) == [
        "interface.bond1.bond.mlag",
        "interface.swp10.evpn",
        "mlag",
        "service.dns",
        "service.ntp",
        "service.syslog",
        "system.message",
        "system.timezone",
    ]
    nodes, notes = nvue.build({"leaf01": nf}, FABRIC, "netns")
    assert (
        "t: interface bond1 (bond): stored, not emulated: bonds are made with TWIN_NVUE_BONDS=on at `twin up`, "
        "on a kernel with bonding (`twin doctor` says whether this one has it)" in notes
    )
    assert "Welcome" not in nodes["leaf01"].files["frr.conf"]


def test_a_topology_declares_blank_nvue_switches(tmp_path):
    f = tmp_path / "t.yml"
    text = (ROOT / "tests/e2e/nvue/samples.yml").read_text()
    f.write_text(text.replace("vtep: [leaf, dpu]", "vtep: [leaf, dpu]\ndefaults: {nvue: blank}"))
    fabric = topology.load(f)
    assert sorted(n for n, x in fabric.nodes.items() if x.nvue == "blank") == ["dpu1", "leaf01", "spine01", "spine02"]
    files = nv_configs.blank(fabric)
    assert {n: nf.tree for n, nf in files.items()}["leaf01"] == {"system": {"hostname": "leaf01"}}
    nodes, _ = nvue.build(files, fabric, "netns")
    frr = nodes["spine01"].files["frr.conf"]
    assert "hostname spine01\n" in frr and "router bgp" not in frr and nodes["spine01"].plane.steps == []
    f.write_text(text.replace("server01: {kind: host}", "server01: {kind: host, nvue: blank}"))
    with pytest.raises(TopologyError) as e:
        topology.load(f)
    assert [p.message for p in e.value.problems] == ["a host does not run NVUE: nvue is for spines, leafs and DPUs"]


def test_eth0_is_the_management_port_at_its_management_address(tmp_path):
    f = tmp_path / "t.yml"
    f.write_text(
        (ROOT / "tests/e2e/nvue/samples.yml")
        .read_text()
        .replace("vtep: [leaf, dpu]", "vtep: [leaf, dpu]\nmgmt: {subnet: 192.168.200.0/24}")
        .replace("leaf01: {kind: leaf,", "leaf01: {kind: leaf, mgmt_ipv4: 192.168.200.11,")
    )
    fabric = topology.load(f)

    def build(eth0: dict) -> list[str]:
        tree = copy.deepcopy(LEAF)
        nv_tree.patch(tree, {"interface": {"eth0": {"type": "eth", "ip": eth0}}, "vrf": {"mgmt": {}}})
        try:
            nodes, _ = nvue.build({"leaf01": nvue.from_tree(tree, "s")}, fabric, "netns")
        except TopologyError as e:
            return [f"{p.path}: {p.message}" for p in e.problems]
        assert [s.command() for s in nodes["leaf01"].plane.steps if s.dev == "eth0"] == [
            "ip link set eth0 netns /run/twin/mgmt",
            "nsenter --net=/run/twin/mgmt ip addr add 192.168.200.11/24 dev eth0",
            "nsenter --net=/run/twin/mgmt ip link set eth0 up",
        ], "the management network's (twin.config.mgmt)"
        return []

    assert build({"address": {"192.168.200.11/24": {}}, "vrf": "mgmt"}) == build({"address": {"dhcp": {}}}) == []
    assert sorted(build({"address": {"192.168.200.99/24": {}}, "vrf": "RED"})) == [
        "interface.eth0.ip.address: leaf01's management address is 192.168.200.11/24: the management network gives "
        "it (the topology's mgmt_ipv4 pins it; NVUE's dhcp takes it)",
        "interface.eth0.ip.vrf: eth0 is in VRF mgmt: the node's management network",
    ]
    made = fabric.nodes["leaf01"].model_copy(update={"nvue": "blank"})
    blank = nv_configs.blank(fabric.model_copy(update={"nodes": {**fabric.nodes, "leaf01": made}}))["leaf01"]
    assert blank.tree["interface"]["eth0"] == {"type": "eth", "ip": {"address": {"dhcp": {}}, "vrf": "mgmt"}}


def test_day_2_takes_what_goes_beyond_the_tenants_away_in_reverse_and_keeps_ports():
    svi = {
        "interface": {
            "swp10": {"type": "swp", "bridge": {"domain": {"br_default": {"access": 100}}}},
            "vlan100": {"type": "svi", "vlan": 100, "ip": {"address": {"10.100.0.2/24": {}}}},
        },
        "bridge": {"domain": {"br_default": {"vlan": {"100": {}}}}},
    }
    before, after = built(svi).plane, built({"interface": {"swp10": {"type": "swp"}}}).plane
    add, remove = nv_plane.extras_delta(before.extras, after.extras, set(), set())
    assert [s.command() for s in remove] == [
        "ip addr del 10.100.0.2/24 dev vlan100",
        "ip link set swp10 nomaster",
        "ip link del vlan100",
    ]
    assert add == [] and ("port", "swp10") in after.extras, "the uncabled port stays, as a switch's"


BONDED = [
    "interface bond1 type bond",
    "interface bond1 bond member swp1",  # server01's port, bonded
    "interface bond1 bridge domain br_default access 10",
    "interface bond2 bond member swp5-6",
    "interface bond2 ip address 192.0.2.1/31",
]  # uncabled, routed


def bonded(*lines: str) -> nvue.NvueFile:
    """The samples' leaf01 with `lines` set (`nv set` words), swp1 taken out of VLAN 10 (bond1 takes it)."""
    tree = copy.deepcopy(LEAF)
    nv_tree.unset_path(tree, ("interface", "swp1", "bridge"))
    for line in lines:
        path, value = nv_tree.words(line.split())
        nv_tree.set_path(tree, path, value)
    return nvue.from_tree(tree, "leaf01/startup.yaml")


def test_a_bond_is_a_linux_bond_where_the_lab_makes_them_golden(golden):
    """Issue 33 item 4: with bonds on (TWIN_NVUE_BONDS=on at `twin up`, a kernel with bonding) a bond is
    made in the node's namespace, its members down and in it, then used: the host on its member is
    the bond's (its bridge port, static MAC, port rules). This kernel has no bonding: golden only."""
    nodes, notes = nvue.build({"leaf01": bonded(*BONDED)}, FABRIC, "vrf", bonds=True)
    sh = nodes["leaf01"].files["interfaces.sh"]
    golden(ROOT / "tests/golden/interop/nvue/rendered/leaf01-bonds.sh", sh)
    assert not [n for n in notes if "bond" in n] and nodes["leaf01"].plane.bonds == {"bond1", "bond2"}
    made = (
        "ip link add bond1 type bond mode 802.3ad lacp_rate fast miimon 100 xmit_hash_policy layer3+4 min_links 1\n"
        "ip link set swp1 down\nip link set swp1 master bond1\nip link set bond1 up\n"
    )
    assert made in sh and sh.index(made) < sh.index("ip link set bond1 master br10")
    assert (
        "bridge fdb replace 02:66:80:8d:fa:5f dev bond1 master static" in sh
        and "ip addr add 192.0.2.1/31 dev bond2" in sh
    )
    assert sh.index("ip link add swp5 ") < sh.index("ip link set swp5 master bond2"), "an uncabled member, made first"
    assert 'iifname "bond1"' in nodes["leaf01"].files["nftables.nft"], "the host's port rules are the bond's"
    red = nodes["leaf01"].plane.fabric.tenants["red"]
    assert [(a.host, a.port) for a in red.attachments] == [("server01", "bond1")]
    aware, _ = nvue.build(
        {"leaf01": bonded(*BONDED, "interface bond1 bond mode static")},
        FABRIC,
        "vrf",
        layout=nv_plane.VLAN_AWARE,
        bonds=True,
    )
    sh = aware["leaf01"].files["interfaces.sh"]
    assert (
        "ip link add bond1 type bond mode balance-xor miimon 100" in sh
        and "bridge vlan add dev bond1 vid 10 pvid untagged" in sh
        and sh.index("type bond mode balance-xor") < sh.index("ip link set bond1 master br_d")
    )


def test_a_bond_is_stored_with_the_notice_where_the_lab_makes_none():
    """Without bonds on (this kernel's case), and for a bond a tenant's namespace would hold."""
    nf = bonded(*BONDED)
    assert [nv_tree.show(p) for p in nf.not_emulated] == []
    nodes, notes = nvue.build({"leaf01": nf}, FABRIC, "netns")
    why = (
        "bonds are made with TWIN_NVUE_BONDS=on at `twin up`, on a kernel with bonding (`twin doctor` says "
        "whether this one has it)"
    )
    assert [n for n in notes if "bond" in n] == [
        f"leaf01/startup.yaml: interface {b} (bond): stored, not emulated: {why}" for b in ("bond1", "bond2")
    ]
    assert (
        "leaf01/startup.yaml: server01 (tenant red) is cabled to leaf01:swp1, which NVUE puts in no VLAN "
        "(interface ... bridge.domain.br_default.access): it reaches no one" in notes
    )
    assert not any("bond" in s.command() for s in nodes["leaf01"].plane.steps)
    nodes, notes = nvue.build({"leaf01": nf}, FABRIC, "netns", bonds=True)
    assert (
        "leaf01/startup.yaml: interface bond1 (bond): stored, not emulated: it sits in VRF RED, a namespace on "
        "the netns VRF backend, and a Linux bond cannot move between namespaces (--vrf-backend device)" in notes
    )
    assert [s.command() for s in nodes["leaf01"].plane.steps if s.op == "bond"] == [
        "ip link add bond2 type bond mode 802.3ad lacp_rate fast miimon 100 xmit_hash_policy layer3+4 min_links 1"
    ], "bond2 is in the default VRF: the node's own namespace holds it"


def test_what_nvue_refuses_of_bonds_is_refused_every_problem_at_once():
    nf = bonded(
        "interface bond1 bond member swp1",
        "interface bond1 bond member swp99",
        "interface bond3 bond member swp1",
        "interface bond4 bond member swp2",
        "interface bond5 bond member bond1",
        "interface bond7 type bond",
    )
    with pytest.raises(TopologyError) as e:
        nvue.build({"leaf01": nf}, FABRIC, "vrf", bonds=True)
    said = sorted(f"{p.path}: {p.message}" for p in e.value.problems)
    assert said == [
        "interface.bond1.bond.member.swp99: swp99 is no port of the node",
        "interface.bond3.bond.member.swp1: swp1 is a member of bond1 already",
        "interface.bond4.bond.member.swp2: swp2 has a bridge or an address of its own: a member's are its bond's",
        "interface.bond5.bond.member.bond1: bond1 is no port of the node",
        "interface.bond7.bond.member: bond bond7 has no member",
    ], said
    tree = copy.deepcopy(
        bonded("interface bond1 bond member swp1-2", "interface bond1 bridge domain br_default access 10").tree
    )
    nv_tree.unset_path(tree, ("interface", "swp2", "bridge"))
    with pytest.raises(TopologyError) as e:
        nvue.build({"leaf01": nvue.from_tree(tree, "t")}, FABRIC, "vrf", bonds=True)
    assert [f"{p.path}: {p.message}" for p in e.value.problems] == [
        "interface.bond1.bond.member: bond bond1 reaches 2 hosts (server01, server02); a bond leads to one"
    ]


def test_the_lab_makes_bonds_only_when_asked_on_a_kernel_with_bonding(monkeypatch):
    from twin.nvue import kernelplane
    from twin.runtime import kernel

    said: list[str] = []
    assert kernelplane.bonds("t-bond", said.append) is False and said == [], "not asked: stored, nothing probed"
    monkeypatch.setenv("TWIN_NVUE_BONDS", "on")
    has = kernel.probe_bonds("t-bond")  # this project's kernel: none
    assert kernelplane.bonds("t-bond", said.append) is has
    assert said == (
        []
        if has
        else [
            "TWIN_NVUE_BONDS=on: this kernel has no bonding (CONFIG_BONDING); the NVUE "
            "nodes' bonds are stored, not made"
        ]
    )
