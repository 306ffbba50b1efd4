"""`twin plan`: what a change would do to a lab, before it does anything.

The plan lists topology-level changes (from `FabricDiff`), per node a unified
diff of every file (FRR config, `interfaces.sh`, nftables rules), which nodes
FRR reloads or restarts, and the kernel commands apply runs per node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from twin.change.diff import FabricDiff, unified
from twin.config.backend import DEFAULT_BACKEND, Backend
from twin.config.render import render_lab
from twin.lint import Finding
from twin.topology.model import Fabric


@dataclass
class Plan:
    lab: str
    changes: list[str] = field(default_factory=list)  # topology-level, one line each
    diffs: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> file -> unified diff
    kernel: dict[str, list[str]] = field(default_factory=dict)  # node -> commands apply runs
    frr: dict[str, str] = field(default_factory=dict)  # node -> "reload" or "restart (...)"
    lint: list[Finding] = field(default_factory=list)  # `twin lint` of a directory of configs

    @property
    def empty(self) -> bool:
        return not self.changes and not self.diffs

    def text(self) -> str:
        warned = [f"warning: {f}" for f in self.lint]
        if self.empty:
            return "\n".join(warned + [f"lab {self.lab}: no change"])
        lines = warned + [f"lab {self.lab}: {len(self.changes)} change(s), {len(self.diffs)} node(s) with new config"]
        lines += [f"  {c}" for c in self.changes]
        for node, files in self.diffs.items():
            for fname, diff in files.items():
                lines.append(f"--- {node}/{fname}")
                lines += diff.splitlines()[2:]  # the ---/+++ header is replaced by the line above
        if self.frr:
            lines.append("FRR, per node:")
            lines += [f"  {node}: {how}" for node, how in sorted(self.frr.items())]
        for node, cmds in sorted(self.kernel.items()):
            lines.append(f"kernel on {node} (FRR reload between additions and removals):")
            lines += [f"  {c}" for c in cmds]
        return "\n".join(lines) + "\n"

    def as_dict(self) -> dict:
        return {
            "lab": self.lab,
            "changes": self.changes,
            "diffs": self.diffs,
            "frr": self.frr,
            "kernel": self.kernel,
            "lint": [f.as_dict() for f in self.lint],
        }


def file_diffs(before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """node -> file -> unified diff, for every file that differs."""
    out: dict[str, dict[str, str]] = {}
    for node in sorted(set(before) | set(after)):
        files = {}
        for fname in sorted(set(before.get(node, {})) | set(after.get(node, {}))):
            d = unified(before.get(node, {}).get(fname, ""), after.get(node, {}).get(fname, ""), f"{node}/{fname}")
            if d:
                files[fname] = d
        if files:
            out[node] = files
    return out


def make_plan(old: Fabric, new: Fabric, backend: Backend = DEFAULT_BACKEND) -> Plan:
    """The plan of going from intent `old` to `new` (pure: both rendered and compared)."""
    return Plan(old.name, FabricDiff(old, new).lines(), file_diffs(render_lab(old, backend), render_lab(new, backend)))
