"""The runtime interface: what every runtime offers and the node handle it hands out.

`Runtime` is the protocol both runtimes implement (`twin.runtime.docker.DockerRuntime`,
`twin.runtime.containerlab.ContainerlabRuntime`): `bring_up` makes a lab's nodes and
links and configures them; `containers`, `pid`, `start_nodes` and `remove_node` act on
nodes of a running lab; `remove_lab` takes a whole lab down; `claim_mgmt`, `attach_mgmt`
and `remove_mgmt` serve its management network. A node of a running lab is a
`NodeHandle`: its name, labels and state, its pid, its exec seam, stop/kill/start. Nothing
above `twin.runtime` sees the engine's objects or its exceptions (`twin.runtime.failures`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Collection, Protocol

from twin.base.errors import TwinError
from twin.base.wait import Bound
from twin.config.naming import LABEL_LAB, LABEL_NODE
from twin.config.overlay import Backend
from twin.config.userconf import UserConfigs
from twin.runtime import dockerapi, nsguard
from twin.runtime.exec import NodeExec
from twin.runtime.failures import engine_errors
from twin.topology.model import Fabric, Node

Configure = Callable[[str, NodeExec, int], None]  # (node, its exec seam, its pid): once its ports are up


class NodeHandle:
    """One node of a running lab as its runtime made it (a container). `status` is as the
    listing saw it; `refresh` (or `running`) reads it again. Errors are twin's: NodeGone when
    the container is not there any more, RuntimeFailed for any other refusal of the engine."""

    def __init__(self, container: Any):
        self.container = container  # the engine's object: for `twin.runtime` only

    def __repr__(self) -> str:
        return f"NodeHandle({self.name})"

    @property
    def name(self) -> str:
        """The container's name (`twin.config.naming.container_name`)."""
        return self.container.name

    @property
    def id(self) -> str:
        return self.container.id

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.container.labels)

    @property
    def node(self) -> str:
        return self.container.labels.get(LABEL_NODE, self.container.name)

    @property
    def lab(self) -> str:
        return self.container.labels.get(LABEL_LAB, "")

    @property
    def status(self) -> str:
        return self.container.status

    @property
    def attrs(self) -> dict:
        """The engine's last inspection (State: Pid, Running, OOMKilled, ExitCode...)."""
        return self.container.attrs

    def reload(self) -> None:
        """Inspect the container again (once: a caller that must not wait, like a timeout's diagnosis)."""
        with engine_errors(f"container {self.name}"):
            self.container.reload()

    def refresh(self) -> "NodeHandle":
        self.reload()
        return self

    def running(self) -> bool:
        return self.refresh().status == "running"

    def state(self) -> dict:
        """The container's state, read now."""
        return dict(self.refresh().attrs["State"])

    def pid(self) -> int:
        """Its init process (read now: under load, tried again until its deadline); a TwinError with
        its last log lines if it is not running."""
        with engine_errors(f"container {self.name}"):
            dockerapi.call(f"inspecting container {self.name}", self.container.reload)
        pid = self.container.attrs["State"]["Pid"]
        if not pid:
            raise TwinError(f"container {self.name} is not running ({self.status}): {self.logs(tail=20).strip()}")
        return nsguard.known(pid, f"{self.lab}/{self.node}" if self.lab else self.name)

    def logs(self, tail: int | str = "all") -> str:
        """What the container's command printed (the last `tail` lines)."""
        with engine_errors(f"container {self.name}"):
            return self.container.logs(tail=tail).decode(errors="replace")

    def exec(self, where: str, pid: int = 0) -> NodeExec:
        """The node's exec seam; `where` names it in errors ("lab/node"). `pid`: its init process where
        the caller knows it (no inspection of the container for it; checked to be the container's still)."""
        return NodeExec(self.container, where, pid)

    def stop(self, timeout: float) -> None:
        with engine_errors(f"cannot stop {self.name}"):
            self.container.stop(timeout=int(timeout))

    def kill(self, timeout: float) -> None:
        """SIGKILL, then wait until it has exited."""
        with engine_errors(f"cannot kill {self.name}"):
            self.container.kill()
            self.container.wait(timeout=timeout)

    def start(self) -> None:
        with engine_errors(f"cannot start {self.name}"):
            self.container.start()


@dataclass(frozen=True)
class ImageFacts:
    """What the engine knows of an image a lab names (`twin.runtime.ownimage.facts`)."""

    present: bool
    twin: bool = False  # built from twin's node image: started twin's way


class Runtime(Protocol):
    """What a runtime offers; `twin.runtime.registry.make_runtime(name)` makes one."""

    name: ClassVar[str]

    def node_image(self, suite: str = ..., force: bool = False, say: Callable[[str], None] = ...) -> str: ...

    def image_facts(self, names: set[str]) -> dict[str, ImageFacts]: ...

    def check_configs(self, image: str, lab: str, configs: UserConfigs) -> None: ...

    def bring_up(
        self,
        fabric: Fabric,
        image: str,
        labdir: Path,
        backend: Backend,
        configure: Configure,
        on_created: Callable[[], None] = ...,
        say: Callable[[str], None] = ...,
        bound: Bound | None = ...,
    ) -> dict[str, int]: ...

    def start_nodes(
        self, lab: str, nodes: list[Node], image: str, labdir: Path, on_running: Callable[[str, NodeHandle], None] = ...
    ) -> dict[str, NodeHandle]: ...

    def containers(self, lab: str) -> dict[str, NodeHandle]: ...

    def labs(self) -> dict[str, list[NodeHandle]]: ...

    def pid(self, node: NodeHandle) -> int: ...

    def remove_node(self, lab: str, node: str) -> bool: ...

    def remove_lab(self, lab: str, labdir: Path) -> list[str]: ...

    # the lab's management network (`twin.runtime.mgmt`)
    def claim_mgmt(self, fabric: Fabric, own: Collection[str] = ...) -> Fabric: ...

    def attach_mgmt(self, fabric: Fabric, node: str, pid: int) -> None: ...

    def remove_mgmt(self, lab: str) -> list[str]: ...
