"""Configuring a node, the stage of bring-up after its links exist (containerlab's
create -> create-links -> configure -> healthy): its kernel overlay, its daemons,
then its workloads' bindings. The runtime (`twin.runtime`) makes containers and
links and calls `configure_node` for each node as soon as all its ports are up.
"""
from __future__ import annotations

import logging
import time

from twin import kinds, timeouts, wait
from twin.config import overlay
from twin.config.overlay import Backend, Shaping
from twin.errors import CommandError
from twin.intent import Intent
from twin.runtime import frr, kernel
from twin.runtime.exec import NodeExec
from twin.topology.model import Fabric

log = logging.getLogger(__name__)


def configure_node(fabric: Fabric, node: str, ex: NodeExec, pid: int, backend: Backend,
                   shaping: Shaping = "tc") -> None:
    """Stage "configure" of one wired node: kernel overlay and services, its daemons, then its
    workloads' bindings."""
    t0 = time.monotonic()
    steps = overlay.plan(fabric, node, backend, shaping)
    if steps:
        kernel.apply(steps, pid, ex)
    t1 = time.monotonic()
    start = kinds.of(fabric.nodes[node]).start
    if start:
        ex.start(start).check()   # its daemons: in the node's cgroup
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
