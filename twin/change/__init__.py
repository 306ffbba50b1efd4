"""Day 2: changes of a running lab, one protocol and one registry (`base`).

Declarative changes (`declarative`: an edited topology, a directory of node
configs) are applied in stages with a journal and rollback (`apply`), planned
from one diff of two fabrics (`diff`, `plan`); faults (`link_faults`,
`node_faults`, and `faults` for Python) are changes too. `rehearse` runs any
registered change under RoCE traffic and reports its impact. A configuration dialect's
change kinds (NVUE's: a directory of startup.yaml files, a file of `nv` commands, a
revision) are its own: `load_change` asks each registered dialect (`twin.config.dialect`)
whether a spec is its change, and a declarative change asks each for its nodes' part.

    change = load_change(ctx, "my-change.yml")      # or a config dir, or "fault:link-down:dpu1:p0"
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from twin import topology
from twin.base.errors import Problem, TopologyError, TwinError
from twin.change import link_faults, node_faults  # noqa: F401  (they register their faults)
from twin.change.base import REGISTRY, Change, Result
from twin.change.declarative import ConfigsChange, Declarative, TopologyChange
from twin.change.diff import FabricDiff
from twin.change.fault_base import Fault, fault_types
from twin.change.report import Thresholds
from twin.change.summary import rehearsal_md
from twin.config import userconf
from twin.config.dialect import dialects
from twin.lifecycle.context import LabContext
from twin.lint import Report as LintReport
from twin.lint import gate
from twin.topology.model import Fabric

FAULT_PREFIX = "fault:"


def parse_fault(ctx: LabContext, spec: str) -> Fault:
    """`fault:KEY:TARGET[:ARG...]` -> the registered fault, its target and arguments checked."""
    parts = spec.split(":")[1:]
    key = parts[0] if parts else ""
    cls = fault_types().get(key)
    if cls is None:
        raise TwinError(
            f"{spec!r}: unknown fault {key!r}; faults: {', '.join(fault_types())} "
            f"(e.g. fault:link-down:leaf1:swp1, fault:link-loss:leaf1:swp1:100, fault:node-restart:spine1)"
        )
    rest = parts[1:]
    width = 2 if cls.on == "port" else 1
    if len(rest) < width or not all(rest[:width]):
        raise TwinError(f"{spec!r}: {cls.usage()}")
    return cls.parse(ctx, ":".join(rest[:width]), rest[width:], spec)


def load_change(
    ctx: LabContext,
    spec: "str | Path | Fabric",
    strict: bool = False,
    warn: Callable[[LintReport], None] = lambda _: None,
) -> Change:
    """A change from what a user gives: a Fabric, `fault:...`, a dialect's (NVUE's `nv:NODE:FILE`, a
    directory of startup.yaml files), a directory of node configs, or an edited topology file
    (TopologyError names every problem of a file). A directory of configs is linted against the lab's
    intent (its `lint`; `warn` gets it first): with `strict` its findings refuse it (LintFailed)."""
    if isinstance(spec, Fabric):
        return TopologyChange(spec)
    if isinstance(spec, str) and spec.startswith(FAULT_PREFIX):
        return parse_fault(ctx, spec)
    ours = next((c for d in dialects() if (c := d.change(ctx, spec)) is not None), None)  # a dialect's
    p = Path(spec)
    if ours is not None and not p.is_dir():
        return ours
    if p.is_dir():
        change: Declarative = ours or ConfigsChange.load(ctx, p)
        change.lint = gate(userconf.lint(userconf.read_dir(p), ctx.fabric), strict, warn)
        return change
    if not p.exists():
        raise TopologyError(
            [
                Problem(
                    str(p),
                    "",
                    "no such file or directory: a change is a topology file, "
                    "a directory of node configs (<dir>/<node>/frr.conf, or NVUE's "
                    "<dir>/<node>/startup.yaml), "
                    "nv:NODE:FILE (a file of nv commands) or fault:...",
                )
            ]
        )
    new = topology.load(p, name=ctx.name)
    return TopologyChange(topology.confine(new, ctx.fabric.confined) if ctx.fabric.confined else new)


# base, declarative, diff, plan and work are offered whole: a dialect's change kinds (NVUE's) are built on them
__all__ = [
    "load_change",
    "parse_fault",
    "Change",
    "Result",
    "REGISTRY",
    "TopologyChange",
    "ConfigsChange",
    "Fault",
    "fault_types",
    "apply",
    "FabricDiff",
    "rehearsal_md",
    "rehearse",
    "Thresholds",
    "base",
    "declarative",
    "diff",
    "plan",
    "work",
]
