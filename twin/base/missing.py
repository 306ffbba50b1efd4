"""What a failed wait still misses, grouped by node and kind: a failed `twin up` says it without -v.

The barrier names each missing item as `NODE: what` (`twin.lifecycle.barrier`); here they are
grouped by node, then by kind (BGP sessions, loopback routes, VNIs, EVPN routes of each tenant,
FRR itself), in the order the nodes first appear, and shown a dozen in full with the count of
the rest (`lines`), the same in the terminal, in `--json` (`to_dicts`) and in JUnit (a case a group).

    lines(["leaf1: BGP session on swp1 to spine1 is Active", ...])
    -> ["leaf1, sessions (1):", "  - leaf1: BGP session on swp1 to spine1 is Active", ...]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SHOWN = 12  # items shown in full; the rest counted, per group
_TENANT = re.compile(r"^tenant (\S+): ")
# a kind: the first pattern an item's text matches (after `NODE: `)
KINDS = (
    ("sessions", re.compile(r"BGP session|bgpd started none|sessions? (?:on|to) ")),
    ("FRR", re.compile(r"FRR |not known yet|cannot read its kernel state|daemon")),
    ("VNIs", re.compile(r"\bVNIs?\b(?!.*type-)")),
    ("loopback routes", re.compile(r"loopback|no route to|default route|stale route")),
    ("adjacencies", re.compile(r"adjacenc|neighbor|OSPF|IS-IS")),
)


@dataclass
class Group:
    node: str
    kind: str
    items: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{self.node}, {self.kind}" if self.node else self.kind


def kind_of(text: str) -> str:
    """The kind of one item's text (without its node): EVPN routes of a tenant are `EVPN routes (tenant T)`."""
    m = _TENANT.match(text)
    if m:
        return f"EVPN routes (tenant {m[1]})"
    return next((k for k, pattern in KINDS if pattern.search(text)), "other")


def split(item: str) -> tuple[str, str]:
    """(node, the rest) of `NODE: what`; ("", item) where it names no node."""
    node, sep, rest = item.partition(": ")
    if not sep or " " in node or not node:
        return "", item
    return node, rest


def group(items: list[str]) -> list[Group]:
    """Items grouped by node (in the order nodes first appear), then kind (in the same order)."""
    out: dict[tuple[str, str], Group] = {}
    for item in items:
        node, rest = split(item)
        g = out.setdefault((node, kind_of(rest)), Group(node, kind_of(rest)))
        g.items.append(item)  # whole: each line says its node, as the barrier said it
    order = {n: i for i, n in reversed(list(enumerate(g.node for g in out.values())))}
    return sorted(out.values(), key=lambda g: order[g.node])


def lines(items: list[str], shown: int = SHOWN) -> list[str]:
    """The grouped list: a header per group with its count, the first `shown` items of all in full,
    then per group the count of the rest, and a last line with the total left out."""
    out, left = [], shown
    rest: list[str] = []
    for g in group(items):
        head = g.items[: max(0, left)]
        left -= len(head)
        if head:
            out.append(f"{g.title} ({len(g.items)}):")
            out += [f"  - {i}" for i in head]
            if len(g.items) > len(head):
                out.append(f"  ... and {len(g.items) - len(head)} more")
        else:
            rest.append(f"{g.title} {len(g.items)}")
    if rest:
        out.append(f"... and {len(rest)} more group{'s' if len(rest) > 1 else ''}: " + ", ".join(rest))
    return out


def to_dicts(items: list[str]) -> list[dict]:
    """The groups for `--json`: node, kind, count and every item."""
    return [{"node": g.node, "kind": g.kind, "count": len(g.items), "items": g.items} for g in group(items)]
