"""`twin apply`: change a running lab, with the least disruption the platform allows.

    result = Lab.open("aipod").apply("my-change.yml")     # or a directory of node configs

Apply is an ordered list of stages, as a network engineer would do it by hand:

 0. check: the file is valid, names only existing nodes, the change is one apply
    can make, every node it touches runs, FRR accepts every new config (`vtysh
    --dryrun` in the node). Any problem refuses the whole change with every
    reason, and nothing in the lab has been touched.
 1. files: the new rendered files (frr.conf, nftables rules...) in the lab directory;
 2. hosts: containers of new host endpoints;       3. links: new links;
 4. host config: the new hosts' tenant ports;       5. kernel (add): new kernel objects;
 6. FRR: `frr-reload.py` (no restart) where frr.conf changed, a restart where the
    daemons did, until FRR runs the file;           7. bindings of new workloads;
 8. kernel (remove): objects FRR no longer uses;    9. links (remove);
10. hosts (remove);                                 11. record: fabric.json, a history line.
Then the barrier waits for the new intent (a timeout is reported, not rolled back).

Each stage notes in a journal what it did. When a stage fails (or apply is
interrupted), rollback undoes exactly what the journal holds: it runs the
inverse work (new intent -> old intent, only on what was touched) through the
same stages, so the old files are back before any kernel step or FRR reload
reads them, FRR reloads until it runs the old file, and host endpoints that
were removed are made again. A step of the rollback that fails does not stop
the others; the error lists what could not be restored. It is never "done"
when it is not: the barrier confirms the old intent holds again.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, ClassVar, Protocol

from twin.base import timeouts, wait
from twin.base.errors import ApplyFailed, ChangeRefused, ConvergenceTimeout, TwinError
from twin.change.base import Result, Say
from twin.change.work import Work, dry_run
from twin.config import overlay
from twin.config.reconcile import node_delta
from twin.lifecycle import barrier, hostlimits, imagechoice, state
from twin.lifecycle.bringup import wait_vnis
from twin.lifecycle.cleanup import patient
from twin.lifecycle.context import LabContext
from twin.lint import Report as LintReport
from twin.observe import store
from twin.runtime import FRR_CONF, add_link, apply_live, apply_steps, delete_link, frr_take
from twin.topology.model import Link

PARALLEL = 8


class Declarative(Protocol):
    """What apply runs: a change of what the lab should be (`twin.change.declarative`)."""

    key: ClassVar[str]
    lint: LintReport | None  # a directory of configs: its lint findings (recorded once applied)
    from_files: ClassVar[bool]  # its source names files (recorded resolved)

    @property
    def source(self) -> str: ...  # the file or directory it came from, as the user gave it

    def work(self, ctx: LabContext) -> Work: ...


@dataclass
class Journal:
    """What the stages have done so far: what a rollback undoes."""

    hosts_started: list[str] = field(default_factory=list)
    links_added: list[Link] = field(default_factory=list)
    kernel: set[str] = field(default_factory=set)  # nodes whose kernel state was touched
    frr: dict[str, bool] = field(default_factory=dict)  # node -> restarted (else reloaded)
    links_deleted: list[Link] = field(default_factory=list)
    hosts_removed: list[str] = field(default_factory=list)


class Run:
    """One pass of the stages over a Work: forward (the first failure stops it), or a
    rollback (every failure is noted in `problems` and the rest goes on)."""

    def __init__(self, ctx: LabContext, work: Work, say: Say, rollback: bool = False):
        self.ctx, self.work, self.say, self.rollback = ctx, work, say, rollback
        self.journal = Journal()
        self.problems: list[str] = []
        self.stage = ""
        self.early: Future | None = None  # the new tenant namespaces, made while hosts start

    def attempt(self, what: str, fn: Callable[[], object]) -> None:
        if not self.rollback:
            fn()
            return
        try:
            fn()
        except Exception as e:
            self.problems.append(f"{what}: {str(e).strip()}")

    def each(self, nodes: list[str], fn: Callable[[str], object], what: str) -> None:
        """`fn(node)` on every node at once; every node's error, not just the first."""
        if not nodes:
            return
        with ThreadPoolExecutor(PARALLEL) as pool:
            futures = {node: pool.submit(fn, node) for node in nodes}
        errors = []
        for node, f in futures.items():
            try:
                f.result()
            except Exception as e:
                errors.append(f"{node}: {str(e).strip()}")
        if errors and self.rollback:
            self.problems += [f"{what}: {e}" for e in errors]
        elif errors:
            raise TwinError(f"{what} failed on {len(errors)} node(s):\n" + "\n".join(errors))

    def namespaces(self, node: str, steps: list) -> None:
        """The new tenant namespaces of node `n` made, and adopted by zebra -n as VRFs: a new
        namespace is filled only once zebra knows it (devices made in between are missed now and
        then: FRR 8.4 and 10.3). A namespace still there (a tenant that was removed before: the
        namespace stays, see reconcile.tenant_teardown) is used as is."""
        new_ns = [s for s in steps if s.op == "netns"]
        if not new_ns:
            return
        ex, pid = self.ctx.exec(node), self.ctx.pid(node)
        there = set(ex.check(["ls", "/run/netns"]).stdout.split())
        apply_steps([s for s in new_ns if s.dev not in there], pid, ex, self.rollback)
        names = {s.dev for s in new_ns}

        def missing() -> list[str]:
            shown = ex.vtysh("show vrf", timeout=timeouts.VTYSH_QUICK)
            return [
                f"{ex.where}: zebra has not adopted namespace {v} as VRF {v}"
                for v in sorted(names)
                if f"vrf {v} id " not in shown
            ]

        wait.until(missing, timeouts.VNIS_UP, f"{ex.where}: tenant namespaces in zebra", first=0.05, cap=0.5)

    def kernel(self, node: str, steps: list) -> None:
        """Kernel steps of a change on node `n`, after its new tenant namespaces (`namespaces`)."""
        self.namespaces(node, steps)
        apply_live([s for s in steps if s.op != "netns"], self.ctx.pid(node), self.ctx.exec(node), self.rollback)


# --- the stages ---------------------------------------------------------------------------
def _files(run: Run) -> None:
    state.write_files(run.ctx.dir, run.work.files)
    for node, files in run.work.old_files.items():  # what the new intent renders no more (a gateway's NAT rules...)
        state.remove_files(run.ctx.dir, node, [f for f in files if f not in run.work.files.get(node, {})])


def _hosts_add(run: Run) -> None:
    """New host endpoints' containers. Meanwhile, in the background, the VTEPs' new tenant
    namespaces are made and adopted by zebra (they need nothing of the hosts; `_kernel_add` waits
    for them): the two slowest parts of adding a tenant overlap."""
    nodes = [node for node, delta in run.work.deltas.items() if any(s.op == "netns" for s in delta.add)]
    if nodes:
        run.early = ThreadPoolExecutor(1).submit(
            run.each, nodes, lambda node: run.namespaces(node, run.work.deltas[node].add), "tenant namespaces"
        )
    if not run.work.hosts_add:
        return
    run.say(f"starting {len(run.work.hosts_add)} host endpoint(s)")
    image = run.ctx.image or run.ctx.runtime.node_image()
    run.journal.hosts_started += run.work.hosts_add  # noted first: a half-made container is removed too
    try:
        new = imagechoice.resolve(run.work.new, None, run.ctx.runtime.image_facts).fabric(run.work.new)
        hosts = [new.nodes[node] for node in run.work.hosts_add]  # each on its own image where the engine has it
        run.ctx.runtime.start_nodes(run.ctx.name, hosts, image, run.ctx.dir)
    finally:
        run.ctx.refresh()


def _links_add(run: Run) -> None:
    for link in run.work.links_add:

        def one(link: Link = link) -> None:
            add_link(run.work.new, link, {e.node: run.ctx.pid(e.node) for e in (link.a, link.b)})
            run.journal.links_added.append(link)

        run.attempt(f"link {link.a} <-> {link.b}", one)


def _host_config(run: Run) -> None:
    def one(node: str) -> None:
        apply_steps(
            overlay.plan(run.work.new, node, run.ctx.backend), run.ctx.pid(node), run.ctx.exec(node), run.rollback
        )

    run.each(run.work.hosts_add, one, "host endpoint ports")


def _kernel_add(run: Run) -> None:
    if run.early is not None:
        run.early.result()
    nodes = [node for node, delta in run.work.deltas.items() if delta.add]
    run.journal.kernel.update(nodes)
    run.each(nodes, lambda node: run.kernel(node, run.work.deltas[node].add), "kernel (add)")


def _frr(run: Run) -> None:
    if run.work.reload or run.work.restart:
        run.say(
            f"FRR: reload on {', '.join(run.work.reload) or 'none'}"
            + (f"; restart on {', '.join(run.work.restart)}" if run.work.restart else "")
        )
    run.journal.frr.update({node: node in run.work.restart for node in run.work.reload + run.work.restart})

    def one(node: str) -> None:
        frr_take(
            run.ctx.exec(node),
            restart=node in run.work.restart,
            removes=removes_lines(run.work.old_files, run.work.files, node),
        )

    run.each(run.work.reload + run.work.restart, one, "FRR taking the new config")


def _bind(run: Run) -> None:
    def one(node: str) -> None:
        vnis = (
            run.work.vnis[node] if node in run.work.vnis else run.ctx.with_fabric(run.work.new).intent.nodes[node].vnis
        )
        wait_vnis(run.ctx.exec(node), vnis)
        apply_steps(run.work.deltas[node].bind, run.ctx.pid(node), run.ctx.exec(node), run.rollback)

    run.each([node for node, delta in run.work.deltas.items() if delta.bind], one, "bindings")


def _kernel_remove(run: Run) -> None:
    nodes = [node for node, delta in run.work.deltas.items() if delta.remove]
    run.journal.kernel.update(nodes)
    run.each(nodes, lambda node: run.kernel(node, run.work.deltas[node].remove), "kernel (remove)")


def _links_del(run: Run) -> None:
    if run.work.links_del:
        run.say(f"removing {len(run.work.links_del)} link(s)")
    for link in run.work.links_del:

        def one(link: Link = link) -> None:
            if not delete_link(link, {e.node: run.ctx.pid(e.node) for e in (link.a, link.b)}):
                raise TwinError(f"link {link.a} <-> {link.b}: neither end found to delete")
            run.journal.links_deleted.append(link)

        run.attempt(f"remove link {link.a} <-> {link.b}", one)


def _hosts_del(run: Run) -> None:
    for node in run.work.hosts_del:

        def one(node: str = node) -> None:
            run.ctx.runtime.remove_node(run.ctx.name, node)
            state.remove_node(run.ctx.dir, node)
            run.journal.hosts_removed.append(node)

        run.say(f"removing host endpoint {node}")
        run.attempt(f"remove host endpoint {node}", one)
    if run.work.hosts_del:
        run.ctx.refresh()


STAGES: list[tuple[str, Callable[[Run], None]]] = [
    ("files", _files),
    ("hosts", _hosts_add),
    ("links", _links_add),
    ("host config", _host_config),
    ("kernel (add)", _kernel_add),
    ("FRR", _frr),
    ("bindings", _bind),
    ("kernel (remove)", _kernel_remove),
    ("links (remove)", _links_del),
    ("hosts (remove)", _hosts_del),
]


def run_stages(run: Run) -> None:
    for name, stage in STAGES:
        run.stage = name
        store.note(run.ctx.dir, "action", f"{'rollback' if run.rollback else 'apply'}: stage {name}")
        run.attempt(f"{name}", partial(stage, run))


def removes_lines(old: dict, new: dict, node: str) -> bool:
    """Does node's new frr.conf drop a line the old one had (something FRR must take away)?"""
    keep = set(new.get(node, {}).get(FRR_CONF, "").splitlines())
    return any(
        line.strip() and not line.lstrip().startswith("!") and line not in keep
        for line in old.get(node, {}).get(FRR_CONF, "").splitlines()
    )


# --- checking, applying, rolling back ------------------------------------------------------------
def refusals(ctx: LabContext, work: Work) -> list[str]:
    """Every reason the change cannot be applied, before anything is touched."""
    from twin.change.diff import FabricDiff

    reasons = [
        f"{c}: apply does not re-create nodes in a running lab; `twin down {ctx.name}` then "
        f"`twin up` with the new topology makes it"
        for c in FabricDiff(work.old, work.new).fixed()
    ]
    touched = (
        set(work.reload)
        | set(work.restart)
        | set(work.deltas)
        | {end.node for link in work.links_add + work.links_del for end in (link.a, link.b)}
    )
    running = set(ctx.running())
    for node in sorted(touched - set(work.hosts_add) - running):
        c = ctx.containers().get(node)
        reasons.append(
            f"{node}: not running (container {c.status if c else 'missing'}); start it first "
            f"(`twin fault node-start {ctx.name} {node}`)"
        )
    try:  # a lab that grows takes more of the host's kernel limits, as `twin up` judges them
        hostlimits.ensure(work.new, grown_from=work.old)
    except hostlimits.HostLimitsShort as e:
        reasons.append(
            "host limits too low for what the change adds: "
            + "; ".join(map(str, e.shortfalls))
            + (f"; {e.fix}" if e.fix else "")
        )
    return reasons or dry_run(ctx, work)


def apply(
    ctx: LabContext,
    change: Declarative,
    timeout: float | None = None,
    wait: bool = True,
    say: Say = lambda _: None,
    node: str | None = None,
) -> Result:
    """Apply a declarative `change` (it has `work(ctx)`) to the running lab; see the module
    docstring for the stages. `node`: the change is that node's alone (an NVUE revision, as a
    switch applies its own): it holds that node, beside other nodes' own changes, instead of the
    lab, and a rollback is done once the node runs its old configuration again (convergence is
    `wait`'s, and `twin wait`'s, to judge)."""
    with ctx.writing_node(node, "twin apply") if node else ctx.writing("twin apply"):
        return _apply(ctx, change, timeout, wait, say, node)


def _apply(
    ctx: LabContext, change: Declarative, timeout: float | None, wait: bool, say: Say, node: str | None = None
) -> Result:
    t0 = time.monotonic()
    work = change.work(ctx)
    reasons = refusals(ctx, work)
    if reasons:
        raise ChangeRefused(change.source, reasons)
    result = Result(
        ctx.name, change.key, change.source, work.summary, reloaded=work.reload, restarted=work.restart, fabric=work.new
    )
    result.timings["planned"] = round(time.monotonic() - t0, 2)  # worked out, checked, dry-run by FRR
    if work.empty:
        if work.new.checks != work.old.checks:  # nothing to do on the nodes, but `twin verify` runs the new checks
            _record(ctx, work, change)
            result.changes = [f"checks: the topology's checks: section changed ({len(work.new.checks)} checks now)"]
        say("no change to the nodes")
        return result
    run = Run(ctx, work, say)
    try:
        run_stages(run)
        run.stage = "record"
        _record(ctx, work, change)
    except BaseException as e:
        failed = run.stage
        say(
            f"apply failed in stage {failed} "
            f"({str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}); rolling back"
        )
        with patient(
            f"rolling lab {ctx.name} back", f"it may be half changed: `twin status {ctx.name}` says what is missing"
        ):
            problems = rollback(ctx, work, run.journal, say, confirm=node is None)
        raise ApplyFailed(change.source, failed, str(e).strip() or type(e).__name__, problems) from e
    result.timings["applied"] = round(time.monotonic() - t0, 2)
    say(f"applied in {result.timings['applied']:.1f}s")
    if wait:
        try:
            barrier.converge(
                ctx.with_fabric(work.new).refresh(),
                timeout,
                say=say,  # --timeout: from the start
                start=t0 if timeout is not None else None,
            )
            result.timings["converged"] = round(time.monotonic() - t0, 2)
        except ConvergenceTimeout as e:
            result.missing = e.missing
    return result


def inverse(ctx: LabContext, work: Work, journal: Journal) -> Work:
    """The work that undoes what journal `j` says was done of `w`."""
    touched = journal.kernel | set(journal.frr)
    deltas = {
        node: delta
        for node in sorted(touched)
        if node in work.old.nodes
        and node in work.new.nodes
        and (
            delta := work.undo[node]
            if node in work.undo
            else node_delta(work.new, work.old, node, ctx.backend, ctx.shaping)
        )
    }
    return Work(
        work.new,
        work.old,
        work.old_files,
        work.files,
        reload=[node for node, restarted in journal.frr.items() if not restarted],
        restart=[node for node, restarted in journal.frr.items() if restarted],
        deltas=deltas,
        links_add=list(journal.links_deleted),
        links_del=list(journal.links_added),
        hosts_add=list(journal.hosts_removed),
        hosts_del=list(journal.hosts_started),
        vnis=work.old_vnis,
    )


def rollback(ctx: LabContext, work: Work, journal: Journal, say: Say, confirm: bool = True) -> list[str]:
    """Back to the previous intent; returns what could not be restored (empty: all of it).
    `confirm`: it is done once the previous intent holds again (the barrier); else once the
    stages ran (a node's own change: FRR runs its old file again, `frr.take` saw to it)."""
    run = Run(ctx.refresh(), inverse(ctx, work, journal), say, rollback=True)
    run_stages(run)
    if run.problems or not confirm:
        return run.problems
    try:  # it is done when the old intent holds again
        barrier.converge(ctx.with_fabric(work.old).refresh(), timeouts.converge(len(ctx.intent.nodes)))
    except ConvergenceTimeout as e:
        return [f"the previous intent did not converge again: {m}" for m in e.missing[:20]]
    except TwinError as e:
        return [f"cannot confirm the previous intent: {e}"]
    return []


_recording = threading.Lock()  # nodes' own changes run at once in one process (the NVUE service)


def _record(ctx: LabContext, work: Work, change: Declarative) -> None:
    """The new intent is the lab's intent now: fabric.json, the topology it came from, a history line."""
    with _recording:
        _record_one(ctx, work, change)


def _record_one(ctx: LabContext, work: Work, change: Declarative) -> None:
    from pathlib import Path

    source = str(Path(change.source).resolve()) if change.from_files else change.source

    def record(st: state.LabState) -> None:
        if change.key == "topology":
            st.topology = source
        if change.lint is not None:  # the findings of the configs now running (twin verify names them)
            st.lint = [f.as_dict() for f in change.lint.findings]
        st.history.append({"at": state.now(), "kind": change.key, "source": source, "changes": work.summary})

    if state.update(ctx.dir, record, work.new) is None:
        raise TwinError(f"lab {ctx.name!r}: {ctx.dir / state.STATE} is gone; the change cannot be recorded")
