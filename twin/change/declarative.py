"""The two declarative changes: an edited topology file, and a directory of node configs.

Both become a `Work` (`twin.change.work`), which `twin.change.apply` runs in stages.
"""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from twin.change import apply as stages
from twin.change.base import Change, Result, Say, register
from twin.change.diff import FabricDiff, unified
from twin.change.plan import Plan, file_diffs
from twin.change.work import Work, current_files, frr_actions
from twin.config import overlay, render
from twin.config.reconcile import node_delta
from twin.errors import Problem, TopologyError
from twin.lifecycle.context import LabContext
from twin.runtime.frr import FRR_CONF
from twin.topology.model import Fabric


class Declarative(Change):
    """A change of what the lab should be; applied by `twin.change.apply`."""

    source: str

    def describe(self) -> str:
        return f"apply {self.source}"

    def work(self, ctx: LabContext) -> Work:
        raise NotImplementedError

    def plan(self, ctx: LabContext) -> Plan:
        return self.work(ctx).plan

    def check(self, ctx: LabContext) -> list[str]:
        return stages.refusals(ctx, self.work(ctx))

    def apply(self, ctx: LabContext, say: Say = lambda _: None, **options) -> Result:
        return stages.apply(ctx, self, say=say, **options)


@register
class TopologyChange(Declarative):
    key: ClassVar[str] = "topology"
    summary: ClassVar[str] = "an edited topology file: the lab becomes what it says"

    def __init__(self, fabric: Fabric):
        self.fabric, self.source = fabric, fabric.source

    def work(self, ctx: LabContext) -> Work:
        old, new = ctx.fabric, self.fabric
        diff = FabricDiff(old, new)
        w = Work(old, new, render.render_lab(new, ctx.backend, ctx.shaping), current_files(ctx, old), [], [],
                 {n: d for n in new.nodes if n in old.nodes
                  and (d := node_delta(old, new, n, ctx.backend, ctx.shaping))},
                 diff.links_added, diff.links_removed, diff.hosts_added, diff.hosts_removed)
        w.plan = Plan(ctx.name, diff.lines(), file_diffs(render.render_lab(old, ctx.backend, ctx.shaping), w.files))
        w.plan.kernel = {n: d.commands() for n, d in w.deltas.items()}
        w.plan.kernel.update({n: [s.command() for s in overlay.plan(new, n, ctx.backend, ctx.shaping)]
                              for n in w.hosts_add})
        frr_actions(w)
        return w

    def inverse(self, ctx: LabContext) -> Change:
        return TopologyChange(ctx.fabric)

    def hosts_out(self, ctx: LabContext) -> frozenset[str]:
        return frozenset(FabricDiff(ctx.fabric, self.fabric).hosts_removed)


@register
class ConfigsChange(Declarative):
    key: ClassVar[str] = "configs"
    summary: ClassVar[str] = "a directory of node configs (<dir>/<node>/frr.conf or <dir>/<node>.conf)"

    def __init__(self, source: str, configs: dict[str, str]):
        self.source, self.configs = source, configs   # node -> frr.conf text

    @classmethod
    def load(cls, ctx: LabContext, d: Path) -> "ConfigsChange":
        """Every node config of directory `d`; TopologyError names every problem."""
        routers = set(ctx.intent.nodes)
        configs, problems = {}, []
        for entry in sorted(d.iterdir()):
            if entry.is_dir() and (entry / FRR_CONF).is_file():
                node, f = entry.name, entry / FRR_CONF
            elif entry.is_file() and entry.suffix == ".conf":
                node, f = entry.stem, entry
            else:
                continue
            if node not in routers:
                problems.append(Problem(str(f), "", f"no FRR node {node!r} in lab {ctx.name!r}; "
                                                    f"FRR nodes: {', '.join(sorted(routers))}"))
                continue
            try:
                configs[node] = f.read_text()
            except (OSError, UnicodeDecodeError) as e:
                problems.append(Problem(str(f), "", f"cannot read it: {e}"))
        if not configs and not problems:
            problems.append(Problem(str(d), "", "no node configs found: expected <dir>/<node>/frr.conf "
                                                "or <dir>/<node>.conf"))
        if problems:
            raise TopologyError(problems)
        return cls(str(d), configs)

    def work(self, ctx: LabContext) -> Work:
        old_files = current_files(ctx, ctx.fabric)
        files = {n: dict(f) for n, f in old_files.items()}
        for node, text in self.configs.items():
            files[node][FRR_CONF] = text
        w = Work(ctx.fabric, ctx.fabric, files, old_files, [], [], {})
        w.plan = Plan(ctx.name)
        for node in sorted(self.configs):
            d = unified(old_files[node].get(FRR_CONF, ""), self.configs[node], f"{node}/{FRR_CONF}")
            if d:
                w.plan.diffs[node] = {FRR_CONF: d}
        frr_actions(w)
        return w

    def inverse(self, ctx: LabContext) -> Change:
        now = current_files(ctx, ctx.fabric)
        return ConfigsChange(f"previous configs of {ctx.name}", {n: now[n][FRR_CONF] for n in self.configs})
