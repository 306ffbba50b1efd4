"""Faults on the default lab: each test applies a fault, asserts what the fabric
really does about it, reverts it and leaves the lab converged for the next one."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from pyroute2 import netns as named_netns

from twin import verify
from twin.base import timeouts, wait
from twin.base.errors import TwinError
from twin.change import faults
from twin.cli.faults import fault_group
from twin.config.naming import held_netns
from twin.lifecycle import barrier
from twin.runtime import frr, netns
from twin.traffic import flows

pytestmark = pytest.mark.e2e

NAME = "t-h2-faults"


@pytest.fixture(scope="module")
def lab(make_lab):
    lab = make_lab("topologies/aipod.yml", NAME)
    yield lab
    lab.down()


def reconverge(lab) -> None:
    """Deadline wait for the whole intended state, then nothing may be missing."""
    barrier.converge(lab.context())
    assert lab.missing() == []


def session_state(lab, node: str, port: str) -> str:
    (summary,) = lab.node(node).vtysh_json(frr.SUMMARY)
    return summary["peers"].get(port, {}).get("state", "absent")


def roce(lab, pairs: list[tuple[str, str]], count: int) -> tuple[int, int]:
    """Send `count` RoCE frames per pair and per UDP source port (8 of them); (sent, received)."""
    fs = [
        flows.flow(lab.fabric, src, dst, i * 8 + k, sport=49152 + 101 * k, count=count)
        for i, (src, dst) in enumerate(pairs)
        for k in range(8)
    ]
    results = flows.run(lab, fs, {f.flow_id: True for f in fs}, check_icrc=False, timeout=3)
    return sum(r.sent for r in results.values()), sum(r.received for r in results.values())


def test_unknown_nodes_and_ports_are_named(lab):
    with pytest.raises(TwinError, match="no node 'dpu9'; nodes: spine1, spine2, leaf1"):
        faults.link_down(lab, "dpu9:p0")
    with pytest.raises(TwinError, match="no port 'p9'; ports: p0, p1, pf0vf0"):
        faults.link_loss(lab, "dpu1:p9", 10)
    with pytest.raises(TwinError, match="routers: spine1"):
        faults.daemon_kill(lab, "host1a")
    res = CliRunner().invoke(fault_group, ["node-stop", NAME, "leaf7"])
    assert res.exit_code == 1 and "no node 'leaf7'" in res.output


def test_link_down_drops_the_session_and_link_up_reconverges(lab):
    f = faults.link_down(lab, "dpu1:p0")
    assert (f.kind, f.target) == ("link-down", "dpu1:p0")
    try:
        wait.until(
            lambda: [] if session_state(lab, "dpu1", "p0") != "Established" else ["dpu1:p0 Established"],
            timeouts.EXEC_DEFAULT,
            "BGP session on dpu1:p0 down",
        )
        assert session_state(lab, "leaf1", "swp3") != "Established"
        missing = lab.missing()
        assert any(m.startswith("dpu1: BGP session on p0 to leaf1") for m in missing), missing
        assert any(m.startswith("leaf1: BGP session on swp3 to dpu1") for m in missing), missing
    finally:
        f.revert()
    reconverge(lab)
    assert session_state(lab, "dpu1", "p0") == "Established"


def test_link_faults_from_the_command_line(lab):
    runner = CliRunner()
    res = runner.invoke(fault_group, ["link-down", NAME, "leaf2:swp1"])
    assert res.exit_code == 0 and "link-down leaf2:swp1" in res.output and "spine1:swp2" in res.output, res.output
    res = runner.invoke(fault_group, ["link-up", NAME, "leaf2:swp1"])
    assert res.exit_code == 0, res.output
    reconverge(lab)


def test_killed_bgpd_comes_back_and_the_lab_reconverges(lab):
    before = faults.daemon_pid(lab, "leaf1", "bgpd")
    f = faults.daemon_kill(lab, "leaf1", "bgpd")
    assert f.details["pid"] == before

    def back() -> list[str]:
        now = faults.daemon_pid(lab, "leaf1", "bgpd")
        return [] if now not in (None, before) else [f"leaf1: bgpd not restarted (pid {now})"]

    wait.until(back, timeouts.converge(len(lab.fabric.routers())), "watchfrr restarting bgpd")
    reconverge(lab)


def peer_ports(lab, node: str) -> dict[str, tuple[int, str]]:
    """The peers' ends of `node`'s links: "peer:port" -> (ifindex, operational state)."""
    out = {}
    for port in lab.fabric.nodes[node].ports:
        with netns.ipr(lab.context().pid(port.peer_node)) as ipr:
            (link,) = ipr.get_links(ifname=port.peer_port)
            out[f"{port.peer_node}:{port.peer_port}"] = (link["index"], link.get("IFLA_OPERSTATE"))
    return out


def test_a_stopped_dpus_peers_keep_their_ports_and_it_comes_back(lab):
    """As a switch's neighbours while it reboots: the leafs' ports to dpu2 stay (same interface,
    configured), without carrier; started again, dpu2 takes its ends back and the fabric reconverges."""
    before = peer_ports(lab, "dpu2")
    assert {state for _, state in before.values()} == {"UP"}
    n = len(lab.fabric.nodes["dpu2"].ports)
    stopped = faults.node_stop(lab, "dpu2")
    assert stopped.details["links held"] == n
    assert held_netns(NAME, "dpu2") in named_netns.listnetns()
    # the kernel's link watcher sets a port's state from its carrier within a second
    wait.until(
        lambda: [f"{p}: {st}" for p, (_, st) in peer_ports(lab, "dpu2").items() if st != "DOWN"],
        5,
        "the leafs' and hosts' ports to dpu2 to lose their carrier",
        first=0.1,
        cap=0.5,
    )
    during = peer_ports(lab, "dpu2")
    assert {p: i for p, (i, _) in during.items()} == {p: i for p, (i, _) in before.items()}, "the same interfaces"
    started = faults.node_start(lab, "dpu2")
    assert started.details["links"] == started.details["links taken back"] == n
    assert held_netns(NAME, "dpu2") not in named_netns.listnetns()
    reconverge(lab)
    after = peer_ports(lab, "dpu2")
    assert after == before, "the leafs' ports are the ones they had, up again"
    report = verify.run(lab, only=["control", "isolation"])
    assert report.passed, [f"{c.name}: {c.message}" for c in report.failures()]


def test_a_killed_host_comes_back_with_its_dpu_port_replumbed(lab):
    faults.node_kill(lab, "host1a")
    f = faults.node_start(lab, "host1a")
    assert f.details["links"] == 1
    reconverge(lab)
    sent, received = roce(lab, [("host1a", "host2a"), ("host2a", "host1a")], count=2)
    assert received == sent


def test_loss_on_a_dpu_uplink_then_clear(lab):
    """dpu1's other uplink is down, so every frame dpu1 sends to dpu2 crosses p0."""
    pairs = [("host1a", "host2a"), ("host1b", "host2b"), ("host1c", "host2a")]
    other = faults.link_down(lab, "dpu1:p1")
    try:
        sent, received = roce(lab, pairs, count=2)
        assert received == sent, "no loss expected before the fault"
        f = lab.apply("fault:link-loss:dpu1:p0:50")  # a fault through `twin apply`, as rehearse's specs
        assert f.details["mechanism"] in ("netem", "nftables")
        assert f.undo == f"twin fault link-loss-clear {NAME} dpu1:p0", f.undo
        try:
            sent, received = roce(lab, pairs, count=25)  # 600 frames
            loss = 1 - received / sent
            assert 0.2 <= loss <= 0.8, f"{received}/{sent} frames arrived with 50% loss on dpu1:p0"
            if f.details["mechanism"] == "nftables":
                assert faults.loss_dropped(lab, "dpu1:p0") >= sent - received
        finally:
            cleared = lab.apply("fault:link-loss-clear:dpu1:p0")
        assert "dpu1:p0" in cleared.details["removed"]
        assert faults.loss_dropped(lab, "dpu1:p0") is None

        def lossless() -> list[str]:  # BGP may have lost a beat under loss: until it delivers again
            s, r = roce(lab, pairs, count=2)
            return [] if r == s else [f"{s - r} of {s} frames lost"]

        wait.until(lossless, timeouts.converge(len(lab.fabric.routers())), "no loss after loss-clear")
        sent, received = roce(lab, pairs, count=25)
        assert received == sent, f"{sent - received} of {sent} frames lost after loss-clear"
    finally:
        other.revert()
    reconverge(lab)
