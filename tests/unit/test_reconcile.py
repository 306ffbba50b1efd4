"""`twin.reconcile`: the kernel side of a change, per node, smallest object first."""

from pathlib import Path

from twin.config.reconcile import node_delta
from twin.topology import load

ROOT = Path(__file__).resolve().parents[2]


def fabrics(monkeypatch):
    monkeypatch.chdir(ROOT)
    return load("topologies/aipod.yml"), load("tests/golden/plan/aipod-day1.yml", name="aipod")


def test_a_new_tenant_is_made_in_its_own_namespace_and_bound_after_frr(monkeypatch):
    old, new = fabrics(monkeypatch)
    d = node_delta(old, new, "dpu1", "netns")
    add = [s.command() for s in d.add]
    assert add[0] == "ip link set p0 mtu 9100", "a port's MTU first, in the namespace it is in"
    assert "ip netns add green" in add
    assert any(c.startswith("ip link add vxlan10300 netns green index ") for c in add)
    assert "ip netns exec green nft -f /etc/twin/nftables-green.nft" in add
    assert [s.op for s in d.bind] == ["neigh"] and d.bind[0].ns == "green"
    # red and blue are not touched: no step in their namespaces but MTUs that must follow the fabric
    assert all(s.ns not in ("red", "blue") or s.op == "mtu" for s in d.add + d.remove)


def test_a_detached_host_leaves_its_segment_and_the_segment_goes_with_its_last_host(monkeypatch):
    old, new = fabrics(monkeypatch)
    d = node_delta(old, new, "dpu2", "netns")
    removed = [s.command() for s in d.remove]
    assert removed[:3] == [
        "ip -n blue neigh del 10.1.2.12 dev br10202",
        "ip -n blue link set pf0vf2 nomaster",
        "ip -n blue link set pf0vf2 netns 1",
    ]
    assert removed[-2:] == ["ip -n blue link del vxlan10202", "ip -n blue link del br10202"]
    host = node_delta(old, new, "host2c", "netns")
    assert [s.command() for s in host.add] == ["ip route del default via 10.1.2.1 dev eth1", "ip addr flush dev eth1"]


def test_no_change_no_steps(monkeypatch):
    old, _ = fabrics(monkeypatch)
    assert not any(node_delta(old, old, n, "netns") for n in old.nodes)
    assert not any(node_delta(old, old, n, "vrf") for n in old.nodes)


def test_vrf_backend_takes_a_tenant_down_with_its_devices(monkeypatch):
    old, new = fabrics(monkeypatch)
    back = node_delta(new, old, "dpu1", "vrf")  # removing green again
    removed = [s.command() for s in back.remove]
    assert removed[-1] == "ip link del green"
    assert "ip link del vxlan10300" in removed and "ip link del br10301" in removed
    assert "ip link set pf0vf3 nomaster" in removed
