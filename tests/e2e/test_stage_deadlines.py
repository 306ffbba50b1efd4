"""A `twin up --timeout N` ends by N whatever a stage before the barrier meets (issue 35's gap),
naming the stage and what it was waiting for, and removes what it made; on real labs:
- a node whose `exec` commands never end (`sleep 3600`, three of them: 90 s of their own
  deadlines): `twin up --timeout 15`, a command off a terminal, ends at 15 s in stage configs
  naming that exec;
- the engine never answering the creation of one node's container (its request held at the
  engine's socket: twin's client talks to dockerd through a relay in this process that forwards
  every request but that one): `Lab.up(timeout=15)` ends at 15 s in stage containers naming it;
- the engine never answering the creation of the lab's management network (held so): it ends at
  15 s in stage record (where its subnet is chosen and its network made) naming it.
Each leaves nothing of its lab (no container, veth, namespace, network, lab directory).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import ROOT, leftovers, said, twin_cli
from twin.base.errors import StageTimeout
from twin.config.naming import container_name
from twin.lab import Lab
from twin.runtime import dockerapi
from twin.runtime.docker import DockerRuntime

pytestmark = pytest.mark.e2e
SMALL = ROOT / "tests/e2e/small.yml"
TIMEOUT = 15  # s: each test's --timeout
MARGIN = 15  # s past the deadline: removing the lab's 5 containers, and the interpreter's start


@pytest.fixture(autouse=True)
def clean_slate(runtime):
    def clean() -> None:
        for name in ("t-sd-exec", "t-sd-engine", "t-sd-net"):
            if runtime.containers(name) or (Path(os.environ["TWIN_HOME"]) / "labs" / name).exists():
                twin_cli("down", name)

    clean()
    yield
    clean()  # a lab a failed test left up


def test_twin_up_ends_at_its_timeout_when_a_nodes_exec_never_ends_naming_it(runtime, node_image, tmp_path):
    doc = yaml.safe_load(SMALL.read_text())
    doc["nodes"]["leaf2"]["exec"] = ["sleep 3600"] * 3
    topo = tmp_path / "hung-exec.yml"
    topo.write_text(yaml.safe_dump(doc))
    log = tmp_path / "up.log"
    t0 = time.monotonic()
    with open(log, "w") as f:
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "twin.cli",
                "up",
                str(topo),
                "--name",
                "t-sd-exec",
                "--image",
                node_image,
                "--timeout",
                str(TIMEOUT),
            ],
            cwd=ROOT,
            stdout=f,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
            env=os.environ.copy(),
        )
    took = time.monotonic() - t0
    text = log.read_text()
    assert p.returncode == 1, text
    assert took <= TIMEOUT + MARGIN, (took, text)
    (error,) = [line for line in said(text) if line.startswith("error: ")]
    m = re.match(
        rf"error: the deadline of --timeout {TIMEOUT}s \(from the command's start\) passed after (\d+)s "
        r"in stage configs \(5/5 containers running, 4/4 links wired, [0-4]/5 nodes configured\); "
        r"it was waiting for leaf2: its exec `sleep 3600` \(for (\d+)s\)",
        error,
    )
    assert m and TIMEOUT - 1 <= int(m[1]) <= TIMEOUT + 1 and int(m[2]) >= 5, error
    assert "bring-up failed: removing what was created" in text, text
    assert leftovers(runtime, "t-sd-exec") == []


class HeldRelay:
    """A unix socket that relays Docker API requests to dockerd, but holds (never forwards, never
    answers) a request whose first line has `held` in it, as an engine that never answers it."""

    def __init__(self, path: Path, held: str, engine: str = "/var/run/docker.sock"):
        self.path, self.held, self.engine = path, held.encode(), engine
        self.seen_held = threading.Event()
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(str(path))
        self.srv.listen(64)
        self.srv.settimeout(0.2)
        self.stop = threading.Event()
        self.socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                c = self.srv.accept()[0]
            except OSError:
                continue
            e = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            e.connect(self.engine)
            self.socks += [c, e]
            threading.Thread(target=self._pump, args=(c, e, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(e, c, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, requests: bool) -> None:
        try:
            while data := src.recv(1 << 16):
                if requests and self.held in data.split(b"\r\n", 1)[0]:
                    self.seen_held.set()
                    self.stop.wait()  # held: neither forwarded nor answered
                    return
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.stop.set()
        for s in [*self.socks, self.srv]:
            s.close()


def held_up(name: str, held: str, node_image: str, tmp_path: Path) -> tuple[StageTimeout, float]:
    """`Lab.up(timeout=15)` of the small lab through a relay to dockerd that holds the request `held`:
    the deadline it ended at, and how long it took."""
    relay = HeldRelay(tmp_path / "docker.sock", held)
    try:
        lab = Lab.load(
            SMALL, name=name, runtime=DockerRuntime(client=dockerapi.client(pool=32, base_url=f"unix://{relay.path}"))
        )
        t0 = time.monotonic()
        with pytest.raises(StageTimeout) as exc:
            lab.up(image=node_image, timeout=TIMEOUT)
        assert relay.seen_held.is_set()
        return exc.value, time.monotonic() - t0
    finally:
        relay.close()


def assert_held_up(runtime, lab: str, e: StageTimeout, took: float, stage: str, progress: str, waiting: str) -> None:
    """The deadline passed at TIMEOUT in `stage`, with how far the bring-up got (`progress`, a regex)
    and what it was waiting for (`waiting`, a regex); and nothing of `lab` is left."""
    assert took <= TIMEOUT + MARGIN, took
    assert e.stage == stage and TIMEOUT - 1 <= e.seconds <= TIMEOUT + 1, str(e)
    first = str(e).splitlines()[0]
    assert re.match(
        rf"the deadline of --timeout {TIMEOUT}s \(from the command's start\) passed after \d+s in stage "
        rf"{stage} \({progress}\); it was waiting for {waiting} \(for 1[0-9]s\)$",
        first,
    ), first
    assert leftovers(runtime, lab) == []


def test_a_containers_creation_the_engine_never_answers_ends_up_at_its_timeout_naming_it(runtime, node_image, tmp_path):
    e, took = held_up(
        "t-sd-engine", f"/containers/create?name={container_name('t-sd-engine', 'leaf2')}", node_image, tmp_path
    )
    assert_held_up(
        runtime,
        "t-sd-engine",
        e,
        took,
        "containers",
        r"4/5 containers running, 3/4 links wired, [0-3]/5 nodes configured",
        "leaf2: its container created",
    )


def test_a_management_network_the_engine_never_makes_ends_up_at_its_timeout_naming_it(runtime, node_image, tmp_path):
    e, took = held_up("t-sd-net", "/networks/create", node_image, tmp_path)
    assert_held_up(
        runtime,
        "t-sd-net",
        e,
        took,
        "record",
        "nothing created yet",
        "lab t-sd-net: its management network made",
    )
