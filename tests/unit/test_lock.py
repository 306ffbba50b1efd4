"""The lab lock: one twin at a time changes a lab; the second is refused at once, naming the
command and process that hold it; the lock dies with its holder (even by SIGKILL)."""

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from twin.base.errors import LabStateError
from twin.lifecycle import locks

HOLD = """
import sys, time
from twin.lifecycle import locks
with locks.lock(sys.argv[1], sys.argv[2]):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_HOME", str(tmp_path))
    return tmp_path


def holder_process(lab: str, what: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLD, lab, what], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def test_a_second_writer_is_refused_at_once_naming_command_and_pid(home):
    p = holder_process("lk", "twin apply")
    try:
        t0 = time.monotonic()
        with pytest.raises(LabStateError) as e:
            with locks.lock("lk", "twin fault link-down leaf1:swp1"):
                pytest.fail("two writers of one lab")
        assert time.monotonic() - t0 < 1, "refused at once, never waiting"
        assert str(e.value) == f"lab 'lk' is busy: twin apply (pid {p.pid}); wait for it, or stop it first"
        assert locks.holder("lk") == f"twin apply (pid {p.pid})"
        with locks.lock("other", "twin up"):  # another lab is not held by it
            pass
    finally:
        p.kill()
        p.wait()


def test_the_lock_dies_with_a_killed_holder(home):
    p = holder_process("lk", "twin rehearse fault:node-kill:leaf1")
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert locks.holder("lk") == ""
    with locks.lock("lk", "twin down"):
        assert locks.holder("lk") == f"twin down (pid {os.getpid()})"
    assert locks.holder("lk") == ""


def test_re_entrant_in_its_thread_refused_in_another(home):
    seen: list[str] = []
    with locks.lock("lk", "twin rehearse x.yml"):
        with locks.lock("lk", "twin apply"):  # the rehearsal's change, under the rehearsal's hold
            seen.append("nested")

        def other():
            try:
                with locks.lock("lk", "twin fault node-kill leaf1"):
                    seen.append("other thread got it")
            except LabStateError as e:
                seen.append(str(e))

        t = threading.Thread(target=other)
        t.start()
        t.join()
        out = subprocess.run([sys.executable, "-c", HOLD, "lk", "twin down"], capture_output=True, text=True)
    assert seen[0] == "nested"
    assert seen[1].startswith("lab 'lk' is busy: twin rehearse x.yml (pid ") and "another thread" in seen[1]
    assert out.returncode == 1 and f"is busy: twin rehearse x.yml (pid {os.getpid()})" in out.stderr
    with locks.lock("lk", "twin down"):  # released after the outer hold
        pass


def test_a_bad_lab_name_takes_no_lock(home):
    with pytest.raises(Exception, match="is not allowed"):
        with locks.lock("../x", "twin up"):
            pass
    assert not (home / "locks").exists() or not any((home / "locks").iterdir())


NODE_HOLD = """
import sys, time
from twin.lifecycle import locks
with locks.node_lock(sys.argv[1], sys.argv[2], sys.argv[3]):
    print("held", flush=True)
    time.sleep(60)
"""


def test_nodes_own_changes_run_beside_each_other_and_exclude_a_lab_wide_one(home):
    """Issue 33: an NVUE revision holds its node, as a switch applies its own configuration; other
    nodes' revisions apply meanwhile, a lab-wide change waits for none of them (refused at once)."""
    p = subprocess.Popen(
        [sys.executable, "-c", NODE_HOLD, "lk", "leaf01", "twin nvued: leaf01 revision 1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline().strip() == "held"
    try:
        with locks.node_lock("lk", "leaf02", "twin nvued: leaf02 revision 2"):  # another node: at once
            with locks.node_lock("lk", "leaf02", "nested"):  # re-entrant in its thread
                pass
        with pytest.raises(LabStateError) as e:
            with locks.node_lock("lk", "leaf01", "twin nvued: leaf01 revision 3"):
                pytest.fail("two changes of one node")
        assert str(e.value) == (
            f"node leaf01 of lab 'lk' is busy: twin nvued: leaf01 revision 1 (pid {p.pid}); "
            "wait for it, or stop it first"
        )
        with pytest.raises(LabStateError) as e:
            with locks.lock("lk", "twin apply"):
                pytest.fail("a lab-wide change beside a node's")
        assert str(e.value) == (
            f"lab 'lk' is busy: twin nvued: leaf01 revision 1 (pid {p.pid}); wait for it, or stop it first"
        )
        assert locks.holder("lk") == f"twin nvued: leaf01 revision 1 (pid {p.pid})"
    finally:
        p.kill()
        p.wait()
    with locks.lock("lk", "twin fault node-stop leaf01"):
        with locks.node_lock("lk", "leaf01", "inside the lab's own hold"):  # its thread holds the lab
            pass
        errors = []
        t = threading.Thread(target=lambda: errors.append(_try_node("lk", "leaf02")))
        t.start()
        t.join()
        assert errors == ["lab 'lk' is busy: twin fault node-stop leaf01"]
    assert locks.holder("lk") == ""


def _try_node(lab: str, node: str) -> str:
    try:
        with locks.node_lock(lab, node, "another thread"):
            return "held"
    except LabStateError as e:
        return str(e).split(" (pid")[0]


def test_down_removes_the_labs_lock_files_as_its_hold_ends(home):
    """Issue 34b: the lab's lock file and its nodes' go with the lab (`twin down` forgets them
    under its hold); a lab never downed keeps its file, and only its holder may forget it."""
    with locks.node_lock("lk", "leaf01", "twin nvued: leaf01 revision 1"):
        pass
    with locks.lock("other", "twin up"):
        pass
    assert (home / "locks" / "lk.nodes" / "leaf01.lock").is_file()
    with pytest.raises(LabStateError, match="its lock files go under its lock, which this thread does not hold"):
        locks.forget("lk")
    with locks.lock("lk", "twin down"):
        with locks.lock("lk", "twin down (nested)"):
            locks.forget("lk")
        assert (home / "locks" / "lk.lock").is_file(), "removed as the outermost hold ends, not before"
    assert sorted(p.name for p in (home / "locks").iterdir()) == ["other.lock"]
    with locks.lock("lk", "twin up"):  # made again by the next writer
        assert locks.holder("lk") == f"twin up (pid {os.getpid()})"


OPENED_THEN_HELD = """
import os, sys
from twin.lifecycle import locks
real = os.open
def slow_open(path, *a, **kw):
    fd = real(path, *a, **kw)
    if str(path).endswith("/lk.lock") and not os.environ.get("ONCE"):
        os.environ["ONCE"] = "1"
        print("opened", flush=True)
        sys.stdin.readline()            # the test removes the file meanwhile (a `twin down` ending)
    return fd
os.open = slow_open
with locks.lock("lk", "twin up"):
    print("held", flush=True)
    sys.stdin.readline()
"""

DOWN = """
import sys
from twin.lifecycle import locks
with locks.lock("lk", "twin down"):
    locks.forget("lk")
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_locker_that_opened_the_file_down_removes_locks_the_paths_file_not_the_old_one(home):
    """The race `forget` must not open: a locker opened the lab's lock file, `twin down` removed it
    and released its hold; the locker's flock of the removed file succeeds, so it checks the file
    it holds is still the path's (else it opens the path's): a third twin is refused, not let in."""
    down = subprocess.Popen([sys.executable, "-c", DOWN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert down.stdout.readline().strip() == "held"
    up = subprocess.Popen(
        [sys.executable, "-c", OPENED_THEN_HELD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert up.stdout.readline().strip() == "opened"  # the file `down` holds, and removes as it ends
        down.communicate("\n", timeout=30)
        assert down.returncode == 0 and not (home / "locks" / "lk.lock").exists()
        up.stdin.write("\n")
        up.stdin.flush()
        assert up.stdout.readline().strip() == "held"
        with pytest.raises(LabStateError) as e:
            with locks.lock("lk", "twin apply"):
                pytest.fail("two holders of one lab: one on the removed file, one on the path's new one")
        assert str(e.value) == f"lab 'lk' is busy: twin up (pid {up.pid}); wait for it, or stop it first"
    finally:
        up.kill()
        up.wait()
        down.kill()
        down.wait()


def test_a_look_at_who_holds_a_lab_refuses_no_one(home):
    """`holder` (what `twin status` shows) looks with a shared hold: a node's change beside it is
    not refused; a writer that meets a hold naming nobody (such a look) tries again, briefly."""
    (home / "locks").mkdir()
    look = os.open(home / "locks" / "lk.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(look, fcntl.LOCK_SH)  # what `holder` holds for a moment, held longer here
        with locks.node_lock("lk", "leaf01", "twin nvued: leaf01 revision 1"):
            assert locks.holder("lk") == f"twin nvued: leaf01 revision 1 (pid {os.getpid()})"
        t = threading.Timer(0.3, lambda: fcntl.flock(look, fcntl.LOCK_UN))
        t.start()
        t0 = time.monotonic()
        with locks.lock("lk", "twin apply"):
            took = time.monotonic() - t0
        t.join()
        assert 0.25 < took < locks.ANONYMOUS, took
        fcntl.flock(look, fcntl.LOCK_SH)  # a look that lasts: the writer says so, at its deadline
        with pytest.raises(LabStateError, match="lab 'lk' is busy: another twin command; wait for it"):
            with locks.lock("lk", "twin apply"):
                pass
    finally:
        os.close(look)
