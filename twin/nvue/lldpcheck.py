"""`twin verify`'s `lldp` group, which NVUE brings (`Dialect.groups`): LLDP as a cabling plan's check
(what Cumulus's PTM does with its topology.dot), on every link of the topology with an NVUE node at
an end. Each end whose port its node's lldpd sees (lldpd runs in the node's own namespace, in every
node of twin's image) must see the far end as the topology cables it: the far node's name as the
system name (a switch sends its host name), or the host name its NVUE gives it (`system hostname`,
a switch renamed) unless that is another node's name, the far port as the port id,
held for the TTL the far end's NVUE declares (`service lldp tx-interval` x `tx-hold-multiplier`;
twin's lldpd's own where it declares none).

Named otherwise, with what the port sees instead: nothing (a port NVUE sets down: Cumulus Linux 5.9's
NVUE has no other switch for LLDP on a port; 5.11's `interface X lldp state` is refused), another
system (a startup.yaml copied from another switch, its host name left: `spine1 swp2: sees leaf1 swp51,
not leaf2 swp51 as the topology cables it (leaf2 sends its NVUE system.hostname leaf1)`), or another
TTL (lldpd not running what NVUE declares). lldpd sends at once on a change, so what a port sees is
what the far end sends now; a neighbour missing is looked at again until `LLDP_SEEN` (a port just up),
unless a port set down explains it. `proof`: the elements `--prove` breaks (each NVUE node's system
name, named at the far end of its links).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from twin import kinds
from twin.base import timeouts, wait
from twin.base.errors import ConvergenceTimeout, TwinError
from twin.config.backend import Backend
from twin.config.overlay import port_ns
from twin.lifecycle.context import LabContext
from twin.nvue import lldp
from twin.nvue.configs import NvueNode, running
from twin.nvue.mtu import places
from twin.prove.element import Element, Kernel, alt
from twin.runtime import Lldpd, LldpNeighbor, read_lldpd
from twin.topology.model import Fabric
from twin.verify.result import Check

GROUP = "lldp"
PROOF = "twin-proof"  # the system name `--prove` makes a node's lldpd send


@dataclass(frozen=True)
class End:
    """One end of a judged link: its node and port, and what it must see there."""

    node: str
    port: str
    peer: str
    peer_port: str
    sends: lldp.Lldp  # what the far end's lldpd runs (its NVUE's, else twin's lldpd's own)
    nvue: bool  # the far end runs NVUE
    down: bool = False  # its own NVUE sets this port down: LLDP neither sends nor listens there
    peer_down: bool = False  # the far end's NVUE sets its port down
    taken: frozenset[str] = frozenset()  # the other nodes' names and NVUE host names: not the far end's

    @property
    def names(self) -> set[str]:
        """The system names the far end may send: its node name, its NVUE host name unless another's."""
        own = self.sends.system_name
        return {self.peer} | ({own} if own and own not in self.taken else set())

    @property
    def name(self) -> str:
        return f"{self.node} {self.port}"


def ends(fabric: Fabric, runs: dict[str, NvueNode], backend: Backend) -> list[End]:
    """Both ends of every link with an NVUE node at an end, where both ports are lldpd's: nodes of
    twin's image running FRR (hosts run no lldpd), ports in their node's own namespace."""
    ports = {n: _ports(fabric, n, runs.get(n), backend) for n in fabric.nodes}
    names = {n: {n, lldp.of(runs[n].file.tree, n).system_name or n} if n in runs else {n} for n in fabric.nodes}
    out = []
    for link in fabric.links:
        a, b = link.a, link.b
        if (a.node in runs or b.node in runs) and a.port in ports[a.node] and b.port in ports[b.node]:
            for x, y in ((a, b), (b, a)):
                ny = runs.get(y.node)
                sends = lldp.of(ny.file.tree, y.node) if ny else lldp.DEFAULT
                down, peer_down = ports[x.node][x.port], ports[y.node][y.port]
                taken = frozenset(set().union(*(v for m, v in names.items() if m != y.node)))
                out.append(End(x.node, x.port, y.node, y.port, sends, ny is not None, down, peer_down, taken))
    return out


def _ports(fabric: Fabric, node: str, run: NvueNode | None, backend: Backend) -> dict[str, bool]:
    """The ports of `node` its lldpd sends and listens on, each with whether its NVUE sets it down."""
    n = fabric.nodes[node]
    if not kinds.get(n.kind).runs_frr or n.image is not None:
        return {}
    if run is None:
        return {p: False for p in n.ports_by_name if not port_ns(fabric, node, p, backend)}
    p = run.plane
    down = {p.devices.get(name, name) for name in p.conf.down}
    return {dev: dev in down for ns, dev in places(p, backend).values() if not ns and dev in n.ports_by_name}


def judge(e: End, seen: list[LldpNeighbor]) -> Check:
    """What port `e` sees, against the far end the topology cables there."""
    want = {"system-name": e.peer, "port": e.peer_port, "ttl": e.sends.ttl}
    data = {"expected": want, "seen": [{"system-name": n.name, "port": n.port, "ttl": n.ttl} for n in seen]}
    if e.down:
        return Check(
            GROUP,
            e.name,
            False,
            f"down (its NVUE sets interface {e.port} link state down): LLDP neither sends nor listens there; "
            f"the topology cables {e.peer} {e.peer_port} there",
            data,
        )
    mine = next((n for n in seen if n.name in e.names and n.port == e.peer_port), None)
    if mine is not None and mine.ttl == e.sends.ttl:
        named = f", {e.peer}'s NVUE system.hostname" if mine.name != e.peer else ""
        return Check(GROUP, e.name, True, f"sees {mine.name} {e.peer_port}{named} (TTL {mine.ttl} s)", data)
    if mine is not None:
        by = (
            f"{e.peer}'s NVUE declares tx-interval {e.sends.tx_interval} x tx-hold-multiplier {e.sends.tx_hold}"
            if e.nvue
            else f"{e.peer}'s lldpd runs {e.sends.tx_interval} s x {e.sends.tx_hold}"
        )
        return Check(
            GROUP, e.name, False, f"sees {e.peer} {e.peer_port} held for {mine.ttl} s, not {e.sends.ttl} s: {by}", data
        )
    why = (
        f" ({e.peer}'s NVUE sets {e.peer_port} link state down)"
        if e.peer_down
        else f" ({e.peer} sends its NVUE system.hostname {e.sends.system_name})"
        if e.sends.system_name
        else ""
    )
    if not seen:
        return Check(
            GROUP, e.name, False, f"sees no LLDP neighbour; the topology cables {e.peer} {e.peer_port} there{why}", data
        )
    others = ", ".join(f"{n.name or n.chassis_id} {n.port}" for n in seen)
    return Check(
        GROUP, e.name, False, f"sees {others}, not {e.peer} {e.peer_port} as the topology cables it{why}", data
    )


def run(ctx: LabContext) -> list[Check]:
    runs = running(ctx.dir, ctx.fabric, ctx.backend, ctx.shaping)
    es = ends(ctx.fabric, runs, ctx.backend) if runs else []
    got: dict[str, Lldpd] = {}
    problems: dict[str, str] = {}
    checks: list[Check] = []

    def probe() -> list[str]:
        for node in sorted({e.node for e in es if not e.down} - set(problems)):
            try:
                got[node] = read_lldpd(ctx.exec(node))
            except TwinError as err:
                problems[node] = str(err).splitlines()[0]
        checks[:] = [
            judge(e, got[e.node].neighbors.get(e.port, []) if e.node in got else [])
            if e.node in got or e.down
            else Check(GROUP, e.name, False, f"{e.node}'s lldpd does not answer: {problems[e.node]}")
            for e in es
        ]
        return [  # a neighbour not known yet (a port just up): what sees another is what the far end sends
            f"{c.name}: {c.message}"
            for c, e in zip(checks, es)
            if not c.passed and not (e.down or e.peer_down or e.node in problems or got[e.node].neighbors.get(e.port))
        ]

    try:
        wait.until(probe, timeouts.LLDP_SEEN, "every LLDP neighbour as the topology cables it", first=0.5, cap=2.0)
    except ConvergenceTimeout:
        pass  # the last look is the verdict: what is still not as cabled, named
    return checks


def elements(fabric: Fabric, runs: dict[str, NvueNode], backend: Backend) -> list[Element]:
    """`--prove`'s LLDP elements: each NVUE node's system name, as its neighbours must see it, replaced
    (`lldpcli configure system hostname twin-proof`, its timers kept) and named by this group at the far
    end of each of its judged links; put back by the node's own lldpcli step."""
    es = ends(fabric, runs, backend)
    out = []
    for node in sorted(runs):
        seen_by = sorted(e.name for e in es if e.peer == node and not (e.down or e.peer_down))
        if not seen_by:
            continue
        mine = lldp.of(runs[node].file.tree, node)
        out.append(
            Element(
                f"lldp {node}",
                "LLDP system name",
                node,
                f"the system name {node}'s lldpd sends ({mine.system_name or node})",
                (GROUP,),
                (rf"^{GROUP}: {alt(seen_by)}: sees {re.escape(PROOF)} ",),
                (Kernel(node, (replace(mine, system_name=PROOF).step(),)),),
                (Kernel(node, (mine.step(),)),),
            )
        )
    return out
