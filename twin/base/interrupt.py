"""An interrupt that is never lost.

Python raises Ctrl-C's KeyboardInterrupt (and `Stopped`, for SIGTERM and SIGHUP) at whatever the
main thread runs when the signal comes. Raised inside a weakref callback or a `__del__` (a
thread's WeakSet entry going away, say), it cannot propagate: Python prints "Exception ignored"
and the command runs on as if the user had not asked it to stop (`twin up` went on to bring the
lab up and left it there). `keep()` installs `sys.unraisablehook` to take such an interrupt
aside, and `check()` (at every stage of a bring-up and every poll of `wait.until`, in the main
thread) raises it again where it can propagate, so what cleans up after Ctrl-C does.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

_lost: list[BaseException] = []
_before: list[Any] = [sys.__unraisablehook__]  # the hook ours stands in front of


def _hook(unraisable: Any) -> None:
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        _lost[:] = [unraisable.exc_value]  # raised again by check(), not printed
        return
    _before[0](unraisable)


def keep() -> None:
    """From now on, an interrupt swallowed where it could not propagate is kept for `check()`."""
    if sys.unraisablehook is not _hook:
        _before[0] = sys.unraisablehook
        sys.unraisablehook = _hook


def check() -> None:
    """Raise again, in the main thread, an interrupt that was swallowed."""
    if _lost and threading.current_thread() is threading.main_thread():
        raise _lost.pop()
