"""What `twin verify` judges of what NVUE declares beyond twin's intent (issue 44), group
`protocols`: each neighbor (or peer group) with BFD has its BFD session Up at the timers set, and
each session whose timers are set runs them (a peer that sets lower ones makes the session run
those: named). Read from FRR in one vtysh call per node that declares any: bgpd's neighbors (the
session's state, the timers) and bfdd's sessions (the BFD timers they run: bgpd reports its own
defaults for a neighbor whose BFD comes from a profile).

    checks(ctx)      # [Check], none where no NVUE node declares BFD or timers
    protocols(ctx)   # the group: these and the route policy (twin.nvue.policycheck)
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.base import timeouts
from twin.base.errors import TwinError
from twin.lifecycle.context import LabContext
from twin.nvue import policycheck, routing
from twin.nvue.configs import running
from twin.nvue.model import Bfd, NodeConf
from twin.verify.result import Check

GROUP = "protocols"
NEIGHBORS = "show bgp vrf all neighbors json"
SESSIONS = "show bfd peers json"  # bfdd's sessions: the BFD timers they run


@dataclass(frozen=True)
class Wanted:
    """One neighbor's BFD and timers as its NVUE sets them (its own, else its peer group's)."""

    vrf: str  # FRR's (kernel) VRF
    peer: str  # FRR's key: the port of an unnumbered neighbor, else its address
    bfd: Bfd | None
    timers: tuple[int, int] | None  # keepalive, hold


def wanted(conf: NodeConf, devices: dict[str, str], vrfs: dict[str, str]) -> list[Wanted]:
    out = []
    for vrf, b in conf.bgp_instances(vrfs):
        for name, p in b.neighbors.items() if b else ():
            g = b.peer_groups.get(p.peer_group or "") if b else None
            bfd = p.bfd or (g.bfd if g else None)
            timers = p.timers or (g.timers if g else None)
            if bfd or timers:
                out.append(Wanted(vrf, devices.get(name, name), bfd, timers))
    return out


def protocols(ctx: LabContext) -> list[Check]:
    """NVUE's protocols group: BFD and BGP timers (here), the route policy (`twin.nvue.policycheck`)."""
    return checks(ctx) + policycheck.checks(ctx)


def checks(ctx: LabContext) -> list[Check]:
    out: list[Check] = []
    nodes = running(ctx.dir, ctx.fabric, ctx.backend, ctx.shaping)
    for node, x in nodes.items():
        want = wanted(x.plane.conf, x.plane.devices, x.plane.vrfs)
        if not want:
            continue
        try:
            doc, sessions = ctx.exec(node).vtysh_json(NEIGHBORS, SESSIONS, timeout=timeouts.VTYSH)
        except TwinError as e:
            out.append(Check(GROUP, f"bgp neighbors {node}", False, f"cannot read BGP neighbors: {e}"))
            continue
        bfd = [problem for w in want if w.bfd for problem in _bfd(w, _peer(doc, w), session(sessions, w))]
        timers = [problem for w in want if w.timers for problem in _timers(w, _peer(doc, w))]
        if any(w.bfd for w in want):
            out.append(
                Check(
                    GROUP,
                    f"bfd {node}",
                    not bfd,
                    "; ".join(bfd),
                    {"neighbors": {w.peer: vars(w.bfd) for w in want if w.bfd}},
                )
            )
        if any(w.timers for w in want):
            out.append(
                Check(
                    GROUP,
                    f"bgp timers {node}",
                    not timers,
                    "; ".join(timers),
                    {"neighbors": {w.peer: w.timers for w in want if w.timers}},
                )
            )
    return out + routing.checks(ctx, nodes)  # OSPF adjacencies and static routes (twin.nvue.routing)


def _peer(doc: dict, w: Wanted) -> dict | None:
    """The neighbor's entry in `show bgp vrf all neighbors json` ({vrf: {peer: {...}}})."""
    got = doc.get(w.vrf, {}).get(w.peer) if isinstance(doc, dict) and isinstance(doc.get(w.vrf), dict) else None
    return got if isinstance(got, dict) else None


def session(sessions: object, w: Wanted) -> dict | None:
    """bfdd's session for the neighbor in `show bfd peers json` (a list): by its port for an unnumbered
    neighbor, else by its address, in the neighbor's VRF."""
    for s in sessions if isinstance(sessions, list) else []:
        if isinstance(s, dict) and s.get("vrf", "default") == w.vrf and w.peer in (s.get("interface"), s.get("peer")):
            return s
    return None


def _where(w: Wanted) -> str:
    return w.peer if w.vrf == "default" else f"{w.peer} (VRF {w.vrf})"


def _bfd(w: Wanted, p: dict | None, session: dict | None) -> list[str]:
    assert w.bfd is not None
    set_ = f"{w.bfd.multiplier} x {w.bfd.rx}/{w.bfd.tx} ms"
    if p is None:
        return [f"{_where(w)}: no such BGP neighbor in FRR (BFD {set_} set)"]
    info = p.get("peerBfdInfo")
    if not isinstance(info, dict):
        return [f"{_where(w)}: FRR runs no BFD for it (BFD {set_} set)"]
    out = []
    if str(info.get("status")).lower() != "up":
        out.append(
            f"{_where(w)}: BFD session {info.get('status', 'absent')} (BFD {set_} set; BGP "
            f"{p.get('bgpState', '?')}): its peer runs no BFD for this session, or cannot reach it"
        )
    if session is None:
        return out + [f"{_where(w)}: bfdd has no session for it (BFD {set_} set)"]
    runs = (session.get("detect-multiplier"), session.get("receive-interval"), session.get("transmit-interval"))
    if runs != (w.bfd.multiplier, w.bfd.rx, w.bfd.tx):
        out.append(f"{_where(w)}: BFD runs {runs[0]} x {runs[1]}/{runs[2]} ms, {set_} set")
    return out


def _timers(w: Wanted, p: dict | None) -> list[str]:
    assert w.timers is not None
    keep, hold = w.timers
    if p is None:
        return [f"{_where(w)}: no such BGP neighbor in FRR (timers {keep}/{hold} s set)"]
    conf = (p.get("bgpTimerConfiguredKeepAliveIntervalMsecs"), p.get("bgpTimerConfiguredHoldTimeMsecs"))
    if conf != (keep * 1000, hold * 1000):
        return [f"{_where(w)}: FRR has timers {_s(conf[0])}/{_s(conf[1])} s, {keep}/{hold} s set"]
    if p.get("bgpState") != "Established":
        return []  # the session's own check (control) says it is down; its timers are read once it runs
    runs = p.get("bgpTimerHoldTimeMsecs")
    if isinstance(runs, int) and runs > hold * 1000:
        return [
            f"{_where(w)}: hold {hold} s set, the session runs {_s(runs)} s: it opened before the timers were set "
            "and keeps what it negotiated then until it is re-established (clear bgp)"
        ]
    if runs != hold * 1000:
        return [
            f"{_where(w)}: hold {hold} s set, the session runs {_s(runs)} s (its peer sets a lower hold: "
            "a failure is detected in the peer's time, not this one's)"
        ]
    return []


def _s(ms: object) -> str:
    return f"{ms / 1000:g}" if isinstance(ms, (int, float)) else "?"
