"""Quotas: what one user may hold at once (labs, FRR nodes, memory: the sum of the containers'
memory limits), and the host's capacity, which is twin's admission (kernel tables and CPU: the
same refusal `twin up` gives). A refused create is 409 with the numbers: the limit, what the
user holds, what the lab asks.

Limits come from the server's defaults (`twin serve --max-labs ...`), or a user's own
(`twin serve quota USER ...`); None is no limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from twin import kinds
from twin.lifecycle import admission
from twin.server.problems import ApiProblem
from twin.topology.model import Fabric

_SIZE = re.compile(r"(\d+)([kmg]?)i?b?", re.I)
_UNIT = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


@dataclass(frozen=True)
class Limits:
    labs: int | None = 3
    frr_nodes: int | None = 64
    memory: int | None = 16 << 30  # bytes

    def to_dict(self) -> dict[str, Any]:
        return {"labs": self.labs, "frr_nodes": self.frr_nodes, "memory": self.memory}


def size(text: str | int | None) -> int | None:
    """`512m`, `16g`, `8GiB`, or bytes; None for None."""
    if text is None or isinstance(text, int):
        return text
    m = _SIZE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a size: give a number and k, m or g (e.g. 16g)")
    return int(m.group(1)) * _UNIT[m.group(2).lower()]


def figures(fabric: Fabric) -> tuple[int, int]:
    """(FRR nodes, memory in bytes) a lab of `fabric` holds."""
    return admission.frr_nodes(fabric), sum(size(kinds.of(n).memory_limit) or 0 for n in fabric.nodes.values())


def limits_of(row: dict[str, Any] | None, default: Limits) -> Limits:
    if row is None:
        return default
    return Limits(
        default.labs if row.get("max_labs") is None else row["max_labs"],
        default.frr_nodes if row.get("max_frr") is None else row["max_frr"],
        default.memory if row.get("max_memory") is None else row["max_memory"],
    )


def check(user: str, held: list[dict[str, Any]], limits: Limits, lab: str, frr: int, memory: int) -> None:
    """409 naming every limit the new lab would pass, with the numbers."""
    have = {"labs": len(held), "frr_nodes": sum(r["frr_nodes"] for r in held), "memory": sum(r["memory"] for r in held)}
    asks = {"labs": 1, "frr_nodes": frr, "memory": memory}
    over = {
        k: {"limit": getattr(limits, k), "held": have[k], "asked": asks[k]}
        for k in have
        if getattr(limits, k) is not None and have[k] + asks[k] > getattr(limits, k)
    }
    if over:
        said = "; ".join(
            f"{k.replace('_', ' ')}: {v['held']:,} held + {v['asked']:,} asked > {v['limit']:,}"
            for k, v in over.items()
        )
        raise ApiProblem(
            409,
            f"lab {lab!r} would pass {user}'s quota: {said}; delete a lab (DELETE "
            "/v1/labs/NAME) or ask an admin for more",
            "quota",
            quota=over,
            limits=limits.to_dict(),
            held=have,
        )


def capacity(fabric: Fabric, timeout: float | None = None) -> None:
    """The host's word (twin's admission): NotAdmitted (409 with its figures) when it cannot take the lab."""
    admission.ensure(fabric, admission.CpuWatch().host(), timeout)
