"""containerlab as twin's runtime, through its CLI (`twin up --runtime containerlab`).

twin renders and exports the lab (`twin.interop.containerlab`: the topology
file, the files it binds and a start script per node that does what twin's own
bring-up does once a node's links exist), then runs `containerlab deploy`,
reads `containerlab inspect --format json`, and from there on works on the
containers containerlab made exactly as on its own: they carry twin's labels,
so the barrier, status, verify, traffic, apply and faults find them. `remove`
runs `containerlab destroy --cleanup`, then removes anything labelled that is left.
"""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Callable, ClassVar

from twin import timeouts
from twin.config.overlay import Backend
from twin.config.render import render_lab
from twin.errors import CommandError, TwinError
from twin.interop.clab_cli import Containerlab, find_binary, parse_inspect
from twin.interop.containerlab import export_containerlab
from twin.runtime.docker import Configure, DockerRuntime
from twin.topology.model import Fabric

Run = Callable[..., subprocess.CompletedProcess]


class ContainerlabRuntime(DockerRuntime):
    name: ClassVar[str] = "containerlab"

    def __init__(self, client=None, timeout: float | None = timeouts.DOCKER_API, run: Run = subprocess.run,
                 binary: str | None = None):
        self.binary = binary or find_binary()      # one line when containerlab is not installed
        self._run = run
        super().__init__(client, timeout)

    def cli(self, cmd: list[str], timeout: float = timeouts.CONTAINER_START * 10) -> str:
        p = self._run(cmd, capture_output=True, text=True, timeout=timeout)
        if p.returncode:
            raise CommandError("host", cmd, p.returncode, p.stdout[-4000:], p.stderr[-4000:])
        return p.stdout

    def bring_up(self, fabric: Fabric, image: str, labdir: Path, backend: Backend, configure: Configure,
                 on_created: Callable[[], None] = lambda: None,
                 say: Callable[[str], None] = lambda _: None) -> dict[str, int]:
        """Export into the lab directory, deploy, and return node -> pid of what containerlab made.
        `configure` is not called: each node's start script does it inside the node."""
        topology = export_containerlab(fabric, render_lab(fabric, backend), labdir, image=image, backend=backend)
        clab = Containerlab(self.binary, topology)
        self.cli(clab.deploy())
        made = parse_inspect(self.cli(clab.inspect()), fabric.name)
        missing = sorted(set(fabric.nodes) - set(made))
        if missing:
            raise TwinError(f"containerlab deployed lab {fabric.name} without node(s) {', '.join(missing)}")
        on_created()
        containers = self.containers(fabric.name)
        return {n: self.pid(containers[n]) for n in fabric.nodes}

    def remove_lab(self, lab: str, labdir: Path) -> list[str]:
        """`containerlab destroy --cleanup` of the exported topology, then what is left by label."""
        topology = labdir / f"{lab}.clab.yml"
        if topology.is_file():
            self.cli(Containerlab(self.binary, topology).destroy())
        return self.remove(lab)


RUNTIMES: dict[str, type[DockerRuntime]] = {r.name: r for r in (DockerRuntime, ContainerlabRuntime)}


def runtime(name: str | None) -> DockerRuntime:
    """The runtime called `name` (docker, containerlab); docker when None."""
    cls = RUNTIMES.get(name or "docker")
    if cls is None:
        raise TwinError(f"unknown runtime {name!r}; runtimes: {', '.join(RUNTIMES)}")
    return cls()
