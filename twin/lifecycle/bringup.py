"""Bring-up stages of a lab, as containerlab names them:
create (containers) -> create-links (veths) -> configure (kernel overlay, FRR) -> healthy (barrier).

Everything is concurrent: a link is made as soon as both its nodes run, a node
is configured as soon as all its ports are up, and its daemons start right after.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable

from docker.models.containers import Container

from twin import kinds, timeouts, wait
from twin.config import overlay
from twin.config.overlay import Backend
from twin.errors import CommandError
from twin.intent import Intent
from twin.runtime import frr, kernel
from twin.runtime.docker import DockerRuntime
from twin.runtime.exec import NodeExec
from twin.runtime.links import Wiring
from twin.topology.model import Fabric

log = logging.getLogger(__name__)


def create_wire_configure(fabric: Fabric, runtime: DockerRuntime, image: str, labdir: Path,
                          backend: Backend, on_created: Callable[[], None] = lambda: None) -> dict[str, int]:
    """Containers, links and per-node configuration; returns node -> pid."""
    started: dict[str, Container] = {}

    def running(node: str, container: Container) -> None:
        started[node] = container
        wiring.node_running(node, runtime.pid(container))

    def configure(node: str) -> None:
        configure_node(fabric, node, NodeExec(started[node], f"{fabric.name}/{node}"), wiring.pids[node], backend)

    wiring = Wiring(fabric, on_wired=configure)
    try:
        runtime.start_nodes(fabric.name, list(fabric.nodes.values()), image, labdir, on_running=running)
        on_created()
        wiring.wait()
    except BaseException:
        wiring.abort()   # the caller removes the nodes: what is under way fails fast
        raise
    return wiring.pids


def configure_node(fabric: Fabric, node: str, ex: NodeExec, pid: int, backend: Backend) -> None:
    """Stage "configure" of one wired node: kernel overlay, its daemons, then its workloads' bindings."""
    t0 = time.monotonic()
    steps = overlay.plan(fabric, node, backend)
    if steps:
        kernel.apply(steps, pid, ex)
    t1 = time.monotonic()
    start = kinds.of(fabric.nodes[node]).start
    if start:
        ex.check(start)
    t2 = time.monotonic()
    later = overlay.bindings(fabric, node, backend)
    if later:
        wait_vnis(ex, Intent(fabric).nodes[node].vnis)
        kernel.apply(later, pid, ex)
    log.debug("configured %s: kernel %.2fs, start %.2fs, bindings %.2fs", node, t1 - t0, t2 - t1,
              time.monotonic() - t2)


def wait_vnis(ex: NodeExec, expected: set[int]) -> None:
    """Until zebra on the VTEP knows every VNI it should have (L3VNIs and local L2VNIs)."""
    def missing() -> list[str]:
        try:
            (doc,) = ex.vtysh_json(frr.VNIS, timeout=timeouts.VTYSH_QUICK)
        except CommandError as e:
            return [f"{ex.where}: FRR not answering yet ({e.rc})"]
        return [f"{ex.where}: VNI {v} not known to zebra" for v in sorted(expected - set(frr.vni_states(doc)))]

    wait.until(missing, timeouts.VNIS_UP, f"{ex.where}: VNIs in zebra", first=0.1, cap=0.5)
