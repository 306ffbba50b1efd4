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

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from twin import timeouts, wait
from twin.change.base import Change, Result, Say
from twin.change.work import Work, dry_run
from twin.config import overlay
from twin.config.reconcile import node_delta
from twin.errors import ApplyFailed, ChangeRefused, ConvergenceTimeout, TwinError
from twin.lifecycle import barrier, hostlimits, state
from twin.lifecycle.bringup import wait_vnis
from twin.lifecycle.cleanup import patient
from twin.lifecycle.context import LabContext
from twin.observe import store
from twin.runtime import frr, images, kernel
from twin.runtime.links import add_link, delete_link
from twin.topology.model import Link

PARALLEL = 8


@dataclass
class Journal:
    """What the stages have done so far: what a rollback undoes."""

    hosts_started: list[str] = field(default_factory=list)
    links_added: list[Link] = field(default_factory=list)
    kernel: set[str] = field(default_factory=set)          # nodes whose kernel state was touched
    frr: dict[str, bool] = field(default_factory=dict)     # node -> restarted (else reloaded)
    links_deleted: list[Link] = field(default_factory=list)
    hosts_removed: list[str] = field(default_factory=list)


class Run:
    """One pass of the stages over a Work: forward (the first failure stops it), or a
    rollback (every failure is noted in `problems` and the rest goes on)."""

    def __init__(self, ctx: LabContext, w: Work, say: Say, rollback: bool = False):
        self.ctx, self.w, self.say, self.rollback = ctx, w, say, rollback
        self.journal = Journal()
        self.problems: list[str] = []
        self.stage = ""
        self.early: Future | None = None   # the new tenant namespaces, made while hosts start

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
            futures = {n: pool.submit(fn, n) for n in nodes}
        errors = []
        for n, f in futures.items():
            try:
                f.result()
            except Exception as e:
                errors.append(f"{n}: {str(e).strip()}")
        if errors and self.rollback:
            self.problems += [f"{what}: {e}" for e in errors]
        elif errors:
            raise TwinError(f"{what} failed on {len(errors)} node(s):\n" + "\n".join(errors))

    def namespaces(self, n: str, steps: list) -> None:
        """The new tenant namespaces of node `n` made, and adopted by zebra -n as VRFs: a new
        namespace is filled only once zebra knows it (devices made in between are missed now and
        then: FRR 8.4 and 10.3). A namespace still there (a tenant that was removed before: the
        namespace stays, see reconcile.tenant_teardown) is used as is."""
        new_ns = [s for s in steps if s.op == "netns"]
        if not new_ns:
            return
        ex, pid = self.ctx.exec(n), self.ctx.pid(n)
        there = set(ex.check(["ls", "/run/netns"]).stdout.split())
        kernel.apply([s for s in new_ns if s.dev not in there], pid, ex, self.rollback)
        names = {s.dev for s in new_ns}

        def missing() -> list[str]:
            shown = ex.vtysh("show vrf", timeout=timeouts.VTYSH_QUICK)
            return [f"{ex.where}: zebra has not adopted namespace {v} as VRF {v}" for v in sorted(names)
                    if f"vrf {v} id " not in shown]

        wait.until(missing, timeouts.VNIS_UP, f"{ex.where}: tenant namespaces in zebra", first=0.05, cap=0.5)

    def kernel(self, n: str, steps: list) -> None:
        """Kernel steps of a change on node `n`, after its new tenant namespaces (`namespaces`)."""
        self.namespaces(n, steps)
        frr.apply_live([s for s in steps if s.op != "netns"], self.ctx.pid(n), self.ctx.exec(n), self.rollback)


# --- the stages ---------------------------------------------------------------------------
def _files(r: Run) -> None:
    state.write_files(r.ctx.dir, r.w.files)
    for node, files in r.w.old_files.items():   # what the new intent renders no more (a gateway's NAT rules...)
        state.remove_files(r.ctx.dir, node, [f for f in files if f not in r.w.files.get(node, {})])


def _hosts_add(r: Run) -> None:
    """New host endpoints' containers. Meanwhile, in the background, the VTEPs' new tenant
    namespaces are made and adopted by zebra (they need nothing of the hosts; `_kernel_add` waits
    for them): the two slowest parts of adding a tenant overlap."""
    nodes = [n for n, d in r.w.deltas.items() if any(s.op == "netns" for s in d.add)]
    if nodes:
        r.early = ThreadPoolExecutor(1).submit(r.each, nodes, lambda n: r.namespaces(n, r.w.deltas[n].add),
                                               "tenant namespaces")
    if not r.w.hosts_add:
        return
    r.say(f"starting {len(r.w.hosts_add)} host endpoint(s)")
    image = r.ctx.image or images.ensure(r.ctx.runtime.client)
    r.journal.hosts_started += r.w.hosts_add   # noted first: a half-made container is removed too
    try:
        r.ctx.runtime.start_nodes(r.ctx.name, [r.w.new.nodes[n] for n in r.w.hosts_add], image, r.ctx.dir)
    finally:
        r.ctx.refresh()


def _links_add(r: Run) -> None:
    for link in r.w.links_add:
        def one(link: Link = link) -> None:
            add_link(r.w.new, link, {e.node: r.ctx.pid(e.node) for e in (link.a, link.b)})
            r.journal.links_added.append(link)
        r.attempt(f"link {link.a} <-> {link.b}", one)


def _host_config(r: Run) -> None:
    r.each(r.w.hosts_add, lambda n: kernel.apply(overlay.plan(r.w.new, n, r.ctx.backend), r.ctx.pid(n),
                                                 r.ctx.exec(n), r.rollback), "host endpoint ports")


def _kernel_add(r: Run) -> None:
    if r.early is not None:
        r.early.result()
    nodes = [n for n, d in r.w.deltas.items() if d.add]
    r.journal.kernel.update(nodes)
    r.each(nodes, lambda n: r.kernel(n, r.w.deltas[n].add), "kernel (add)")


def _frr(r: Run) -> None:
    if r.w.reload or r.w.restart:
        r.say(f"FRR: reload on {', '.join(r.w.reload) or 'none'}"
              + (f"; restart on {', '.join(r.w.restart)}" if r.w.restart else ""))
    r.journal.frr.update({n: n in r.w.restart for n in r.w.reload + r.w.restart})
    r.each(r.w.reload + r.w.restart, lambda n: frr.take(r.ctx.exec(n), restart=n in r.w.restart,
                                                         removes=removes_lines(r.w.old_files, r.w.files, n)),
           "FRR taking the new config")


def _bind(r: Run) -> None:
    def one(n: str) -> None:
        wait_vnis(r.ctx.exec(n), r.w.vnis[n] if n in r.w.vnis else r.ctx.with_fabric(r.w.new).intent.nodes[n].vnis)
        kernel.apply(r.w.deltas[n].bind, r.ctx.pid(n), r.ctx.exec(n), r.rollback)

    r.each([n for n, d in r.w.deltas.items() if d.bind], one, "bindings")


def _kernel_remove(r: Run) -> None:
    nodes = [n for n, d in r.w.deltas.items() if d.remove]
    r.journal.kernel.update(nodes)
    r.each(nodes, lambda n: r.kernel(n, r.w.deltas[n].remove), "kernel (remove)")


def _links_del(r: Run) -> None:
    if r.w.links_del:
        r.say(f"removing {len(r.w.links_del)} link(s)")
    for link in r.w.links_del:
        def one(link: Link = link) -> None:
            if not delete_link(link, {e.node: r.ctx.pid(e.node) for e in (link.a, link.b)}):
                raise TwinError(f"link {link.a} <-> {link.b}: neither end found to delete")
            r.journal.links_deleted.append(link)
        r.attempt(f"remove link {link.a} <-> {link.b}", one)


def _hosts_del(r: Run) -> None:
    for node in r.w.hosts_del:
        def one(n: str = node) -> None:
            r.ctx.runtime.remove_node(r.ctx.name, n)
            state.remove_node(r.ctx.dir, n)
            r.journal.hosts_removed.append(n)
        r.say(f"removing host endpoint {node}")
        r.attempt(f"remove host endpoint {node}", one)
    if r.w.hosts_del:
        r.ctx.refresh()


STAGES: list[tuple[str, Callable[[Run], None]]] = [
    ("files", _files), ("hosts", _hosts_add), ("links", _links_add), ("host config", _host_config),
    ("kernel (add)", _kernel_add), ("FRR", _frr), ("bindings", _bind), ("kernel (remove)", _kernel_remove),
    ("links (remove)", _links_del), ("hosts (remove)", _hosts_del),
]


def run_stages(r: Run) -> None:
    for name, stage in STAGES:
        r.stage = name
        store.note(r.ctx.dir, "action", f"{'rollback' if r.rollback else 'apply'}: stage {name}")
        r.attempt(f"{name}", lambda stage=stage: stage(r))


def removes_lines(old: dict, new: dict, node: str) -> bool:
    """Does node's new frr.conf drop a line the old one had (something FRR must take away)?"""
    keep = set(new.get(node, {}).get(frr.FRR_CONF, "").splitlines())
    return any(line.strip() and not line.lstrip().startswith("!") and line not in keep
               for line in old.get(node, {}).get(frr.FRR_CONF, "").splitlines())


# --- checking, applying, rolling back ------------------------------------------------------------
def refusals(ctx: LabContext, w: Work) -> list[str]:
    """Every reason the change cannot be applied, before anything is touched."""
    from twin.change.diff import FabricDiff

    reasons = [f"{c}: apply does not re-create nodes in a running lab; `twin down {ctx.name}` then "
               f"`twin up` with the new topology makes it" for c in FabricDiff(w.old, w.new).fixed()]
    touched = set(w.reload) | set(w.restart) | set(w.deltas) | {e.node for link in w.links_add + w.links_del
                                                                 for e in (link.a, link.b)}
    running = set(ctx.running())
    for node in sorted(touched - set(w.hosts_add) - running):
        c = ctx.containers().get(node)
        reasons.append(f"{node}: not running (container {c.status if c else 'missing'}); start it first "
                       f"(`twin fault node-start {ctx.name} {node}`)")
    try:   # a lab that grows takes more of the host's kernel limits, as `twin up` judges them
        hostlimits.ensure(w.new, grown_from=w.old)
    except hostlimits.HostLimitsShort as e:
        reasons.append("host limits too low for what the change adds: " + "; ".join(map(str, e.shortfalls))
                       + (f"; {e.fix}" if e.fix else ""))
    return reasons or dry_run(ctx, w)


def apply(ctx: LabContext, change: Change, timeout: float | None = None, wait: bool = True,
          say: Say = lambda _: None) -> Result:
    """Apply a declarative `change` (it has `work(ctx)`) to the running lab; see the module
    docstring for the stages."""
    with ctx.writing("twin apply"):
        return _apply(ctx, change, timeout, wait, say)


def _apply(ctx: LabContext, change: Change, timeout: float | None, wait: bool, say: Say) -> Result:
    t0 = time.monotonic()
    w = change.work(ctx)
    reasons = refusals(ctx, w)
    if reasons:
        raise ChangeRefused(change.source, reasons)
    result = Result(ctx.name, change.key, change.source, w.summary, reloaded=w.reload, restarted=w.restart,
                    fabric=w.new)
    result.timings["planned"] = round(time.monotonic() - t0, 2)   # worked out, checked, dry-run by FRR
    if w.empty:
        if w.new.checks != w.old.checks:   # nothing to do on the nodes, but `twin verify` runs the new checks
            _record(ctx, w, change)
            result.changes = [f"checks: the topology's checks: section changed ({len(w.new.checks)} checks now)"]
        say("no change to the nodes")
        return result
    r = Run(ctx, w, say)
    try:
        run_stages(r)
        r.stage = "record"
        _record(ctx, w, change)
    except BaseException as e:
        failed = r.stage
        say(f"apply failed in stage {failed} ({str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__});"
            " rolling back")
        with patient(f"rolling lab {ctx.name} back", f"it may be half changed: `twin status {ctx.name}` says "
                                                     "what is missing"):
            problems = rollback(ctx, w, r.journal, say)
        raise ApplyFailed(change.source, failed, str(e).strip() or type(e).__name__, problems) from e
    result.timings["applied"] = round(time.monotonic() - t0, 2)
    say(f"applied in {result.timings['applied']:.1f}s")
    if wait:
        try:
            barrier.converge(ctx.with_fabric(w.new).refresh(), timeout, say=say)
            result.timings["converged"] = round(time.monotonic() - t0, 2)
        except ConvergenceTimeout as e:
            result.missing = e.missing
    return result


def inverse(ctx: LabContext, w: Work, j: Journal) -> Work:
    """The work that undoes what journal `j` says was done of `w`."""
    touched = j.kernel | set(j.frr)
    deltas = {n: d for n in sorted(touched) if n in w.old.nodes and n in w.new.nodes
              and (d := w.undo[n] if n in w.undo else node_delta(w.new, w.old, n, ctx.backend, ctx.shaping))}
    return Work(w.new, w.old, w.old_files, w.files,
                reload=[n for n, restarted in j.frr.items() if not restarted],
                restart=[n for n, restarted in j.frr.items() if restarted], deltas=deltas,
                links_add=list(j.links_deleted), links_del=list(j.links_added),
                hosts_add=list(j.hosts_removed), hosts_del=list(j.hosts_started), vnis=w.old_vnis)


def rollback(ctx: LabContext, w: Work, j: Journal, say: Say) -> list[str]:
    """Back to the previous intent; returns what could not be restored (empty: all of it)."""
    r = Run(ctx.refresh(), inverse(ctx, w, j), say, rollback=True)
    run_stages(r)
    if r.problems:
        return r.problems
    try:   # it is done when the old intent holds again
        barrier.converge(ctx.with_fabric(w.old).refresh(), timeouts.converge(len(ctx.intent.nodes)))
    except ConvergenceTimeout as e:
        return [f"the previous intent did not converge again: {m}" for m in e.missing[:20]]
    except TwinError as e:
        return [f"cannot confirm the previous intent: {e}"]
    return []


def _record(ctx: LabContext, w: Work, change: Change) -> None:
    """The new intent is the lab's intent now: fabric.json, the topology it came from, a history line."""
    from pathlib import Path

    st, _ = state.load(ctx.dir)
    if st is None:
        raise TwinError(f"lab {ctx.name!r}: {ctx.dir / state.STATE} is gone; the change cannot be recorded")
    source = str(Path(change.source).resolve()) if change.key in ("topology", "configs", "nvue") else change.source
    if change.key == "topology":
        st.topology = source
    st.history.append({"at": state.now(), "kind": change.key, "source": source, "changes": w.summary})
    state.save(ctx.dir, st, w.new)
