"""FRR's boot in a node, from the host: asked for, watched step by step, a stalled one named and booted again.

The node starts and boots FRR itself (`twin-nodectl` of the node image, its container's own server): asked
to `start` (`start`, below), it runs `twin-node start-frr` (the node's management plane, then the boot) in
the node's cgroup with the node's capabilities, as a `docker exec` would, without the engine's and runc's
~0.1 CPU-s per node (docs/performance.md); an image whose server does not take it (label
`twin.nodectl`) is started through the container runtime. The boot: its daemons
one at a time in FRR's order (zebra, mgmtd, the protocol daemons), each answering before the next
starts, then the configuration loaded once (`vtysh -b`), then watchfrr. It writes the step it is in
to /run/twin/frr-boot before each begins; twin reads that file from the host (no link followed) and
writes its commands (`boot`, `reboot`) into the node's FIFO /run/twin/nodectl (opened the same way),
so no process of twin's runs in the node for it.

A step that lasts longer than a bound derived from the host's load (`stall_bound`) has stalled:
`stalled` names the step and the daemon holding it (a daemon stopped or waiting in the kernel is
named with its state), `watch` boots FRR again once, and fails naming the node, the step and the
daemon if the second boot stalls too.
"""

from __future__ import annotations

import base64
import errno
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from twin.base import safeopen, timeouts, wait
from twin.base.errors import TwinError
from twin.kinds import NODE_COMMAND
from twin.runtime import nodefs
from twin.runtime.exec import NodeExec

STATUS = "/run/twin/frr-boot"
FIFO = "/run/twin/nodectl"
SERVES = "twin.nodectl"  # the node image's label: what its server takes beyond boot and reboot ("start")
START = [NODE_COMMAND, "start-frr"]  # what the server runs when asked to `start`
STATES = {"T": "stopped (SIGSTOP)", "t": "stopped by a tracer", "D": "waiting in the kernel (D)", "Z": "a zombie"}
UP = "up"


class BootStalled(TwinError):
    """A node's FRR boot that stalled again after it was booted once more."""


@dataclass(frozen=True)
class Boot:
    """One line of /run/twin/frr-boot: the boot's number (1, then 2 after a reboot), its step, the
    daemon of the step, when the step began (epoch seconds) and a note."""

    number: int
    step: str  # start, answer, config, up, failed
    daemon: str
    since: float
    note: str = ""

    @property
    def up(self) -> bool:
        return self.step == UP

    def what(self) -> str:
        """The step in words."""
        return {
            "start": f"starting {self.daemon}",
            "answer": f"waiting for {self.daemon} to answer on its vty",
            "config": "loading the configuration into the daemons (vtysh -b)",
            UP: "up",
            "failed": f"{self.daemon} {self.note or 'failed'}",
        }.get(self.step, self.step)


def parse(text: str) -> Boot | None:
    """The boot's line (`twin-nodectl`'s `said`), None when there is none (yet) or it is not one."""
    parts = text.split(maxsplit=4)
    try:
        return Boot(int(parts[0]), parts[1], parts[2], float(parts[3]), parts[4].strip() if len(parts) > 4 else "")
    except (IndexError, ValueError):
        return None


def read(pid: int, where: str) -> Boot | None:
    """Where the node's FRR boot is (None: not begun)."""
    text = nodefs.read_text(pid, STATUS, where, limit=4096)
    return None if text is None else parse(text)


def command(pid: int, word: str, where: str) -> None:
    """Hand the node's boot server `word` (boot, reboot) through its FIFO, no link followed."""
    if not _send(pid, word, where, word):
        raise TwinError(
            f"{where}: cannot ask for FRR's {word} through {FIFO} (its server is not running); "
            "is the node running twin's node image?"
        )


def _send(pid: int, line: str, where: str, word: str) -> bool:
    """`line` written into the node's FIFO, no link followed; False when no server reads it (yet)."""
    try:
        fd = safeopen.open_under(nodefs.root(pid), FIFO, safeopen.NO_LINKS, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno in (errno.ENXIO, errno.ENOENT):
            return False
        raise TwinError(f"{where}: cannot ask for FRR's {word} through {FIFO} ({e})") from None
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            raise TwinError(f"{where}: {FIFO} is not a FIFO: FRR's {word} not asked for")
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)
    return True


def serves_start(attrs: dict) -> bool:
    """Whether a node's own server runs `twin-node start-frr` when asked (pure, from its container's
    inspection): its image says so (label `SERVES`) and the container runs the image's own command
    (twin-node, which becomes the server), not one of the user's."""
    config = attrs.get("Config") or {}
    takes = (config.get("Labels") or {}).get(SERVES, "").split()
    return "start" in takes and not config.get("Entrypoint") and config.get("Cmd") == [NODE_COMMAND]


def start(ex: NodeExec, cmd: list[str], password: str, timeout: float) -> None:
    """A node's daemons started by `cmd` (its kind's `start`), in the node's cgroup and with its
    capabilities: asked of the node's own server when it takes `start` (`serves_start`), once it
    listens (within `timeout`; user cumulus's `password` on the FIFO's line, in base64, never on a
    command line), else through the container runtime (docker exec). A start the server fails is
    said in the boot's status (`failed start-frr`), which `watch` reports."""
    if cmd != START or not serves_start(ex.container.attrs):
        ex.start(cmd, timeout, {"TWIN_PASSWORD": password} if password else None).check()
        return
    pid, line = ex.pid, "start " + (base64.b64encode(password.encode()).decode() if password else "-")

    def unsent() -> list[str]:
        if not Path(f"/proc/{pid}").exists():
            raise TwinError(f"{ex.where}: its container stopped before FRR started (process {pid} is gone)")
        return [] if _send(pid, line, ex.where, "start") else [f"{ex.where}: its server reading {FIFO}"]

    wait.until(unsent, timeout, f"{ex.where}: FRR's start asked", first=0.0, cap=0.1)


def stall_bound(load1: float, cores: int, step: float = timeouts.FRR_STEP) -> float:
    """How long one step of a boot may last before it counts as stalled: `step` (`timeouts.FRR_STEP`,
    or TWIN_FRR_STEP) on a host with a runnable task per core or fewer, in proportion to the load
    beyond that (each step is ~0.1 s on an idle host; a busy one runs FRR's daemons that much later),
    at most `timeouts.FRR_STEP_MAX`."""
    return min(max(step, timeouts.FRR_STEP_MAX), step * max(1.0, load1 / max(1, cores)))


def frr_step() -> float:
    """A boot step's bound on an idle host: TWIN_FRR_STEP if set (seconds, 1 to 300), else `timeouts.FRR_STEP`."""
    given = os.environ.get("TWIN_FRR_STEP", "").strip()
    if not given:
        return timeouts.FRR_STEP
    try:
        n = float(given)
    except ValueError:
        n = 0.0
    if not 1 <= n <= 300:
        raise TwinError(f"TWIN_FRR_STEP={given!r}: expected the seconds one step of FRR's boot may take, 1 to 300")
    return n


def host_bound() -> float:
    try:
        load1 = float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        load1 = 0.0
    return stall_bound(load1, os.cpu_count() or 1, frr_step())


def node_processes(pid: int) -> dict[str, str]:
    """The processes of the node of `pid` (its pid namespace): name -> state letter, read from the host's /proc."""
    try:
        ns = os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return {}
    out: dict[str, str] = {}
    for d in os.scandir("/proc"):
        if not d.name.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{d.name}/ns/pid") != ns:
                continue
            text = Path(f"/proc/{d.name}/stat").read_text()
        except OSError:
            continue
        name, state = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :][:1]
        if out.get(name) not in STATES:  # one stuck process of a name is what counts
            out[name] = state
    return out


def holding(boot: Boot, procs: dict[str, str], daemons: list[str]) -> str:
    """What holds a stalled step (pure): a daemon of the node stopped, waiting in the kernel or gone,
    else the step's own daemon."""
    stuck = [f"{d} {STATES[procs[d]]}" for d in daemons if procs.get(d) in STATES]
    if stuck:
        return ", ".join(stuck)
    if boot.daemon in daemons and boot.daemon not in procs and boot.step == "answer":
        return f"{boot.daemon} not running"
    if boot.step == "config":
        return "a daemon not taking its configuration (" + ", ".join(d for d in daemons if d in procs) + " running)"
    return f"{boot.daemon} not answering"


def stalled(boot: Boot | None, now: float, bound: float) -> bool:
    """A boot (not up, not failed) whose step began more than `bound` ago (pure)."""
    return boot is not None and boot.step not in (UP, "failed") and now - boot.since > bound


FRR_NAMES = (
    "zebra",
    "mgmtd",
    "bgpd",
    "ospfd",
    "ospf6d",
    "isisd",
    "staticd",
    "bfdd",
    "pimd",
    "ldpd",
    "ripd",
    "ripngd",
    "babeld",
    "eigrpd",
    "nhrpd",
    "pbrd",
    "fabricd",
    "vrrpd",
    "pathd",
    "sharpd",
    "pim6d",
    "watchfrr",
)


def describe(node: str, boot: Boot, pid: int, bound: float) -> str:
    """A stalled boot in words: the node, the step, how long, what holds it."""
    procs = node_processes(pid)
    return (
        f"{node}: FRR's boot stalled {time.time() - boot.since:.0f}s (bound {bound:.0f}s) at "
        f"{boot.what()}: {holding(boot, procs, [d for d in FRR_NAMES if d in procs or d == boot.daemon])}"
    )


def watch(node: str, pid: int, say: Callable[[str], None] = lambda _: None, past: int = 0) -> int:
    """Until the node's FRR boot is up; a boot stalled at a step longer than the host's bound is booted
    again, once (said, with what held it); a second stall raises BootStalled naming it. Returns how many
    times FRR was booted again (0 or 1). `past`: the boots numbered up to it are over (a reboot asked for
    is awaited, not the boot it ends). The wait's own limit: `timeouts.FRR_START` and two bounds."""
    reboots, after = [0], [past]  # boots numbered `after` or lower are the ones a reboot ended

    def left() -> list[str]:
        boot = read(pid, node)
        if boot is None and not Path(f"/proc/{pid}").exists():  # removed meanwhile (an interrupted bring-up)
            raise TwinError(f"{node}: its container stopped while FRR booted (process {pid} is gone)")
        if boot is not None and boot.number <= after[0]:
            return [f"{node}: FRR booted again: boot {after[0] + 1} not begun yet"]
        if boot is not None and boot.step == "failed":
            raise BootStalled(f"{node}: FRR's boot failed: {boot.what()}")
        bound = host_bound()
        if boot is None or not stalled(boot, time.time(), bound):
            return [] if boot is not None and boot.up else [f"{node}: FRR " + (boot.what() if boot else "not begun")]
        said = describe(node, boot, pid, bound)
        if reboots[0]:
            raise BootStalled(
                f"{said}; it had stalled once already and was booted again: "
                f"`twin exec LAB {node} -- ps -eo pid,stat,comm` shows its daemons"
            )
        reboots[0], after[0] = 1, boot.number
        say(f"{said}: booting its FRR again")
        command(pid, "reboot", node)
        return [f"{node}: FRR booted again"]

    wait.until(left, timeouts.FRR_START + 2 * host_bound(), f"{node}: FRR booted", first=0.1, cap=0.5)
    return reboots[0]


def reboot(node: str, pid: int) -> None:
    """The node's FRR stopped and booted again in order (`twin-nodectl reboot`: every daemon, watchfrr and
    a config load under way stopped, then the boot of `boot`), and watched until it is up."""
    boot = read(pid, node)
    command(pid, "reboot", node)
    watch(node, pid, past=boot.number if boot else 0)
