"""`twin rehearse`: run a change on the twin with traffic flowing, and report what it broke.

    report = rehearse(lab, "topologies/aipod-drain-spine1.yml", Thresholds(max_loss=0))
    print(report.text()); assert report.passed

Any registered change can be rehearsed: an edited topology file, a directory of
node configs, or a fault (`fault:KEY:TARGET[:ARG]`, KEY any of `twin fault`'s).

1. snapshot the operational state (`snapshot`);
2. start background RoCEv2 flows between all same-tenant host pairs
   (`twin.traffic.stream`), and let them run a baseline second;
3. make the change;
4. wait until the control plane has converged to the intent and the data plane
   is whole again (no flow lost a packet over the last second);
5. snapshot again, stop the flows, run `twin verify` (a fault knowingly breaks
   the intent: then only the data-plane groups, traffic and isolation, judge);
6. report (`report`): per flow packets lost and the longest outage, sessions that
   flapped, routes added and removed per tenant, time to reconverge, the
   verification result, and pass/fail against the user's thresholds;
7. `rollback`: apply the change's inverse (the previous intent, or the fault's
   undo) and verify again.

With `noisy=HOST`, a noisy neighbour floods from HOST to a peer of its tenant all
along (`twin.traffic.flood`): HOST's own flows are not judged, everyone else's
are, and the report gives the flood's figures and whether it was held to its limit.
With a `baseline` (`twin baseline record`), the lab is compared with it after the
change and, with `rollback`, after the rollback (differences the `allow` rules
cover aside, in both): both comparisons join the report.
"""

from __future__ import annotations

import time
from typing import Callable

from twin import verify
from twin.base import timeouts, wait
from twin.base.errors import ConvergenceTimeout, TwinError
from twin.change import load_change
from twin.change.base import Change, Result
from twin.change.report import Rehearsal, Thresholds
from twin.change.snapshot import flapped, route_changes, snapshot
from twin.lifecycle import barrier
from twin.lifecycle.context import LabContext, context_of
from twin.observe import store
from twin.observe.collector import Collector
from twin.topology.names import match_node
from twin.traffic import flows as F
from twin.traffic import stream as S
from twin.traffic.flood import Flood
from twin.traffic.results import summarise
from twin.verify import performance
from twin.verify.compare import compare

Say = Callable[[str], None]
DATA_PLANE_GROUPS = ["traffic", "isolation"]

__all__ = ["rehearse", "Rehearsal", "Thresholds"]


def rehearse(
    lab: F.Target,
    change: str,
    thresholds: Thresholds | None = None,
    rollback: bool = False,
    budget_pps: float = S.BUDGET_PPS,
    say: Say = lambda _: None,
    noisy: str | None = None,
    baseline: dict | None = None,
    allow: tuple = (),
) -> Rehearsal:
    ctx = context_of(lab)
    with ctx.writing(f"twin rehearse {change}"):  # refused at once while another twin changes the lab
        return _rehearse(ctx, change, thresholds, rollback, budget_pps, say, noisy, baseline, allow)


def _rehearse(
    ctx: LabContext,
    change: str,
    thresholds: Thresholds | None,
    rollback: bool,
    budget_pps: float,
    say: Say,
    noisy: str | None,
    baseline: dict | None,
    allow: tuple,
) -> Rehearsal:
    rep = Rehearsal(ctx.name, change, thresholds=thresholds or Thresholds())
    c = load_change(ctx, change)  # an unreadable change or fault is refused before any traffic
    flood = _flood(ctx, noisy) if noisy else None
    rep.noisy_host = noisy
    undo = c.inverse(ctx)
    rep.hosts_out = sorted(c.hosts_out(ctx))
    say("snapshot of the operational state")
    before = snapshot(ctx)
    flows = S.pair_flows(ctx.fabric)
    if not flows:
        raise TwinError(f"lab {ctx.name!r} has no same-tenant host pairs to send traffic between")
    with Collector(ctx) as watch:  # the change window's events: drops, carrier, sessions, routes, stages
        since = time.time()
        after_ctx = _under_traffic(ctx, c, flows, rep, budget_pps, say, flood)
        watch.round(control=True)
    rep.events = store.read(ctx.dir, since=since)
    after = snapshot(after_ctx)
    rep.flapped = flapped(before, after)
    rep.routes = route_changes(before, after)
    if baseline is not None:
        say("comparing with the baseline")
        rep.baseline = compare(after_ctx, baseline, allow)
    if rollback and not (rep.error and not c.breaks_intent):  # a failed apply was refused or rolled back already
        _roll_back(after_ctx, c, undo, rep, say)
        if baseline is not None:
            rep.baseline_rollback = compare(after_ctx.refresh(), baseline, allow)
    return rep


def _flood(ctx: LabContext, host: str) -> Flood:
    """The noisy neighbour's flood: from `host` (as the user typed it: `HOST1A` is host1a) to a peer
    of its tenant (refused before any traffic)."""
    named = match_node(host, ctx.fabric.nodes)
    host = named[0] if len(named) == 1 else host
    found = ctx.fabric.attachment_of(host)
    if found is None:
        raise TwinError(
            f"--noisy-neighbour {host!r} is not a host endpoint of {ctx.name}; hosts: {', '.join(F.hosts(ctx.fabric))}"
        )
    t, a = found
    dst = performance.peer(ctx.fabric, t, a)
    if dst is None:
        raise TwinError(f"--noisy-neighbour {host}: tenant {t.name} has no other host to flood")
    return Flood(ctx, F.flow(ctx.fabric, host, dst.host, 0x7FFF, payload=performance.PAYLOAD, sport=51000))


def _under_traffic(
    ctx: LabContext, c: Change, flows: list, rep: Rehearsal, budget_pps: float, say: Say, flood: Flood | None = None
) -> LabContext:
    """Apply `c` with the streams (and a noisy neighbour's flood) running; returns the lab judged
    against its new intent."""
    now = ctx
    with S.Stream(ctx, flows, budget_pps=budget_pps) as s:
        rep.rate_pps = s.rate
        say(f"{len(flows)} RoCE flows at {s.rate:.0f} pps each: baseline")
        if flood is not None:
            say(f"noisy neighbour: {flood.flow.src} floods {flood.flow.dst}")
            flood.start()
        s.hold(timeouts.REHEARSE_BASELINE)
        t0 = s.mark("change")
        say(c.describe())
        try:
            out: Result = c.apply(ctx, say=say)
            rep.apply = out.as_dict()
            rep.missing = out.missing
            rep.timings.update(out.timings or {"applied": round(s.elapsed() - t0, 2)})
            now = ctx.with_fabric(out.fabric).refresh() if out.fabric is not None else ctx.refresh()
        except TwinError as e:
            rep.error = str(e)
        rep.timings.setdefault("control_plane_done", round(s.elapsed() - t0, 2))
        say("waiting for the data plane to be whole again")
        unjudged = {f.flow_id for f in flows if f.src in rep.hosts_out or f.dst in rep.hosts_out}

        def lossy() -> list[str]:
            since = s.elapsed() - timeouts.REHEARSE_RECOVERED
            return s.lossy_since(since, skip=unjudged) if since >= t0 else ["settling"]

        try:
            wait.until(lossy, timeouts.DATA_PLANE, "data plane whole again", first=0.2, cap=0.25)
            whole = True
        except ConvergenceTimeout as e:
            whole = False
            rep.missing = rep.missing + [f"data plane: {m}" for m in e.missing]
        s.hold(timeouts.REHEARSE_TAIL)
        if flood is not None:
            _flood_figures(ctx, flood, rep)
    rep.flows = s.results or []
    summary = summarise(rep.judged)
    if summary.first_loss_s is not None:
        rep.timings["first_loss"] = round(summary.first_loss_s - t0, 2)
    if whole:  # the first packet after the last lost one: the data plane's reconvergence time
        rep.timings["data_plane_whole"] = (
            round(max(0.0, summary.last_loss_s - t0 + s.interval), 2) if summary.last_loss_s is not None else 0.0
        )
    if not rep.error:
        say(
            "fault in place: verifying the data plane (traffic, isolation)"
            if c.breaks_intent
            else "verifying the new intent"
        )
        rep.verify = verify.run(now, only=DATA_PLANE_GROUPS if c.breaks_intent else None)
    return now


def _flood_figures(ctx: LabContext, flood: Flood, rep: Rehearsal) -> None:
    flood.stop()
    f, frame = flood.flow, flood.frame_bytes
    (tenant, src), (_, dst) = ctx.fabric.attachment(f.src), ctx.fabric.attachment(f.dst)
    window = max(flood.elapsed - performance.WARMUP, 1e-3)
    rep.noisy = performance.figures(
        tenant.name,
        f.src,
        f.dst,
        performance.limit_text(src, dst),
        flood.sent / max(flood.elapsed, 1e-3),
        flood.delivered(performance.WARMUP, flood.elapsed) / window,
        flood.sent,
        len(flood.arrivals),
        frame,
        round(flood.elapsed, 2),
    )
    limit = performance.cap_fps(src, dst, frame)
    rep.noisy["limit_fps"] = round(limit) if limit else None


def _roll_back(ctx: LabContext, c: Change, undo: Change | None, rep: Rehearsal, say: Say) -> None:
    say("rolling back")
    try:
        if undo is not None:
            out = undo.apply(ctx.refresh(), say=say)
            ctx = ctx.with_fabric(out.fabric).refresh() if out.fabric is not None else ctx.refresh()
        if c.breaks_intent:
            barrier.converge(ctx.refresh(), say=say)
    except TwinError as e:
        rep.error = (rep.error + "\n" if rep.error else "") + f"rollback failed: {e}"
    say("verifying after rollback")
    rep.verify_rollback = verify.run(ctx.refresh())
