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
