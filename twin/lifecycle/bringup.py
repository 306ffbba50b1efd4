"""Configuring a node, the stage of bring-up after its links exist (containerlab's
create -> create-links -> configure -> healthy): its kernel overlay, its daemons,
then its workloads' bindings and the node's own `exec` commands. The runtime (`twin.runtime`) makes containers and
links and calls `configure_node` for each node as soon as all its ports are up.
"""
from __future__ import annotations

import logging
import shlex
import time
from pathlib import Path

from twin import kinds, timeouts, wait
from twin.config import overlay
from twin.config.overlay import Backend, Shaping
from twin.errors import CommandError, TwinError
from twin.intent import Intent
from twin.interop.nvue import Plane
from twin.runtime import frr, kernel
from twin.runtime.exec import NodeExec
from twin.topology.model import Fabric

log = logging.getLogger(__name__)


def configure_node(fabric: Fabric, node: str, ex: NodeExec, pid: int, backend: Backend,
                   shaping: Shaping = "tc", plane: Plane | None = None) -> None:
    """Stage "configure" of one wired node: kernel overlay and services, its daemons, then its
    workloads' bindings. `plane`: what the node's own configuration (NVUE) makes it run instead
    of the topology's rendering: its kernel steps, bindings and VNIs."""
    t0 = time.monotonic()
    steps = plane.steps if plane else lo_steps(fabric, node, pid, backend) + overlay.plan(fabric, node, backend, shaping)
    if steps:
        kernel.apply(steps, pid, ex)
    t1 = time.monotonic()
    start = kinds.of(fabric.nodes[node]).start
    if start:
        ex.start(start, timeouts.FRR_START).check()   # its daemons: in the node's cgroup
    t2 = time.monotonic()
    later = plane.bindings if plane else overlay.bindings(fabric, node, backend)
    if later:
        wait_vnis(ex, plane.vnis if plane else Intent(fabric).nodes[node].vnis)
        kernel.apply(later, pid, ex)
    run_exec(fabric.nodes[node].exec, ex)
    log.debug("configured %s: kernel %.2fs, start %.2fs, bindings and exec %.2fs", node, t1 - t0, t2 - t1,
              time.monotonic() - t2)


def lo_steps(fabric: Fabric, node: str, pid: int, backend: Backend) -> list:
    """The loopback on lo where the frr.conf the node runs does not put it (a user's config)."""
    try:
        conf = Path(f"/proc/{pid}/root/etc/frr/frr.conf").read_text()
    except OSError:
        return []
    return overlay.loopback_steps(fabric, node, backend, conf)


def run_exec(commands: tuple[str, ...], ex: NodeExec) -> None:
    """The node's `exec` commands of the topology, in order, each as its words (no shell), as
    containerlab runs them once a node is up; the first that fails stops the bring-up, named."""
    for cmd in commands:
        res = ex.run(shlex.split(cmd), timeout=timeouts.EXEC_DEFAULT)
        if not res.ok:
            said = (res.stderr or res.stdout).strip().splitlines()
            raise TwinError(f"{ex.where}: exec `{cmd}` exited {res.rc}" + (f": {said[-1]}" if said else ""))


def wait_vnis(ex: NodeExec, expected: set[int]) -> None:
    """Until zebra on the VTEP knows every VNI it should have (L3VNIs and local L2VNIs)."""
    def missing() -> list[str]:
        try:
            (doc,) = ex.vtysh_json(frr.VNIS, timeout=timeouts.VTYSH_QUICK)
        except CommandError as e:
            return [f"{ex.where}: FRR not answering yet ({e.rc})"]
        known = set(frr.vni_states(doc))
        hint = "" if known else f" ({frr.NO_EVPN})"
        return [f"{ex.where}: VNI {v} not known to zebra{hint}" for v in sorted(expected - known)]

    wait.until(missing, timeouts.VNIS_UP, f"{ex.where}: VNIs in zebra", first=0.1, cap=0.5)
