"""The lab lock: one twin at a time changes a lab; the second is refused at once, naming the
command and process that hold it; the lock dies with its holder (even by SIGKILL)."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from twin.errors import LabStateError
from twin.lifecycle import state

HOLD = """
import sys, time
from twin.lifecycle import state
with state.lock(sys.argv[1], sys.argv[2]):
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
            with state.lock("lk", "twin fault link-down leaf1:swp1"):
                pytest.fail("two writers of one lab")
        assert time.monotonic() - t0 < 1, "refused at once, never waiting"
        assert str(e.value) == f"lab 'lk' is busy: twin apply (pid {p.pid}); wait for it, or stop it first"
        assert state.holder("lk") == f"twin apply (pid {p.pid})"
        with state.lock("other", "twin up"):   # another lab is not held by it
            pass
    finally:
        p.kill()
        p.wait()


def test_the_lock_dies_with_a_killed_holder(home):
    p = holder_process("lk", "twin rehearse fault:node-kill:leaf1")
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert state.holder("lk") == ""
    with state.lock("lk", "twin down"):
        assert state.holder("lk") == f"twin down (pid {os.getpid()})"
    assert state.holder("lk") == ""


def test_re_entrant_in_its_thread_refused_in_another(home):
    seen: list[str] = []
    with state.lock("lk", "twin rehearse x.yml"):
        with state.lock("lk", "twin apply"):      # the rehearsal's change, under the rehearsal's hold
            seen.append("nested")

        def other():
            try:
                with state.lock("lk", "twin fault node-kill leaf1"):
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
    with state.lock("lk", "twin down"):      # released after the outer hold
        pass


def test_a_bad_lab_name_takes_no_lock(home):
    with pytest.raises(Exception, match="is not allowed"):
        with state.lock("../x", "twin up"):
            pass
    assert not (home / "locks").exists() or not any((home / "locks").iterdir())


NODE_HOLD = """
import sys, time
from twin.lifecycle import state
with state.node_lock(sys.argv[1], sys.argv[2], sys.argv[3]):
    print("held", flush=True)
    time.sleep(60)
"""


def test_nodes_own_changes_run_beside_each_other_and_exclude_a_lab_wide_one(home):
    """Issue 33: an NVUE revision holds its node, as a switch applies its own configuration; other
    nodes' revisions apply meanwhile, a lab-wide change waits for none of them (refused at once)."""
    p = subprocess.Popen([sys.executable, "-c", NODE_HOLD, "lk", "leaf01", "twin nvued: leaf01 revision 1"],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    try:
        with state.node_lock("lk", "leaf02", "twin nvued: leaf02 revision 2"):    # another node: at once
            with state.node_lock("lk", "leaf02", "nested"):                      # re-entrant in its thread
                pass
        with pytest.raises(LabStateError) as e:
            with state.node_lock("lk", "leaf01", "twin nvued: leaf01 revision 3"):
                pytest.fail("two changes of one node")
        assert str(e.value) == (f"node leaf01 of lab 'lk' is busy: twin nvued: leaf01 revision 1 (pid {p.pid}); "
                                "wait for it, or stop it first")
        with pytest.raises(LabStateError) as e:
            with state.lock("lk", "twin apply"):
                pytest.fail("a lab-wide change beside a node's")
        assert str(e.value) == (f"lab 'lk' is busy: twin nvued: leaf01 revision 1 (pid {p.pid}); wait for it, "
                                "or stop it first")
        assert state.holder("lk") == f"twin nvued: leaf01 revision 1 (pid {p.pid})"
    finally:
        p.kill()
        p.wait()
    with state.lock("lk", "twin fault node-stop leaf01"):
        with state.node_lock("lk", "leaf01", "inside the lab's own hold"):      # its thread holds the lab
            pass
        errors = []
        t = threading.Thread(target=lambda: errors.append(_try_node("lk", "leaf02")))
        t.start()
        t.join()
        assert errors == ["lab 'lk' is busy: twin fault node-stop leaf01"]
    assert state.holder("lk") == ""


def _try_node(lab: str, node: str) -> str:
    try:
        with state.node_lock(lab, node, "another thread"):
            return "held"
    except LabStateError as e:
        return str(e).split(" (pid")[0]
