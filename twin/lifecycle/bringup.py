"""Configuring a node, the stage of bring-up after its links exist (containerlab's
create -> create-links -> configure -> healthy): its kernel overlay, its daemons,
then its workloads' bindings and the node's own `exec` commands. The runtime (`twin.runtime`) makes containers and
links and calls `configure_node` for each node as soon as all its ports are up.
"""

from __future__ import annotations

import logging
import shlex
import threading
import time
from dataclasses import dataclass
from typing import Callable

from twin import kinds
from twin.base import timeouts, wait
from twin.base.errors import CommandError, TwinError
from twin.config import Step, overlay
from twin.config.dialect import NodePlane
from twin.config.overlay import DEFAULT_SHAPING, Backend, Shaping
from twin.intent import Intent
from twin.runtime import (
    FRR_BOOT_FIFO,
    FRR_NO_EVPN,
    FRR_VNIS,
    NodeExec,
    apply_steps,
    frr_boot_watch,
    frr_start,
    kernel_hint,
    kernel_lacks,
    node_file_exists,
    solicit_routers,
    vni_states,
)
from twin.topology.model import Fabric

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExecFailure:
    """A node's `exec` command that failed, as containerlab reports one (and goes on)."""

    node: str
    command: str
    rc: int
    said: str  # the last line it printed
    hint: str = ""  # what the kernel lacked, when that is why (`twin.runtime.kernelhint`)

    def __str__(self) -> str:
        return (
            f"{self.node}: exec `{self.command}` exited {self.rc}"
            + (f": {self.said}" if self.said else "")
            + (f" ({self.hint})" if self.hint else "")
        )


class ExecLog:
    """The failing `exec` commands of a bring-up, from every node's thread; `strict`: the first ends it."""

    def __init__(self, lab: str, strict: bool = False):
        self.lab, self.strict = lab, strict
        self.failures: list[ExecFailure] = []
        self.rebooted: list[str] = []  # nodes whose FRR boot stalled and was booted again
        self._lock = threading.Lock()
        self._lacks: list[str] | None = None

    def lacking(self) -> list[str]:
        """The device types this kernel lacks, probed once for the whole bring-up."""
        with self._lock:
            if self._lacks is None:
                self._lacks = kernel_lacks(self.lab)
            return self._lacks

    def add(self, f: ExecFailure) -> None:
        with self._lock:
            self.failures.append(f)


def configure_node(
    fabric: Fabric,
    node: str,
    ex: NodeExec,
    pid: int,
    backend: Backend,
    shaping: Shaping = DEFAULT_SHAPING,
    plane: NodePlane | None = None,
    execs: ExecLog | None = None,
    starts_itself: bool = False,
    password: str = "",
    say: Callable[[str], None] = lambda _: None,
) -> None:
    """Stage "configure" of one wired node: kernel overlay and services (its management port
    first), its daemons (with its management plane: sshd and the NVUE API relay, user cumulus's
    `password`), then its workloads' bindings and its `exec` commands (a failing one goes to
    `execs` and the lab goes on, as containerlab's does; a strict log ends the bring-up).
    `plane`: what the node's own configuration (a dialect's: NVUE) makes it run instead of the topology's
    rendering: its kernel steps, bindings and VNIs. `starts_itself`: the node runs an image of its
    own that starts its daemons itself (an FRR image): twin's start of them is left out. Where the node
    boots FRR itself (twin's node image: `twin.runtime.frrboot`), its boot is watched; one that stalls is
    booted again once (`say` tells it, `execs.rebooted` counts it), a second stall ends the bring-up."""
    t0 = time.monotonic()
    steps = plane.steps if plane else lo_steps(fabric, node, backend) + overlay.plan(fabric, node, backend, shaping)
    if steps:
        with wait.doing(node, f"its {len(steps)} kernel steps applied"):
            apply_steps(steps, pid, ex)
    t1 = time.monotonic()
    start = None if starts_itself else kinds.of(fabric.nodes[node]).start
    if start:  # its daemons: in the node's cgroup
        with wait.doing(node, f"its daemons started (`{' '.join(start)}`)"):
            frr_start(ex, start, password, timeouts.FRR_START)  # by the node's own server, where it takes it
        if node_file_exists(pid, FRR_BOOT_FIFO, node):  # the node boots FRR itself (twin's node image)
            with wait.doing(node, "FRR's boot in order (zebra, mgmtd, its daemons, the config once, watchfrr)"):
                reboots = frr_boot_watch(node, pid, say)
            if reboots and execs is not None:
                execs.rebooted.append(node)
            # its neighbours' FRR advertises at once: its BGP unnumbered sessions need not wait up to 10 s for
            # the next advertisement (one came before this node's FRR was up to take it)
            with wait.doing(node, "a router solicitation on its fabric ports"):
                solicit_routers(pid, [p.name for p in fabric.nodes[node].fabric_ports])
    t2 = time.monotonic()
    later = plane.bindings if plane else overlay.bindings(fabric, node, backend)
    if later:
        with wait.doing(node, "its VNIs known to zebra"):
            wait_vnis(ex, plane.vnis if plane else Intent(fabric).nodes[node].vnis)
        with wait.doing(node, f"its {len(later)} bindings applied"):
            apply_steps(later, pid, ex)
    run_exec(fabric.nodes[node].exec, ex, execs or ExecLog(fabric.name), inside=fabric.confined is not None)
    log.debug(
        "configured %s: kernel %.2fs, start %.2fs, bindings and exec %.2fs",
        node,
        t1 - t0,
        t2 - t1,
        time.monotonic() - t2,
    )


def lo_steps(fabric: Fabric, node: str, backend: Backend) -> list[Step]:
    """The topology's loopback on lo from the kernel side before FRR starts, whatever the node's
    frr.conf says: an `interface lo` address reaches the kernel through mgmtd and zebra, and on a
    saturated host (256 FRR nodes on 2 cores) 3 leafs of 256 never got theirs, so their `network`
    had no route and their loopbacks were never announced (issue 35); a user's config that leaves
    it to ifupdown2 gets it here too. zebra takes an address that is already there as its own."""
    n = fabric.nodes[node]
    if not n.runs_bgp or overlay.vtep_head(fabric, node, backend):
        return []
    return [Step("addr", "lo", args={"cidr": f"{n.loopback}/32"})]


def run_exec(commands: tuple[str, ...], ex: NodeExec, execs: ExecLog, inside: bool = False) -> None:
    """The node's `exec` commands of the topology, in order, each as its words (no shell), as
    containerlab runs them once a node is up. A command that fails goes to `execs` and the next
    one runs, as containerlab goes on; with a strict log (--strict-exec) it stops the bring-up.
    `inside`: a confined lab's, run inside the node's container (`NodeExec.inside`)."""
    for cmd in commands:
        with wait.doing(ex.where.split("/")[-1], f"its exec `{cmd}`"):
            res = (ex.inside if inside else ex.run)(shlex.split(cmd), timeout=timeouts.EXEC_DEFAULT)
        if res.ok:
            continue
        said = (res.stderr or res.stdout).strip().splitlines()
        f = ExecFailure(
            ex.where.split("/")[-1],
            cmd,
            res.rc,
            said[-1] if said else "",
            kernel_hint(cmd, res.stdout + res.stderr, execs.lacking),
        )
        if execs.strict:
            raise TwinError(f"{execs.lab}/{f}")
        log.info("%s", f)
        execs.add(f)


def wait_vnis(ex: NodeExec, expected: set[int]) -> None:
    """Until zebra on the VTEP knows every VNI it should have (L3VNIs and local L2VNIs)."""

    def missing() -> list[str]:
        try:
            (doc,) = ex.vtysh_json(FRR_VNIS, timeout=timeouts.VTYSH_QUICK)
        except CommandError as e:
            return [f"{ex.where}: FRR not answering yet ({e.rc})"]
        known = set(vni_states(doc))
        hint = "" if known else f" ({FRR_NO_EVPN})"
        return [f"{ex.where}: VNI {v} not known to zebra{hint}" for v in sorted(expected - known)]

    wait.until(missing, timeouts.VNIS_UP, f"{ex.where}: VNIs in zebra", first=0.1, cap=0.5)
