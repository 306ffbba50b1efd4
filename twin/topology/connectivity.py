"""Can the fabric ever converge? Every router needs a BGP neighbour, and all routers one fabric.

Judged on the links that were resolved. A link already reported as wrong must
not make its nodes look isolated too, so a router named by such a link is
given the benefit of the doubt, and islands are only looked for when every
link and node is sound.
"""

from __future__ import annotations

from typing import Iterable

from twin.kinds import KINDS, Kind
from twin.topology.model import Link
from twin.topology.problems import Problems, listing
from twin.topology.schema import TopologySpec

SHOWN_ISLANDS = 4


def check_connectivity(
    spec: TopologySpec, kinds: dict[str, Kind], resolved: dict[int, Link], problems: Problems, broken: set[str]
) -> None:
    links = [link for link in spec.links if link is not None]
    if len(links) < len(spec.links):
        return  # a malformed link might name any node: no guessing
    routers = [n for n in kinds if kinds[n].runs_bgp]
    named = {ep.partition(":")[0] for link in links for ep in link.endpoints}
    unsure = {ep.partition(":")[0] for i, link in enumerate(links) if i not in resolved for ep in link.endpoints}
    peers = _bgp_neighbours(kinds, resolved.values())
    speakers = ", ".join(k.name for k in KINDS.values() if k.runs_bgp)
    for n in routers:
        if n not in named:
            problems.add(("nodes", n), "has no link to a BGP peer, so it could never converge")
        elif not peers.get(n) and n not in unsure:
            others = ", ".join(k.name for k in KINDS.values() if not k.runs_bgp)
            problems.add(
                ("nodes", n),
                f"is linked only to nodes that run no BGP of the fabric ({others}): it needs "
                f"a link to another BGP node ({speakers}) to ever converge",
            )
    if unsure or broken:
        return
    islands = _islands([n for n in routers if peers.get(n)], peers)
    if len(islands) > 1:
        shown = " and ".join("{" + listing(island, 6) + "}" for island in islands[:SHOWN_ISLANDS])
        more = f" and {len(islands) - SHOWN_ISLANDS} more" if len(islands) > SHOWN_ISLANDS else ""
        problems.add(
            ("links",),
            f"the BGP nodes form {len(islands)} islands that can never reach each other: "
            f"{shown}{more}; link them into one fabric",
        )


def _bgp_neighbours(kinds: dict[str, Kind], links: Iterable[Link]) -> dict[str, set[str]]:
    peers: dict[str, set[str]] = {}
    for link in links:
        a, b = link.a.node, link.b.node
        if kinds[a].runs_bgp and kinds[b].runs_bgp:
            peers.setdefault(a, set()).add(b)
            peers.setdefault(b, set()).add(a)
    return peers


def _islands(routers: list[str], peers: dict[str, set[str]]) -> list[list[str]]:
    """Connected groups of routers, each in file order, in the order of their first router."""
    position = {n: i for i, n in enumerate(routers)}
    island_of: dict[str, int] = {}
    islands: list[list[str]] = []
    for start in routers:
        if start in island_of:
            continue
        island_of[start] = len(islands)
        todo, members = [start], {start}
        while todo:
            for peer in peers.get(todo.pop(), ()):
                if peer not in island_of:
                    island_of[peer] = len(islands)
                    members.add(peer)
                    todo.append(peer)
        islands.append(sorted(members, key=position.__getitem__))
    return islands
