"""NVUE (issue 24): startup.yaml read into a checked tree (emulated, stored, refused, each problem
with file, line and NVUE path), the edits the live layer is made of, the FRR and kernel plane a
node's NVUE makes, the VLAN-aware layout (golden only), and the samples NVIDIA's forms give."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from twin import nvue, topology
from twin.base.errors import TopologyError
from twin.config import userconf
from twin.nvue import plane as nv_plane
from twin.nvue import tree as nv_tree

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests/golden/interop/nvue/samples"
SAMPLE_TOPOLOGY = ROOT / "tests/e2e/nvue/samples.yml"
GOLDEN = ROOT / "tests/golden/interop/nvue"


def write(tmp_path: Path, text: str, node: str = "leaf01") -> Path:
    f = tmp_path / node / "startup.yaml"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    return f


def problems(f: Path) -> list[str]:
    with pytest.raises(TopologyError) as e:
        nvue.read(f)
    return [str(p) for p in e.value.problems]


def sample_lab():
    fabric = topology.load(SAMPLE_TOPOLOGY)
    return fabric, userconf.load(SAMPLES, fabric)


# --- reading ------------------------------------------------------------------------------------------
def test_the_samples_read_with_nothing_refused_or_left_out():
    for node in ("leaf01", "dpu1"):
        nf = nvue.read(SAMPLES / node / "startup.yaml")
        assert nf.not_emulated == []
        assert nf.header["nvue-api-version"] == "nvue_v1"
        assert nf.tree["interface"]["vlan10"]["ip"]["vrr"]["enable"] is True, "YAML 1.1: on is a boolean"
        assert list(nf.tree["bridge"]["domain"]["br_default"]["vlan"]) == ["10", "20"], "'10' keys stay text"
        assert nf.tree["interface"]["vlan10"]["ip"]["vrr"]["state"] == "up", "NVUE's {up: {}} form of a state"


def test_a_wrong_value_is_named_with_file_line_and_nvue_path(tmp_path):
    f = write(
        tmp_path,
        "- set:\n    interface:\n      swp1:\n        bridge:\n          domain:\n"
        "            br_default:\n              access: x\n",
    )
    assert problems(f) == [f"{f}:7: interface.swp1.bridge.domain.br_default.access: 'x' is not a VLAN id"]


def test_every_problem_at_once_unknown_places_refused_with_the_keys_allowed(tmp_path):
    f = write(
        tmp_path,
        "- set:\n    interface:\n      swp1:\n        link:\n          stat: up\n"
        "    router:\n      bgp:\n        autonomous-system: 23456\n    bogus: {}\n"
        "    vrf:\n      RED:\n        evpn:\n          vni:\n            '99999999': {}\n",
    )
    found = problems(f)
    assert len(found) == 4
    assert f"{f}:5: interface.swp1.link.stat: no such key in NVUE's interface.swp1.link; keys: " in found[0]
    assert "state" in found[0] and "mtu" in found[0]
    assert found[1] == f"{f}:8: router.bgp.autonomous-system: 23456 is not an AS number (1-4294967295)"
    assert found[2].startswith(f"{f}:9: bogus: no such key in NVUE's object tree; keys: acl, bridge, evpn")
    assert found[3] == f"{f}:14: vrf.RED.evpn.vni.99999999: '99999999' is not a VNI (1-16777214)"


def test_nvue_objects_twin_does_not_emulate_are_stored_and_listed(tmp_path):
    f = write(
        tmp_path,
        "- set:\n    mlag:\n      mac-address: 44:38:39:BE:EF:AA\n    qos:\n      roce:\n"
        "        enable: on\n    system:\n      message:\n        pre-login: hello\n"
        "      hostname: leaf01\n    interface:\n      swp1:\n        link:\n          mtu: 9000\n",
    )
    nf = nvue.read(f)
    assert nf.tree["mlag"] == {"mac-address": "44:38:39:BE:EF:AA"}, "kept as given"
    assert [".".join(p) for p in nf.not_emulated] == ["mlag", "system.message"], "qos roce, link.mtu run (issue 44)"


def test_a_mac_that_yaml_1_1_reads_as_a_number_is_named_as_such(tmp_path):
    f = write(tmp_path, "- set:\n    system:\n      global:\n        fabric-mac: 10:00:00:00:00:01\n")
    assert "YAML 1.1 read a MAC of digits starting 1-9 as a number (base 60); quote it" in problems(f)[0]


@pytest.mark.parametrize(
    "text, says",
    [
        ("- set: [\n", "not valid YAML"),
        ("interface: {}\n", "a startup.yaml is a list of documents"),
        ("- sett: {}\n", "each document is one of - header:, - set:, - unset:; got sett"),
        ("- set: 3\n", "[0].set: 3 is not a mapping"),
        ("- header:\n    nvue-api-version: nvue_v2\n", "twin emulates NVUE's nvue_v1 API"),
        ("- set:\n    interface:\n      swp1: 5\n", "interface.swp1: 5 is not an object"),
        ("- set:\n    interface:\n      'bad name!': {}\n", "is not an interface name"),
        ("- set:\n    vrf: !!python/object:os.system {}\n", "the tag"),
        ("- set:\n    a: &x {}\n    b: *x\n", "anchors and aliases"),
        ("- set: {}\n- set: {}\n" + "x" * 10, "not valid YAML"),
    ],
)
def test_hostile_files_get_a_clear_error(tmp_path, text, says):
    found = problems(write(tmp_path, text))
    assert any(says in p for p in found), found


def test_huge_and_deeply_nested_files_are_refused_before_they_are_parsed(tmp_path):
    huge = write(tmp_path, "- set:\n" + "    # padding\n" * 200_000)
    assert "larger than 1 MiB" in problems(huge)[0]
    deep = write(tmp_path, "- set:\n" + "".join("  " * (i + 2) + f"k{i}:\n" for i in range(80)), "deep")
    assert "nesting deeper than 64 levels" in problems(deep)[0]


def test_unset_documents_and_later_sets_apply_in_order(tmp_path):
    f = write(
        tmp_path,
        "- set:\n    interface:\n      swp1: {type: swp}\n      swp2: {type: swp}\n"
        "- unset:\n    interface:\n      swp1:\n- set:\n    interface:\n      swp2:\n"
        "        link: {state: down}\n",
    )
    assert nvue.read(f).tree == {"interface": {"swp2": {"type": "swp", "link": {"state": "down"}}}}


# --- editing: what nv set/unset, nv config diff/patch and the REST API are made of -----------------------
def test_nv_set_words_and_interface_ranges():
    assert nv_tree.words("interface swp3 bridge domain br_default access 30".split()) == (
        ("interface", "swp3", "bridge", "domain", "br_default", "access"),
        "30",
    )
    assert nv_tree.words("interface vlan30 ip address 10.1.30.2/24".split()) == (
        ("interface", "vlan30", "ip", "address", "10.1.30.2/24"),
        {},
    )
    assert nv_tree.expand("swp1-2,5-6") == ["swp1", "swp2", "swp5", "swp6"]
    assert nv_tree.expand("pf0vf0-1_if,swp9") == ["pf0vf0_if", "pf0vf1_if", "swp9"]
    with pytest.raises(ValueError, match="at most 1024"):
        nv_tree.expand("swp1-99999999")
    with pytest.raises(ValueError, match="interface.swp1.lnk: no such place"):
        nv_tree.words("interface swp1 lnk state up".split())
    tree = nv_tree.set_path({}, ("interface", "swp5-8", "link", "state"), "up")
    assert sorted(tree["interface"]) == ["swp5", "swp6", "swp7", "swp8"]
    nv_tree.unset_path(tree, ("interface", "swp5-6"))
    assert sorted(tree["interface"]) == ["swp7", "swp8"]


def test_diff_takes_one_tree_to_the_other():
    old = nvue.read(SAMPLES / "leaf01/startup.yaml").tree
    new = copy.deepcopy(old)
    nv_tree.set_path(new, ("interface", "swp3", "bridge", "domain", "br_default", "access"), 30)
    nv_tree.set_path(new, ("bridge", "domain", "br_default", "vlan", "30", "vni", "30"), {})
    nv_tree.unset_path(new, ("vrf", "BLUE"))
    docs = nv_tree.diff(old, new)
    assert [next(iter(d)) for d in docs] == ["unset", "set"]
    again = copy.deepcopy(old)
    nv_tree.unpatch(again, docs[0]["unset"])
    nv_tree.patch(again, docs[1]["set"])
    assert again == new


def test_a_tree_made_in_memory_is_checked_as_a_file_is():
    with pytest.raises(TopologyError, match=r"nv set: interface.swp1.link.state: 'sideways' is not one of up, down"):
        nvue.from_tree({"interface": {"swp1": {"link": {"state": "sideways"}}}}, "nv set")
    assert nvue.from_tree({"interface": {"swp1": {"link": {"state": "down"}}}}, "nv set").tree


# --- on a topology ---------------------------------------------------------------------------------------
def test_an_interface_the_node_does_not_have_is_named_with_its_ports(tmp_path):
    fabric, _ = sample_lab()
    text = (SAMPLES / "leaf01/startup.yaml").read_text().replace("      swp2:\n", "      swp99:\n")
    f = write(tmp_path, text)
    line = text.splitlines().index("      swp99:") + 1
    with pytest.raises(TopologyError) as e:
        nvue.build({"leaf01": nvue.read(f)}, fabric, "netns")
    assert [str(p) for p in e.value.problems] == [
        f"{f}:{line}: interface.swp99: leaf01 has no port swp99; its ports: swp1-64"
    ]  # the platform's, cabled or not


def test_what_nvue_cannot_make_in_twin_is_refused_on_its_node(tmp_path):
    fabric, _ = sample_lab()
    text = (SAMPLES / "leaf01/startup.yaml").read_text()
    text = text.replace("vrf: BLUE", "vrf: GREEN").replace("access: 20", "access: 30")
    f = write(tmp_path, text)
    with pytest.raises(TopologyError) as e:
        nvue.build({"leaf01": nvue.read(f)}, fabric, "netns")
    said = [p.message for p in e.value.problems]
    assert "VLAN 30 is not in bridge domain br_default (bridge.domain.br_default.vlan)" in said
    assert any("vlan20 is in VRF GREEN, which this file does not declare" in m for m in said)


def test_the_samples_make_twins_tenants_on_their_nodes():
    fabric, configs = sample_lab()
    nodes, notes = nvue.build(nvue.read_configs(configs), fabric, "netns")
    assert notes == []
    leaf = nodes["leaf01"].plane
    assert leaf.vrfs == {"RED": "red", "BLUE": "blue"}, "RED is tenant red: it runs as red"
    assert leaf.devices == {"swp51": "swp51", "swp52": "swp52", "swp1": "swp1", "swp2": "swp2"}
    assert nodes["dpu1"].plane.devices["p0_if"] == "p0", "HBN's p0_if is the BlueField's p0"
    red = leaf.fabric.tenants["red"]
    assert (red.l3vni, red.segments["vlan10"].l2vni, red.segments["vlan10"].gateway) == (4001, 10, "10.1.10.1")
    assert [a.host for a in red.attachments] == ["server01"]
    sh = nodes["leaf01"].files["interfaces.sh"]
    assert "ip -n red addr add 10.1.10.1/24 dev br10\nip -n red addr add 10.1.10.2/24 dev br10\n" in sh
    assert "per-vni layout" in sh
    frr = nodes["dpu1"].files["frr.conf"]
    assert " neighbor p0 interface peer-group underlay\n" in frr and "vrf red\n vni 4001\nexit-vrf" in frr
    assert nodes["dpu1"].files["daemons"].count(' -n"') == 1, "tenant VRFs as namespaces: zebra -n"


@pytest.mark.parametrize("node", ["leaf01", "dpu1"])
def test_frr_conf_and_interfaces_of_the_samples_match_golden(node, golden):
    fabric, configs = sample_lab()
    nodes, _ = nvue.build(nvue.read_configs(configs), fabric, "netns")
    for name in ("frr.conf", "interfaces.sh"):
        golden(GOLDEN / "rendered" / node / name, nodes[node].files[name])


def test_the_vlan_aware_layout_of_the_samples_matches_golden(golden):
    """Cumulus's own layout (opt-in, kernels with 802.1Q VLANs and VRF devices): golden only."""
    fabric, configs = sample_lab()
    nodes, _ = nvue.build(nvue.read_configs(configs), fabric, "vrf", layout=nv_plane.VLAN_AWARE)
    sh = nodes["leaf01"].files["interfaces.sh"]
    golden(GOLDEN / "rendered" / "leaf01-vlan-aware.sh", sh)
    assert "ip link add br_default mtu 8950 type bridge vlan_filtering 1" in sh
    assert "ip link add link vlan10 name vlan10-v0 address 00:00:5e:00:01:01 type macvlan mode private" in sh
    netns, _ = nvue.build(nvue.read_configs(configs), fabric, "netns", layout=nv_plane.VLAN_AWARE)
    assert netns["leaf01"].plane.layout == nv_plane.PER_VNI, "one bridge cannot span namespaces"


def test_the_vlan_aware_layout_runs_nvues_mtu_acls_qos_and_hostname_as_the_per_vni_one_does():
    """What the plane adds last (link.mtu, ACL tables, RoCE QoS per port, the host name) is kept when
    Cumulus's layout replaces the per-VNI steps: the same steps, in the same order, last."""
    fabric, configs = sample_lab()
    nfs = nvue.read_configs(configs)
    t = copy.deepcopy(nfs["leaf01"].tree)
    nv_tree.patch(
        t,
        {
            "system": {"hostname": "leaf-01"},
            "acl": {
                "NOTELNET": {
                    "type": "ipv4",
                    "rule": {
                        "10": {"match": {"ip": {"protocol": "tcp", "dest-port": {"23": {}}}}, "action": {"deny": {}}}
                    },
                }
            },
            "interface": {"swp51": {"link": {"mtu": 9216}, "acl": {"NOTELNET": {"inbound": {}}}}},
        },
    )
    nfs["leaf01"] = nvue.from_tree(t, "leaf01/startup.yaml")
    per_vni, _ = nvue.build(nfs, fabric, "vrf")
    aware, _ = nvue.build(nfs, fabric, "vrf", layout=nv_plane.VLAN_AWARE)
    kinds = {"mtu", "acl", "acl-cp", "qos", "hostname", "lldp"}

    def last(plane):
        return [s for s in plane.steps if any(s is x for k, x in plane.extras.items() if k[0] in kinds)]

    want = last(per_vni["leaf01"].plane)
    assert {s.op for s in want} >= {"mtu", "nft", "tc-batch"} and len(want) >= 5
    assert aware["leaf01"].plane.layout == nv_plane.VLAN_AWARE
    assert last(aware["leaf01"].plane) == want
    assert aware["leaf01"].plane.steps[-len(want) :] == want
    sh = aware["leaf01"].files["interfaces.sh"]
    assert "ip link set swp51 mtu 9216" in sh
    assert "tc -batch /etc/twin/qos-swp51.tc" in sh
    assert "leaf-01" in sh


def test_arp_suppression_off_vxlan_off_and_ports_down_change_the_plane(tmp_path):
    fabric, _ = sample_lab()
    text = (SAMPLES / "leaf01/startup.yaml").read_text().replace("arp-nd-suppress: on", "arp-nd-suppress: off")
    text = text.replace(
        "      swp52:\n        type: swp\n", "      swp52:\n        type: swp\n        link:\n          state: down\n"
    )
    p = nvue.build({"leaf01": nvue.read(write(tmp_path, text))}, fabric, "netns")[0]["leaf01"].plane
    cmds = [s.command() for s in p.steps]
    assert "bridge -n red link set dev vxlan10 learning off" in cmds and "ip link set swp52 down" in cmds
    off = text.replace("        enable: on\n        arp-nd-suppress", "        enable: off\n        arp-nd-suppress")
    p = nvue.build({"leaf01": nvue.read(write(tmp_path, off, "x"))}, fabric, "netns")[0]["leaf01"].plane
    assert not any(s.op == "vxlan" for s in p.steps) and p.vnis == set()


# --- the command line ------------------------------------------------------------------------------------
def test_validate_names_every_nvue_problem_and_export_writes_startup_files(tmp_path):
    from click.testing import CliRunner

    from twin.cli import main

    bad = tmp_path / "configs"
    text = (SAMPLES / "leaf01/startup.yaml").read_text().replace("access: 10", "access: x")
    write(bad, text)
    write(
        bad, (SAMPLES / "dpu1/startup.yaml").read_text().replace("p1_if:\n        type", "p7_if:\n        type"), "dpu1"
    )
    res = CliRunner().invoke(main, ["validate", str(SAMPLE_TOPOLOGY), "--configs", str(bad)], prog_name="twin")
    assert res.exit_code == 1 and "Traceback" not in res.output
    line = text.splitlines().index("              access: x") + 1
    assert (
        f"{bad}/leaf01/startup.yaml:{line}: interface.swp1.bridge.domain.br_default.access: 'x' is not a VLAN id"
        in res.output
    )
    assert (
        f"{bad}/dpu1/startup.yaml:" in res.output
        and "interface.p7_if: dpu1 has no port p7_if; its ports: p0-1,pf0hpf,pf0vf0-15" in res.output
    ), "every problem of every file at once"
    out = tmp_path / "out"
    res = CliRunner().invoke(
        main, ["export", str(ROOT / "topologies/leaf-vtep.yml"), "--format", "nvue", "-o", str(out)], prog_name="twin"
    )
    assert res.exit_code == 0, res.output
    assert sorted(p.parent.name for p in out.glob("*/startup.yaml")) == ["leaf1", "leaf2", "spine1", "spine2"]
    assert nvue.read(out / "leaf1/startup.yaml").tree["interface"]["swp10"]["bridge"]["domain"]["br_default"] == {
        "access": 10
    }


def test_a_fabric_may_have_leaf_and_dpu_vteps_side_by_side(tmp_path):
    fabric = topology.load(SAMPLE_TOPOLOGY)
    assert fabric.vtep_kind == "leaf,dpu" and fabric.vteps() == ["leaf01", "dpu1"]
    bad = tmp_path / "bad.yml"
    bad.write_text(SAMPLE_TOPOLOGY.read_text().replace("vtep: [leaf, dpu]", "vtep: [leaf, host]"))
    with pytest.raises(TopologyError, match=r"vtep: 'host' cannot be a VTEP; VTEP kinds: leaf, dpu"):
        topology.load(bad)
    bad.write_text(SAMPLE_TOPOLOGY.read_text().replace("vtep: [leaf, dpu]", "vtep: leaf"))
    with pytest.raises(TopologyError, match=r"server03 has no link to a leaf \(vtep: leaf\)"):
        topology.load(bad)
