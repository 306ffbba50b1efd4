"""Structured check results: pass/fail, a message, and the data looked at."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from twin.base import junit
from twin.lint import Finding, explain


@dataclass
class Check:
    group: str  # control, traffic, isolation, underlay, zerotrust
    name: str  # what was checked, e.g. "bgp leaf1" or "red host1a -> host2a"
    passed: bool
    message: str = ""  # on failure: the cause, in words
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Report:
    lab: str
    checks: list[Check] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # per group
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the isolation matrix

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def groups(self) -> dict[str, list[Check]]:
        out: dict[str, list[Check]] = {}
        for c in self.checks:
            out.setdefault(c.group, []).append(c)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "lab": self.lab,
            "passed": self.passed,
            "seconds": self.seconds,
            "checks": [asdict(c) for c in self.checks],
            **self.extra,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)

    def explain(self, findings: list[Finding]) -> int:
        """Name the cause of each failing check that a lint finding of the lab's configs explains
        (`; see dpu1/startup.yaml:146 (bridge vlan 20 -> VNI 10202)`, and the findings in its data);
        returns how many checks it named a cause for."""
        named = 0
        for c in self.failures():
            causes = explain(c.group, c.name, c.message, findings)
            if causes:
                see = "; ".join(f.see for f in causes)
                c.message = f"{c.message}; {see}" if c.message else see
                c.data["lint"] = [str(f) for f in causes]
                named += 1
        return named

    def write_junit(self, path: str | Path) -> None:
        """JUnit XML: one testsuite per group, one testcase per check."""

        def case(group: str, c: Check) -> junit.Case:
            if c.passed:
                return junit.Case(f"twin.{self.lab}.{group}", c.name)
            return junit.Case(
                f"twin.{self.lab}.{group}",
                c.name,
                failure=c.message.splitlines()[0] if c.message else "failed",
                detail=c.message + ("\n" + json.dumps(c.data, indent=2, default=str) if c.data else ""),
            )

        junit.write(
            path,
            f"twin verify {self.lab}",
            [
                junit.Suite(group, [case(group, c) for c in checks], time=f"{self.seconds.get(group, 0):.3f}")
                for group, checks in self.groups().items()
            ],
        )
