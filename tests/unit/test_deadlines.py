"""No read of a node can hang a command (issue 35): a netlink request the kernel never answers
ends at its deadline, abandoned and its socket closed; the barrier's raw dumps read what
pyroute2 reads; a wait's deadline is fixed at its start and holds whatever its probe meets.

A request that is never answered is a real one: sent to a netlink socket of the same
namespace that never replies (the socket is connected to that deaf peer instead of the kernel).
"""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pyroute2 import IPRoute

from twin.base import stages, wait
from twin.base.errors import ConvergenceTimeout, NetlinkTimeout
from twin.runtime import netns, observe, rtdump

ROOT = Path(__file__).resolve().parents[2]


def deaf() -> socket.socket:
    """A netlink socket in this thread's namespace that reads nothing and answers nothing."""
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    s.bind((0, 0))
    return s


def test_a_raw_dump_never_answered_ends_at_its_deadline_closed_and_the_next_one_reads_again():
    """In a namespace of its own: the host's routes change whenever a lab (another test's) comes or goes."""

    def check(here: str) -> None:
        with IPRoute() as ipr:  # a route of its own to read back
            (lo,) = ipr.link_lookup(ifname="lo")
            ipr.link("set", index=lo, state="up")
            ipr.route("add", dst="10.9.9.0/24", oif=lo)
        d = rtdump.Dumper(here, timeout=0.5)
        peer = deaf()
        try:
            d._socket().connect(peer.getsockname())
            t = time.monotonic()
            with pytest.raises(NetlinkTimeout) as exc:
                d.routes()
            assert 0.45 < time.monotonic() - t < 1.5
            assert str(exc.value) == f"{here}: no answer to a dump of table 254's routes within 0.5s (abandoned)"
            assert d.sock is None  # abandoned: its socket closed
            assert (
                d.routes(host_only=False)
                == observe.routes(netns.InNamespace(here), host_only=False)
                == {"10.9.9.0/24": {"lo"}}
            )
        finally:
            peer.close()
            d.close()

    in_scratch(check)


def test_a_dump_past_the_callers_deadline_is_not_sent():
    d = rtdump.Dumper("/proc/self/ns/net")
    with pytest.raises(NetlinkTimeout, match="no time left for a dump of table 254's routes"):
        d.routes(until=time.monotonic() - 1)
    assert d.sock is None


def test_a_pyroute2_request_never_answered_ends_at_its_deadline_and_its_handle_is_replaced():
    here = "/proc/self/ns/net"
    h = netns.InNamespace(here, timeout=0.5)
    peer = deaf()
    try:
        h.asyncore.socket.connect(peer.getsockname())
        t = time.monotonic()
        with pytest.raises(NetlinkTimeout) as exc:
            h.get_routes()
        assert time.monotonic() - t < 1.5
        assert str(exc.value) == f"{here}: no answer to a netlink request (get_routes) within 0.5s (abandoned)"
        assert h.asyncore.status["closed"]  # abandoned: its sockets closed
    finally:
        peer.close()
    with netns.Handles() as handles:
        first = handles.get(os.getpid())
        first.close()  # as an abandoned request leaves it
        assert handles.get(os.getpid()) is not first and observe.link_names(handles.get(os.getpid()))


def in_scratch(fn):
    """fn(path of a new, empty namespace) in it, with a thread of its own (netns.scratch)."""
    return netns.scratch(lambda: fn(f"/proc/self/task/{threading.get_native_id()}/ns/net"))


def test_the_raw_dumps_read_what_pyroute2_reads():
    def check(path: str) -> None:
        with IPRoute() as ipr:
            ipr.link("add", ifname="a", kind="veth", peer="b")
            a, b = ipr.link_lookup(ifname="a")[0], ipr.link_lookup(ifname="b")[0]
            for i in (a, b):
                ipr.link("set", index=i, state="up")
            ipr.addr("add", index=a, address="10.0.0.1", prefixlen=24)
            ipr.route("add", dst="10.9.9.9/32", multipath=[{"oif": a}, {"oif": b}])
            ipr.route("add", dst="10.8.0.0/16", oif=b)
            ipr.route("add", dst="0.0.0.0/0", gateway="10.0.0.2")
            ipr.route("add", dst="10.7.7.7/32", oif=b, table=100)
            ipr.route("add", dst="10.6.6.6/32", type="blackhole")
            ipr.link(
                "add",
                ifname="vx",
                kind="vxlan",
                vxlan_id=10,
                vxlan_local="10.0.0.1",
                vxlan_port=4789,
                vxlan_learning=False,
            )
            vx = ipr.link_lookup(ifname="vx")[0]
            ipr.link("set", index=vx, state="up")
            ipr.fdb("append", ifindex=vx, lladdr="00:00:00:00:00:00", dst="10.0.0.2")
            ipr.fdb("append", ifindex=vx, lladdr="02:00:00:00:00:07", dst="10.0.0.3")
        d, h = rtdump.Dumper(path), netns.InNamespace(path)
        try:
            for table in (254, 100):
                for host_only in (True, False):
                    assert d.routes(table, host_only) == observe.routes(h, table, host_only), (table, host_only)
            assert d.routes(host_only=False)["10.9.9.9/32"] == {"a", "b"}
            assert d.routes(host_only=False)["0.0.0.0/0"] == {"a"} and d.routes()["10.6.6.6/32"] == set()
            assert (
                d.fdb()
                == observe.fdb(h)
                == {("vx", "00:00:00:00:00:00", "10.0.0.2"), ("vx", "02:00:00:00:00:07", "10.0.0.3")}
            )
        finally:
            d.close()
            h.close()

    in_scratch(check)


def test_a_waits_deadline_holds_from_its_start_whatever_its_probe_meets():
    start = time.monotonic()
    time.sleep(0.3)  # what the command did before it waited
    probes = []

    def probe() -> list[str]:
        probes.append(time.monotonic())
        return ["spine1: not known yet"]

    with pytest.raises(ConvergenceTimeout) as exc:
        wait.until(probe, 1.0, "convergence", first=0.05, cap=0.2, since=start)
    took = time.monotonic() - start
    assert 0.95 <= took < 1.2 and exc.value.seconds == pytest.approx(took, abs=0.05)
    assert max(probes) <= start + 1.0 + 0.01  # no probe began past the deadline
    assert exc.value.missing == ["spine1: not known yet"]


def test_a_costly_probe_is_paced():
    calls: list[float] = []

    def probe() -> list[str]:
        calls.append(time.monotonic())
        time.sleep(0.1)
        return ["x"]

    with pytest.raises(ConvergenceTimeout):
        wait.until(probe, 1.5, "x", first=0.01, cap=0.01, pace=3.0)
    gaps = [b - a for a, b in zip(calls, calls[1:])]
    assert gaps and all(g >= 0.39 for g in gaps[:-1]), gaps  # 0.1 s probe, then 3 x 0.1 s apart


def test_each_returns_at_its_deadline_with_the_calls_that_had_not_ended():
    release = threading.Event()
    pool = ThreadPoolExecutor(4)
    try:
        t = time.monotonic()
        done, late = wait.each(
            pool,
            lambda n: n if n != "leaf1" else release.wait(5) and n,
            ["spine1", "leaf1", "leaf2"],
            wait.Deadline.after(0.5),
        )
        assert time.monotonic() - t < 0.8
        assert done == {"spine1": "spine1", "leaf2": "leaf2"} and late == ["leaf1"]
    finally:
        release.set()
        pool.shutdown()


def test_plain_progress_lines_at_each_stage_change_and_at_a_steady_interval_while_stuck():
    lines: list[str] = []
    tell = stages.Progress()
    with stages.PlainLines(tell, lines.append, "big", every=0.3):
        tell("rendering configs into /x")
        tell(stages.Said("starting: 1/4 containers running, 0/3 links wired, 0/4 nodes configured", "containers"))
        tell(stages.Said("starting: 2/4 containers running, 0/3 links wired, 0/4 nodes configured", "containers"))
        tell(stages.Said("starting: 4/4 containers running, 1/3 links wired, 0/4 nodes configured", "links"))
        tell("converging: 0/4 routers done; waiting for leaf1")
        tell("converging: 1/4 routers done; waiting for leaf2")  # the same stage, said again at once: not printed
        time.sleep(1.0)  # stuck: the last line again, with the time
    texts = [line.split("] ", 1)[1] for line in lines]
    assert texts[:4] == [
        "big: rendering configs into /x",
        "big: starting: 1/4 containers running, 0/3 links wired, 0/4 nodes configured",
        "big: starting: 4/4 containers running, 1/3 links wired, 0/4 nodes configured",
        "big: converging: 0/4 routers done; waiting for leaf1",
    ]
    again = texts[4:]
    assert 2 <= len(again) <= 4 and set(again) == {"big: converging: 1/4 routers done; waiting for leaf2"}, texts
    assert all(re.match(r"\[\s*\d+s\] big: ", line) for line in lines)
    assert stages.stage_of("converging: 3/256 routers done") == "converging"
    assert stages.stage_of("waiting for 16 BGP sessions: x") == "waiting for 16 BGP sessions: x"


def test_off_a_terminal_a_commands_progress_is_plain_lines_on_stderr(capsys):
    from twin.cli import common

    assert not common.err.is_terminal  # pytest captures stderr
    with common.progress("lab1", "starting") as say:
        say("rendering configs into /x")
        say("converging: 0/2 routers done; waiting for leaf1")
    err = capsys.readouterr().err.splitlines()
    assert [line.split("] ", 1)[1] for line in err] == [
        "lab1: starting",
        "lab1: rendering configs into /x",
        "lab1: converging: 0/2 routers done; waiting for leaf1",
    ]


def test_every_bgp_router_gets_its_loopback_from_the_kernel_side_before_frr_starts(tmp_path):
    """Not through zebra alone: on a saturated host zebra lost the `interface lo` address of 3 leafs
    of 256 (its mgmtd connection closed), and their loopbacks were never announced."""
    from tests.unit.fabrics import clos
    from twin.config import Step
    from twin.lifecycle.bringup import lo_steps
    from twin.topology import load

    fabric = clos(tmp_path, 2, 3)
    want = [Step("addr", "lo", args={"cidr": f"{fabric.nodes['leaf2'].loopback}/32"})]
    assert lo_steps(fabric, "leaf2", "netns") == want
    aipod = load(ROOT / "twin" / "topologies" / "aipod.yml")
    assert lo_steps(aipod, "host1a", "netns") == []  # no BGP there
    vtep = next(n for n in aipod.nodes if aipod.tenants_on(n))
    assert lo_steps(aipod, vtep, "netns") == []  # a netns VTEP's head step puts it there (overlay.vtep_head)


def test_twin_raises_its_soft_limit_of_open_files_to_the_hard_one():
    """A 256-router lab is read through a socket per namespace: past the common default of 1,024."""
    import subprocess
    import sys

    code = (
        "import resource; from twin.runtime.rtdump import enough_files; "
        "print(enough_files(), resource.getrlimit(resource.RLIMIT_NOFILE)[0])"
    )
    out = subprocess.run(
        ["sh", "-c", f'ulimit -S -n 1024 && "{sys.executable}" -c "{code}"'],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    hard = subprocess.run(["sh", "-c", "ulimit -H -n"], capture_output=True, text=True).stdout.strip()
    assert out.stdout.split() == [hard, hard], out


def test_a_loopback_most_routers_lack_is_named_first_at_a_timeout(tmp_path):
    """256 routers each lacking the same 3 leafs' loopbacks read as 765 lines; the cause is 3."""
    from tests.unit.fabrics import clos
    from twin.intent import Intent
    from twin.lifecycle.progress import Progress, counts, lacking

    intent = Intent(clos(tmp_path, 2, 4, "t")).nodes
    p = Progress(dict(intent))
    lo = intent["spine1"].loopbacks["leaf3"]
    for name, n in intent.items():
        routes = {prefix: {"swp1"} for peer, prefix in n.loopbacks.items() if peer != "leaf3"}
        p.saw(name, counts(n, routes), lacking(n, routes))
    assert p.causes("keepalive 3 s, hold 9 s") == [
        f"leaf3's loopback {lo} is missing on 5 of 6 routers read: leaf3 does not announce it? "
        f"(`show bgp ipv4 unicast {lo}` on leaf3 says)"
    ]


def test_the_barrier_confirms_at_once_and_its_look_at_flaps_holds_no_round(tmp_path, monkeypatch):
    """Issue 46: the round that finds the last routers done is followed at once by the round over all that
    confirms it (not a poll later), and the look at FRR's session counters, a vtysh call a busy bgpd answers
    late, runs beside the rounds: it neither delays the next nor counts in its pace."""
    from types import SimpleNamespace

    from tests.unit.fabrics import clos
    from twin.base import timeouts
    from twin.intent import Intent
    from twin.lifecycle import barrier

    fabric = clos(tmp_path, 2, 4, "t")
    t0, rounds, looks = time.monotonic(), [], []
    ready = {n: t0 + (0.3 if n.startswith("spine") else 0.6) for n in fabric.nodes}

    class SlowFrr:
        def vtysh_json(self, *_, **__):
            looks.append(time.monotonic())
            time.sleep(1.0)
            raise ConvergenceTimeout("vtysh", 1.0, ["a busy bgpd"])  # a TwinError, as a failing vtysh is

    ctx = SimpleNamespace(name="t", fabric=fabric, intent=Intent(fabric), exec=lambda node: SlowFrr())
    b = barrier.Barrier(ctx, since=t0)
    monkeypatch.setattr(
        b, "node_missing", lambda n, until, sessions=False: [] if time.monotonic() >= ready[n] else ["x"]
    )
    read = b.round
    monkeypatch.setattr(
        b,
        "round",
        lambda pool, nodes, until, sessions=False: (
            rounds.append((time.monotonic(), len(nodes))) or read(pool, nodes, until, sessions)
        ),
    )
    b.wait(30.0)
    assert looks and looks[0] - t0 < 0.2, "the first round with routers missing looks at their flaps"
    gaps = [b2[0] - b1[0] for b1, b2 in zip(rounds, rounds[1:], strict=False)]
    assert max(gaps) < timeouts.BARRIER_POLL + 0.2, f"no round waited for the look at flaps: {gaps}"
    last, confirm = rounds[-2], rounds[-1]
    assert last[1] == 4 and confirm[1] == 6 and confirm[0] - last[0] < 0.1, rounds
    assert time.monotonic() - t0 < 0.6 + timeouts.BARRIER_POLL + 0.3
