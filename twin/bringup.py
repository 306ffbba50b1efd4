"""Bring-up stages of a lab, as containerlab names them:
create (containers) -> create-links (veths) -> configure (kernel overlay, FRR) -> healthy (barrier).

Everything is concurrent: a link is made as soon as both its nodes run, a node
is configured as soon as all its ports are up, and its daemons start right
after. Only the host announcement waits for every VTEP, since a host's ARP must
meet its gateway.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from docker.models.containers import Container

from twin import kinds, overlay
from twin.overlay import Backend
from twin.runtime import kernel
from twin.runtime.docker import DockerRuntime
from twin.runtime.exec import NodeExec
from twin.runtime.links import Wiring
from twin.topology.model import Fabric

PARALLEL = 8


def create_wire_configure(fabric: Fabric, runtime: DockerRuntime, image: str, labdir: Path,
                          backend: Backend, on_created: Callable[[], None] = lambda: None) -> dict[str, int]:
    """Containers, links and per-node configuration; returns node -> pid."""
    started: dict[str, Container] = {}

    def running(node: str, container: Container) -> None:
        started[node] = container
        wiring.node_running(node, runtime.pid(container))

    def configure(node: str) -> None:
        ex = NodeExec(started[node], f"{fabric.name}/{node}")
        steps = overlay.plan(fabric, node, backend)
        if steps:
            kernel.apply(steps, wiring.pids[node], ex)
        start = kinds.get(fabric.nodes[node].kind).start
        if start:
            ex.check(start)

    wiring = Wiring(fabric, on_wired=configure)
    try:
        runtime.start_nodes(fabric.name, list(fabric.nodes.values()), image, labdir, on_running=running)
        on_created()
    finally:
        wiring.wait()
    return wiring.pids


def announce_hosts(fabric: Fabric, execs: dict[str, NodeExec]) -> None:
    """Each attached host pings its gateway once, so its VTEP learns its MAC/IP (EVPN type-2)."""
    def one(host: str) -> None:
        tenant, a = fabric.attachment_of(host)
        gw = tenant.segments[a.segment].gateway
        execs[host].check(["ping", "-c1", "-W2", "-I", a.host_port, gw])

    hosts = [a.host for t in fabric.tenants.values() for a in t.attachments]
    with ThreadPoolExecutor(PARALLEL) as pool:
        list(pool.map(one, hosts))
