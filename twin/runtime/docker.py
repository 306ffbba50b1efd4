"""Containers through the Docker SDK. Everything carries the label twin.lab=<lab>."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker
from docker.models.containers import Container

from twin import kinds
from twin.errors import TwinError
from twin.topology.model import Node

LABEL_LAB = "twin.lab"
LABEL_NODE = "twin.node"
LABEL_KIND = "twin.kind"
PARALLEL = 16  # concurrent Docker API calls


def container_name(lab: str, node: str) -> str:
    return f"twin-{lab}-{node}"


class DockerRuntime:
    def __init__(self, client: docker.DockerClient | None = None):
        try:
            self.client = client or docker.from_env(max_pool_size=PARALLEL * 2, timeout=180)
            self.client.ping()
        except docker.errors.DockerException as e:
            raise TwinError(f"cannot reach the Docker engine ({e}); is dockerd running? "
                            "`make twin-up` installs and starts it") from None

    # --- create ------------------------------------------------------------
    def start_node(self, lab: str, node: Node, image: str, confdir: Path) -> Container:
        """Create and start one node's container: no network, init, minimal capabilities."""
        kind = kinds.get(node.kind)
        volumes = {}
        if kind.runs_bgp:
            volumes[str(confdir.resolve())] = {"bind": "/etc/frr", "mode": "rw"}
        c = self.client.containers.create(
            node.image or image,
            command=kind.command,
            name=container_name(lab, node.name),
            hostname=node.name,
            labels={LABEL_LAB: lab, LABEL_NODE: node.name, LABEL_KIND: node.kind},
            network_mode="none",
            init=True,
            cap_add=list(kind.capabilities),
            sysctls=dict(kind.sysctls),
            volumes=volumes,
            detach=True,
        )
        c.start()
        return c

    def start_nodes(self, lab: str, nodes: list[Node], image: str, labdir: Path) -> dict[str, Container]:
        with ThreadPoolExecutor(PARALLEL) as pool:
            futs = {n.name: pool.submit(self.start_node, lab, n, image, labdir / n.name) for n in nodes}
            return {name: f.result() for name, f in futs.items()}

    # --- inspect -----------------------------------------------------------
    def containers(self, lab: str) -> dict[str, Container]:
        found = self.client.containers.list(all=True, filters={"label": f"{LABEL_LAB}={lab}"})
        return {c.labels.get(LABEL_NODE, c.name): c for c in found}

    def labs(self) -> dict[str, list[Container]]:
        out: dict[str, list[Container]] = {}
        for c in self.client.containers.list(all=True, filters={"label": LABEL_LAB}):
            out.setdefault(c.labels[LABEL_LAB], []).append(c)
        return out

    @staticmethod
    def pid(c: Container) -> int:
        c.reload()
        pid = c.attrs["State"]["Pid"]
        if not pid:
            logs = c.logs(tail=20).decode(errors="replace")
            raise TwinError(f"container {c.name} is not running ({c.status}): {logs.strip()}")
        return pid

    # --- remove ------------------------------------------------------------
    def remove(self, lab: str) -> list[str]:
        """Remove every container labelled with this lab; their links die with their namespaces."""
        found = list(self.containers(lab).values())

        def rm(c: Container) -> str:
            try:
                c.remove(force=True)
            except docker.errors.NotFound:
                pass
            return c.name

        with ThreadPoolExecutor(PARALLEL) as pool:
            return list(pool.map(rm, found))
