"""What a proof found: per element, how it was broken, whether verify caught it and with which
check, whether it was restored; the score "caught N of M"; JSON and JUnit."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twin.base import junit
from twin.prove.element import Element, Exempt
from twin.verify.result import Check


def line(c: Check) -> str:
    """A check as one line, "group: name: message": what an element's patterns are matched against."""
    return f"{c.group}: {c.name}: {c.message}"


@dataclass
class Outcome:
    element: Element
    named_by: list[Check] = field(default_factory=list)  # failing checks that name it
    also_failed: list[Check] = field(default_factory=list)  # other checks that failed meanwhile
    restored: bool = False
    detail: str = ""  # why it could not be broken or restored
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def caught(self) -> bool:
        return bool(self.named_by)

    @property
    def check(self) -> str:
        """The first check that named it, as "group: name"."""
        return f"{self.named_by[0].group}: {self.named_by[0].name}" if self.named_by else ""

    def to_dict(self) -> dict[str, Any]:
        e = self.element
        return {
            "id": e.id,
            "kind": e.kind,
            "node": e.node,
            "what": e.what,
            "broken_by": e.how,
            "restored_by": e.restored_by,
            "groups": list(e.groups),
            "caught": self.caught,
            "check": self.check,
            "named_by": [line(c) for c in self.named_by],
            "also_failed": [line(c) for c in self.also_failed],
            "restored": self.restored,
            "detail": self.detail,
            "seconds": self.seconds,
        }


@dataclass
class Proof:
    lab: str
    outcomes: list[Outcome] = field(default_factory=list)
    exempt: list[Exempt] = field(default_factory=list)
    total: int = 0  # elements of the lab (the proof may run a selection)
    seconds: float = 0.0
    aborted: str = ""

    @property
    def caught(self) -> int:
        return sum(o.caught for o in self.outcomes)

    @property
    def score(self) -> str:
        return f"caught {self.caught} of {len(self.outcomes)}"

    @property
    def passed(self) -> bool:
        return bool(self.outcomes) and not self.aborted and all(o.caught and o.restored for o in self.outcomes)

    def misses(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.caught]

    def to_dict(self) -> dict[str, Any]:
        return {
            "lab": self.lab,
            "passed": self.passed,
            "score": self.score,
            "caught": self.caught,
            "proved": len(self.outcomes),
            "elements": self.total,
            "seconds": self.seconds,
            "aborted": self.aborted,
            "outcomes": [o.to_dict() for o in self.outcomes],
            "exempt": [{"kind": x.kind, "where": x.where, "why": x.why} for x in self.exempt],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def write_junit(self, path: str | Path) -> None:
        write_junit(self.to_dict(), path)


def write_junit(doc: dict[str, Any], path: str | Path) -> None:
    """A proof (`Proof.to_dict`: here, or a server's) as JUnit XML: one testsuite per kind of
    element, one testcase per element."""

    def case(o: dict[str, Any]) -> junit.Case:
        out = junit.Case(f"twin.{doc['lab']}.prove", o["id"], time=f"{o['seconds'].get('total', 0):.2f}")
        if not o["caught"]:
            out.failure = f"verify did not notice: {o['broken_by']}"
            out.detail = "\n".join([o["what"], *o["also_failed"], o["detail"]])
        elif not o["restored"]:
            out.failure = f"not restored: {o['detail']}"
        else:
            out.detail = "\n".join(o["named_by"])
        return out

    by_kind: dict[str, list[dict[str, Any]]] = {}
    for o in doc["outcomes"]:
        by_kind.setdefault(o["kind"], []).append(o)
    junit.write(
        path,
        f"twin verify {doc['lab']} --prove",
        [
            junit.Suite(kind, [case(o) for o in outs], time=f"{sum(o['seconds'].get('total', 0) for o in outs):.2f}")
            for kind, outs in by_kind.items()
        ],
    )
