"""What a long command is doing, as events anyone can subscribe to: its stage and its line.

Every long operation takes a `say` callable and hands it a line whenever something moves
(`Lab.up`, `Lab.wait`, `Lab.apply`, rehearse, `verify --prove`). `Progress` is such a callable
that turns each line into a `Step` (seconds since the command started, its stage, its text)
for its subscribers: the CLI's status line on a terminal, `PlainLines` off one (a CI log, a
file), a service streaming an operation's progress. A line names its stage by a short head
("converging: 3/256 routers done ..." is stage "converging"), or explicitly (`Said`, a str
that carries its stage: "starting: 40/256 containers running ..." is stage "containers",
then "links", then "configs"); any other line is a stage of its own.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from twin.base import timeouts


class Said(str):
    """A progress line that names its stage; a str, so every `say` takes it as one."""

    stage: str

    def __new__(cls, text: str, stage: str) -> "Said":
        s = super().__new__(cls, text)
        s.stage = stage
        return s


def stage_of(text: str) -> str:
    """The stage a line names: its own (`Said`), its head before ": " if short, else the line."""
    if isinstance(text, Said):
        return text.stage
    head, sep, _ = text.partition(": ")
    return head if sep and len(head) <= 20 and " " not in head.strip() else text


@dataclass(frozen=True)
class Step:
    at: float  # seconds since the command started
    stage: str
    text: str

    def line(self, label: str = "") -> str:
        """The plain line of it: `[  42s] LABEL: TEXT`."""
        return f"[{self.at:5.0f}s] " + (f"{label}: " if label else "") + self.text


class Progress:
    """A command's `say`: each line a `Step` handed to every subscriber (in the thread that said it)."""

    def __init__(self, start: float | None = None):
        self.start = time.monotonic() if start is None else start
        self.last: Step | None = None
        self._subscribers: list[Callable[[Step], None]] = []
        self._lock = threading.Lock()

    def subscribe(self, fn: Callable[[Step], None]) -> None:
        with self._lock:
            self._subscribers.append(fn)

    def __call__(self, text: str) -> None:
        step = Step(time.monotonic() - self.start, stage_of(text), str(text))
        with self._lock:
            self.last = step
            subscribers = list(self._subscribers)
        for fn in subscribers:
            fn(step)


class PlainLines:
    """Plain progress lines for a log: one at each stage change, and while a stage goes on, its
    latest line at least every `every` seconds (said again, with the time, when nothing new was
    said: a run that is stuck shows it). `with PlainLines(progress, write, label):` while it works."""

    def __init__(
        self, progress: Progress, write: Callable[[str], None], label: str = "", every: float = timeouts.PROGRESS_EVERY
    ):
        self.progress, self.write, self.label, self.every = progress, write, label, every
        self.stage: str | None = None
        self.printed = 0.0  # time.monotonic() of the last line
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="twin-progress", daemon=True)
        progress.subscribe(self.heard)

    def heard(self, step: Step) -> None:
        with self._lock:
            if step.stage != self.stage or time.monotonic() - self.printed >= self.every:
                self._print(step)

    def _print(self, step: Step) -> None:
        self.stage, self.printed = step.stage, time.monotonic()
        self.write(step.line(self.label))

    def _tick(self) -> None:
        while not self._stop.wait(min(1.0, self.every)):
            with self._lock:
                last = self.progress.last
                if last is not None and time.monotonic() - self.printed >= self.every:
                    self._print(Step(time.monotonic() - self.progress.start, last.stage, last.text))

    def __enter__(self) -> "PlainLines":
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._ticker.join()
