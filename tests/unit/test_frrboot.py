"""FRR's boot in a node as twin reads it (twin-nodectl's steps), and when a step has stalled (issue 46)."""

from __future__ import annotations

import base64
import os
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


NODE_ATTRS = {"Config": {"Labels": {frrboot.SERVES: "start"}, "Cmd": ["/usr/local/bin/twin-node"], "Entrypoint": None}}


def test_the_node_s_own_server_starts_frr_where_its_image_says_so_and_it_runs_the_image_s_command():
    assert frrboot.serves_start(NODE_ATTRS)
    older = {"Config": {**NODE_ATTRS["Config"], "Labels": {"twin.image": "node"}}}  # an image of an earlier twin
    users = {"Config": {**NODE_ATTRS["Config"], "Cmd": ["/bin/sh", "-c", "my-script"]}}  # the user's command
    wrapped = {"Config": {**NODE_ATTRS["Config"], "Entrypoint": ["/bin/sh", "-c", "wait"]}}
    assert not any(frrboot.serves_start(a) for a in (older, users, wrapped, {}))


class FakeExec:
    """A node's exec seam as `frrboot.start` uses it: its container's inspection, its pid, its `start`."""

    def __init__(self, attrs: dict, pid: int):
        self.container = type("C", (), {"attrs": attrs})()
        self.pid, self.where, self.started = pid, "lab/leaf1", []

    def start(self, cmd, timeout, env=None):
        self.started.append((cmd, env))
        return type("R", (), {"check": lambda self: self})()


@pytest.fixture
def node_root(tmp_path, monkeypatch):
    """A node's filesystem as the host sees it (/proc/PID/root) in a directory, its FIFO made, no server yet."""
    monkeypatch.setattr(frrboot.nodefs, "root", lambda pid: str(tmp_path))
    (tmp_path / "run/twin").mkdir(parents=True)
    os.mkfifo(tmp_path / "run/twin/nodectl", 0o600)
    return tmp_path / "run/twin/nodectl"


def test_start_is_asked_of_the_server_the_password_in_base64_never_on_a_command_line(node_root):
    reader = os.open(node_root, os.O_RDONLY | os.O_NONBLOCK)  # the node's server, listening
    try:
        ex = FakeExec(NODE_ATTRS, os.getpid())
        frrboot.start(ex, frrboot.START, "s3cret pass", 5.0)
        line = os.read(reader, 4096).decode()
    finally:
        os.close(reader)
    word, arg = line.split()
    assert word == "start" and base64.b64decode(arg).decode() == "s3cret pass"
    assert ex.started == [], "no docker exec"
    reader = os.open(node_root, os.O_RDONLY | os.O_NONBLOCK)
    try:
        frrboot.start(FakeExec(NODE_ATTRS, os.getpid()), frrboot.START, "", 5.0)
        assert os.read(reader, 4096) == b"start -\n", "no password: '-'"
    finally:
        os.close(reader)


def test_start_waits_for_the_server_within_its_time(node_root):
    with pytest.raises(TwinError, match="its server reading /run/twin/nodectl"):
        frrboot.start(FakeExec(NODE_ATTRS, os.getpid()), frrboot.START, "pw", 0.3)


def test_an_image_whose_server_does_not_take_start_is_started_through_the_runtime(node_root):
    ex = FakeExec({"Config": {"Labels": {}, "Cmd": ["/usr/local/bin/twin-node"]}}, os.getpid())
    frrboot.start(ex, frrboot.START, "pw", 5.0)
    assert ex.started == [(frrboot.START, {"TWIN_PASSWORD": "pw"})]
    other = FakeExec(NODE_ATTRS, os.getpid())
    frrboot.start(other, ["/opt/my-start"], "", 5.0)  # a kind's own start: only twin-node start-frr is asked
    assert other.started == [(["/opt/my-start"], None)]
