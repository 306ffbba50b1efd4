"""The work of a declarative change: everything apply will do, worked out before
anything is touched (new files per node, FRR reloads and restarts, kernel steps
per node, links and host endpoints that come and go), and its plan."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Iterable

from twin.base import timeouts
from twin.change.plan import Plan
from twin.config import render
from twin.config.reconcile import NodeDelta
from twin.config.userconf import DAEMONS
from twin.lifecycle import state
from twin.lifecycle.context import LabContext
from twin.runtime import FRR_CONF, OSPFD_INTERFACES
from twin.topology.model import Fabric, Link

CANDIDATE = "frr.conf.candidate"  # a new config, checked in the node before anything changes
PARALLEL = 8


@dataclass
class Work:
    """Everything apply will do, worked out before anything is touched."""

    old: Fabric
    new: Fabric
    files: dict[str, dict[str, str]]  # node -> file -> new text (all nodes)
    old_files: dict[str, dict[str, str]]
    reload: list[str]  # nodes whose frr.conf (or ospfd's interface settings) changes
    restart: list[str]  # nodes whose FRR daemons change (restart, not reload)
    deltas: dict[str, NodeDelta]
    links_add: list[Link] = field(default_factory=list)
    links_del: list[Link] = field(default_factory=list)
    hosts_add: list[str] = field(default_factory=list)  # host endpoints: containers made / removed
    hosts_del: list[str] = field(default_factory=list)
    plan: Plan | None = None
    # nodes whose kernel plane is their own configuration's (NVUE), not the intent's: the steps
    # that undo the change there, and the VNIs zebra will know there afterwards
    undo: dict[str, NodeDelta] = field(default_factory=dict)
    vnis: dict[str, set[int]] = field(default_factory=dict)
    old_vnis: dict[str, set[int]] = field(default_factory=dict)

    @property
    def summary(self) -> list[str]:
        if self.plan is None:
            return []
        return list(self.plan.changes) or [f"new FRR config on {n}" for n in self.plan.diffs]

    @property
    def empty(self) -> bool:
        return (self.plan is None or self.plan.empty) and not self.reload and not self.restart


def current_files(ctx: LabContext, fabric: Fabric, nodes: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
    """What each node (of `nodes`) runs now: its files in the lab directory (a user's config
    included), rendered from the recorded intent where a file is missing."""
    out = {}
    for node, files in render.render_lab(fabric, ctx.backend, ctx.shaping, nodes).items():
        out[node] = files | state.read_files(ctx.dir, node, list(files))
    return out


def keep_user_files(ctx: LabContext, files: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """A new rendering with the files a lab booted from the user (`twin up --configs`) kept as they
    are (with what `twin apply LAB DIR` made of them since): twin does not write over a config it
    did not write. A node twin rendered goes back to twin's rendering, even after a config directory
    was applied to it: the topology is the intent then."""
    st, _ = state.load(ctx.dir)
    for node, names in (st.user_files if st else {}).items():
        if node in files:
            files[node].update(state.read_files(ctx.dir, node, names))
    return files


def frr_actions(work: Work) -> None:
    """Which nodes reload FRR (their frr.conf changed, or ospfd's interface settings: `OSPFD_INTERFACES`), and
    which restart it (their daemons file changed, whether or not their frr.conf did)."""

    def differs(n: str, name: str) -> bool:
        return work.files.get(n, {}).get(name, "") != work.old_files.get(n, {}).get(name, "")

    changed = sorted(n for n in work.new.nodes if any(differs(n, f) for f in (FRR_CONF, OSPFD_INTERFACES, DAEMONS)))
    work.restart = [n for n in changed if differs(n, DAEMONS)]
    work.reload = [n for n in changed if n not in work.restart]
    if work.plan is not None:
        work.plan.frr = {**{n: "reload" for n in work.reload}, **{n: "restart (daemons changed)" for n in work.restart}}


def dry_run(ctx: LabContext, work: Work) -> list[str]:
    """Every node whose new frr.conf FRR refuses (`vtysh --dryrun` in the node itself)."""

    def one(node: str) -> str | None:
        candidate = state.node_dir(ctx.dir, node) / CANDIDATE
        state.write_text(candidate, work.files[node][FRR_CONF])
        try:
            res = ctx.exec(node).run(["vtysh", "--dryrun", "-f", f"/etc/frr/{CANDIDATE}"], timeout=timeouts.DRY_RUN)
        finally:
            candidate.unlink(missing_ok=True)
        if res.ok:
            return None
        out = "\n    ".join(line for line in (res.stdout + res.stderr).strip().splitlines()[-12:])
        return f"{node}: FRR rejects the new config (vtysh --dryrun exited {res.rc}):\n    {out}"

    with ThreadPoolExecutor(PARALLEL) as pool:
        return [r for r in pool.map(one, work.reload + work.restart) if r]
