"""One Change protocol for day 2, one result, one registry of names.

A change is anything that acts on a running lab: an edited topology, a
directory of node configs, or a fault. Each registers under one name (its
`key`), which is the only name it has: in the CLI (`twin fault KEY ...`), in
rehearse's `fault:KEY:...` specs, in JSON output and in docs/faults.md.

    change.check(ctx)       -> every reason it cannot be applied (nothing touched)
    change.plan(ctx)        -> Plan: what it would do
    change.inverse(ctx)     -> the change that undoes it, from the lab as it is now
    change.apply(ctx, ...)  -> Result: what was done
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar

if TYPE_CHECKING:
    from twin.change.plan import Plan
    from twin.lifecycle.context import LabContext
    from twin.topology.model import Fabric

Say = Callable[[str], None]


@dataclass
class Result:
    """What a change did."""

    lab: str
    kind: str  # the change's registry key
    target: str  # its source (file, directory) or target (NODE[:PORT])
    changes: list[str] = field(default_factory=list)  # what was done, one line each
    details: dict[str, Any] = field(default_factory=dict)
    undo: str = ""  # what reverts it, as a command line
    reloaded: list[str] = field(default_factory=list)  # FRR reloaded / restarted on these nodes
    restarted: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # applied, converged (s from the start)
    missing: list[str] = field(default_factory=list)  # not converged: what is still missing
    fabric: "Fabric | None" = field(default=None, repr=False)  # the lab's intent afterwards
    revert_with: Callable[[], "Result"] | None = field(default=None, repr=False)

    @property
    def source(self) -> str:
        return self.target

    @property
    def converged(self) -> bool:
        return not self.missing

    def revert(self) -> "Result | None":
        """Apply the undo; None for changes that revert themselves (a killed daemon)."""
        return self.revert_with() if self.revert_with else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "lab": self.lab,
            "kind": self.kind,
            "source": self.target,
            "changes": self.changes,
            "details": {k: v for k, v in self.details.items() if k != "ruleset"},
            "undo": self.undo,
            "reloaded": self.reloaded,
            "restarted": self.restarted,
            "timings": self.timings,
            "converged": self.converged,
            "missing": self.missing,
        }

    def __str__(self) -> str:
        how = ", ".join(f"{k}={v}" for k, v in self.details.items() if k != "ruleset")
        return (
            f"{self.kind} {self.target}" + (f" ({how})" if how else "") + (f"; undo: {self.undo}" if self.undo else "")
        )


class Change(ABC):
    key: ClassVar[str]  # the registry name
    summary: ClassVar[str]  # one line, for help texts
    fault: ClassVar[bool] = False  # a fault (`twin fault KEY`, `fault:KEY:...`)
    breaks_intent: ClassVar[bool] = False  # it knowingly breaks the intent (judged by the data plane)
    from_files: ClassVar[bool] = False  # its source names files (the lab's history records it resolved)

    @abstractmethod
    def describe(self) -> str:
        """The change in a few words, e.g. "link-down dpu1:p0"."""

    def check(self, ctx: "LabContext") -> list[str]:
        return []

    def plan(self, ctx: "LabContext") -> "Plan":
        from twin.change.plan import Plan

        return Plan(ctx.name, [self.describe()])

    def inverse(self, ctx: "LabContext") -> "Change | None":
        return None

    def hosts_out(self, ctx: "LabContext") -> frozenset[str]:
        """Hosts the change takes away: a rehearsal does not judge their flows."""
        return frozenset()

    @abstractmethod
    def apply(self, ctx: "LabContext", say: Say = lambda _: None, **options: Any) -> Result: ...


REGISTRY: dict[str, type[Change]] = {}


def register(cls: type[Change]) -> type[Change]:
    if cls.key in REGISTRY:
        raise ValueError(f"change {cls.key!r} registered twice")
    REGISTRY[cls.key] = cls
    return cls
