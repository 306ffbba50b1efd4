"""A `twin serve` process for tests and benchmarks: started on a free port of 127.0.0.1 with a
state directory of its own, its tokens made by `twin serve token create`, killed and started
again on the same state (what a crash does). Used by tests/e2e/test_server.py, bench/chaos.py
and bench/server.py."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from twin.client import Client

ROOT = Path(__file__).resolve().parents[2]
STARTUP = 30.0


class Served:
    def __init__(self, state: Path, *options: str):
        self.state, self.options = state, list(options)
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.log = state.parent / f"{state.name}.log"

    def twin(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "twin.cli", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=os.environ.copy(),
            cwd=ROOT,
        )

    def start(self) -> "Served":
        """The server running (recovering what a killed one left first); returns once it listens."""
        self.state.mkdir(parents=True, exist_ok=True)
        said = re.compile(r"twin serve: (http://127\.0\.0\.1:\d+) \(state in")
        before = len(said.findall(self.log.read_text())) if self.log.exists() else 0
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "twin.cli",
                    "serve",
                    "--state",
                    str(self.state),
                    "--listen",
                    "127.0.0.1:0",
                    *self.options,
                ],
                cwd=ROOT,
                env=os.environ.copy(),
                stdout=log,
                stderr=log,
                start_new_session=True,
            )  # as a service runs: a session of its own
        deadline = time.monotonic() + STARTUP
        while time.monotonic() < deadline:
            found = said.findall(self.log.read_text())
            if len(found) > before:
                self.url = found[-1]
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"twin serve exited {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.1)
        raise RuntimeError(f"twin serve did not listen within {STARTUP}s:\n{self.log.read_text()[-3000:]}")

    def token(self, user: str, *options: str) -> str:
        p = self.twin("serve", "--state", str(self.state), "token", "create", user, *options)
        assert p.returncode == 0, p.stderr
        return p.stdout.strip()

    def client(self, token: str) -> Client:
        return Client(self.url, token)

    def kill(self) -> None:
        """SIGKILL: what a crash, the OOM killer or a pulled plug does."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)  # the server alone: a lab's NVUE service lives on
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
