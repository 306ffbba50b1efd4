"""Tenant host bindings on VTEPs are PERMANENT neighbours, in the script and over netlink (issue 18):
the one state the kernel's neighbour collector never takes, and one zebra advertises as local."""

from pathlib import Path

import pytest

from twin.config import overlay
from twin.runtime import steps_apply
from twin.topology import load

ROOT = Path(__file__).resolve().parents[2]


class FakeIPRoute:
    """Records the neighbour calls of a step's netlink application; every interface has index 7."""

    def __init__(self):
        self.neighs: list[tuple[str, dict]] = []

    def link(self, op, **kw):
        assert op == "get"
        return [{"index": 7}]

    def neigh(self, op, **kw):
        self.neighs.append((op, kw))


class Netns:
    def __init__(self, ipr):
        self._ipr = ipr

    def ipr(self, ns):
        return self._ipr

    def fd(self, ns):
        raise AssertionError("bindings move no device")


@pytest.fixture
def aipod(monkeypatch):
    monkeypatch.chdir(ROOT)
    return load("topologies/aipod.yml")


@pytest.mark.parametrize("backend", overlay.BACKENDS)
def test_every_local_workload_gets_a_permanent_binding_on_its_gateway(aipod, backend):
    steps = overlay.bindings(aipod, "dpu1", backend)
    hosts = {a.host for t in aipod.tenants.values() for a in t.attachments if a.vtep == "dpu1"}
    assert len(steps) == len(hosts) == 3
    for s in steps:
        assert s.command().endswith(" nud permanent"), s.command()


def test_bindings_are_applied_as_nud_permanent(aipod):
    ipr = FakeIPRoute()
    for step in overlay.bindings(aipod, "dpu1", "netns"):
        steps_apply.apply(step, Netns(ipr))
    states = {kw["state"] for _, kw in ipr.neighs}
    assert states == {steps_apply.NUD_PERMANENT} == {0x80}
    assert {op for op, _ in ipr.neighs} == {"replace"}
    assert sorted(kw["dst"] for _, kw in ipr.neighs) == ["10.1.1.11", "10.1.1.11", "10.1.2.11"]
