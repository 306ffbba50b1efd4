"""Removing what a lab owns, and doing it when a bring-up fails or is interrupted.

A lab owns: its services' processes (a dialect's, NVUE's: recorded in its directory),
containers labelled `twin.lab=<lab>` (their veths die with their
namespaces; no veth of a lab is ever in the host's namespace), the throwaway
namespace of the VRF-backend probe (`twin-<lab>-probe`, left behind only by a
killed `up`) and its directory. `remove_all` takes exactly those, and works
after a crash or without the lab directory.

A bring-up that fails or is interrupted (Ctrl-C, or SIGTERM/SIGHUP, which the
command line takes as Ctrl-C), or whose deadline passed, removes what it made (with
the removal's own deadlines, not the command's). While it does, a second
interrupt does not cut the removal short: it says what is going on; a third one
stops, and says what may be left and how to remove it (`patient`, which apply's
rollback uses too).
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Callable, Iterator

from twin.base import interrupt, wait
from twin.config.dialect import dialects
from twin.config.naming import probe_netns
from twin.lifecycle import state
from twin.runtime import Runtime, remove_held, remove_netns


def remove_all(name: str, d: Path, runtime: Runtime) -> list[str]:
    """Lab `name`'s services, containers, probe namespace, the namespaces holding stopped nodes'
    links and directory `d`: removed; returns the container names."""
    if d.is_dir() and not d.is_symlink():
        stop_services(d)
    removed = runtime.remove_lab(name, d)
    remove_netns(probe_netns(name))
    remove_held(name)
    state.remove(d)
    return removed


def stop_services(d: Path) -> None:
    """The services of the lab in directory `d` (a dialect's: NVUE's), stopped: exactly the processes recorded."""
    for x in dialects():
        if x.service is not None:
            x.service.stop(d)


@contextmanager
def on_failure(name: str, d: Path, runtime: Runtime, keep: bool, say: Callable[[str], None]) -> Iterator[None]:
    """Run a bring-up; if it raises (or is interrupted), remove what it made unless `keep`."""
    try:
        yield
        interrupt.check()  # swallowed in the last stage: the bring-up is still undone
    except BaseException:
        if keep:
            say(f"bring-up failed: kept what was made (--keep); `twin down {name}` removes it")
            raise
        say("bring-up failed: removing what was created")
        with (
            wait.bounded(None),
            patient(f"removing lab {name}", f"its containers may then remain: `twin down {name}` removes them"),
        ):
            remove_all(name, d, runtime)  # with its own deadlines, not the failed command's
        raise


INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def patient(doing: str, left: str) -> Iterator[None]:
    """An interrupt (Ctrl-C, SIGTERM, SIGHUP) while `doing` what must not be cut short: the first
    is answered, the second stops it, saying what may be `left`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    presses = []

    def handler(signum: int, frame: FrameType | None) -> None:
        presses.append(1)
        if len(presses) == 1:
            print(f"\ntwin: still {doing}; {signal.Signals(signum).name} again to stop ({left})", flush=True)
            return
        raise KeyboardInterrupt(f"{doing} stopped: {left}")

    old = {s: signal.signal(s, handler) for s in INTERRUPTS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
