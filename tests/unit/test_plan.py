"""Golden test of `twin plan` for a day-1 change of the default lab."""

from pathlib import Path

from twin.change.plan import make_plan
from twin.topology import load

ROOT = Path(__file__).resolve().parents[2]


def test_plan_of_a_day1_change(golden, monkeypatch):
    monkeypatch.chdir(ROOT)
    old = load("topologies/aipod.yml")
    new = load("tests/golden/plan/aipod-day1.yml", name="aipod")
    plan = make_plan(old, new, "netns")
    assert "add tenant green (l3vni 10300, VTEPs dpu1, dpu2)" in plan.changes
    assert "change mtu of dpu1:p0 <-> leaf1:swp3: 9000 -> 9100" in plan.changes
    assert "detach host2c from blue/db" in plan.changes
    assert set(plan.diffs) >= {"dpu1", "dpu2", "host1d", "host2d"}
    assert "+vrf green" in plan.diffs["dpu1"]["frr.conf"]
    assert "+ip netns add green" in plan.diffs["dpu2"]["interfaces.sh"]
    assert "spine1" not in plan.diffs, "the spines' configs do not change"
    golden(ROOT / "tests" / "golden" / "plan" / "aipod-day1.plan", plan.text())
    assert make_plan(old, old).empty


def test_plan_of_a_drain_and_undrain(monkeypatch):
    monkeypatch.chdir(ROOT)
    plain = load("topologies/aipod.yml")
    drained = load("tests/golden/render/aipod-drain.yml")
    plan = make_plan(plain, drained, "netns")
    assert plan.changes == ["change spine1 drain: False -> True"]
    assert set(plan.diffs) == {"spine1"} and set(plan.diffs["spine1"]) == {"frr.conf"}
    assert "+ bgp graceful-shutdown" in plan.diffs["spine1"]["frr.conf"].splitlines()
    back = make_plan(drained, plain, "netns")
    assert back.changes == ["change spine1 drain: True -> False"]
    assert "- bgp graceful-shutdown" in back.diffs["spine1"]["frr.conf"].splitlines()
