"""Faults on the default lab: each test applies a fault, asserts what the fabric
really does about it, reverts it and leaves the lab converged for the next one."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from twin import timeouts, verify, wait
from twin.change import faults
from twin.cli.faults import fault_group
from twin.errors import TwinError
from twin.lifecycle import barrier
from twin.runtime import frr
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
    fs = [flows.flow(lab.fabric, src, dst, i * 8 + k, sport=49152 + 101 * k, count=count)
          for i, (src, dst) in enumerate(pairs) for k in range(8)]
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
        wait.until(lambda: [] if session_state(lab, "dpu1", "p0") != "Established" else ["dpu1:p0 Established"],
                   timeouts.EXEC_DEFAULT, "BGP session on dpu1:p0 down")
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


def test_a_restarted_dpu_is_rewired_and_reconverges(lab):
    f = faults.node_restart(lab, "dpu2")
    assert f.details["links"] == len(lab.fabric.nodes["dpu2"].ports)
    reconverge(lab)
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
        f = lab.apply("fault:link-loss:dpu1:p0:50")      # a fault through `twin apply`, as rehearse's specs
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
