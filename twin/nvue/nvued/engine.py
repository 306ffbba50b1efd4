"""A lab's NVUE revisions, and their apply through twin's change pipeline.

Per node, as on a switch: the applied configuration is the startup.yaml the node runs
(`<lab dir>/<node>/startup.yaml`), the saved one (`rev=startup`) what `nv config save` kept,
and revisions are made (`create`), edited while pending (`edit`), then applied (`apply`), each
transition under the revision's own lock (`revision.Revision`):

    pending -> apply -> applied            (once the node runs it; asked to wait: with a warning
                                            when the lab did not converge in time)
                     -> apply_fail         (refused with every reason: nothing was touched; or
                                            failed half way: rolled back, and what could not be)
            -> ays_fail                    (it needs a yes, and none was given)

Apply is a switch's: a revision touches only its node, and revisions of different nodes apply
at once (worker threads; one revision of a node at a time, in order), each holding its node,
not the lab (`locks.node_lock`: a lab-wide `twin apply`, `rehearse` or `twin fault` meanwhile
gets "busy", and so does a revision during one). The revision's edits are made on what the
node runs now, checked (every problem at once), written back as the file would be read again,
and applied as an NVUE change of that node (`twin.change.apply`: files, kernel, frr-reload,
rollback on failure): `applied` once the node runs it, in seconds, whatever its neighbours run
yet. Convergence is `twin wait`'s, `status`'s and `verify`'s to judge; a revision asked to
(`nv config apply --wait`, `?wait=true`) waits for it too. A node reaches only its own revisions.

Revisions outlive the service, as a switch's do: every change of one is written to
`<lab dir>/nvue/revisions.json` and read back when the service starts again. A revision the
service stopped in the middle of applying comes back `apply_fail`, saying so (what the lab
runs is then what `twin status` and `nv show` say).
"""

from __future__ import annotations

import copy
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from twin.base.errors import ApplyFailed, ChangeRefused, LabStateError, TopologyError, TwinError
from twin.change.apply import apply
from twin.change.base import Result
from twin.lifecycle import locks, state
from twin.lifecycle.context import LabContext
from twin.nvue import load
from twin.nvue import service as nvue_service
from twin.nvue.api import REV_APPLIED, REV_STARTUP, State, revision_id
from twin.nvue.change.nvue_change import NvueChange
from twin.nvue.configs import STARTUP
from twin.nvue.load import NvueFile, dump, from_tree
from twin.nvue.nvued.revision import Conflict, NotFound, Revision
from twin.nvue.tree import diff, patch, unpatch
from twin.runtime import Runtime

MAX_REVISIONS = 32  # kept per node; the oldest ones go first (not one being applied)
APPLIERS = 16  # revisions of different nodes applied at once (each mostly waits on its node)


class Engine:
    def __init__(self, lab: str, d: Path):
        self.lab, self.d = lab, d
        self.runtime: Runtime | None = None  # made on first use: reading revisions needs no Docker
        self.revisions: dict[str, Revision] = {}
        self.cli: dict[str, str] = {}  # node -> the revision its `nv` edits
        self.guard = threading.Lock()
        self.worker = ThreadPoolExecutor(APPLIERS, thread_name_prefix="nvued-apply")
        self.nodes: dict[str, threading.Lock] = {}  # node -> held while one of its revisions applies
        self._recall()

    # --- revisions kept on disk -------------------------------------------------------------------
    def _file(self) -> Path:
        return nvue_service.root(self.d) / "revisions.json"

    def _recall(self) -> None:
        """The revisions and `nv` sessions an earlier run of the service kept (none: a new lab)."""
        try:
            doc = json.loads(state.read_text(self._file()))
            revisions = {k: Revision.recalled(r) for k, r in doc["revisions"].items()}
            cli = {str(n): str(r) for n, r in doc["cli"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return  # none kept, or not readable as such: the service starts with none, as on `up`
        self.revisions, self.cli = revisions, cli

    def keep(self) -> None:
        """Write the revisions and `nv` sessions down (after every change of one)."""
        with self.guard:  # one writer at a time: the worker thread keeps too
            doc = {"revisions": {k: r.kept() for k, r in self.revisions.items()}, "cli": dict(self.cli)}
            state.write_text(self._file(), json.dumps(doc))

    def session(self, node: str, rev: Revision | None) -> None:
        """The revision `node`'s `nv` edits from now on (None: none)."""
        if rev is None:
            self.cli.pop(node, None)
        else:
            self.cli[node] = rev.id
        self.keep()

    # --- what a node runs ------------------------------------------------------------------------
    def context(self) -> LabContext:
        if self.runtime is None:  # the runtime that made the lab (docker, or containerlab)
            self.runtime = state.runtime_of(self.d)
        ctx = LabContext.open(self.lab, self.runtime)
        if ctx is None:
            raise Conflict(f"lab {self.lab!r} is not up")
        return ctx

    def applied(self, node: str) -> NvueFile:
        f = self.d / node / STARTUP
        if not f.is_file() or f.is_symlink():
            raise Conflict(
                f"{node} runs twin's rendering, not NVUE: its configuration is read with vtysh, and "
                "changed with `twin apply`; NVUE changes the nodes a lab brought up from startup.yaml "
                "files (`twin up --configs`)"
            )
        try:
            return load.read(f)
        except TopologyError as e:
            raise TwinError(f"{node}: the startup.yaml it runs cannot be read again: {e.problems[0]}") from None

    def startup(self, node: str) -> dict:
        f = nvue_service.saved(self.d, node)
        try:
            return load.read_bytes(state.read_text(f).encode(), str(f)).tree
        except OSError:
            return self.applied(node).tree  # nothing saved since `up`: what it came up with

    def save(self, node: str) -> None:
        nf = self.applied(node)
        f = nvue_service.saved(self.d, node)
        f.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(f, dump(nf.tree, nf.header))

    # --- revisions ------------------------------------------------------------------------------------
    def create(self, node: str, carry: Revision | None = None) -> Revision:
        """A new pending revision of `node` (with the edits of revision `carry`, on what it runs now)."""
        base = self.applied(node).tree
        rev = Revision(revision_id(), node, base, rebase(base, carry) if carry else copy.deepcopy(base))
        with self.guard:
            self._prune(node)
            while rev.id in self.revisions:
                rev.id = revision_id()
            self.revisions[rev.id] = rev
        self.keep()
        return rev

    def _prune(self, node: str) -> None:
        mine = sorted((r for r in self.revisions.values() if r.node == node), key=lambda r: r.made)
        for r in mine[: max(0, len(mine) - MAX_REVISIONS + 1)]:
            if r.retire():
                del self.revisions[r.id]

    def get(self, node: str, rid: str) -> Revision:
        rev = self.revisions.get(rid)
        if rev is None or rev.node != node:
            raise NotFound(f"no revision {rid!r} on {node}; POST /nvue_v1/revision makes one")
        return rev

    def of(self, node: str) -> dict[str, Revision]:
        return {k: r for k, r in self.revisions.items() if r.node == node}

    def edit(self, rev: Revision, fn: Callable[[dict], dict]) -> dict:
        """`fn(tree)` made on a pending revision, kept once NVUE's object tree takes it."""
        tree = rev.edit(fn)
        self.keep()
        return tree

    def drop(self, rev: Revision) -> None:
        rev.drop()
        with self.guard:
            self.revisions.pop(rev.id, None)
        self.keep()

    def tree(self, node: str, rev: str) -> dict:
        """The configuration `rev` names: applied, startup, or a revision of this node."""
        if rev == REV_APPLIED:
            return self.applied(node).tree
        if rev == REV_STARTUP:
            return self.startup(node)
        return self.get(node, rev).tree

    # --- apply -----------------------------------------------------------------------------------------
    def apply(self, rev: Revision, yes: bool, wait: bool = False) -> None:
        """Apply a pending revision (or one that ended ays_fail, asked again) on a worker thread;
        `wait`: applied once the lab converged too (else once the node runs it). Conflict when it is
        being applied or was (a second apply of it: the first goes on)."""
        begun = rev.begin(yes, wait)
        self.keep()
        if begun:
            self.worker.submit(self._apply, rev)

    def _apply(self, rev: Revision) -> None:
        with self.guard:
            one = self.nodes.setdefault(rev.node, threading.Lock())
        with one:  # a node's revisions one after the other; other nodes' meanwhile
            self._apply_one(rev)

    def _apply_one(self, rev: Revision) -> None:
        try:
            with locks.node_lock(self.lab, rev.node, f"twin nvued: {rev.node} revision {rev.id}"):
                result = self._run(rev)
            t = result.timings
            rev.end(
                State.APPLIED,
                [f"not converged within the deadline: {m}" for m in result.missing[:20]],
                f"applied in {t.get('applied', 0):.1f}s"
                + (
                    ""
                    if not rev.wait
                    else f", converged in {t['converged']:.1f}s"
                    if "converged" in t
                    else ", NOT converged"
                ),
                warning=bool(result.missing),
            )
        except Exception as e:  # noqa: BLE001  (a revision says why it failed; the service goes on)
            rev.end(State.APPLY_FAIL, failure(e), "failed")
        self.keep()

    def _run(self, rev: Revision) -> Result:
        ctx = self.context()
        now = self.applied(rev.node)
        tree = rebase(now.tree, rev)
        source = f"{rev.node} revision {rev.id}"
        nf = from_tree(tree, source)
        nf.header = now.header
        load.read_bytes(dump(nf.tree, nf.header).encode(), source)  # what is written reads back
        change = NvueChange.of(ctx, source, {rev.node: nf})
        return apply(ctx, change, wait=rev.wait, node=rev.node, say=lambda m: setattr(rev, "progress", m))


def failure(e: Exception) -> list[str]:
    """Why an apply failed, as a revision's issues: every problem, every refusal, what was rolled back."""
    if isinstance(e, TopologyError):
        return [str(p) for p in e.problems]
    if isinstance(e, ChangeRefused):
        return list(e.reasons)
    if isinstance(e, ApplyFailed):
        return [f"failed in stage {e.stage}: {e.error}; rolled back"] + [f"could not restore: {p}" for p in e.problems]
    if isinstance(e, LabStateError):
        return [str(e)]
    return [f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"]


def rebase(tree: dict, rev: Revision) -> dict:
    """`tree` with the edits of revision `rev` (what it changed of the tree it was made from)."""
    out = copy.deepcopy(tree)
    for doc in diff(rev.base, rev.tree):
        unpatch(out, doc["unset"]) if "unset" in doc else patch(out, doc["set"])
    return out
