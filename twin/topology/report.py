"""`twin validate`: a topology file checked without raising, as a report for people or JSON.

    report = validate("lab.yml")
    report.valid            # True or False
    report.fabric           # the Fabric when valid, else None
    report.problems         # every Problem (file, path, message, line), empty when valid
    report.to_dict()        # for --json, see ValidationReport.to_dict

Pure: reads the file, touches nothing else.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from twin.base.errors import Problem, TopologyError
from twin.topology.build import load
from twin.topology.model import Fabric


@dataclass(frozen=True)
class ValidationReport:
    """The outcome of validating one topology file: the Fabric, or the problems."""

    file: str
    fabric: Fabric | None
    problems: tuple[Problem, ...] = ()

    @property
    def valid(self) -> bool:
        return self.fabric is not None and not self.problems

    def summary(self) -> dict | None:
        """What the fabric holds (None when invalid): nodes by kind, links, BGP sessions, tenants, VTEPs.

        `sessions` counts eBGP sessions, one per fabric link; `vteps` the nodes
        that terminate tenant VXLAN (those with an attached host).
        """
        f = self.fabric
        if f is None or self.problems:
            return None
        kinds = Counter(n.kind for n in f.nodes.values())
        return {
            "nodes": dict(kinds),
            "links": len(f.links),
            "sessions": len(f.sessions()) // 2,
            "tenants": len(f.tenants),
            "vteps": len({a.vtep for t in f.tenants.values() for a in t.attachments}),
        }

    def to_dict(self) -> dict:
        """{file, valid, problems: [{file, line, column, path, message}], summary} (summary: None when invalid;
        column: None where only the line is known)."""
        return {
            "file": self.file,
            "valid": self.valid,
            "problems": [
                {"file": p.file, "line": p.line, "column": p.column, "path": p.path, "message": p.message}
                for p in self.problems
            ],
            "summary": self.summary(),
        }


def validate(path: str | Path, name: str | None = None) -> ValidationReport:
    """Check a topology file (and the lab name `name`, if given) like `load`, but report instead of raising."""
    try:
        fabric = load(path, name=name)
    except TopologyError as e:
        return ValidationReport(str(path), None, tuple(e.problems))
    return ValidationReport(str(path), fabric)
