"""`twin baseline compare`: the lab now against a recorded baseline, per node and VRF.

    result = compare(lab, load_baseline("baseline.json"), allow=load_allow("allow.yml"))   # baseline_file
    result.passed          # no difference the allow rules do not cover
    result.differences     # every one: node, vrf, what, key, change, before, after, allowed_by

What disappeared, what appeared and what changed: sessions (state), prefix
counts (per peer and AFI), routes (protocol and next hops), VNIs (remote VTEPs,
MAC and neighbour counts). Right after a change some counters still move, so
the lab is read again until nothing unallowed differs or `settle` seconds pass:
a real difference costs that long, a clean lab one read.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from twin.base import timeouts, wait
from twin.base.errors import ConvergenceTimeout
from twin.lifecycle.context import LabLike, context_of
from twin.runtime import labelled
from twin.topology.allow import AllowRule
from twin.verify import baseline


@dataclass(frozen=True)
class Difference:
    node: str
    vrf: str
    what: str  # session, prefixes, route, vni
    key: str  # prefix, "AFI PEER", VNI
    change: str  # appeared, disappeared, changed
    before: Any
    after: Any
    allowed_by: str = ""  # the rule that allows it (its reason, else the rule)

    def line(self) -> str:
        how = {
            "appeared": f"appeared: {show(self.after)}",
            "disappeared": f"disappeared (was {show(self.before)})",
            "changed": f"changed: {show(self.before)} -> {show(self.after)}",
        }[self.change]
        return f"{self.node} vrf {self.vrf}: {self.what} {self.key} {how}"


@dataclass
class Comparison:
    lab: str
    baseline_lab: str
    recorded: str
    differences: list[Difference] = field(default_factory=list)
    reads: int = 0

    @property
    def unallowed(self) -> list[Difference]:
        return [d for d in self.differences if not d.allowed_by]

    @property
    def allowed(self) -> list[Difference]:
        return [d for d in self.differences if d.allowed_by]

    @property
    def passed(self) -> bool:
        return not self.unallowed

    def counts(self) -> dict[str, int]:
        out = {c: 0 for c in ("disappeared", "appeared", "changed")}
        for d in self.unallowed:
            out[d.change] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "lab": self.lab,
            "baseline_lab": self.baseline_lab,
            "baseline_recorded": self.recorded,
            "passed": self.passed,
            "unallowed": self.counts(),
            "allowed": len(self.allowed),
            "reads": self.reads,
            "differences": [asdict(d) for d in self.differences],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)

    def text(self) -> str:
        c = self.counts()
        head = f"baseline of {self.baseline_lab} ({self.recorded}) vs {self.lab}: " + (
            "no difference"
            if not self.differences
            else f"{len(self.unallowed)} not allowed ({c['disappeared']} disappeared, {c['appeared']} appeared, "
            f"{c['changed']} changed), {len(self.allowed)} allowed"
        )
        lines = [head] + [
            f"  {'allowed ' if d.allowed_by else 'DIFFERS '}{d.line()}"
            + (f"  [{d.allowed_by}]" if d.allowed_by else "")
            for d in self.differences
        ]
        return "\n".join(lines) + "\n"


def differences(before: dict, after: dict, allow: Sequence[AllowRule] = ()) -> list[Difference]:
    """Every difference between two baselines, sorted by node, VRF, what and key; each marked
    with the first allow rule that covers it."""
    b, a = baseline.items(before), baseline.items(after)
    out = []
    for k in sorted(set(b) | set(a)):
        if k in b and k in a and b[k] == a[k]:
            continue
        change = "appeared" if k not in b else "disappeared" if k not in a else "changed"
        rule = next((r for r in allow if r.matches(*k, change)), None)
        out.append(
            Difference(*k, change, b.get(k), a.get(k), (rule.reason or f"allowed: {rule.describe()}") if rule else "")
        )
    return out


def compare(
    lab: LabLike, base: dict, allow: Sequence[AllowRule] = (), settle: float = timeouts.BASELINE_SETTLE
) -> Comparison:
    """The running lab against `base`; read again for up to `settle` s while anything unallowed differs."""
    ctx = context_of(lab)
    result = Comparison(ctx.name, str(base.get("lab", "?")), str(base.get("recorded", "?")))

    def probe() -> list[str]:
        with labelled("baseline"):
            now = baseline.record(ctx)
        result.differences = differences(base, now, allow)
        result.reads += 1
        return [d.line() for d in result.unallowed]

    try:
        wait.until(probe, settle, "the lab matching its baseline", first=0.5, cap=2.0)
    except ConvergenceTimeout:
        pass  # what still differs is the answer
    return result


def show(value: Any) -> str:
    """A value of a baseline in words: "-" for none, "k v, ..." for a mapping, lists bracketed."""
    if value is None:
        return "-"
    if isinstance(value, dict):
        return ", ".join(f"{k} {show(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return str(value)
