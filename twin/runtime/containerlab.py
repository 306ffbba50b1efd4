"""containerlab as twin's runtime, through its CLI (`twin up --runtime containerlab`).

twin renders and exports the lab (`twin.interop.containerlab`: the topology
file, the files it binds and a start script per node that does what twin's own
bring-up does once a node's links exist), then runs `containerlab deploy`,
reads `containerlab inspect --format json`, and from there on works on the
containers containerlab made exactly as on its own: they carry twin's labels,
so the barrier, status, verify, traffic, apply and faults find them. `remove_lab`
runs `containerlab destroy --cleanup`, then removes anything labelled that is left and
what containerlab writes on the host for a lab (its /etc/hosts block, its ssh config):
with containerlab gone from the host (`runtime(name, removing=True)`), all but the destroy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, ClassVar

import docker

from twin.base import timeouts, wait
from twin.base.errors import CommandError, TwinError
from twin.config.naming import password_file
from twin.config.overlay import Backend
from twin.config.render import render_lab
from twin.interop.clab_cli import BINARIES, Containerlab, find_binary, parse_inspect
from twin.interop.containerlab import export_containerlab
from twin.kinds.base import NODE_COMMAND
from twin.runtime import etchosts
from twin.runtime.base import Configure, NodeHandle
from twin.runtime.docker import PARALLEL, DockerRuntime
from twin.topology.model import Fabric
from twin.topology.names import check_lab_name

Run = Callable[..., subprocess.CompletedProcess]


class ContainerlabRuntime(DockerRuntime):
    name: ClassVar[str] = "containerlab"

    ssh_config: ClassVar[Path] = Path("/etc/ssh/ssh_config.d")  # and its clab-<lab>.conf there

    def __init__(
        self,
        client: docker.DockerClient | None = None,
        timeout: float | None = timeouts.DOCKER_API,
        run: Run = subprocess.run,
        binary: str | None = None,
        removing: bool = False,
    ):
        """`removing`: only to take a lab down, which needs no containerlab binary (None when absent)."""
        if binary is None and removing:
            binary = next(filter(None, map(shutil.which, BINARIES)), None)
        self.binary = binary or (None if removing else find_binary())  # one line when containerlab is missing
        self._run = run
        super().__init__(client, timeout)

    def cli(self, cmd: list[str], timeout: float = timeouts.CONTAINER_START * 10) -> str:
        """containerlab's command `cmd`, within `timeout` (cut to the command's deadline)."""
        p = self._run(cmd, capture_output=True, text=True, timeout=wait.cut(timeout, " ".join(cmd[:2])))
        if p.returncode:
            raise CommandError("host", cmd, p.returncode, p.stdout[-4000:], p.stderr[-4000:])
        return p.stdout

    def bring_up(
        self,
        fabric: Fabric,
        image: str,
        labdir: Path,
        backend: Backend,
        configure: Configure,
        on_created: Callable[[], None] = lambda: None,
        say: Callable[[str], None] = lambda _: None,
        bound: wait.Bound | None = None,
    ) -> dict[str, int]:
        """Export into the lab directory, deploy, and return node -> pid of what containerlab made.
        `configure` is not called: each node's start script does it inside the node. `bound`: the
        command's deadline, which containerlab's deploy is cut to."""
        topology = export_containerlab(fabric, render_lab(fabric, backend), labdir, image=image, backend=backend)
        clab = Containerlab(self.binary or find_binary(), topology)  # (a runtime made for removing has none)
        with wait.bounded(bound):
            self.make_mgmt(fabric)  # made first (internal), containerlab attaches the nodes' eth0 to it
            try:
                with wait.doing("containerlab", "`containerlab deploy`"):
                    self.cli(clab.deploy())
            except subprocess.TimeoutExpired:
                if bound is None or not bound.passed(wait.SLACK):
                    raise
                raise bound.timeout("containers", "containerlab deploy") from None
            made = parse_inspect(self.cli(clab.inspect()), fabric.name)
            missing = sorted(set(fabric.nodes) - set(made))
            if missing:
                raise TwinError(f"containerlab deployed lab {fabric.name} without node(s) {', '.join(missing)}")
            on_created()
            containers = self.containers(fabric.name)
            self.passwords(fabric, labdir, containers)
            return {n: self.pid(containers[n]) for n in fabric.nodes}

    def passwords(self, fabric: Fabric, labdir: Path, containers: dict[str, NodeHandle]) -> None:
        """User cumulus's password on every managed node (the lab's: never written into the export)."""
        managed = [n.name for n in fabric.managed() if n.mgmt and n.image is None]
        text = _secret(password_file(labdir)) if managed else ""
        if not text:
            return
        with ThreadPoolExecutor(PARALLEL) as pool:
            for r in pool.map(
                lambda n: (
                    containers[n]
                    .exec(f"{fabric.name}/{n}")
                    .start([NODE_COMMAND, "password"], timeouts.EXEC_DEFAULT, {"TWIN_PASSWORD": text})
                ),
                managed,
            ):
                r.check()

    def remove_lab(self, lab: str, labdir: Path) -> list[str]:
        """`containerlab destroy --cleanup` of the exported topology, then what is left by label."""
        topology = labdir / f"{lab}.clab.yml"
        if topology.is_file() and self.binary:
            self.cli(Containerlab(self.binary, topology).destroy())
        removed = self.remove(lab)
        self.remove_mgmt(lab)
        self.remove_host_files(lab)
        return removed

    def remove_host_files(self, lab: str) -> None:
        """containerlab's /etc/hosts block of `lab` (`###### CLAB-<lab>-START ######` to its END line)
        and its /etc/ssh/ssh_config.d/clab-<lab>.conf, if a destroy did not remove them."""
        if check_lab_name(lab):  # a name the lab's own rule refuses names nothing twin made
            raise TwinError(check_lab_name(lab))
        (self.ssh_config / f"clab-{lab}.conf").unlink(missing_ok=True)
        etchosts.remove_block(f"###### CLAB-{lab}-START ######", f"###### CLAB-{lab}-END ######", self.hosts)


def _secret(f: Path) -> str:
    """A file of the lab's, for its owner only, never through a symlink ("" when it has none)."""
    try:
        with os.fdopen(os.open(f, os.O_RDONLY | os.O_NOFOLLOW)) as fh:
            return fh.read().strip()
    except FileNotFoundError:
        return ""
