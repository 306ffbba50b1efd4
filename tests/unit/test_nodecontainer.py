"""What a node's container is made with beyond its kind: its CPU weight and its /etc/hosts."""

from __future__ import annotations

import io
import tarfile

from tests.unit.fabrics import clos
from twin.runtime.nodecontainer import CPU_SHARES, cpu_shares, etc_hosts
from twin.topology import load


def test_a_nodes_cpu_weight_follows_its_bgp_sessions(tmp_path):
    big = clos(tmp_path, 8, 248)
    assert cpu_shares(big.nodes["spine1"]) == 31 * CPU_SHARES  # 248 sessions
    assert cpu_shares(big.nodes["leaf1"]) == CPU_SHARES  # 8: Docker's default
    aipod = load("topologies/aipod.yml")
    assert {cpu_shares(n) for n in aipod.nodes.values()} == {CPU_SHARES}  # a small lab: all alike


def test_a_nodes_etc_hosts_has_the_loopback_names_and_its_own():
    with tarfile.open(fileobj=io.BytesIO(etc_hosts("leaf1"))) as tar:
        (member,) = tar.getmembers()
        text = tar.extractfile(member).read().decode()
    assert member.name == "hosts" and member.mode == 0o644
    lines = [line.split("\t") for line in text.splitlines()]
    assert ["127.0.0.1", "localhost"] in lines and ["127.0.1.1", "leaf1"] in lines
    assert ["::1", "localhost ip6-localhost ip6-loopback"] in lines
