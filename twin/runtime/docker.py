"""Containers through the Docker SDK. Everything carries the label twin.lab=<lab>.

Calls the engine may answer late on a loaded host go through `dockerapi.call` (tried again
until their deadline); removing a lab goes on until every container is gone or its deadline
passes, and then names what is left and the command that finishes it.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Callable, ClassVar, Collection

import docker
from docker.models.containers import Container
from docker.types import Mount

from twin import kinds
from twin.base import timeouts, wait
from twin.base.errors import RuntimeFailed, TwinError
from twin.config import dialect
from twin.config.naming import LABEL_KIND, LABEL_LAB, LABEL_NODE, container_name
from twin.config.overlay import Backend
from twin.config.userconf import UserConfigs, forwarding_sysctls
from twin.interop.startscript import wait_then_exec
from twin.kinds.base import FRR_DIR, NODE_DIR
from twin.runtime import dockerapi, dryrun, etchosts, hardening, images, mgmt, nodecontainer, ownimage
from twin.runtime.base import Configure, ImageFacts, NodeHandle
from twin.runtime.exec import NodeExec
from twin.runtime.failures import engine_errors
from twin.runtime.links import Wiring
from twin.runtime.rtdump import enough_files
from twin.topology.model import Fabric, Node

PARALLEL = 16  # concurrent Docker API calls


class DockerRuntime:
    """twin's own runtime: containers through the Docker SDK, links and configuration by twin.

    Implements `twin.runtime.base.Runtime` (as `twin.runtime.containerlab.ContainerlabRuntime`
    does); nodes of a running lab are `NodeHandle`s. Nothing above it knows which runtime runs."""

    name: ClassVar[str] = "docker"
    hosts: ClassVar[Path] = etchosts.HOSTS  # the lab's block of host names in it (containerlab's too)

    def __init__(self, client: docker.DockerClient | None = None, timeout: float | None = timeouts.DOCKER_API):
        """`timeout`: of each Docker API call (None: none, for a user's long quiet `twin exec`)."""
        try:
            self.client = client or dockerapi.client(timeout, pool=PARALLEL * 2)
            self.client.ping()
        except docker.errors.DockerException as e:
            raise TwinError(
                f"cannot reach the Docker engine ({e}); is dockerd running? `make twin-up` installs and starts it"
            ) from None

    # --- a whole lab ---------------------------------------------------------
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
        """Containers, links and per-node configuration, all at once: a link is made as soon as
        both its nodes run, a node is configured as soon as all its ports are up. Returns node -> pid;
        `say` hears what is moving while it waits. `bound`: the command's deadline, which every call
        of every stage is cut to; when it passes, StageTimeout names the stage and what it waited for."""
        enough_files()  # a socket per namespace it wires, beside Docker's connections
        started: dict[str, NodeHandle] = {}
        own = {n.name: n for n in fabric.nodes.values() if n.image and self.foreign(n)}
        execs: list[NodeExec] = []
        said = [time.monotonic()]

        def as_own_image(node: str, e: TwinError) -> TwinError:  # its image stopping, when it did
            if not self.foreign(fabric.nodes[node]):
                return e
            return ownimage.gone_instead(fabric.name, node, str(fabric.nodes[node].image), started[node], e)

        def running(node: str, container: NodeHandle) -> None:
            started[node] = container
            try:
                with wait.doing(node, "its container inspected (its pid)"):
                    pid = self.pid(container)
            except TwinError as e:
                raise as_own_image(node, e) from None
            wiring.node_running(node, pid)
            if time.monotonic() - said[0] >= timeouts.WIRING_SAY:
                say(wiring.progress())
                said[0] = time.monotonic()

        def wired(node: str) -> None:
            execs.append(started[node].exec(f"{fabric.name}/{node}", wiring.pids[node]))
            try:
                configure(node, execs[-1], wiring.pids[node])
            except TwinError as e:
                raise as_own_image(node, e) from None

        bridge = [""]
        wiring = Wiring(
            fabric,
            on_wired=wired,
            attach=lambda node, pid: mgmt.attach(fabric.name, node, pid, bridge[0], str(fabric.nodes[node].mgmt)),
            bound=bound,
        )
        stage = "mgmt network"
        try:
            with wait.bounded(bound):
                with wait.doing(f"lab {fabric.name}", "its management network made"):
                    bridge[0] = self.make_mgmt(fabric)
                stage = ""  # the wiring's
                # the nodes with the most links first: their links can be made while the rest start
                nodes = sorted(fabric.nodes.values(), key=lambda n: -len(n.ports))
                self.start_nodes(fabric.name, nodes, image, labdir, on_running=running, bound=bound)
                on_created()
                wiring.wait(say)
                ownimage.check_started(fabric.name, started, {n: str(x.image) for n, x in own.items()})
        except BaseException as e:
            wiring.abort()  # what is under way fails fast, and nothing runs on in the nodes (kept or not)
            for ex in list(execs):
                ex.stop()
            late = wiring.late(e, stage)  # whatever a stage met at the command's deadline: the deadline, named
            if late is not None:
                raise late from None
            if isinstance(e, TwinError):  # a node on its own image that stopped: the cause, not a neighbour's port
                raise ownimage.cause(fabric.name, e, started, {n: str(x.image) for n, x in own.items()}) from None
            raise
        return wiring.pids

    # --- the management network (twin.runtime.mgmt) --------------------------
    def claim_mgmt(self, fabric: Fabric, own: Collection[str] = ()) -> Fabric:
        """`fabric` with its management subnet and addresses chosen here and its network made (`mgmt.claim`)."""
        return mgmt.claim(self.client, fabric, own, self.make_mgmt)

    def make_mgmt(self, fabric: Fabric) -> str:
        """The lab's management network and its nodes' host names (/etc/hosts); its bridge ("" if none, or
        none chosen yet: `twin.topology.mgmt.resolve`)."""
        if fabric.mgmt is None or not fabric.mgmt.subnet:
            return ""
        bridge = mgmt.create(self.client, fabric)
        etchosts.write(
            fabric.name, {container_name(fabric.name, n.name): n.mgmt for n in fabric.managed() if n.mgmt}, self.hosts
        )
        return bridge

    def attach_mgmt(self, fabric: Fabric, node: str, pid: int) -> None:
        """A node's eth0 on the lab's management network again (a node started again: `node-start`)."""
        address = fabric.nodes[node].mgmt
        if fabric.mgmt is not None and address:
            mgmt.attach(fabric.name, node, pid, mgmt.bridge_name(fabric.name), address)

    def remove_mgmt(self, lab: str) -> list[str]:
        """The lab's management network (by its label) and its block of /etc/hosts, gone."""
        etchosts.remove(lab, self.hosts)
        return mgmt.remove(self.client, lab)

    # --- create ------------------------------------------------------------
    def node_image(
        self, suite: str = images.DEFAULT_SUITE, force: bool = False, say: Callable[[str], None] = lambda _: None
    ) -> str:
        """The node image's tag, base and node image built first when their recipe changed."""
        return images.ensure(self.client, suite=suite, force=force, say=say)

    def image_facts(self, names: set[str]) -> dict[str, ImageFacts]:
        """What the engine has of the images a lab names (`twin.runtime.ownimage`)."""
        return ownimage.facts(self.client, names)

    def foreign(self, node: Node) -> bool:
        """Whether `node` runs an image of its own not built from twin's: started as that image starts."""
        return node.image is not None and not self.image_facts({node.image})[node.image].twin

    def check_configs(self, image: str, lab: str, configs: UserConfigs) -> None:
        """FRR's own check of the user's configs in one throwaway container of `image`
        (`twin.runtime.dryrun`): ConfigError naming every refused line."""
        dryrun.check(self.client, image, lab, configs)

    def start_node(self, lab: str, node: Node, image: str, confdir: Path) -> NodeHandle:
        """Create and start one node's container: no networking, init, minimal capabilities, a CPU weight
        by its sessions; the user's binds, environment and (on a host) command, run once its ports are up."""
        kind = kinds.get(node.kind)
        mounts = []
        if kind.runs_frr:  # FRR runs what the lab rendered; /etc/twin holds the rest of it
            src = str(confdir.resolve())
            mounts = [Mount(FRR_DIR, src, type="bind"), Mount(NODE_DIR, src, type="bind", read_only=True)]
            mounts += [
                Mount(b.target, b.source, type="bind", read_only=b.read_only)  # a dialect's (NVUE's `nv`)
                for b in dialect.binds(confdir.parent, node.name)
            ]
        mounts += [Mount(b.target, b.source, type="bind", read_only=b.read_only) for b in node.binds]
        mounts += nodecontainer.hosts_mounts(confdir.parent, node.name, {m["Target"] for m in mounts})
        foreign = node.image is not None and self.foreign(node)
        entrypoint, command = (
            ownimage.start(self.client, node, node.image) if foreign and node.image else commands(node, kind.command)
        )
        sysctls = kind.sysctls_of(node.name)
        if kind.user_config:  # the forwarding its own config asks for (zebra cannot set it in a container)
            sysctls.update(forwarding_sysctls(_text(confdir / "frr.conf")))
        name = container_name(lab, node.name)
        tries: list[str] = []

        def create() -> Container:
            try:
                return self.client.containers.create(
                    node.image or image,
                    entrypoint=entrypoint,
                    command=command,
                    environment={**node.env, "CLAB_INTFS": str(len(node.ports))},
                    name=name,
                    hostname=node.name,
                    labels={LABEL_LAB: lab, LABEL_NODE: node.name, LABEL_KIND: node.kind},
                    network_mode="none",
                    network_disabled=True,  # not even an endpoint in Docker's "none": `nodecontainer`
                    init=True,
                    **hardening.container_options(kind.capabilities),
                    sysctls=sysctls,
                    mounts=mounts,
                    cpu_shares=nodecontainer.cpu_shares(node),
                    mem_limit=kind.memory_limit,
                    pids_limit=kind.pids_limit,
                    detach=True,
                    tty=foreign,
                )  # a terminal, as containerlab's
            except docker.errors.APIError as e:
                if e.status_code == 409 and tries:  # an earlier try timed out, but the engine made it
                    c = self.client.containers.get(name)
                    if c.labels.get(LABEL_LAB) == lab:
                        return c
                raise

        c = None
        try:
            with wait.doing(node.name, "its container created"):
                c = dockerapi.call(f"{lab}/{node.name}: creating its container", create, tries=tries)
            with wait.doing(node.name, "its container started"):
                dockerapi.call(f"{lab}/{node.name}: starting its container", c.start)
        except docker.errors.ImageNotFound:
            raise TwinError(
                f"{lab}/{node.name}: no image {node.image or image!r} here; `twin image build` "
                "builds twin's node image (no registry is reached)"
            ) from None
        except docker.errors.APIError as e:
            if foreign and c is not None:  # made, not started: the image's own fault
                why = str(e.explanation or e)
                raise ownimage.refused(lab, node.name, str(node.image), why, NodeHandle(c)) from None
            raise TwinError(f"{lab}/{node.name}: Docker refused its container: {e.explanation or e}") from None
        return NodeHandle(c)

    def start_nodes(
        self,
        lab: str,
        nodes: list[Node],
        image: str,
        labdir: Path,
        on_running: Callable[[str, NodeHandle], None] = lambda node, c: None,
        bound: wait.Bound | None = None,
    ) -> dict[str, NodeHandle]:
        """Start all nodes concurrently; `on_running(node, container)` is called as each one runs.
        On a failure or an interrupt, creations not yet begun are cancelled and the ones under
        way finish (every Docker call has a deadline, cut to `bound`'s), so every container this
        made exists (and is labelled) when it raises; TimeoutError when `bound`'s deadline passes."""
        dialect.prepare(labdir)  # what the dialects' binds name (NVUE's `nv`), written once
        pool = ThreadPoolExecutor(PARALLEL)

        def start(n: Node) -> NodeHandle:
            with wait.bounded(bound):
                return self.start_node(lab, n, image, labdir / n.name)

        try:
            futs = {pool.submit(start, n): n.name for n in nodes}
            started = {}
            for f in as_completed(futs, timeout=bound.deadline.left() if bound else None):
                c = started[futs[f]] = f.result()
                on_running(futs[f], c)
            return started
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    # --- inspect -----------------------------------------------------------
    def _list(self, *labels: str) -> list[Container]:
        """Containers carrying every one of `labels`. The SDK lists, then inspects each: one removed in
        between (a throwaway container of the lab ending, another twin taking a lab down) is gone, not
        an error."""
        return dockerapi.call(
            f"listing the containers labelled {' and '.join(labels)}",
            lambda: self.client.containers.list(all=True, filters={"label": list(labels)}, ignore_removed=True),
        )

    def containers(self, lab: str) -> dict[str, NodeHandle]:
        """The nodes of lab `lab` that have a container (running or not), by node name; not the lab's
        throwaway containers (FRR checking the user's configs)."""
        with engine_errors(f"lab {lab}: listing its containers"):
            return {c.labels[LABEL_NODE]: NodeHandle(c) for c in self._list(f"{LABEL_LAB}={lab}", LABEL_NODE)}

    def owned(self, lab: str) -> list[NodeHandle]:
        """Every container labelled with lab `lab`: its nodes and its throwaway containers."""
        with engine_errors(f"lab {lab}: listing its containers"):
            return [NodeHandle(c) for c in self._list(f"{LABEL_LAB}={lab}")]

    def labs(self) -> dict[str, list[NodeHandle]]:
        out: dict[str, list[NodeHandle]] = {}
        with engine_errors("listing twin's labs"):
            for c in self._list(LABEL_LAB):
                out.setdefault(c.labels[LABEL_LAB], []).append(NodeHandle(c))
        return out

    @staticmethod
    def pid(c: NodeHandle) -> int:
        return c.pid()

    # --- remove ------------------------------------------------------------
    def remove_lab(self, lab: str, labdir: Path) -> list[str]:
        """Take a whole lab down (its containers: their links die with them; then its management network)."""
        removed = self.remove(lab)
        self.remove_mgmt(lab)
        return removed

    def remove_node(self, lab: str, node: str) -> bool:
        """Remove one node's container (its links die with its namespace); False if it was not there."""
        c = self.containers(lab).get(node)
        if c is None:
            return False
        try:
            c.container.remove(force=True)
        except docker.errors.NotFound:
            return False
        except docker.errors.DockerException as e:
            raise RuntimeFailed(f"lab {lab}: cannot remove node {node}'s container: {dockerapi.explain(e)}") from None
        return True

    def remove(self, lab: str) -> list[str]:
        """Remove every container labelled with this lab; their links die with their namespaces.
        A removal Docker cannot confirm under load (a kill without its exit event, a timeout) is
        tried again until `timeouts.down`; then LeftBehind names what is left."""
        found = self.owned(lab)
        seen, start, rounds = dict.fromkeys(c.name for c in found), time.monotonic(), 0
        limit = timeouts.down(len(found))
        while found:
            rounds += 1
            with ThreadPoolExecutor(PARALLEL) as pool:
                failed = {c.name: e for c, e in zip(found, pool.map(_remove, found)) if e}
            found = self.owned(lab)
            seen |= dict.fromkeys(c.name for c in found)
            if found and time.monotonic() - start >= limit:
                raise LeftBehind(lab, sorted(c.name for c in found), failed, time.monotonic() - start)
            if found:  # the engine is behind: give it a moment before the next round
                time.sleep(min(5.0, 0.5 * rounds))
        return list(seen)


def _remove(c: NodeHandle | Container) -> str:
    """Remove one container (killing it): "" once it is gone, else Docker's answer."""
    try:
        (c.container if isinstance(c, NodeHandle) else c).remove(force=True)
    except docker.errors.NotFound:
        pass
    except Exception as e:  # noqa: BLE001  (a 5xx, a 409 "removal in progress", a timeout: tried again)
        if isinstance(e, docker.errors.APIError) and e.is_client_error() and e.status_code != 409:
            raise
        return dockerapi.explain(e) or type(e).__name__
    return ""


class LeftBehind(TwinError):
    """`twin down` could not remove every container of a lab within its deadline."""

    def __init__(self, lab: str, names: list[str], errors: dict[str, str], seconds: float):
        self.names = names
        why = next(iter(errors.values()), "")
        super().__init__(
            f"lab {lab!r}: {len(names)} container(s) still there after {seconds:.0f}s of tries"
            + (f" (Docker: {why})" if why else "")
            + f": {', '.join(names)}; "
            f"`docker rm -f {' '.join(names)}` removes them, or `twin down {lab}` again"
        )


def _text(f: Path) -> str:
    """A file of a node's lab directory (never through a symlink a node could have planted there)."""
    try:
        with os.fdopen(os.open(f, os.O_RDONLY | os.O_NOFOLLOW), encoding="utf-8") as fh:
            return fh.read(1 << 20)
    except (OSError, UnicodeDecodeError):
        return ""


def commands(node: Node, default: list[str] | None) -> tuple[list[str] | None, list[str] | None]:
    """(entrypoint, command) of a node's container: the kind's command, or the node's own `entrypoint`
    and `cmd` (containerlab's), run once its ports are up."""
    own = [*node.entrypoint, *node.cmd]
    if not own:
        return None, default
    return ["/bin/sh", "-c", wait_then_exec([p.name for p in node.ports]), "twin-wait"], own
