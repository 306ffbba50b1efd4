"""A fault's number argument (`fault:KEY:TARGET:ARG`): its range, and a range open at the top.

mypy's None checks (issue 43, item 6) found that a number Param with no `high` (or no `low`) compared
an int with None: a TypeError at the first argument, not the error that names the argument."""

import pytest

from twin.base.errors import TwinError
from twin.change.fault_base import Param
from twin.change.link_faults import LinkLoss


def test_a_number_in_a_closed_range_is_taken_and_one_outside_is_refused_with_the_range():
    percent = LinkLoss.params[0]
    assert percent.parse("100", "fault:link-loss:dpu1:p0:100") == 100
    with pytest.raises(TwinError) as e:
        percent.parse("101", "fault:link-loss:dpu1:p0:101")
    assert str(e.value) == "fault:link-loss:dpu1:p0:101: percent must be a number in 1..100, not '101'"


def test_a_number_with_no_upper_bound_is_taken_and_one_below_its_low_is_refused():
    count = Param("count", int, "how many", low=2)
    assert count.parse("123456", "here") == 123456
    with pytest.raises(TwinError) as e:
        count.parse("1", "here")
    assert str(e.value) == "here: count must be a number of at least 2, not '1'"
    assert Param("n", int, "any number").parse("0", "here") == 0
    with pytest.raises(TwinError, match=r"^here: n must be a number of at least 0, not 'x'$"):
        Param("n", int, "any number").parse("x", "here")


class _Ran:
    def __init__(self, stdout: str = "", rc: int = 0):
        self.stdout, self.stderr, self.rc = stdout, "", rc

    @property
    def ok(self) -> bool:
        return self.rc == 0


class _Node:
    """A node's exec that answers `tc qdisc show` with its port's root and records what runs."""

    def __init__(self, shown: str, ran: list):
        self.shown, self.ran = shown, ran

    def run(self, cmd: list[str]) -> _Ran:
        self.ran.append(cmd)
        return _Ran(self.shown if cmd[:3] == ["tc", "qdisc", "show"] else "")

    def check(self, cmd: list[str]) -> _Ran:
        return self.run(cmd)


HTB = "qdisc htb 1: root refcnt 2 r2q 10 default 0x10 direct_packets_stat 0\nqdisc pfifo 13: parent 1:13 limit 10000p\n"


@pytest.mark.parametrize(
    "a, b, netem",
    [
        ("qdisc noqueue 0: root refcnt 2\n", "qdisc noqueue 0: root refcnt 2\n", True),
        (HTB, "qdisc noqueue 0: root refcnt 2\n", False),
        ("qdisc noqueue 0: root refcnt 2\n", "qdisc tbf 8001: root refcnt 2 rate 1Gbit burst 1Mb lat 50ms\n", False),
    ],
)
def test_a_loss_fault_never_replaces_a_root_qdisc_twin_runs(monkeypatch, a, b, netem):
    """netem as a port's root would take RoCE QoS's traffic classes (HTB) or a rate limit (TBF) with it, and
    its removal would delete them: such a port's loss is nftables', the reason in the fault's record."""
    from twin.change import link_faults
    from twin.change.fault_base import PortRef

    ends = (PortRef("leaf1", "swp51"), PortRef("spine1", "swp1"))
    ran: list = []
    nodes = {"leaf1": _Node(a, ran), "spine1": _Node(b, ran)}
    monkeypatch.setattr(link_faults, "link_of", lambda ctx, spec: ends)
    ctx = type("Ctx", (), {"exec": lambda self, node: nodes[node]})()
    out = LinkLoss("leaf1:swp51", 5).act(ctx)  # type: ignore[arg-type]
    tried = [c for c in ran if "netem" in c]
    if netem:
        assert out["mechanism"] == "netem" and len(tried) == 2
    else:
        assert tried == [], "netem never tried on a port whose root is twin's"
        assert out["mechanism"] == "nftables"
        assert out["netem"].startswith("the port's root qdisc is twin's: ")
        assert ("htb (traffic classes: RoCE QoS)" if a == HTB else "tbf (a rate limit)") in out["netem"]


def test_a_root_qdisc_of_twins_is_told_from_the_kernels_default():
    from twin.change.link_faults import owned_root

    assert owned_root("qdisc noqueue 0: root refcnt 2\n") == ""
    assert owned_root("qdisc netem 8002: root refcnt 2 limit 1000 loss 5%\n") == ""
    assert owned_root(HTB) == "htb (traffic classes: RoCE QoS)"
    assert owned_root("qdisc pfifo 13: parent 1:13 limit 10000p\n") == ""
