"""What a bring-up is doing while the barrier waits: so a user can tell slow from stuck.

The barrier looks over the unfinished routers now and then, a window at a time (`Barrier.look`),
and hands what it saw here (the last seen of each router counts until it is read again): per
router, its BGP sessions evidenced (a route learned over the port) and the loopback routes it
holds, against its intent; and from FRR, on the router it waits for, sessions
that dropped after they had been Established (flaps). `line()` is the progress line, `causes()`
what a timeout names first about flapping sessions. Pure: the barrier does the reading.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from twin.base.missing import group
from twin.intent import NodeIntent


@dataclass(frozen=True)
class Counts:
    sessions: int = 0  # evidenced: a route learned over the session's port
    routes: int = 0  # loopback routes held

    def __add__(self, o: "Counts") -> "Counts":
        return Counts(self.sessions + o.sessions, self.routes + o.routes)


def lacking(n: NodeIntent, routes: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(router, loopback prefix) of every loopback router `n` has no route to."""
    return {(peer, p) for peer, p in n.loopbacks.items() if p not in routes}


def counts(n: NodeIntent, routes: dict[str, set[str]]) -> Counts:
    """What router `n` holds of its underlay intent, from its kernel routes."""
    return Counts(
        sum(1 for s in n.sessions if s.port in routes.get(n.peer_loopbacks[s.port], ())),
        sum(1 for p in n.loopbacks.values() if p in routes),
    )


def expected(n: NodeIntent) -> Counts:
    return Counts(len(n.sessions), len(n.loopbacks))


@dataclass(frozen=True)
class Flap:
    node: str
    port: str
    peer: str
    again: int  # times re-established
    dropped: int
    state: str  # now

    def __str__(self) -> str:
        now = "" if self.state == "Established" else f", now {self.state}"
        if not self.again:  # dropped and not up since (its peer restarted, say): no flap yet
            return f"{self.node} to {self.peer} ({self.port}) dropped {_times(self.dropped)}{now}"
        return f"{self.node} to {self.peer} ({self.port}) re-established {self.again} times{now}"


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


@dataclass
class Progress:
    intents: dict[str, NodeIntent]  # routers of twin's rendering (a user's routers have no counts)
    seen: dict[str, Counts] = field(default_factory=dict)
    flaps: dict[tuple[str, str], Flap] = field(default_factory=dict)
    looked: bool = False
    lacks: dict[str, set[tuple[str, str]]] = field(default_factory=dict)  # router -> loopbacks it lacks

    def saw(self, node: str, c: Counts | None, lacks: set[tuple[str, str]] | None = None) -> None:
        if c is not None:
            self.seen[node] = c
        if lacks is not None:
            self.lacks[node] = lacks

    def done(self, node: str) -> None:
        if node in self.intents:
            self.seen[node] = expected(self.intents[node])

    def flapped(self, node: str, found: dict[str, tuple[int, int, str]]) -> None:
        """FRR's counters of `node`'s sessions (`twin.runtime.frr.flaps`); they only grow."""
        n = self.intents.get(node)
        peers = {s.port: s.peer for s in n.sessions} if n else {}
        new = {(node, port): Flap(node, port, peers.get(port, "?"), a, d, s) for port, (a, d, s) in found.items()}
        self.flaps = {**self.flaps, **new}  # one rebinding: the barrier's look runs beside the progress line

    def totals(self) -> tuple[Counts, Counts]:
        have = sum(self.seen.values(), Counts())
        return have, sum(map(expected, self.intents.values()), Counts())

    def line(self, done: int, routers: int, waiting: str) -> str:
        head = f"converging: {done}/{routers} routers done"
        if self.looked and self.intents:
            have, want = self.totals()
            head += (
                f", sessions {have.sessions:,}/{want.sessions:,} up, loopback routes "
                f"{have.routes:,}/{want.routes:,} learned"
            )
            if len(self.seen) < len(self.intents):  # the looks have not read every router yet
                head += f" (on the {len(self.seen)} of {len(self.intents)} routers read so far)"
        worst = sorted(self.flaps.values(), key=lambda f: -f.dropped)
        label = "flapping" if any(f.again for f in worst) else "sessions lost"
        flapping = (
            f"; {label}: {'; '.join(map(str, worst[:3]))}" + (f" (+{len(worst) - 3} more)" if len(worst) > 3 else "")
            if worst
            else ""
        )
        return f"{head}; waiting for {waiting}{flapping}"

    def unannounced(self) -> list[str]:
        """Routers whose loopback most of the others lack: most likely they do not announce it."""
        count = Counter(lo for los in self.lacks.values() for lo in los)
        return [
            f"{peer}'s loopback {p} is missing on {k} of {len(self.lacks)} routers read: {peer} does not "
            f"announce it? (`show bgp ipv4 unicast {p}` on {peer} says)"
            for (peer, p), k in sorted(count.items())
            if k >= max(2, len(self.lacks) / 2)
        ]

    def causes(self, timers: str) -> list[str]:
        """A timeout's first words on routers that announce no loopback, then on flapping sessions."""
        if not self.flaps:
            return self.unannounced()
        worst = sorted(self.flaps.values(), key=lambda f: -f.dropped)
        return self.unannounced() + [
            f"sessions flapped: {len(worst)} dropped after they were Established ({timers}), e.g. "
            + "; ".join(map(str, worst[:5]))
            + ": their peers missed keepalives for a hold time, as on a "
            "host too busy for the lab; `twin validate` shows the timers and time `twin up` expects here"
        ]


HOLDUPS = 3  # nodes a progress line names, with what each still lacks


def holdups(left: dict[str, list[str]], limit: int = HOLDUPS) -> str:
    """The nodes holding convergence back, those lacking the most first, each with what it lacks by kind
    (`leaf246: FRR not answering yet (exit 1)`; `leaf3: sessions 2, loopback routes 1`), pure."""
    worst = sorted(left, key=lambda n: (-len(left[n]), n))
    said = []
    for node in worst[:limit]:
        groups = group(left[node])
        if len(left[node]) == 1:
            said.append(left[node][0] if left[node][0].startswith(f"{node}: ") else f"{node}: {left[node][0]}")
        else:
            said.append(f"{node}: " + ", ".join(f"{g.kind} {len(g.items)}" for g in groups))
    more = f" (+{len(worst) - limit} more nodes)" if len(worst) > limit else ""
    return "; ".join(said) + more
