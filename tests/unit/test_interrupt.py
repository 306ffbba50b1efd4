"""A Ctrl-C Python swallows (raised inside a weakref callback) is raised again by the next wait or stage."""

import gc
import os
import signal
import sys
import time
import weakref

import pytest

from twin.base import interrupt, wait


class Thing:
    pass


def swallow_a_ctrl_c() -> None:
    """Deliver SIGINT while Python runs a weakref callback: the KeyboardInterrupt is 'ignored'."""
    thing = Thing()

    def gone(_ref: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # the handler runs here, inside the callback

    ref = weakref.ref(thing, gone)
    del thing
    gc.collect()
    assert ref() is None


def test_a_swallowed_ctrl_c_is_raised_again_by_the_next_wait(capsys):
    interrupt.keep()
    swallow_a_ctrl_c()  # returns: Python could not raise it here
    with pytest.raises(KeyboardInterrupt):
        wait.until(lambda: ["a session"], 5, "sessions", first=0.01)
    assert "Exception ignored" not in capsys.readouterr().err
    interrupt.check()  # raised once, not again


def test_nothing_swallowed_nothing_raised_and_other_unraisables_still_reported(monkeypatch):
    seen: list = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    interrupt.keep()
    interrupt.check()
    sys.unraisablehook(type("U", (), {"exc_value": ValueError("x")})())
    assert [type(u.exc_value) for u in seen] == [ValueError]
    assert wait.until(lambda: [], 1, "nothing") < 1
