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
