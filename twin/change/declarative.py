"""The two declarative changes: an edited topology file, and a directory of node configs.

Both become a `Work` (`twin.change.work`), which `twin.change.apply` runs in stages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from twin.base.errors import Problem, TopologyError, TwinError
from twin.change import apply as stages
from twin.change.base import Change, Result, Say, register
from twin.change.diff import FabricDiff, unified
from twin.change.plan import Plan, file_diffs
from twin.change.work import Work, current_files, frr_actions, keep_user_files
from twin.config import overlay, render, userconf
from twin.config.dialect import dialects
from twin.config.reconcile import node_delta
from twin.config.userconf import DAEMONS
from twin.lifecycle import vrfbackend
from twin.lifecycle.context import LabContext
from twin.lint import Report as LintReport
from twin.runtime import FRR_CONF
from twin.topology import mgmt
from twin.topology.model import Fabric


class Declarative(Change):
    """A change of what the lab should be; applied by `twin.change.apply`."""

    source: str
    lint: LintReport | None = None  # a directory of configs: `twin lint` of it on the lab's intent (load_change)

    def describe(self) -> str:
        return f"apply {self.source}"

    def work(self, ctx: LabContext) -> Work:
        raise NotImplementedError

    def plan(self, ctx: LabContext) -> Plan:
        p = self.work(ctx).plan
        if p is None:
            raise TwinError(f"{self.describe()}: its work has no plan")
        p.lint = list(self.lint.findings) if self.lint is not None else []
        return p

    def check(self, ctx: LabContext) -> list[str]:
        return stages.refusals(ctx, self.work(ctx))

    def apply(self, ctx: LabContext, say: Say = lambda _: None, **options: Any) -> Result:
        return stages.apply(ctx, self, say=say, **options)


@register
class TopologyChange(Declarative):
    key: ClassVar[str] = "topology"
    from_files: ClassVar[bool] = True
    summary: ClassVar[str] = "an edited topology file: the lab becomes what it says"

    def __init__(self, fabric: Fabric):
        self.fabric, self.source = fabric, fabric.source

    def work(self, ctx: LabContext) -> Work:
        old, new = ctx.fabric, self.fabric
        if new.timers is None and old.timers is not None:  # the BGP timers `twin up` chose stay (a file has none)
            new = new.model_copy(update={"timers": old.timers})
        new = mgmt.carry(old, new)  # and its management network's subnet and addresses
        diff = FabricDiff(old, new)
        files = keep_user_files(ctx, render.render_lab(new, ctx.backend, ctx.shaping))
        w = Work(
            old,
            new,
            files,
            current_files(ctx, old),
            [],
            [],
            {n: d for n in new.nodes if n in old.nodes and (d := node_delta(old, new, n, ctx.backend, ctx.shaping))},
            diff.links_added,
            diff.links_removed,
            diff.hosts_added,
            diff.hosts_removed,
        )
        before = keep_user_files(ctx, render.render_lab(old, ctx.backend, ctx.shaping))
        w.plan = Plan(ctx.name, diff.lines(), file_diffs(before, w.files))
        w.plan.kernel = {n: d.commands() for n, d in w.deltas.items()}
        w.plan.kernel.update(
            {n: [s.command() for s in overlay.plan(new, n, ctx.backend, ctx.shaping)] for n in w.hosts_add}
        )
        for dialect in dialects():  # nodes running a dialect (NVUE): their own config's plane on the new intent
            dialect.work(ctx, w, old, new)
        frr_actions(w)
        return w

    def inverse(self, ctx: LabContext) -> Change:
        return TopologyChange(ctx.fabric)

    def hosts_out(self, ctx: LabContext) -> frozenset[str]:
        """Hosts removed, and hosts whose attachment goes or changes (their flows end by design)."""
        before = {a.host: a for t in ctx.fabric.tenants.values() for a in t.attachments}
        after = {a.host: a for t in self.fabric.tenants.values() for a in t.attachments}
        changed = {h for h, a in before.items() if after.get(h) != a}
        return frozenset(FabricDiff(ctx.fabric, self.fabric).hosts_removed) | changed


@register
class ConfigsChange(Declarative):
    key: ClassVar[str] = "configs"
    from_files: ClassVar[bool] = True
    summary: ClassVar[str] = "a directory of node configs (<dir>/<node>/frr.conf or <dir>/<node>.conf)"

    def __init__(
        self,
        source: str,
        configs: dict[str, str],
        paths: dict[str, str] | None = None,
        daemons: dict[str, str] | None = None,
    ):
        self.source, self.configs = source, configs  # node -> frr.conf text
        self.paths = paths or {}  # node -> the file it came from, for messages
        self.daemons = daemons or {}  # node -> its daemons file, where the directory gives one (FRR restarts)

    @classmethod
    def load(cls, ctx: LabContext, d: Path) -> "ConfigsChange":
        """Every node config of directory `d` (read as `twin up --configs` reads one);
        TopologyError names every problem."""
        configs = userconf.read_dir(d)
        problems = userconf.check(configs, ctx.fabric)
        if not configs.files and not problems:
            problems.append(
                Problem(str(d), "", "no node configs found: expected <dir>/<node>/frr.conf or <dir>/<node>.conf")
            )
        if problems:
            raise TopologyError(problems)
        nodes = [n for n, f in configs.files.items() if FRR_CONF in f]
        return cls(
            str(d),
            {n: configs.files[n][FRR_CONF] for n in nodes},
            {n: configs.path(n, FRR_CONF) for n in nodes},
            {n: configs.files[n][DAEMONS] for n in nodes if DAEMONS in configs.files[n]},
        )

    def work(self, ctx: LabContext) -> Work:
        old_files = current_files(ctx, ctx.fabric)
        files = {n: dict(f) for n, f in old_files.items()}
        for node, text in self.configs.items():
            files[node][FRR_CONF] = text
        for node, text in self.daemons.items():  # as `twin up --configs` adapts it to the lab's VRF backend
            files[node][DAEMONS] = userconf.node_daemons(text, ctx.fabric, node, ctx.backend)[0]
        w = Work(ctx.fabric, ctx.fabric, files, old_files, [], [], {})
        w.plan = Plan(ctx.name)
        for node in sorted(self.configs):
            for name in (FRR_CONF, DAEMONS):
                d = unified(old_files[node].get(name, ""), files[node].get(name, ""), f"{node}/{name}")
                if d:
                    w.plan.diffs.setdefault(node, {})[name] = d
        changed = {n: files[n] for n in w.plan.diffs}
        w.plan.changes += [f"warning: {x}" for x in vrfbackend.config_warnings(ctx.fabric, changed, self.paths)]
        frr_actions(w)
        return w

    def inverse(self, ctx: LabContext) -> Change:
        now = current_files(ctx, ctx.fabric)
        return ConfigsChange(
            f"previous configs of {ctx.name}",
            {n: now[n][FRR_CONF] for n in self.configs},
            daemons={n: now[n][DAEMONS] for n in self.daemons if DAEMONS in now[n]},
        )
