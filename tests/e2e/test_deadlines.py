"""No read of a node can hang a command, and a CI log shows where a command is (issue 35), on
real labs:
- a netlink dump that never answers (leaf1's routes asked of a netlink socket in leaf1's
  namespace that never replies, instead of its kernel): `twin up` ends at its deadline,
  counted from its start, naming what it could not read, and removes the lab;
- off a terminal, `twin up` prints a plain line at each stage and `twin wait` on a lab that
  cannot converge one at least every 10 s, and ends at its deadline from the command's start."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin.base import wait
from twin.base.errors import ConvergenceTimeout
from twin.lab import Lab
from twin.lifecycle import barrier
from twin.runtime import netns

pytestmark = pytest.mark.e2e
SMALL = "tests/e2e/small.yml"


@pytest.fixture(autouse=True)
def clean_slate(runtime):
    for name in ("t-dl-deaf", "t-dl-up"):
        if runtime.containers(name) or (Path(os.environ["TWIN_HOME"]) / "labs" / name).exists():
            twin_cli("down", name)


@pytest.fixture
def deaf_leaf1(monkeypatch):
    """The barrier's dumps of leaf1 go to a netlink socket of leaf1's namespace that never answers
    (each socket it opens there is connected to that peer): dumps that are never answered."""
    peers: list[socket.socket] = []
    real = barrier.Barrier._dumper

    def dumper(self, node, ns=""):
        d = real(self, node, ns)
        if node == "leaf1" and not getattr(d, "deaf", False):
            opened = d._socket

            def deaf_socket():
                fresh = d.sock is None
                s = opened()
                if fresh:
                    peers.append(netns.netlink(d.path, socket.NETLINK_ROUTE))
                    s.connect(peers[-1].getsockname())
                return s

            d._socket, d.deaf = deaf_socket, True
        return d

    monkeypatch.setattr(barrier.Barrier, "_dumper", dumper)
    yield peers
    for p in peers:
        p.close()


def test_a_dump_that_never_answers_ends_twin_up_at_its_deadline_naming_what_it_could_not_read(
    runtime, node_image, deaf_leaf1
):
    lab = Lab.load(ROOT / SMALL, name="t-dl-deaf")
    t0 = time.monotonic()
    with pytest.raises(ConvergenceTimeout) as exc:
        lab.up(image=node_image, timeout=25)
    took = time.monotonic() - t0
    e = exc.value
    assert 25 - 2 <= e.seconds <= 25 + 1.0, e.seconds  # counted from up's start, and held
    assert took <= 25 + 30, took  # then the lab is removed
    unread = [m for m in e.missing if "not known yet" in m]
    assert unread and all(m.startswith("leaf1: not known yet: /proc/") for m in unread), e.missing
    assert any("no answer to a dump of table 254's routes within" in m and m.endswith("(abandoned)") for m in unread), (
        unread
    )
    assert deaf_leaf1, "leaf1's dumps went to the deaf peer"
    assert leftovers(runtime, "t-dl-deaf") == []


def test_off_a_terminal_twin_up_prints_a_line_at_each_stage(runtime, node_image, tmp_path):
    log = tmp_path / "up.log"
    with open(log, "w") as f:
        p = subprocess.run(
            [sys.executable, "-m", "twin.cli", "up", SMALL, "--name", "t-dl-up", "--image", node_image],
            cwd=ROOT,
            stdout=f,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
            env=os.environ.copy(),
        )
    text = log.read_text()
    try:
        assert p.returncode == 0, text
        lines = text.splitlines()
        progress = [line for line in lines if re.match(r"\[\s*\d+s\] t-dl-up: ", line)]
        said = [line.split(": ", 1)[1] for line in progress]
        assert said[0] == "starting" and any(s.startswith("rendering configs into ") for s in said), said
        assert any(s == "starting 5 containers, wiring 4 links as they run" for s in said), said
        assert any(
            re.match(r"waiting for \d+ BGP sessions and loopback routes on \d+ routers \(deadline \d+s\)$", s)
            for s in said
        ), said
        assert lines[-1].startswith("lab t-dl-up is up: 5 nodes, "), lines
    finally:
        twin_cli("down", "t-dl-up")


def test_off_a_terminal_twin_wait_says_where_it_is_every_10s_and_ends_at_its_deadline(make_lab, tmp_path):
    lab = make_lab(SMALL, "t-dl-wait")
    leaf2, lo, asn = lab.node("leaf2"), lab.fabric.nodes["leaf2"].loopback, lab.fabric.nodes["leaf2"].asn
    leaf2.vtysh("configure terminal", f"router bgp {asn}", "address-family ipv4 unicast", f"no network {lo}/32")
    try:
        wait.until(lambda: [] if lab.missing() else ["leaf2's loopback still announced"], 30, "loopback withdrawn")
        log = tmp_path / "wait.log"
        t0 = time.monotonic()
        with open(log, "w") as f:
            p = subprocess.run(
                [sys.executable, "-m", "twin.cli", "wait", "t-dl-wait", "--timeout", "25"],
                cwd=ROOT,
                stdout=f,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=120,
                env=os.environ.copy(),
            )
        took = time.monotonic() - t0
    finally:
        leaf2.vtysh("configure terminal", f"router bgp {asn}", "address-family ipv4 unicast", f"network {lo}/32")
    lines = log.read_text().splitlines()
    assert p.returncode == 1 and took < 25 + 10, (took, lines)  # the interpreter's start, then 25 s
    progress = [line for line in lines if line.startswith("[")]
    at = [int(re.match(r"\[\s*(\d+)s\]", line)[1]) for line in progress]
    assert re.search(r"\(deadline 25s from the command's start, 2[45]s left\)$", progress[1]), progress
    converging = [line for line in progress if "converging: " in line]
    assert converging and all(
        re.search(
            r"routers done, sessions \d+/\d+ up, loopback routes \d+/\d+ learned; "
            r"waiting for ",
            line,
        )
        for line in converging
    ), converging
    assert max(at) >= 20 and all(b - a <= 11 for a, b in zip(at, at[1:] + [25])), progress  # never 10 s silent
    (error,) = [line for line in lines if line.startswith("error: ")]
    m = re.match(r"error: convergence \(BGP sessions, loopback routes\) not reached after (\d+)s; ", error)
    assert m and 20 <= int(m[1]) <= 25, error
    wait.until(lab.missing, 60, "small lab converged again")
