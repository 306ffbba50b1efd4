"""FRR's boot in a node as twin reads it (twin-nodectl's steps), and when a step has stalled (issue 46)."""

from __future__ import annotations

import subprocess
import time

import pytest

from twin.base import timeouts
from twin.base.errors import TwinError
from twin.runtime import frrboot
from twin.runtime.frrboot import Boot, frr_step, holding, parse, stall_bound, stalled


def test_a_step_line_reads_back():
    assert parse("2 answer bgpd 1700000000.25 \n") == Boot(2, "answer", "bgpd", 1700000000.25, "")
    assert parse("1 failed zebra 17.0 did not start") == Boot(1, "failed", "zebra", 17.0, "did not start")
    assert parse("") is None and parse("garbage here") is None
    assert Boot(1, "config", "vtysh", 0).what() == "loading the configuration into the daemons (vtysh -b)"
    assert Boot(1, "answer", "mgmtd", 0).what() == "waiting for mgmtd to answer on its vty"


def test_the_bound_grows_with_the_load_per_core_and_has_a_ceiling():
    assert stall_bound(0.5, 2) == timeouts.FRR_STEP
    assert stall_bound(8.0, 2) == 4 * timeouts.FRR_STEP
    assert stall_bound(500.0, 2) == timeouts.FRR_STEP_MAX
    assert stall_bound(8.0, 2, 5.0) == 20.0
    assert stall_bound(0.0, 2, 200.0) == 200.0  # a user's own bound above the cap is theirs


def test_twin_frr_step_is_a_number_of_seconds_or_refused_naming_it(monkeypatch):
    monkeypatch.delenv("TWIN_FRR_STEP", raising=False)
    assert frr_step() == timeouts.FRR_STEP
    monkeypatch.setenv("TWIN_FRR_STEP", "4.5")
    assert frr_step() == 4.5
    for bad in ("0", "fast", "1e9", "nan"):
        monkeypatch.setenv("TWIN_FRR_STEP", bad)
        with pytest.raises(TwinError, match=f"TWIN_FRR_STEP='{bad}': expected the seconds one step"):
            frr_step()


def test_a_step_older_than_the_bound_has_stalled_up_and_failed_never():
    assert stalled(Boot(1, "config", "vtysh", 100.0), now=131.0, bound=30.0)
    assert not stalled(Boot(1, "config", "vtysh", 100.0), now=129.0, bound=30.0)
    assert not stalled(Boot(1, "up", "-", 0.0), now=1e9, bound=30.0)
    assert not stalled(None, now=1e9, bound=30.0)


def test_what_holds_a_stall_is_named():
    daemons = ["zebra", "mgmtd", "bgpd", "staticd"]
    procs = {"zebra": "S", "mgmtd": "T", "bgpd": "S", "staticd": "S", "vtysh": "S"}
    assert holding(Boot(1, "config", "vtysh", 0), procs, daemons) == "mgmtd stopped (SIGSTOP)"
    assert holding(Boot(1, "answer", "bgpd", 0), {"zebra": "S"}, daemons) == "bgpd not running"
    assert holding(Boot(1, "answer", "bgpd", 0), {"zebra": "S", "bgpd": "S"}, daemons) == "bgpd not answering"


def test_a_node_removed_while_it_boots_ends_the_watch_at_once_naming_it():
    """An interrupted bring-up removes the containers while their boots are watched: the watch ends at
    once (a thread left waiting out FRR's start would hold the process's exit)."""
    p = subprocess.Popen(["true"])
    p.wait()  # a process id that is gone
    t = time.monotonic()
    with pytest.raises(TwinError, match=rf"^leaf1: its container stopped while FRR booted \(process {p.pid} is gone"):
        frrboot.watch("leaf1", p.pid)
    assert time.monotonic() - t < 1
