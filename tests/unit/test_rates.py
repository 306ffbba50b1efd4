"""Rate limits and congestion points without Docker: which flood drives each limit, how a
measurement is judged, the congestion point's model, which hosts can drive a point, and what
a verify run says it did not exercise (issue 29)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import yaml

from twin.change.report import Rehearsal
from twin.intent import paths
from twin.topology import load
from twin.topology.model import Rate
from twin.traffic import dcqcn, engine, roce
from twin.verify import congestion, coverage, limits
from twin.verify.result import Check, Report

ROOT = Path(__file__).resolve().parents[2]
SVC = ROOT / "topologies" / "dpu-services.yml"


def variant(tmp_path, edit):
    doc = yaml.safe_load(SVC.read_text())
    edit(doc)
    f = tmp_path / "svc.yml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load(f)


# --- every limit, a flood of its own ---------------------------------------------------------------
def test_every_limit_of_the_services_lab_gets_a_flood_held_by_it_alone():
    tests, unexercised = limits.plan(load(SVC))
    assert unexercised == []
    got = {t.name: (t.src.host, t.dst.host, t.frame, round(t.fps)) for t in tests}
    assert got == {
        "red host1a egress 20mbit held on dpu1:pf0vf0": ("host1a", "host1c", 1098, 2277),  # its own VTEP first
        "red host2a egress 20mbit held on dpu2:pf0vf0": ("host2a", "host1a", 1098, 2277),
        "red host1c egress 20mbit held on dpu1:pf0vf2": ("host1c", "host1a", 1098, 2277),
        "blue host1b egress 20mbit held on dpu1:pf0vf1": ("host1b", "host2b", 1098, 2277),
        # host1b's own 20 Mbit/s would hold 1 KiB frames at 2,277/s: the largest frames it passes at 1.15 x 20,000/s
        "blue host2b ingress 20000pps held on dpu2:pf0vf1": ("host1b", "host2b", 108, 20000),
    }
    rounds = [[t.holder.host for t in r] for r in limits.rounds(tests)]
    assert rounds == [["host1a", "host1c", "host1b"], ["host2a", "host2b"]], "one VTEP's limits together"


def test_a_limit_no_peer_can_drive_is_not_exercised_and_says_why(tmp_path):
    def edit(doc):  # host1b may send only 1 Mbit/s: it cannot drive host2b's 20,000 frames/s
        doc["tenants"]["blue"]["attachments"][0]["rate_limit"] = {"egress": "1mbit"}

    tests, unexercised = limits.plan(variant(tmp_path, edit))
    assert "blue host2b ingress 20000pps held on dpu2:pf0vf1" not in {t.name for t in tests}
    assert unexercised == [
        {
            "safeguard": "rate limit: host2b ingress 20000pps on dpu2:pf0vf1",
            "why": "no other workload of blue can flood it without a limit of its own holding the flood first",
        }
    ]
    assert limits.payload_for(Rate(value=20000, unit="pps"), None) == 0, "unlimited: the smallest frames"
    assert limits.payload_for(Rate(value=20_000_000, unit="bit"), Rate(value=22_000_000, unit="bit")) is None


def test_the_verdicts_of_a_limit_held_over_or_not_judged():
    (t,) = [t for t in limits.plan(load(SVC))[0] if t.holder.host == "host2a"]  # 2,277 frames/s
    rates = lambda fps: {"tx_fps": fps, "rx_fps": fps, "tx_mbps": 0, "rx_mbps": 0, "seconds": 2.0}  # noqa: E731
    judge = lambda offered, delivered, held: limits.judge(t, rates(offered), rates(delivered), held)  # noqa: E731
    assert judge(2270, 2277, 0.96)["verdict"] == "held", "held back by its port at the limit"
    assert judge(20000, 2300, 0.0)["verdict"] == "held", "offered far more, the limit dropped the rest"
    over = judge(22640, 22640, 0.0)
    assert over["verdict"] == "over" and limits.message(over).startswith(
        "delivered 22640 frames/s (0 Mbit/s) of 1098 bytes, over its limit of 2277 frames/s"
    )
    slow = judge(1500, 1500, 0.0)
    assert slow["verdict"] == "slow" and "the host is too slow to drive it" in limits.message(slow)
    assert judge(2000, 2000, 0.5)["verdict"] == "short", "held back under its limit: stricter than declared"
    short = judge(20000, 1000, 0.0)
    assert short["verdict"] == "short" and limits.message(short).startswith("not judged: delivered only 1000")


def test_an_ingress_limit_flooded_across_the_fabric_is_judged_by_what_reached_its_vtep():
    (t,) = [t for t in limits.plan(load(SVC))[0] if t.direction == "ingress"]
    assert t.remote and t.fps == 20000
    rates = lambda fps: {"tx_fps": fps, "rx_fps": fps, "tx_mbps": 0, "rx_mbps": 0, "seconds": 2.0}  # noqa: E731
    assert limits.judge(t, rates(26000), rates(20030), 0.3, reached=25900)["verdict"] == "held"
    lost = limits.judge(t, rates(26000), rates(17000), 0.3, reached=17100)  # the busy host lost it on the way
    assert lost["verdict"] == "slow" and "17100 reached dpu2, not over its limit" in limits.message(lost)
    assert limits.judge(t, rates(26000), rates(30000), 0.3, reached=30000)["verdict"] == "over"


# --- congestion points -------------------------------------------------------------------------------
def test_the_congestion_points_model_is_a_token_bucket_over_the_arrival_times():
    ms = 1_000_000
    assert dcqcn.expected_marks([], 5000, 50) == 0
    assert dcqcn.expected_marks([0] * 60, 5000, 50) == 10, "50 at once pass, the rest is marked"
    assert dcqcn.expected_marks([i * ms for i in range(500)], 5000, 50) == 0, "1,000/s is below 5,000/s"
    burst = [i * 40_000 for i in range(2000)]  # 25,000 frames/s for 80 ms: 50 + 400 pass
    assert abs(dcqcn.expected_marks(burst, 5000, 50) - 1550) <= 2
    assert dcqcn.expected_marks([0, 0, 0], 1000, 3000, cost=1500) == 1, "a bucket of bytes"


def test_a_point_is_driven_by_hosts_whose_every_path_crosses_it_and_whose_limits_let_the_burst_through(tmp_path):
    f = load(SVC)
    assert paths.crosses(f, "dpu2", "dpu1", "leaf1", "swp2") and not paths.crosses(f, "dpu1", "dpu2", "leaf1", "swp2")
    aipod = load(ROOT / "topologies" / "aipod.yml")
    assert not paths.crosses(aipod, "dpu2", "dpu1", "leaf1", "swp3"), "ECMP: half the paths go by leaf2"
    (probe,), unexercised = congestion.plan(f)
    assert (probe.tenant, probe.src.host, probe.dst.host, probe.frame, probe.fps) == (
        "blue",
        "host2b",
        "host1b",
        1098,
        5000,
    )
    assert (
        unexercised == []
        and probe.names()["ect"] == "leaf1:swp2 marks ECN-capable RoCE above 5000pps (blue host2b -> host1b)"
    )

    def only_red(doc):  # red's hosts send 20 Mbit/s: 1 KiB frames would cross at 2,277/s, the smallest at 33,784/s
        del doc["tenants"]["blue"]

    (red,), _ = congestion.plan(variant(tmp_path, only_red))
    assert (red.src.host, red.dst.host, red.frame) == ("host2a", "host1a", 74)

    def aside(doc):  # a point no tenant path crosses
        doc["congestion"] = [{"port": "spine1:swp3", "above": "5000pps"}]

    probes, unexercised = congestion.plan(variant(tmp_path, aside))
    assert probes == [] and unexercised[0]["safeguard"] == "congestion point: spine1:swp3 (above 5000pps)"


def figures(sent=2000, received=2000, ce=0, fps=25000, rule=1550, cnps=(0, 0, 0), ecn=roce.ECT0):
    return {
        "flow": "blue host2b -> host1b",
        "frame_bytes": 1098,
        "ecn": ecn,
        "sent": sent,
        "received": received,
        "ce": ce,
        "tos_changed": 0,
        "arrived_fps": fps,
        "point_fps": 5000,
        "rule_marks": rule,
        "cnps_sent": cnps[0],
        "cnps_received": cnps[1],
        "cnps_allowed": cnps[2],
    }


def test_the_verdicts_of_a_congestion_point():
    (probe,), _ = congestion.plan(load(SVC))
    assert congestion.judge_ect(probe, figures(ce=1550, cnps=(440, 440, 440))) == (True, "")
    ok, msg = congestion.judge_ect(probe, figures(ce=0))
    assert ok is False and msg.endswith("its rule marks 1550 of them: the point does not mark")
    assert (
        congestion.judge_ect(probe, figures(ce=1550, cnps=(440, 439, 440)))[1]
        == "1 of 440 CNPs never reached the sender"
    )
    ok, msg = congestion.judge_ect(probe, figures(fps=7000, rule=200))
    assert ok is None and msg.startswith("not judged: the burst arrived at only 7000 frames/s")
    assert congestion.judge_plain(probe, figures(ecn=0, rule=0), {"ce": 1550}, 1550) == (True, "")
    ok, msg = congestion.judge_plain(probe, figures(ecn=0, received=219, rule=0, fps=5500), {"ce": 3331}, 1550)
    assert ok is False and msg == (
        "1781 of 2000 lost; leaf1:swp2 counted 3331 CE marks, 1781 more than the "
        "ECN-capable frames that arrived marked: it marks frames that are not ECN-capable "
        "(a VTEP drops those, RFC 6040)"
    ), "lost at any rate: judged"
    assert congestion.judge_below(figures(sent=500, received=500, fps=1000, rule=0)) == (True, "")
    assert congestion.judge_below(figures(sent=500, received=500, ce=500, fps=1000, rule=0))[1].endswith(
        "the point marks below its rate"
    )
    assert congestion.judge_below(figures(sent=500, received=500, ce=20, fps=1000, rule=18))[0], "bunched on the way"


def test_a_paced_sender_keeps_its_pace_and_never_owes_more_than_its_catch_up():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.setblocking(False)
    t0 = time.monotonic()
    engine._paced(a, [b"x"] * 50, 0.002)
    assert 0.095 <= time.monotonic() - t0 < 0.5
    b.setblocking(False)
    got = 0
    while True:
        try:
            b.recv(10)
            got += 1
        except BlockingIOError:
            break
    assert got == 50
    a.close(), b.close()


# --- what a run did not exercise ---------------------------------------------------------------------
def test_a_run_lists_the_services_safeguards_it_did_not_exercise():
    f = load(SVC)
    report = Report(
        "t",
        [
            Check(
                "congestion",
                "leaf1:swp2 marks ECN-capable RoCE above 5000pps (blue host2b -> host1b)",
                False,
                "not judged: the burst arrived at only 7000 frames/s",
            )
        ],
    )
    got = coverage.not_exercised(f, ["gateway", "congestion"], report)
    assert {x["safeguard"] for x in got} == {
        "rate limit: host1a egress 20mbit on dpu1:pf0vf0",
        "rate limit: host2a egress 20mbit on dpu2:pf0vf0",
        "rate limit: host1c egress 20mbit on dpu1:pf0vf2",
        "rate limit: host1b egress 20mbit on dpu1:pf0vf1",
        "rate limit: host2b ingress 20000pps on dpu2:pf0vf1",
        "leaf1:swp2 marks ECN-capable RoCE above 5000pps (blue host2b -> host1b)",
    }
    assert {x["why"] for x in got if x["safeguard"].startswith("rate")} == {"the performance group did not run"}
    assert coverage.not_exercised(f, ["performance", "congestion"], Report("t")) == []


def test_a_rehearsal_says_what_its_verify_saw_at_each_congestion_point():
    ect = {"ce": 1699, "received": 2000, "cnps_sent": 371, "cnps_received": 371}
    rep = Report("t", extra={"congestion": {"points": [], "not_exercised": [], "tolerance": 0.2}})
    rep.extra["congestion"]["points"] = [
        {"point": "leaf1:swp4", "above": "5000pps", "flow": "red host1a -> host2a", "ect": ect, "counted": {"ce": 1699}}
    ]
    rep.checks = [
        Check("congestion", "leaf1:swp4 marks ECN-capable RoCE above 5000pps (red host1a -> host2a)", True),
        Check("congestion", "leaf1:swp4 RoCE QoS under congestion (red host1a -> host2a)", True, "1515 of 2000 ..."),
    ]
    text = Rehearsal("t", "cfg", verify=rep).text()
    assert (
        "  congestion (verify's bursts above each point's rate, after the change):\n"
        "    leaf1:swp4 (above 5000pps), red host1a -> host2a: 1699 of 2000 ECN-capable frames marked CE (counted "
        "there 1699), 371 of 371 CNPs back at the sender\n"
        "    leaf1:swp4 RoCE QoS under congestion (red host1a -> host2a): 1515 of 2000 ...\n"
    ) in text
    rep.extra["congestion"] = {"points": [], "not_exercised": [{"safeguard": "congestion point: x", "why": "y"}]}
    assert "    not exercised: congestion point: x: y\n" in Rehearsal("t", "cfg", verify=rep).text()
