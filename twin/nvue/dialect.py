"""NVUE as a dialect of twin's (`twin.config.dialect`): everything NVUE brings to a lab, in one
record the core asks and never imports. Its rooms, in the order data takes:

- configs: a config directory's startup.yaml files checked on the topology (`check_files`), the
  frr.conf NVUE renders for FRR's check (`frr_view`), what a startup.yaml declares for `twin lint`
  (`declared`), each NVUE node's files and kernel plane at
  `twin up` (`render`: the user's files and the topology's blank nodes, on the kernel plane chosen
  once for the lab, `kernelplane`), how files given differ from the ones running (`differs`);
- what its nodes run: each node's plane from the startup.yaml it runs (`planes`);
- what its nodes get: `nv` and the directory of their NVUE socket, bound read-only (`service.binds`),
  and the lab's NVUE service (`nvued`: the REST API and `nv`'s other end), a column of `twin status`;
- its change kinds: `nv:NODE:FILE` and directories of startup.yaml files (`change`), its nodes'
  part of an edited topology (`nvue_work`); what `twin verify` adds (the places kept, not
  emulated; its groups protocols, acl, qos, lldp) and its `--prove` elements (`twin.nvue.prove`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from twin.config import userconf
from twin.config.backend import Backend
from twin.config.dialect import Dialect, NodePlane, Rendered, Rendering, Service
from twin.config.services import Shaping
from twin.config.userconf import UserConfigs
from twin.lifecycle import state
from twin.lifecycle.context import LabContext
from twin.nvue import declared, judge, kernelcheck, kernelplane, lldpcheck, nvued, qoscheck
from twin.nvue import prove as nvue_prove
from twin.nvue import service as nvue_service
from twin.nvue.change import nv_file
from twin.nvue.change.nvue_change import NvueChange
from twin.nvue.change.nvue_work import nvue_work
from twin.nvue.configs import STARTUP, blank, build, check_files, frr_view, not_emulated, running
from twin.nvue.configs import read as read_configs
from twin.nvue.load import dump
from twin.topology.model import Fabric


def render(r: Rendering) -> Rendered:
    """The NVUE nodes of a lab at `twin up`: the user's startup.yaml files and the topology's blank
    nodes (theirs to configure after `up`), built on the kernel plane chosen for the lab (recorded)."""
    nfs = read_configs(r.configs) | (blanks := blank(r.fabric, r.configs))
    if not nfs:
        return Rendered()
    k = kernelplane.choose(r.lab, r.backend, r.say)
    kernelplane.record(r.dir, k)
    nodes, notes = build(nfs, r.fabric, r.backend, r.shaping, k.layout, k.bonds, k.red)
    layouts = {x.plane.layout for node, x in nodes.items() if x.plane.fabric.tenants_on(node)}
    notes += (
        [
            f"NVUE's kernel plane on {', '.join(nodes)}: {', '.join(sorted(layouts))} layout (interfaces.sh says "
            "which; docs/nvue.md)"
        ]
        if layouts
        else []
    )
    return Rendered(
        {n: x.files for n, x in nodes.items()},
        {n: x.plane for n, x in nodes.items()},
        notes,
        {n: [STARTUP] for n in blanks},
        sorted(blanks),
    )


def differs(configs: UserConfigs | None, d: Path) -> list[str]:
    """The nodes whose startup.yaml given differs from the one they run."""
    return [
        f"{n}: your startup.yaml differs from the one it runs"
        for n, nf in read_configs(configs).items()
        if dump(nf.tree, nf.header) != state.read_files(d, n, [STARTUP]).get(STARTUP)
    ]


def planes(
    d: Path, fabric: Fabric, backend: Backend, shaping: Shaping, nodes: Iterable[str] | None = None
) -> dict[str, NodePlane]:
    return {n: x.plane for n, x in running(d, fabric, backend, shaping, nodes).items()}


def change(ctx: LabContext, spec: Any) -> NvueChange | None:
    """The NVUE change `spec` names: `nv:NODE:FILE`, or a directory holding startup.yaml files."""
    if isinstance(spec, str) and spec.startswith(nv_file.PREFIX):
        return nv_file.load(ctx, spec)
    if isinstance(spec, (str, Path)) and Path(spec).is_dir():
        configs = userconf.read_dir(spec)
        if any(STARTUP in f for f in configs.files.values()):
            return NvueChange.load(ctx, Path(spec), configs)
    return None


def verify(ctx: LabContext) -> dict[str, Any]:
    """What of its nodes' startup.yaml twin keeps but does not run, for `twin verify`'s report."""
    stored = not_emulated(ctx.dir, ctx.fabric.nodes)
    return {"not emulated": stored} if stored else {}


SERVICE = Service(
    "the NVUE service (REST API, nv)",
    lambda d: nvue_service.record(d) is not None,
    lambda d, lab: nvue_service.start(d, lab, nvued.command(lab)),
    nvue_service.stop,
    nvue_service.status_doc,
    nvue_service.problem,
    nvue_service.line,
)

DIALECT = Dialect(
    "nvue",
    STARTUP,
    check=check_files,
    frr_view=frr_view,
    render=render,
    differs=differs,
    planes=planes,
    declared=declared.read,
    binds=nvue_service.binds,
    prepare=nvue_service.nv_client,
    service=SERVICE,
    change=change,
    work=nvue_work,
    verify=verify,
    prove=nvue_prove.peer_elements,
    groups={
        judge.GROUP: judge.protocols,  # BFD, BGP timers, route policy judged (issue 44)
        kernelcheck.GROUP: kernelcheck.run,  # ACLs and RoCE QoS judged (issue 44)
        qoscheck.QOS: qoscheck.qos_run,  # every hop of every RoCE path in the same classes
        qoscheck.CONGESTION: qoscheck.congestion_run,  # RoCE QoS under each congestion point's burst
        lldpcheck.GROUP: lldpcheck.run,  # every cabled port's LLDP neighbour as the topology cables it (issue 44)
    },
)
