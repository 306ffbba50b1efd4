"""JUnit XML, the one writer of it: `twin verify`, `--prove` and `twin rehearse` report through it.

write(path, "twin verify aipod", [Suite("control", [Case("twin.aipod.control", "bgp leaf1")])])
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Case:
    """One testcase: passed unless it has a `failure` message; `detail` is the failure's text,
    or a passing case's system-out (None: none)."""

    classname: str
    name: str
    failure: str | None = None
    detail: str | None = None
    time: str | None = None  # seconds, formatted as the report shows them


@dataclass
class Suite:
    name: str
    cases: list[Case] = field(default_factory=list)
    time: str | None = None

    @property
    def failures(self) -> int:
        return sum(c.failure is not None for c in self.cases)


def write(path: str | Path, name: str, suites: list[Suite], totals: bool = True) -> None:
    """Write `suites` as one <testsuites> document (`totals`: with the counts over all suites)."""
    root = ET.Element("testsuites", {"name": name, **(_counts(suites) if totals else {})})
    for s in suites:
        attrs = {"name": s.name, "tests": str(len(s.cases)), "failures": str(s.failures)}
        suite = ET.SubElement(root, "testsuite", attrs | ({"time": s.time} if s.time is not None else {}))
        for c in s.cases:
            attrs = {"classname": c.classname, "name": c.name} | ({"time": c.time} if c.time is not None else {})
            case = ET.SubElement(suite, "testcase", attrs)
            if c.failure is not None:
                ET.SubElement(case, "failure", {"message": c.failure}).text = c.detail
            elif c.detail is not None:
                ET.SubElement(case, "system-out").text = c.detail
    ET.indent(root)
    Path(path).write_text(ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")


def _counts(suites: list[Suite]) -> dict[str, str]:
    return {"tests": str(sum(len(s.cases) for s in suites)), "failures": str(sum(s.failures for s in suites))}
