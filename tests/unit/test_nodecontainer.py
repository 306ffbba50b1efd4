"""What a node's container is made with beyond its kind: its CPU weight and its /etc/hosts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.fabrics import clos
from twin.runtime.nodecontainer import CPU_SHARES, cpu_shares, hosts_mounts
from twin.topology import load


def test_a_nodes_cpu_weight_follows_its_bgp_sessions(tmp_path):
    big = clos(tmp_path, 8, 248)
    assert cpu_shares(big.nodes["spine1"]) == 31 * CPU_SHARES  # 248 sessions
    assert cpu_shares(big.nodes["leaf1"]) == CPU_SHARES  # 8: Docker's default
    aipod = load("topologies/aipod.yml")
    assert {cpu_shares(n) for n in aipod.nodes.values()} == {CPU_SHARES}  # a small lab: all alike


def test_a_nodes_etc_hosts_has_the_loopback_names_and_its_own(tmp_path):
    (m,) = hosts_mounts(tmp_path, "leaf1", set())
    assert m["Target"] == "/etc/hosts" and m["Type"] == "bind" and not m.get("ReadOnly")  # NVUE adds a name
    lines = [line.split("\t") for line in Path(m["Source"]).read_text().splitlines()]
    assert ["127.0.0.1", "localhost"] in lines and ["127.0.1.1", "leaf1"] in lines
    assert ["::1", "localhost ip6-localhost ip6-loopback"] in lines
    assert Path(m["Source"]).parent == tmp_path / ".hosts"  # beside the nodes' directories, never one of them


def test_a_users_own_bind_of_etc_hosts_is_left_alone(tmp_path):
    assert hosts_mounts(tmp_path, "leaf1", {"/etc/hosts"}) == []
    assert not (tmp_path / ".hosts").exists()


def test_a_link_where_the_hosts_directory_should_be_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / ".hosts").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError, match="not a directory twin made"):
        hosts_mounts(tmp_path, "leaf1", set())
    assert list((tmp_path / "elsewhere").iterdir()) == []
