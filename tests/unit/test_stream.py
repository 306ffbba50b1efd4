"""Unit tests of background streams: fast frames equal scapy's, and the loss analysis."""

import random
from dataclasses import replace

import pytest
from scapy.contrib.roce import BTH
from scapy.layers.inet import UDP
from scapy.layers.l2 import Ether

from twin.base.errors import TwinError
from twin.traffic import results, roce, stamp, stream

RUN = 0xDEADBEEF
PSNS = [0, 1, 2, 255, 256, 65535, 65536, 12345678, 0xFFFFFE, 0xFFFFFF, 0x1000000, 0x1000001]


def a_flow(**kw) -> roce.Flow:
    return roce.Flow(
        flow_id=7,
        src="host1a",
        dst="host2a",
        src_mac="02:00:00:00:00:01",
        dst_mac="02:00:00:00:00:02",
        src_ip="10.1.1.11",
        dst_ip="10.1.2.12",
        **kw,
    )


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"payload": 255},
        {"payload": 0, "psn": 0xFFFFF0, "dscp": 0, "ecn": 3},
        {"cnp": True},
        {"opcode": roce.RC_SEND_FIRST, "sport": 65535, "dqp": 0xABCDEF},
    ],
    ids=["default", "odd-payload", "no-payload", "cnp", "send-first"],
)
def test_stamped_frames_are_byte_identical_to_scapy(kw):
    f = a_flow(**kw)
    st = stamp.Stamper(f, RUN)
    for psn in PSNS + [f.psn + n for n in range(20)]:  # wraps at 2^24
        want = roce.frames(replace(f, psn=psn & 0xFFFFFF, count=1), RUN)[0]
        got = st.frame(psn)
        assert got == want, f"PSN {psn:#x}: stamped frame differs from scapy's"
        assert roce.icrc_valid(got), "scapy's own ICRC check accepts it"
        assert roce.icrc_ok(got)
        a = roce.read(got, RUN, check_icrc=True)
        assert (a.flow_id, a.psn, a.icrc_ok) == (7, psn & 0xFFFFFF, True)
        assert Ether(got)[BTH].psn == psn & 0xFFFFFF


def test_udp_checksum_is_valid_and_icrc_survives_routing():
    st = stamp.Stamper(a_flow(), RUN)
    f = st.frame(0xFFFFFF)
    pkt = Ether(f)
    ck = pkt[UDP].chksum
    del pkt[UDP].chksum
    assert Ether(bytes(pkt))[UDP].chksum == ck != 0
    routed = bytearray(f)
    routed[15] |= 0x03  # ECN marked CE
    routed[22] -= 3  # TTL after three hops (IP checksum left wrong: it is masked too)
    assert roce.icrc_ok(bytes(routed))
    routed[-20] ^= 0x01  # a flipped payload bit is not
    assert not roce.icrc_ok(bytes(routed))


def test_vxlan_flows_are_refused():
    with pytest.raises(TwinError, match="VXLAN"):
        stamp.Stamper(a_flow(vxlan=("02:00:00:00:00:03", "02:00:00:00:00:04", "10.0.0.1", "10.0.0.2", 100)), RUN)


def flat(outages):
    return [t for o in outages for t in o]


def analyse(seqs, sent=10, interval=0.01):
    return results.analyse(a_flow(), sent, seqs, interval, tenant="red")


def test_lossless_flow():
    r = analyse(list(range(10)))
    assert (r.sent, r.received, r.lost, r.duplicates, r.reordered) == (10, 10, 0, 0, 0)
    assert r.longest_outage_s == 0 and r.outages == [] and r.first_loss_s is None and r.lossless
    assert (r.src, r.dst, r.tenant) == ("host1a", "host2a", "red")


def test_loss_runs_become_outages():
    r = analyse([0, 1, 4, 5, 6, 9], sent=12, interval=0.01)  # lost: 2-3, 7-8, 10-11 (trailing)
    assert (r.received, r.lost) == (6, 6)
    assert flat(r.outages) == pytest.approx([0.02, 0.04, 0.07, 0.09, 0.10, 0.12])
    assert r.longest_outage_s == pytest.approx(0.02)
    assert r.first_loss_s == pytest.approx(0.02) and r.last_loss_s == pytest.approx(0.11)
    assert not r.lossless


def test_leading_run_and_longest_outage():
    r = analyse([5, 6, 8, 9], sent=10, interval=0.1)
    assert flat(r.outages) == pytest.approx([0.0, 0.5, 0.7, 0.8])
    assert r.longest_outage_s == pytest.approx(0.5)
    assert r.first_loss_s == 0.0 and r.last_loss_s == pytest.approx(0.7)


def test_nothing_arrived():
    r = analyse([], sent=4, interval=0.5)
    assert r.lost == 4 and r.outages == [(0.0, 2.0)] and r.longest_outage_s == 2.0
    assert analyse([], sent=0).outages == []


def test_duplicates_and_reordering():
    r = analyse([0, 1, 3, 2, 3, 4, 4, 6, 5, 7, 8, 9])
    assert (r.received, r.lost, r.duplicates, r.reordered) == (10, 0, 2, 2)
    assert not r.lossless


def test_due_times_follow_the_schedule():
    r = results.analyse(a_flow(), 6, [0, 1, 5], 0.01, due=lambda n: 1.0 + n * 0.01)
    assert flat(r.outages) == pytest.approx([1.02, 1.05]) and r.first_loss_s == pytest.approx(1.02)


def test_summary_names_the_worst_flow():
    a = analyse(list(range(10)))
    b = analyse([0, 1, 5, 6, 7, 8, 9])
    c = analyse([0, 2, 3, 4, 5, 6, 7, 9])
    s = results.summarise([a, b, c])
    assert (s.flows, s.sent, s.received, s.lost, s.flows_with_loss) == (3, 30, 25, 5, 2)
    assert s.worst is b and s.longest_outage_s == pytest.approx(0.03)
    assert s.first_loss_s == pytest.approx(0.01) and s.last_loss_s == pytest.approx(0.08)
    assert results.summarise([a]).worst is None


def test_interval_within_budget():
    assert stream.choose_interval(12) == pytest.approx(12 / stream.BUDGET_PPS)
    assert stream.choose_interval(1) == pytest.approx(1 / stream.MAX_RATE)
    with pytest.raises(TwinError, match="over the budget"):
        stream.choose_interval(1000)


def test_vxlan_frames_are_read_at_fixed_offsets_as_scapy_reads_them():
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.layers.vxlan import VXLAN

    inner = roce.frames(a_flow(count=1, dscp=26), RUN)[0]
    outer = (
        Ether()
        / IP(src="10.255.0.5", dst="10.255.0.6", tos=26 << 2)
        / UDP(sport=51000, dport=4789)
        / VXLAN(vni=10101, flags=0x08)
        / Ether(inner)
    )
    e = roce.encapsulated(bytes(outer))
    p = Ether(bytes(outer))
    assert (e.outer_src, e.vni, e.outer_dscp, e.inner_dscp) == (
        p[IP].src,
        p[VXLAN].vni,
        p[IP].tos >> 2,
        p[VXLAN].payload[IP].tos >> 2,
    )
    assert (e.run, e.flow_id) == (RUN, a_flow().flow_id)
    assert roce.encapsulated(inner) is None, "a bare RoCE frame is not VXLAN"
    assert roce.encapsulated(bytes(outer)[:60]) is None, "a cut frame is nothing"


def test_packed_frames_are_scapys_byte_for_byte():
    rng = random.Random(7)
    for _ in range(300):
        f = roce.Flow(
            flow_id=rng.randrange(1 << 32),
            src="a",
            dst="b",
            src_mac=":".join(f"{rng.randrange(256):02x}" for _ in range(6)),
            dst_mac="02:00:5e:00:01:01",
            src_ip=f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
            dst_ip=f"192.168.{rng.randrange(256)}.{rng.randrange(1, 255)}",
            sport=rng.randrange(1, 65536),
            dqp=rng.randrange(1 << 24),
            psn=rng.randrange(1 << 24),
            count=rng.choice([1, 2]),
            payload=rng.choice([0, 1, 3, 64, 255, 4096]),
            dscp=rng.randrange(64),
            ecn=rng.randrange(4),
            opcode=rng.choice([0, 1, 2, 4, 10]),
            cnp=rng.random() < 0.2,
        )
        assert roce.frames(f, RUN) == roce.scapy_frames(f, RUN), f


def test_a_sender_runs_on_one_cpu_for_its_run_and_gets_its_cpus_back():
    """A thread the scheduler moves mid-flow puts the rest of the flow on another CPU's backlog:
    the senders of a run stay on one CPU (twin.traffic.engine)."""
    import os
    import threading

    from twin.traffic.engine import on_cpu

    cpus = os.sched_getaffinity(0)
    seen = []

    def sender():
        with on_cpu(max(cpus)):
            seen.append(os.sched_getaffinity(0))
        seen.append(os.sched_getaffinity(0))

    t = threading.Thread(target=sender)
    t.start()
    t.join()
    assert seen == [{max(cpus)}, cpus] and os.sched_getaffinity(0) == cpus, "only the sending thread, only meanwhile"
