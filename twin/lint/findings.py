"""What `twin lint` found: each finding names the file and line, the value as the config says it,
and what the topology's intent needs there and why; a report of every file read.

A finding is a warning by default (the lab's own verdict, the barrier and `twin verify`, still
decides), an error with `strict`. A file that cannot be read or run (a problem twin refuses) is
an error whatever `strict` says. Each finding also says which of `twin verify`'s checks it
explains (`explains`: regular expressions over "group: check: message"), so a failing check
can name its cause (`explain`).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from twin.base import junit
from twin.base.errors import Problem
from twin.lint.declared import At

SEE = 3  # findings a failing check names at most
# the causes a failing check names first: a finding about one segment or VRF before one about a whole node
FIRST = (
    "vlan-vni",
    "svi-vrf",
    "access-vlan",
    "gateway",
    "l3vni",
    "leak",
    "neighbor",
    "asn",
    "loopback",
    "ecmp",
    "mtu",
    "drain",
    "evpn",
    "vtep-source",
)


@dataclass(frozen=True)
class Finding:
    node: str
    rule: str  # its class: vlan-vni, l3vni, svi-vrf, access-vlan, vtep-source, ...
    at: At
    why: str  # what the intent needs there, and why
    explains: tuple[str, ...] = ()  # regexes over "group: check: message" of the checks it explains

    def __str__(self) -> str:
        return f"{self.at}: {self.why}"

    @property
    def see(self) -> str:
        """How a failing check names it: `see dpu1/startup.yaml:57 (bridge vlan 10 -> VNI 10201)`."""
        return f"see {self.at.where}" + (f" ({self.at.text})" if self.at.text else "")

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "rule": self.rule,
            "file": self.at.file,
            "line": self.at.line,
            "value": self.at.text,
            "why": self.why,
            "explains": list(self.explains),
        }

    @classmethod
    def of(cls, d: dict[str, Any]) -> "Finding":
        return cls(
            str(d["node"]),
            str(d["rule"]),
            At(str(d["file"]), d.get("line"), str(d.get("value", ""))),
            str(d["why"]),
            tuple(str(x) for x in d.get("explains", ())),
        )


@dataclass
class Report:
    """`twin lint`'s verdict on a set of config files against a topology."""

    topology: str
    files: list[str] = field(default_factory=list)  # every file read
    findings: list[Finding] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # files that cannot be read or run: errors
    seconds: float = 0.0

    def passed(self, strict: bool = False) -> bool:
        return not self.problems and not (strict and self.findings)

    def lines(self, strict: bool = False) -> list[str]:
        """Every problem and finding, one line each, with its severity."""
        level = "error" if strict else "warning"
        return [f"error: {p}" for p in self.problems] + [f"{level}: {f}" for f in self.findings]

    def summary(self, strict: bool = False) -> str:
        n, p = len(self.findings), len(self.problems)
        what = f"{n} finding{'s' if n != 1 else ''}" + (f", {p} problem{'s' if p != 1 else ''}" if p else "")
        kind = "" if not n else " (errors: --strict)" if strict else " (warnings; --strict makes them errors)"
        return (
            f"twin lint: {what}{kind} in {len(self.files)} file{'s' if len(self.files) != 1 else ''} "
            f"against {self.topology}, in {self.seconds:.2f}s"
        )

    def to_dict(self, strict: bool = False) -> dict[str, Any]:
        return {
            "topology": self.topology,
            "passed": self.passed(strict),
            "strict": strict,
            "files": self.files,
            "findings": [f.as_dict() for f in self.findings],
            "problems": [asdict(p) for p in self.problems],
            "seconds": round(self.seconds, 3),
        }

    def to_json(self, strict: bool = False) -> str:
        return json.dumps(self.to_dict(strict), indent=2)

    def write_junit(self, path: str | Path, strict: bool = False) -> None:
        """JUnit XML: a testcase per file read; its findings fail it with --strict, else they are its
        output; a problem fails it always."""
        cases = []
        for f in self.files:
            found = [str(x) for x in self.findings if x.at.file == f]
            wrong = [str(p) for p in self.problems if p.file == f]
            failed = wrong + (found if strict else [])
            first = failed[0] if failed else None
            cases.append(junit.Case("twin.lint", f, failure=first, detail="\n".join(failed or found) or None))
        cases += [
            junit.Case("twin.lint", p.file, failure=str(p), detail=str(p))
            for p in self.problems
            if p.file not in self.files
        ]
        junit.write(path, f"twin lint {self.topology}", [junit.Suite("lint", cases, time=f"{self.seconds:.3f}")])


def explain(group: str, name: str, message: str, findings: Iterable[Finding]) -> list[Finding]:
    """The findings that explain a failing check (at most SEE), in their order."""
    text = f"{group}: {name}: {message}"
    hits = [f for f in findings if any(re.search(x, text) for x in f.explains)]
    return sorted(hits, key=lambda f: FIRST.index(f.rule) if f.rule in FIRST else len(FIRST))[:SEE]
