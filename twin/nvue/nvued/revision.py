"""One NVUE revision and its states (`twin.nvue.api.State`), each transition made under the
revision's own lock: the REST API's handlers run in a thread pool and the apply in a worker
thread, so "is it pending?" and the change of state are one step, never two.

    pending --edit--> pending                  (edits are kept once NVUE's tree takes them)
    pending|ays_fail --begin--> apply          (then `end`: applied, or apply_fail)
                     --begin--> ays_fail       (it needs a yes, and none was given)

A revision being applied, or applied, is not edited or applied again: as NVIDIA's documentation
says of NVUE's revisions, once applied a revision cannot be modified further, and a new one is
made (409 Conflict, saying so). Two applies of one revision: the first makes it `apply`, the
second is refused; an edit meets `apply` and is refused, and the tree the apply reads stays the
one it began with.
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from twin.base.errors import TwinError
from twin.nvue.api import APPLICABLE, EDITABLE, State, revision_doc
from twin.nvue.load import from_tree
from twin.nvue.tree import show


class NotFound(TwinError):
    """No such revision (of this node), or place."""


class Conflict(TwinError):
    """The request does not fit the state it meets (a revision no longer pending, a node without NVUE)."""


@dataclass
class Revision:
    id: str
    node: str
    base: dict  # the applied tree it was made from
    tree: dict  # the tree it would apply
    state: State = State.PENDING
    issues: list[str] = field(default_factory=list)
    progress: str = ""
    warning: bool = False  # the issues are warnings (applied, not converged)
    wait: bool = False  # its apply waits for the lab to converge (an opt-in)
    made: float = field(default_factory=time.time)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    gone: bool = field(default=False, repr=False, compare=False)  # dropped, or pruned: no transition

    def __post_init__(self) -> None:
        self.state = State(self.state)

    # --- kept on disk ---------------------------------------------------------------------------------
    KEPT = ("id", "node", "base", "tree", "state", "issues", "progress", "warning", "wait", "made")

    def kept(self) -> dict[str, Any]:
        """What revisions.json keeps of it (read under its lock: one state, with its issues)."""
        with self.lock:
            return {k: self.state.value if k == "state" else copy.deepcopy(getattr(self, k)) for k in self.KEPT}

    @classmethod
    def recalled(cls, doc: dict[str, Any]) -> "Revision":
        """A revision as an earlier run of the service kept it; one it was applying when it stopped
        ended then: apply_fail, saying so (what the lab runs is what `twin status` and `nv show` say)."""
        rev = cls(**{k: v for k, v in doc.items() if k in cls.KEPT})
        if rev.state is State.APPLY:
            rev.state, rev.progress = State.APPLY_FAIL, "failed"
            rev.issues = [
                "the NVUE service stopped while applying it: `twin status` and `nv show` say what the lab runs now"
            ]
        return rev

    def doc(self) -> dict:
        """As `GET /revision/<id>` shows it."""
        with self.lock:
            return revision_doc(self.state, self.issues, self.progress, "warning" if self.warning else "error")

    # --- its transitions, each under its lock -------------------------------------------------------------
    def _expect(self, allowed: frozenset[State]) -> None:
        if self.gone:
            raise NotFound(f"no revision {self.id!r} on {self.node} any more (dropped)")
        if self.state in allowed:
            return
        if self.state is State.APPLY:
            raise Conflict(
                f"revision {self.id} is being applied: it cannot be changed or applied again; its "
                "state says when it is done"
            )
        raise Conflict(
            f"revision {self.id} is {self.state}: a revision that was applied cannot be modified "
            "further; make a new one"
        )

    def edit(self, fn: Callable[[dict], dict]) -> dict:
        """`fn(tree)` made on the pending revision, kept once NVUE's object tree takes it (TopologyError:
        every problem, nothing kept); Conflict once it is being applied or was."""
        with self.lock:
            self._expect(EDITABLE)
            self.tree = from_tree(fn(copy.deepcopy(self.tree)), f"revision {self.id}").tree
            return self.tree

    def begin(self, yes: bool, wait: bool) -> bool:
        """pending (or ays_fail, asked again) -> apply: True, its apply is for the caller to run; a
        revision with places twin keeps but does not emulate and no yes -> ays_fail: False."""
        with self.lock:
            self._expect(APPLICABLE)
            stored = from_tree(self.tree, self.id).not_emulated
            if stored and not yes:
                self.state, self.issues = (
                    State.AYS_FAIL,
                    [
                        f"{show(p)} is stored, not emulated: apply with auto-prompt ays_yes (nv config apply -y) to "
                        "keep it"
                        for p in stored
                    ],
                )
                return False
            self.state, self.progress, self.issues, self.wait, self.warning = State.APPLY, "checking", [], wait, False
            return True

    def end(self, state: State, issues: list[str], progress: str, warning: bool = False) -> None:
        """apply -> applied or apply_fail, with what it says."""
        assert state in (State.APPLIED, State.APPLY_FAIL)
        with self.lock:
            assert self.state is State.APPLY, f"revision {self.id} ended while {self.state}"
            self.state, self.issues, self.progress, self.warning = state, issues, progress, warning

    def drop(self) -> None:
        """Gone from now on (`nv config detach`, DELETE); Conflict while it is being applied."""
        with self.lock:
            if self.state is State.APPLY:
                raise Conflict(f"revision {self.id} is being applied: it is dropped once it is done")
            self.gone = True

    def retire(self) -> bool:
        """Gone to make room (the node keeps MAX_REVISIONS), unless it is being applied: True when it went."""
        with self.lock:
            if self.state is State.APPLY:
                return False
            self.gone = True
            return True
