"""Background RoCE streams on the default lab: a quiet fabric loses nothing, and a
fault on one host's access port is an outage of exactly that host's flows, about
as long as the fault."""

from __future__ import annotations

import pytest

from twin.change import faults
from twin.traffic import results, stream

pytestmark = pytest.mark.e2e

HOST = "host1a"


@pytest.fixture(scope="module")
def lab(aipod):
    return aipod  # the default lab this module shares with others: each fault it makes is reverted


def access_port(lab, host: str) -> str:
    """The VTEP-side port of `host`'s link, e.g. dpu1:pf0vf0."""
    _, a = lab.fabric.attachment_of(host)
    return f"{a.vtep}:{a.port}"


def outage_under(lab, apply, hold: float = 1.0) -> tuple[stream.Stream, float]:
    """Stream every same-tenant pair; `apply()` a fault after 1 s, revert it `hold` s later,
    stream 1 s more. Returns the stream and how long the fault was (at most) in place."""
    with stream.Stream(lab, stream.pair_flows(lab.fabric)) as s:
        s.hold(1.0)
        s.mark("fault")
        fault = apply()
        try:
            s.hold(hold)
        finally:
            s.mark("clear")
            fault.revert()
            s.mark("cleared")
        s.hold(1.0)
    return s, s.marks["cleared"] - s.marks["fault"]


def assert_outage_of(s: stream.Stream, host: str, fault_s: float) -> None:
    hit = [r for r in s.results if host in (r.src, r.dst)]
    spared = [r for r in s.results if host not in (r.src, r.dst)]
    assert len(hit) == 4 and len(spared) == 8
    for r in spared:
        assert r.lost == 0 and r.received == r.sent > 0, f"{r.src} -> {r.dst}: {r.lost} of {r.sent} lost"
    for r in hit:
        where = f"{r.src} -> {r.dst}: outages {r.outages}, fault in place for {fault_s:.2f} s"
        assert r.lost > 0, where
        assert 0.5 * fault_s <= r.longest_outage_s <= 2 * fault_s + 0.3, where
        assert r.first_loss_s >= s.marks["fault"] - r.interval, where
        assert r.last_loss_s <= s.marks["cleared"] + 0.3, where
        assert r.lost * r.interval == pytest.approx(sum(b - a for a, b in r.outages), abs=1e-6)
    summary = results.summarise(s.results)
    assert summary.flows_with_loss == 4 and summary.worst in hit
    assert summary.lost == sum(r.lost for r in hit)


def test_pairs_are_every_same_tenant_pair(lab):
    ps = stream.pairs(lab.fabric)
    assert len(ps) == 12 and ("host1a", "host2a") in ps and ("host2a", "host1a") in ps
    assert ("host1a", "host1b") not in ps, "red and blue never talk"


@pytest.mark.alone  # streams paced in time: the machine to itself
def test_a_quiet_fabric_loses_nothing(lab):
    fl = stream.pair_flows(lab.fabric)
    with stream.Stream(lab, fl) as s:
        s.hold(2.0)
    assert s.rate * len(fl) <= stream.BUDGET_PPS and s.rate >= stream.MIN_RATE
    assert s.slip_s == 0.0
    for r in s.results:
        what = f"{r.src} -> {r.dst} ({r.tenant})"
        assert r.received == r.sent and r.lost == 0, f"{what}: {r.received} of {r.sent}, outages {r.outages}"
        assert (r.duplicates, r.icrc_bad, r.misdelivered, r.send_errors) == (0, 0, 0, 0), what
        assert r.sent == pytest.approx(2.0 * s.rate, rel=0.15), f"{what}: paced at {s.rate:.0f} pps"
    assert {r.tenant for r in s.results} == {"red", "blue"}


@pytest.mark.alone  # streams paced in time: the machine to itself
def test_total_loss_on_a_host_port_is_an_outage_of_its_flows(lab):
    spec = access_port(lab, HOST)

    s, fault_s = outage_under(lab, lambda: faults.link_loss(lab, spec, 100))
    assert_outage_of(s, HOST, fault_s)


@pytest.mark.alone  # streams paced in time: the machine to itself
def test_a_host_link_down_is_an_outage_of_its_flows(lab):
    s, fault_s = outage_under(lab, lambda: faults.link_down(lab, access_port(lab, HOST)))
    assert_outage_of(s, HOST, fault_s)
    sending = [r for r in s.results if r.src == HOST]
    assert all(r.send_errors > 0 for r in sending), "a down port refuses the host's sends"
    assert any(h == HOST for _, h, _ in s.port_errors)
