"""A command's deadline reaches every call its stages make (issue 35's gap): within `wait.bounded`,
a Docker request, a netlink request and a wait get their own deadline cut to the command's, a call
begun past it is not begun, and a deadline that passes names what each unit of work waited for.

The unanswered calls are real: a Docker API request to a unix socket that accepts and never
answers, a netlink request to a netlink socket that never replies.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from pathlib import Path

import pytest

from tests.unit.fabrics import clos
from twin.base import timeouts, wait
from twin.base.errors import ConvergenceTimeout, DeadlinePassed, NetlinkTimeout, StageTimeout, TwinError
from twin.observe import linkstats
from twin.runtime import dockerapi, netns
from twin.runtime.links import Wiring


def bound(seconds: float, name: str = "the deadline of --timeout 1s (from the command's start)") -> wait.Bound:
    return wait.Bound(wait.Deadline.after(seconds), name)


def test_a_calls_own_deadline_is_cut_to_the_commands_and_none_is_begun_past_it():
    assert wait.cut(30.0) == 30.0 and wait.left() is None  # no command deadline: its own
    b = bound(0.3)
    with wait.bounded(b):
        assert 0.2 < wait.cut(30.0) <= 0.3 and wait.cut(0.1) == 0.1
        time.sleep(0.35)
        with pytest.raises(DeadlinePassed) as exc:
            wait.cut(30.0, "leaf1: `vtysh -c 'show bgp summary json'`")
        assert str(exc.value) == (
            "the deadline of --timeout 1s (from the command's start) had passed: "
            "leaf1: `vtysh -c 'show bgp summary json'` not begun"
        )
        with wait.bounded(None):  # what runs after a failure (a removal): its own deadlines
            assert wait.cut(30.0) == 30.0
    assert wait.current() is None


def test_a_thread_starts_without_the_commands_deadline():
    seen = []
    with wait.bounded(bound(5)):
        t = threading.Thread(target=lambda: seen.append(wait.current()))
        t.start()
        t.join()
    assert seen == [None]  # a pool's worker sets it itself (wait.bounded in the work it runs)


def test_a_wait_ends_by_the_commands_deadline():
    t = time.monotonic()
    with wait.bounded(bound(0.5)), pytest.raises(ConvergenceTimeout) as exc:
        wait.until(lambda: ["leaf1: VNI 10 not known to zebra"], 60, "leaf1: VNIs in zebra", first=0.05, cap=0.1)
    assert time.monotonic() - t < 0.8 and exc.value.missing == ["leaf1: VNI 10 not known to zebra"]


@pytest.fixture
def silent_engine(tmp_path: Path):
    """A unix socket that accepts Docker API requests and never answers them."""
    path = tmp_path / "docker.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"unix://{path}"
    stop.set()
    t.join()
    for c in held:
        c.close()
    srv.close()


def test_a_docker_request_the_engine_never_answers_ends_by_the_commands_deadline(silent_engine):
    api = dockerapi.BoundedApi(base_url=silent_engine, version="1.41", timeout=180)
    assert api.timeout == 180
    b = bound(0.5)
    t = time.monotonic()
    with wait.bounded(b), pytest.raises(TwinError) as exc:
        dockerapi.call("t-x/leaf1: creating its container", lambda: api.containers(all=True))
    took = time.monotonic() - t
    assert 0.45 < took < 1.5, took
    assert str(exc.value).startswith("t-x/leaf1: creating its container: Docker did not answer in time under load")
    with wait.bounded(b), pytest.raises(DeadlinePassed):  # past the deadline: not sent at all
        dockerapi.call("t-x/leaf2: creating its container", lambda: api.containers(all=True))


def test_a_netlink_request_never_answered_ends_by_the_commands_deadline():
    here = "/proc/self/ns/net"
    h = netns.InNamespace(here)  # its own deadline: 60 s
    peer = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    peer.bind((0, 0))
    try:
        h.asyncore.socket.connect(peer.getsockname())
        t = time.monotonic()
        with wait.bounded(bound(0.5)), pytest.raises(NetlinkTimeout) as exc:
            h.get_routes()
        assert time.monotonic() - t < 1.0
        assert re.match(
            rf"{here}: no answer to a netlink request \(get_routes\) within 0\.\d+s \(abandoned\)$", str(exc.value)
        ), str(exc.value)
    finally:
        peer.close()
        h.close()


def test_a_deadline_that_passes_names_the_stage_and_what_each_unit_was_waiting_for():
    b = bound(0.4, "the deadline of --timeout 40s (from the command's start)")
    release = threading.Event()

    def unit(who: str, what: str, secs: float) -> None:
        with wait.bounded(b), wait.doing(who, "its configuration"), wait.doing(who, what):
            release.wait(secs)

    threads = [
        threading.Thread(target=unit, args=a)
        for a in (
            ("leaf1", "its exec `sleep 3600`", 5),
            ("spine1", "its daemons started", 0.02),
            ("leaf2", "its VNIs known to zebra", 0.6),
        )
    ]
    for t in threads:
        t.start()
        time.sleep(0.05)
    time.sleep(0.7)  # leaf2's step ended past the deadline: it was under way at it
    e = b.timeout("configs", "5/5 containers running, 4/4 links wired, 3/5 nodes configured")
    release.set()
    for t in threads:
        t.join()
    assert isinstance(e, StageTimeout) and isinstance(e, ConvergenceTimeout) and e.stage == "configs"
    lines = str(e).splitlines()
    assert re.match(
        r"the deadline of --timeout 40s \(from the command's start\) passed after [01]s in stage configs "
        r"\(5/5 containers running, 4/4 links wired, 3/5 nodes configured\); it was waiting for "
        r"leaf1: its exec `sleep 3600` \(for 0s\) \(\+1 more\)$",
        lines[0],
    ), lines[0]
    assert [re.sub(r" \(for \ds\)$", "", x) for x in lines[1:]] == [
        "  - leaf1: its exec `sleep 3600`",
        "  - leaf2: its VNIs known to zebra",
    ]  # spine1 was done before it
    assert e.missing == [x[4:] for x in lines[1:]]


def test_a_collectors_dump_never_answered_is_abandoned_with_its_socket_and_the_next_reads_again(monkeypatch):
    monkeypatch.setattr(timeouts, "NETLINK", 0.5)
    links = linkstats.LinkSocket("")
    peer = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    peer.bind((0, 0))
    try:
        assert links.sock is not None
        links.sock.connect(peer.getsockname())  # its dumps go to a peer that never answers
        t = time.monotonic()
        with pytest.raises(TimeoutError):
            links.dump()
        assert time.monotonic() - t < 1.0 and links.sock is None  # abandoned: its socket closed
        assert "lo" in {link["name"] for link in links.dump()}  # a new socket, a whole answer
    finally:
        peer.close()
        links.close()


def test_an_error_at_the_commands_deadline_outside_a_stages_own_is_the_deadline_naming_the_commands_stage():
    name = "the deadline of --timeout 30s (from the command's start)"
    late = wait.Bound(wait.Deadline.after(30, time.monotonic() - 30.2), name)  # passed 0.2 s ago
    said = "lab t-x: listing its networks: Docker did not answer in time under load (tried 1 time in 29s)"
    with wait.bounded(late), pytest.raises(StageTimeout) as exc, wait.named():
        raise TwinError(said)
    e = exc.value
    assert (e.stage, e.missing) == ("preparing", [said])
    assert str(e) == (
        f"{name} passed after 30s in stage preparing (nothing created yet); it was waiting for {said}\n  - {said}"
    )
    late.stage = "converging"
    with (
        wait.bounded(late),
        pytest.raises(StageTimeout, match=r"in stage converging \(2/5 routers\)"),
        wait.named("2/5 routers"),
    ):
        raise TwinError("leaf1: its routes not read")
    with wait.bounded(late), pytest.raises(ConvergenceTimeout) as barrier, wait.named():  # the barrier's own
        raise ConvergenceTimeout("convergence", 30, ["leaf1: 10.0.0.2/32 not in its FIB"])
    assert type(barrier.value) is ConvergenceTimeout
    with wait.bounded(bound(30)), pytest.raises(TwinError, match="^Docker refused it$") as early, wait.named():
        raise TwinError("Docker refused it")  # before the deadline: the error as it was
    assert not isinstance(early.value, StageTimeout)
    with pytest.raises(TwinError, match="^Docker refused it$"), wait.named():  # no command deadline
        raise TwinError("Docker refused it")


def test_the_wiring_names_the_stage_the_deadline_passed_in_and_how_far_it_got(tmp_path):
    name = "the deadline of --timeout 20s (from the command's start)"
    late = wait.Bound(wait.Deadline.after(20, time.monotonic() - 20.1), name)
    w = Wiring(clos(tmp_path, 1, 2, "t-x"), bound=late)
    try:
        w.node_running("spine1", 1)
        e = w.late(TwinError("lab t-x: creating its management network: Docker did not answer"), "mgmt network")
        assert isinstance(e, StageTimeout) and e.stage == "mgmt network"
        assert str(e).startswith(
            f"{name} passed after 20s in stage mgmt network (1/3 containers running, 0/2 links "
            "wired, 0/3 nodes configured)"
        ), str(e)
        assert w.late(DeadlinePassed("x"), "").stage == "containers"  # the wiring's own stage
        assert w.late(KeyboardInterrupt()) is None  # an interrupt is not the deadline
        assert Wiring(clos(tmp_path, 1, 2, "t-y"), bound=bound(30)).late(TwinError("refused")) is None
    finally:
        w.abort()
