"""What twin asks of this host beside one lab: the labs there are (`labs`), the node images
(`build_images`, `node_tag`), what a lab would take of the host (`figures`), FRR's word on a
lab's own configs (`check_configs`) and a command run in a node, with a hint when the kernel
lacks what it needs (`exec_in`). The CLI goes through this and `Lab`, never below them."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Callable, Sequence

from twin.base import timeouts
from twin.base.errors import ConfigError, Problem, TwinError
from twin.config import dialect
from twin.intent import Intent
from twin.lab import Lab
from twin.lifecycle import admission, hostlimits, state
from twin.runtime import DEFAULT_SUITE as IMAGE_SUITE
from twin.runtime import DockerRuntime, Result, kernel_hint, kernel_lacks
from twin.runtime import describe_failure as describe
from twin.runtime import node_tag as image_tag
from twin.topology import Fabric

DEFAULT_SUITE = IMAGE_SUITE  # the node image's Debian release by default
Say = Callable[[str], None]


@dataclass(frozen=True)
class LabRow:
    """One lab on this host, as `twin list` shows it."""

    name: str
    status: str  # the lab's recorded status, or "orphaned" (containers without a lab directory)
    containers: int
    running: int
    topology: str


def labs() -> list[LabRow]:
    """Every lab on this host: from Docker labels and lab directories."""
    running = DockerRuntime().labs()
    rows = []
    for name in sorted(set(running) | set(state.known_labs())):
        try:
            st, _ = state.load(state.labdir(name))
        except TwinError:
            st = None
        found = running.get(name, [])
        rows.append(
            LabRow(
                name,
                st.status if st else "orphaned",
                len(found),
                sum(c.status == "running" for c in found),
                st.topology if st else "",
            )
        )
    return rows


def build_images(suite: str = DEFAULT_SUITE, force: bool = False, say: Say = lambda _: None) -> str:
    """The base and node images built when their recipe changed; the node image's tag."""
    return DockerRuntime().node_image(suite=suite, force=force, say=say)


def node_tag() -> str:
    """The tag of the node image of this recipe (built or not)."""
    return image_tag()


def check_configs(lab: Lab) -> list[Problem]:
    """FRR's word (`vtysh --dryrun` in a node image) on the user's configs of a loaded lab."""
    if lab.configs is None or lab.loaded is None:  # no configs of the user's: nothing for FRR to judge
        return []
    runtime = DockerRuntime()
    try:
        runtime.check_configs(runtime.node_image(), lab.name, dialect.frr_view(lab.configs, lab.loaded))
    except ConfigError as e:
        return list(e.problems)
    return []


def exec_in(lab: str, node: str, cmd: Sequence[str], inside: bool = False) -> tuple[Result, str]:
    """`cmd` run in `node` of `lab`, and a hint when it failed for what the kernel lacks ("": none).
    `inside`: a user's command of a shared server, run inside the node's container (`NodeExec.inside`)."""
    # a long quiet command must not be cut by the Docker client's read timeout
    ex = Lab(lab, runtime=DockerRuntime(timeout=None)).node(node)
    res = (ex.inside if inside else ex.run)(list(cmd), timeout=timeouts.EXEC_INTERACTIVE)
    hint = kernel_hint(shlex.join(cmd), res.stdout + res.stderr, lambda: kernel_lacks(lab)) if res.rc else ""
    return res, hint


def figures(fabric: Fabric, timeout: float | None = None) -> dict:
    """What the lab would take of host-wide limits and CPU, where this host is short (as `up`
    judges), and the BGP timers it would get."""
    need = hostlimits.demand(fabric)
    short = hostlimits.check(fabric, hostlimits.host_usage(), hostlimits.host_settings())
    est = admission.estimate(fabric, admission.CpuWatch().host(), timeout, whole=timeout is not None)
    text = f"{est.figures()} of its {est.deadline:.0f} s deadline; " if est.fits else est.refusal() + "; "
    return {
        "needs": {
            "IPv4 neighbours": need.arp_gc,
            "IPv6 neighbours": need.nd_gc,
            "inotify instances": need.inotify,
            "tasks": need.tasks,
            "MiB": need.mem_mib,
        },
        "short": [str(s) for s in short] + ([est.refusal()] if not est.fits else []),
        "fix": hostlimits.fix_command(short),
        "cpu": est.to_dict(),
        "cpu_text": text + est.timers_text(),
    }


def describe_failure(e: BaseException) -> str | None:
    """A Docker, netlink or OS failure that escaped the runtime's seam, in one line (None: not one)."""
    return describe(e)


def running_labs(timeout: float | None = timeouts.DOCKER_API) -> list[str]:
    """Labs whose containers are on this host (their `twin.lab` label), Docker asked within `timeout`."""
    return list(DockerRuntime(timeout=timeout).labs())


def up_summary(lab: Lab, timings: dict[str, float]) -> dict:
    """What `twin up` says of the lab it brought up, as data (its line is made from it, on this host
    or through a server)."""
    fabric = lab.fabric or lab.to_bring_up()  # as recorded; else as it was brought up
    files = state.running_files(lab.dir, fabric)  # what its nodes run, from its directory
    mine = Intent(fabric, files).generic  # the lab's intent
    return {
        "lab": lab.name,
        "nodes": len(fabric.nodes),
        "sessions": len(fabric.sessions()),
        "adjacencies": sum(len(g.adjacencies) for g in mine.values()),
        "generic_routers": len(mine),
        "timings": timings,
        "dir": str(lab.dir),
        "configs_nodes": len(lab.configs.files) if lab.configs else 0,
        "timers": str(fabric.timers) if fabric.timers else None,
        "notes": list(lab.notes),
    }
