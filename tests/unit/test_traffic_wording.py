"""`twin traffic`'s words (issue 27): a flow that must not arrive says whether it reached its
destination and where it went instead, not PSN gaps; no Python reprs in what people read."""

from __future__ import annotations

from pathlib import Path

import pytest

from twin.base.errors import TwinError
from twin.topology import load
from twin.traffic import flows, stream, wording
from twin.traffic.roce import FlowResult

ROOT = Path(__file__).resolve().parents[2]
FABRIC = load(ROOT / "topologies/aipod.yml")


def pair(same: bool) -> tuple[str, str]:
    hosts = flows.hosts(FABRIC)
    src = hosts[0]
    dst = next(h for h in hosts[1:] if flows.same_tenant(FABRIC, src, h) == same)
    return src, dst


def no_repr(text: str) -> None:
    assert not any(c in text for c in ("{", "}", "[", "]", "='", "': ")), text


def test_a_blocked_flow_says_where_it_went_not_psn_gaps():
    src, dst = pair(False)
    own = next(h for h in flows.hosts(FABRIC) if h not in (src, dst) and flows.same_tenant(FABRIC, src, h))
    f = flows.flow(FABRIC, src, dst, 1, count=16)
    line = wording.flow_line(FABRIC, FlowResult(f, sent=16, gaps=8, seen_at={own: 8}), False)
    no_repr(line)
    assert f"{src} -> {dst} ({f.dst_ip}), must not arrive" in line
    assert f"none arrived at {dst}" in line and "it stayed in tenant" in line and f"{own} (8)" in line
    assert "PSN" not in line and "gap" not in line


def test_a_blocked_flow_no_host_saw_was_stopped_in_the_fabric():
    src, dst = pair(False)
    line = wording.flow_line(FABRIC, FlowResult(flows.flow(FABRIC, src, dst, 1), sent=16), False)
    assert "none arrived" in line and "no host saw it: stopped in the fabric" in line
    no_repr(line)


def test_a_leak_and_a_broken_isolation_are_shouted():
    src, dst = pair(False)
    r = FlowResult(flows.flow(FABRIC, src, dst, 1), sent=16, received=16, seen_at={dst: 16})
    line = wording.flow_line(FABRIC, r, False)
    assert "16 ARRIVED at" in line and "isolation is broken" in line


def test_a_delivered_flow_reports_what_arrived_and_how():
    src, dst = pair(True)
    r = FlowResult(flows.flow(FABRIC, src, dst, 1), sent=16, received=14, gaps=2, reordered=1, seen_at={dst: 14})
    line = wording.flow_line(FABRIC, r, True)
    no_repr(line)
    assert line.endswith(f"must arrive: sent 16, 14 arrived at {dst}, 2 never arrived (PSN gaps), 1 out of order")


def test_a_flow_from_or_to_a_node_that_is_no_host_is_refused_by_name():
    """A spine or leaf named as an end of a flow (the Python API: stream.pair_flows, flows.flow) is
    an error that names the hosts; it was a TypeError (a None unpacked) found by mypy's None checks."""
    hosts = ", ".join(flows.hosts(FABRIC))
    for call in (
        lambda: stream.pair_flows(FABRIC, [("spine1", "host1a")]),
        lambda: flows.flow(FABRIC, "host1a", "leaf1", 1),
        lambda: flows.same_tenant(FABRIC, "host1a", "nowhere"),
    ):
        with pytest.raises(TwinError) as e:
            call()
        assert str(e.value).endswith(f"is not a host endpoint of lab {FABRIC.name}; hosts: {hosts}"), str(e.value)
    with pytest.raises(TwinError, match=r"^'spine1' is not a host endpoint of lab aipod; hosts: host1a, "):
        flows.flow(FABRIC, "spine1", "host1a", 1)
