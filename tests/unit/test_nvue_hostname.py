"""NVUE's `system hostname` as the node runs it (`twin.nvue.hostname`): one step of the node's plane (its UTS
name, /etc/hostname, /etc/hosts) where NVUE names it otherwise, undone to its own name on day 2, a name
the kernel cannot hold refused; FRR's wait for its file blind to the `hostname` line it never shows as
written; verify's BGP check taking either name of a peer."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from twin import nvue, topology
from twin.base.errors import TopologyError
from twin.intent import Intent, frrconf
from twin.lifecycle import state
from twin.nvue import hostname as nvue_hostname
from twin.nvue import routed
from twin.nvue import tree as nv_tree
from twin.nvue.nvued import show
from twin.nvue.plane import extras_delta
from twin.runtime.frr import to_delete

ROOT = Path(__file__).resolve().parents[2]
FABRIC = topology.load(ROOT / "tests/e2e/nvue/samples.yml")
LEAF = nvue.read(ROOT / "tests/golden/interop/nvue/samples/leaf01/startup.yaml").tree


def built(edit: dict) -> Any:
    t = copy.deepcopy(LEAF)
    nv_tree.patch(t, edit)
    return nvue.build({"leaf01": nvue.from_tree(t, "leaf01/startup.yaml")}, FABRIC, "netns")[0]["leaf01"]


def test_a_name_of_its_own_is_one_step_in_the_node_before_lldpds():
    x = built({"system": {"hostname": "sw-leaf01"}})
    s = x.plane.extras[nvue_hostname.KEY]
    assert s.in_node and s.command() == (
        "hostname sw-leaf01 && printf '%s\\n' sw-leaf01 > /etc/hostname && "
        "{ grep -q '[[:space:]]sw-leaf01$' /etc/hosts || printf '127.0.1.1\\t%s\\n' sw-leaf01 >> /etc/hosts; }"
    )
    assert x.plane.steps.index(s) == len(x.plane.steps) - 2 and x.plane.steps[-1].op == "lldp"
    assert s.command() in x.files["interfaces.sh"] and "hostname sw-leaf01" in x.files["frr.conf"]
    assert nvue_hostname.KEY not in built({}).plane.extras, "its own name (the samples'): nothing to set"


def test_day_two_renames_and_a_name_taken_away_is_the_nodes_own_again():
    own, renamed = built({}).plane, built({"system": {"hostname": "sw-leaf01"}}).plane
    add, remove = extras_delta(own.extras, renamed.extras, set(), set())
    assert "hostname sw-leaf01" in [s.command().split(" && ")[0] for s in add] and remove == []
    _, remove = extras_delta(renamed.extras, own.extras, set(), set())
    assert [s.command().split(" && ")[0] for s in remove if s.op == "hostname"] == ["hostname leaf01"]
    assert routed.undo(renamed.extras[nvue_hostname.KEY]).dev == "leaf01"


def test_a_name_the_kernel_cannot_hold_is_refused():
    name = ".".join(["a" * 20] * 4)  # 83 characters: RFC 1123's, not the kernel's (64)
    with pytest.raises(TopologyError) as e:
        built({"system": {"hostname": name}})
    assert [f"{p.path}: {p.message}" for p in e.value.problems] == [
        "system.hostname: a host name of 83 characters: the node's (the kernel's) holds 64 at most"
    ]


def test_frr_waits_for_no_hostname_line_it_shows_the_systems_name_in():
    out = (
        "2026-12-07 03:34:14,041  INFO: Called via ...\n"
        "\nLines To Delete\n===============\nno hostname leaf2\nno ip route 192.0.2.0/24 blackhole\nexit\n"
        "\nLines To Add\n============\nhostname leaf2x\n"
    )
    assert to_delete(out) == ["no ip route 192.0.2.0/24 blackhole"]
    assert to_delete("\nLines To Delete\n===============\nno hostname leaf2\n") == []
    assert to_delete("\nLines To Delete\n===============\nno hostnames x\n") == ["no hostnames x"]


def test_verify_takes_either_name_of_a_peer_its_frr_config_renames(tmp_path):
    assert frrconf.hostname("frr defaults datacenter\nhostname sw-leaf01\n!\n") == "sw-leaf01"
    assert frrconf.hostname("! hostname x\nrouter bgp 1\n") is None
    (tmp_path / "leaf01").mkdir()
    (tmp_path / "leaf01" / "frr.conf").write_text("hostname sw-leaf01\n")
    assert state.frr_hostnames(tmp_path, FABRIC) == {"leaf01": "sw-leaf01"}
    n = Intent(FABRIC, {}, {"leaf01": "sw-leaf01", "spine01": "spine01"}).nodes["spine01"]
    (port,) = [s.port for s in n.sessions if s.peer == "leaf01"]
    assert n.names == {port: ("leaf01", "sw-leaf01")}
    assert "hostname" not in n.bgp_summary()["ipv4Unicast"]["peers"][port]
    summary = {"ipv4Unicast": {"peers": {port: {"state": "Established", "hostname": "sw-leaf01"}}}}
    assert n.hostname_diffs(summary) == []
    summary["ipv4Unicast"]["peers"][port]["hostname"] = "leaf01"  # bgpd as it started, before a day-2 rename
    assert n.hostname_diffs(summary) == []
    summary["ipv4Unicast"]["peers"][port]["hostname"] = "leaf02"
    assert n.hostname_diffs(summary) == [
        f".ipv4Unicast.peers.{port}.hostname: expected 'leaf01' or 'sw-leaf01', got 'leaf02'"
    ]
    other = [s for s in n.sessions if s.peer != "leaf01"]
    assert all(n.bgp_summary()["ipv4Unicast"]["peers"][s.port]["hostname"] == s.peer for s in other)


def test_nv_show_system_gives_the_name_the_node_runs_set_or_not():
    assert show.as_run({"system": {"hostname": "sw-leaf01", "global": {}}}, "leaf01")["system"] == {
        "hostname": "sw-leaf01",
        "global": {},
    }
    tree: dict = {"interface": {}}
    assert show.as_run(tree, "leaf01") == {"interface": {}, "system": {"hostname": "leaf01"}} and tree == {
        "interface": {}
    }, "the applied tree itself untouched"
