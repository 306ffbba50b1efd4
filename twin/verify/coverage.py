"""What a verify run did not exercise of the lab's services: a passing run never claims more than it measured.

A rate limit or congestion point is not exercised when its group did not run (`--only`),
when no flood can drive it in this lab (the group says why), or when its check ended
"not judged" (the host too slow to drive it, after every attempt).
"""

from __future__ import annotations

from twin.topology.model import Fabric
from twin.verify import congestion, limits
from twin.verify.result import Report


def safeguards(fabric: Fabric) -> dict[str, list[str]]:
    """Per group, the services' safeguards it exercises, in words."""
    return {
        "performance": [limits.label(a, d, rate) for _, a, d, rate in limits.declared(fabric)],
        "congestion": [congestion.label(p) for p in fabric.congestion],
    }


def not_exercised(fabric: Fabric, ran: list[str], report: Report) -> list[dict]:
    out = []
    for group, labels in safeguards(fabric).items():
        if group not in ran:
            out += [{"safeguard": s, "why": f"the {group} group did not run"} for s in labels]
            continue
        out += (report.extra.get(group) or {}).get("not_exercised", [])
        out += [
            {"safeguard": c.name, "why": c.message}
            for c in report.checks
            if c.group == group and c.message.startswith("not judged")
        ]
    return out
