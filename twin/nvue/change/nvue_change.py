"""A directory of NVUE startup.yaml files as a change (`twin plan|apply|rehearse LAB DIR`), and the
NVUE nodes' part of any other declarative change: through the same stages as every change
(checked first, files, kernel added, frr-reload, bindings, kernel removed; rolled back on a
failure), each NVUE node's kernel plane going from the plane its running startup.yaml makes to
the new one (`twin.nvue`), not from the topology's.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from twin.base.errors import Problem, TopologyError
from twin.change.base import Change, register
from twin.change.declarative import Declarative
from twin.change.diff import unified
from twin.change.plan import Plan
from twin.change.work import Work, current_files, frr_actions
from twin.config import userconf
from twin.config.userconf import NVUE, UserConfigs
from twin.lifecycle.context import LabContext
from twin.nvue import kernelplane
from twin.nvue.change.nvue_work import nvue_work
from twin.nvue.configs import build, running, runs_nvue
from twin.nvue.configs import read as read_configs
from twin.nvue.load import NvueFile


@register
class NvueChange(Declarative):
    key: ClassVar[str] = "nvue"
    from_files: ClassVar[bool] = True
    summary: ClassVar[str] = "a directory of NVUE configurations (<dir>/<node>/startup.yaml)"

    def __init__(self, source: str, files: dict[str, NvueFile]):
        self.source, self.files = source, files

    @classmethod
    def load(cls, ctx: LabContext, d: Path, configs: UserConfigs) -> "NvueChange":
        """The startup.yaml files of directory `d`, each checked on its node; TopologyError
        names every problem (nothing is touched)."""
        problems = userconf.check(configs, ctx.fabric)
        if problems:
            raise TopologyError(problems)
        other = [configs.path(n, k) for n, f in configs.files.items() for k in f if k != NVUE]
        if other:
            raise TopologyError(
                [
                    Problem(
                        p,
                        "",
                        "a change directory holds NVUE files or FRR files, not both; apply them one after the other",
                    )
                    for p in other
                ]
            )
        return cls.of(ctx, str(d), read_configs(configs))

    @classmethod
    def of(cls, ctx: LabContext, source: str, files: dict[str, NvueFile]) -> "NvueChange":
        """A change of these nodes' NVUE files (a directory, a file of `nv` commands, a revision of
        the live NVUE service), each checked on its node; TopologyError names every problem."""
        twin_rendered = [
            Problem(
                f.source,
                "",
                f"{n} runs twin's rendering: a node takes NVUE at "
                f"`twin up --configs` (down and up the lab), not on day 2",
            )
            for n, f in files.items()
            if n not in ctx.fabric.nodes or not runs_nvue(ctx.dir, n)
        ]
        if twin_rendered:
            raise TopologyError(twin_rendered)
        k = kernelplane.recorded(ctx.dir)
        build(files, ctx.fabric, ctx.backend, ctx.shaping, k.layout, k.bonds)  # every problem, on its node
        return cls(source, files)

    def describe(self) -> str:
        return f"apply NVUE {self.source}"

    def work(self, ctx: LabContext) -> Work:
        old_files = current_files(ctx, ctx.fabric, self.files)  # its nodes only: the others stay as they are
        w = Work(ctx.fabric, ctx.fabric, {n: dict(f) for n, f in old_files.items()}, old_files, [], [], {})
        w.plan = Plan(ctx.name)
        nvue_work(ctx, w, ctx.fabric, ctx.fabric, self.files)
        for node in sorted(self.files):
            w.plan.diffs.update({node: d} if (d := _diffs(w.old_files[node], w.files[node], node)) else {})
        frr_actions(w)
        return w

    def inverse(self, ctx: LabContext) -> Change:
        runs = running(ctx.dir, ctx.fabric, ctx.backend, ctx.shaping, nodes=self.files)
        return NvueChange(f"previous NVUE configurations of {ctx.name}", {n: runs[n].file for n in self.files})


def _diffs(old: dict[str, str], new: dict[str, str], node: str) -> dict[str, str]:
    return {f: d for f in sorted(set(old) | set(new)) if (d := unified(old.get(f, ""), new.get(f, ""), f"{node}/{f}"))}
