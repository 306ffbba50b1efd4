"""A node on its own image (the lab's `image`, where the engine has it): how it starts, and
whether it did.

A node's own image is started as the image starts itself (its ENTRYPOINT and CMD; a host's
`entrypoint`/`cmd` over them, as Docker and containerlab take them), with a terminal as
containerlab gives its nodes, once twin has the node's ports up (the same wait a host's own
command has): an FRR image starts its FRR, twin's wiring, barrier and checks are around it.
An image built from twin's node image (it carries `TWIN_LABEL`) starts twin's way instead.
Once the lab is wired, each such node must still run after its image's command started;
one that exited is named with its image, exit code and last log line (`check_started`), also
when it exits while twin still configures it (`gone_instead`): its command starts as soon as
its ports are up.
"""

from __future__ import annotations

from pathlib import Path

import docker

from twin.base import timeouts, wait
from twin.base.errors import TwinError
from twin.interop.startscript import wait_then_exec
from twin.runtime.base import ImageFacts, NodeHandle
from twin.runtime.failures import engine_errors
from twin.topology.model import Node

TWIN_LABEL = "twin.image"  # set by images/node/Dockerfile: inherited by any image built FROM twin's
WAITING = b"twin-wait"  # the name the wait for a node's ports runs as, until it execs the command


class StartFailed(TwinError):
    """A node's own image did not start (or stopped at once)."""


def facts(client: docker.DockerClient, names: set[str]) -> dict[str, ImageFacts]:
    """Each of `names` as the engine has it (no registry is asked)."""
    out = {}
    for name in sorted(names):
        with engine_errors(f"inspecting image {name}"):
            try:
                labels = (client.images.get(name).attrs.get("Config") or {}).get("Labels") or {}
            except docker.errors.ImageNotFound:
                out[name] = ImageFacts(False)
                continue
        out[name] = ImageFacts(True, TWIN_LABEL in labels)
    return out


def start(client: docker.DockerClient, node: Node, image: str) -> tuple[list[str], list[str]]:
    """(entrypoint, command) of a node on a foreign image: its own start, once its ports are up."""
    with engine_errors(f"inspecting image {image}"):
        config = client.images.get(image).attrs.get("Config") or {}
    entrypoint = list(node.entrypoint) or list(config.get("Entrypoint") or [])
    command = list(node.cmd) or ([] if node.entrypoint else list(config.get("Cmd") or []))
    if not entrypoint + command:
        raise StartFailed(f"{node.name}: image {image} has no ENTRYPOINT or CMD to start it with; give the node a cmd")
    return ["/bin/sh", "-c", wait_then_exec([p.name for p in node.ports]), WAITING.decode()], entrypoint + command


def refused(lab: str, node: str, image: str, why: str, handle: NodeHandle | None) -> StartFailed:
    """Docker's refusal to start a node's own image, in twin's words."""
    return StartFailed(f"{lab}/{node}: its image {image} did not start: {why.strip()}" + _last_line(handle))


def stopped(lab: str, node: str, image: str, handle: NodeHandle) -> StartFailed:
    """A node's own image that stopped once started, with its exit code and last log line."""
    try:
        code = handle.state().get("ExitCode")
    except TwinError:
        code = "?"
    return StartFailed(f"{lab}/{node}: its image {image} stopped once started (exit code {code})" + _last_line(handle))


def gone_instead(lab: str, node: str, image: str, handle: NodeHandle, error: TwinError) -> TwinError:
    """What to say when configuring a node on its own image failed (`error`): that its image stopped,
    when it did (its command runs as soon as its ports are up, while twin still configures it), else
    `error` as it was."""
    try:
        running = handle.state().get("Running")
    except TwinError:
        return error
    return error if running else stopped(lab, node, image, handle)


def cause(lab: str, error: TwinError, handles: dict[str, NodeHandle], images: dict[str, str]) -> TwinError:
    """What ended a bring-up that failed with `error`: the first node on a foreign image (`images`: node ->
    image, those of `handles` started) that is no longer running, else `error`. A container that stops takes
    its namespace and its ends of its links with it, so a neighbour's port can vanish ("port eth2 is missing
    after wiring") before twin looks at the node itself."""
    if isinstance(error, StartFailed):
        return error
    for node, image in sorted(images.items()):
        if node not in handles:
            continue
        try:
            running = handles[node].state().get("Running")
        except TwinError:
            continue
        if not running:
            return stopped(lab, node, image, handles[node])
    return error


def check_started(lab: str, handles: dict[str, NodeHandle], images: dict[str, str]) -> None:
    """Until every node on a foreign image (`images`: node -> image) has left twin's wait for its
    ports and runs its image's command; StartFailed for one that is not running."""

    def missing() -> list[str]:
        out = []
        for node, image in images.items():
            st = handles[node].state()
            if not st.get("Running"):
                raise stopped(lab, node, image, handles[node])
            if _waiting(int(st.get("Pid") or 0)):
                out.append(f"{node}: its image's command not started yet")
        return out

    if images:
        wait.until(missing, timeouts.CONTAINER_START, f"lab {lab}: the nodes' own images started", first=0.05, cap=0.5)


def _waiting(pid: int) -> bool:
    """Whether the command under the container's init (`pid`) is still twin's wait for its ports."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return any(WAITING in Path(f"/proc/{c}/cmdline").read_bytes() for c in children)
    except OSError:  # gone meanwhile: the next look reads its state
        return False


def _last_line(handle: NodeHandle | None) -> str:
    try:
        lines = [line for line in (handle.logs(tail=20) if handle else "").splitlines() if line.strip()]
    except TwinError:
        lines = []
    return f"; its last log line: {lines[-1].strip()}" if lines else "; it logged nothing"
