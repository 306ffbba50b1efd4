"""`twin verify`'s judgement of NVUE's RoCE QoS (`twin.nvue.qos`), which NVUE brings (`Dialect.groups`):
group `qos`, and its part of group `congestion`.

`qos` (`qos_run`):
- each NVUE node's classes: RoCE's DSCP 26 in a traffic class, lossless or not, CNPs' DSCP 48 in
  theirs, alike on every NVUE node (where most nodes agree, the others are named; a VTEP with
  `qos roce` off among nodes with it on too);
- every RoCE path: per pair of VTEPs that carry a tenant between them, every hop of every equal-cost
  path, both ways (the two VTEPs by their ports to those hosts too), puts DSCP 26 in the same class,
  lossless or not, ECN-marked or not, and CNPs in a class above it (prioritised); a hop that differs
  is named with its class and the path's, a hop without `qos roce`, a port of the path without the
  classes too;
- what it does: RoCE and CNP frames of each VTEP's hosts leave its fabric ports by their classes.

`congestion` (`congestion_run`; it runs alone, after the others): per congestion point on a port of
a node running `qos roce`, an ECN-capable burst at twice its rate from hosts whose path crosses it
(`twin.verify.congestion`'s probe, steered onto it): the frames marked CE at that hop (its own count),
out of it by RoCE's class, which must have ECN there; RoCE by its class at every hop that carried it;
the CNPs that answered, all back at the sender, by the CNP class at every hop of the way back. Every
hop's classes are counted (the HTB classes' packets), so a hop that sends them by another class is
named with it.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Callable, NamedTuple

from twin.intent import paths
from twin.lifecycle.context import LabContext
from twin.nvue.configs import running
from twin.nvue.plane import Plane
from twin.nvue.qos import CNP_DSCP, ROCE_DSCP, Qos, class_handle
from twin.runtime import read_tc_classes
from twin.topology.model import Fabric
from twin.traffic import dcqcn
from twin.traffic import flows as F
from twin.verify import congestion
from twin.verify.result import Check

QOS, CONGESTION = "qos", congestion.GROUP
FRAMES = 4  # RoCE and CNP frames of each VTEP's hosts counted in their classes
SENT = {ROCE_DSCP: "RoCE", CNP_DSCP: "CNP"}  # the DSCPs the group sends, by the name of their checks
Route = dict[str, tuple[str, ...]]  # hop -> the ports frames leave it by, nearest hop first


class Way(NamedTuple):
    """How a hop treats RoCE: its class, lossless or not, ECN-marked or not; and its CNPs' class."""

    roce: int
    lossless: bool
    ecn: bool
    cnp: int

    @classmethod
    def of(cls, q: Qos) -> "Way":
        return cls(q.roce, q.roce in q.lossless, q.roce in q.ecn, q.cnp)

    def text(self) -> str:
        return (
            f"RoCE (DSCP {ROCE_DSCP}) in traffic class {self.roce} {'lossless' if self.lossless else 'lossy'} "
            f"{'with' if self.ecn else 'without'} ECN, CNPs (DSCP {CNP_DSCP}) in {self.cnp}"
        )


def route(fabric: Fabric, a: str, b: str, hosts: tuple[str, ...] | None = None) -> Route:
    """The hops of RoCE from VTEP `a` to VTEP `b`: every router of every equal-cost path with its ports
    towards `b`, then `b` with its ports to `hosts` (default: every host of a tenant of both)."""
    dist, order = fabric.hops(b), list(fabric.nodes)
    out = dict(sorted(paths.next_hops(fabric, a, b).items(), key=lambda x: (-dist.get(x[0], 0), order.index(x[0]))))
    if hosts is None:
        shared = [t for t in fabric.tenants.values() if a in t.vteps() and b in t.vteps()]
        hosts = tuple(sorted({x.port for t in shared for x in t.attachments if x.vtep == b}))
    out[b] = hosts
    return out


def qos_run(ctx: LabContext) -> list[Check]:
    """Every NVUE node's RoCE QoS: its classes, every RoCE path's hops, what its hosts' frames do."""
    nodes = running(ctx.dir, ctx.fabric, ctx.backend, ctx.shaping)
    on = {n: x.plane.qos for n, x in nodes.items() if isinstance(x.plane.qos, Qos)}
    if not on:
        return []
    out = _classes(ctx.fabric, {n: x.plane for n, x in nodes.items()}, on)
    order = list(ctx.fabric.nodes)
    pairs = [(a, b) for a, b in paths.vtep_pairs(ctx.fabric) if order.index(a) < order.index(b)]
    out += [c for a, b in pairs for c in _path(ctx.fabric, a, b, nodes, on)]
    for n in sorted(on):
        out += _behaviour(ctx, n, nodes[n].plane, on[n])
    plain = sorted(x.name for x in ctx.fabric.routers() if x.name not in nodes)
    if plain and out:
        out[0].message += f" (twin's rendering on {', '.join(plain)}: no RoCE QoS, not judged)"
    return out


def _classes(fabric: Fabric, planes: dict[str, Plane], on: dict[str, Qos]) -> list[Check]:
    """Each NVUE node's classes against the others': where more than half of them agree, a node that
    differs is named (and whether RoCE crosses it); else each node names those unlike it."""
    ways = {n: Way.of(q) for n, q in on.items()}
    most, count = Counter(ways.values()).most_common(1)[0]
    ref = most if 2 * count > len(ways) else None
    crossed = {n for a, b in paths.vtep_pairs(fabric) for n in route(fabric, a, b)}
    out = []
    for n in sorted(planes):
        if n not in on:
            if fabric.tenants_on(n):
                out.append(
                    Check(
                        QOS,
                        f"{n} classes",
                        False,
                        f"qos roce is off on {n}, a VTEP of RoCE traffic; "
                        f"on: {', '.join(f'{m} ({_short(w)})' for m, w in sorted(ways.items()))}",
                    )
                )
            continue
        if ref is None:
            unlike = {m: w for m, w in ways.items() if w != ways[n]}
            ok, said = not unlike, ", ".join(f"{m} ({_short(w)})" for m, w in sorted(unlike.items()))
        else:
            ok, said = ways[n] == ref, f"the other {count} NVUE nodes ({_short(ref)})"
            if not ok and n not in crossed:
                said += f"; no RoCE path of the topology crosses {n} while every link is up"
        out.append(
            Check(
                QOS,
                f"{n} classes",
                ok,
                _short(ways[n]) + ("" if ok else f"; unlike {said}"),
                {"mode": on[n].mode, "classes": {str(k): v for k, v in on[n].classes.items()}},
            )
        )
    return out


def _short(w: Way) -> str:
    return (
        f"RoCE (DSCP {ROCE_DSCP}) in traffic class {w.roce} {'lossless' if w.lossless else 'lossy'}, "
        f"CNPs (DSCP {CNP_DSCP}) in {w.cnp}"
    )


def _path(fabric: Fabric, a: str, b: str, nodes: dict, on: dict[str, Qos]) -> list[Check]:
    """RoCE between VTEPs `a` and `b`, both ways: every hop puts it in the same class, CNPs above it."""
    there, back = route(fabric, a, b), route(fabric, b, a)
    hops = list(dict.fromkeys([*there, *back]))
    ports = {n: tuple(dict.fromkeys([*there.get(n, ()), *back.get(n, ())])) for n in hops}
    ways = {n: Way.of(on[n]) for n in hops if n in on}
    if not ways:
        return []
    counts = Counter(ways.values())
    ref = max(ways.values(), key=lambda w: (counts[w], -[ways[n] for n in ways].index(w)))
    problems = [f"{n} puts {ways[n].text()}; the path's other hops {ref.text()}" for n in ways if ways[n] != ref]
    problems += [
        f"{n}: CNPs (DSCP {CNP_DSCP}) in traffic class {w.cnp}, not above RoCE's {w.roce}: not prioritised"
        for n, w in ways.items()
        if w.cnp <= w.roce
    ]
    problems += [
        f"{n} runs no qos roce (no classes there: RoCE and CNPs alike)" for n in hops if n in nodes and n not in on
    ]
    problems += [
        f"{n} {p}: no RoCE classes on this port (see `twin up`'s notes)"
        for n in ways
        for p in ports[n]
        if ("qos", p) not in nodes[n].plane.extras
    ]
    plain = [n for n in hops if n not in nodes]
    said = f"every hop ({', '.join(hops)}) puts {ref.text()}" if not problems else "; ".join(problems)
    if plain:
        said += f" ({', '.join(plain)}: twin's rendering, no RoCE QoS, not judged)"
    data = {"hops": {n: ways[n]._asdict() if n in ways else None for n in hops}, "ports": ports}
    return [Check(QOS, f"path {a} - {b}", not problems, said, data)]


def qos_ports(fabric: Fabric, node: str, plane: Plane) -> dict[str, str]:
    """Port -> namespace of the node's fabric ports its RoCE QoS runs on: where the `qos` group counts what
    leaves for other VTEPs by class."""
    cabled = {p.name for p in fabric.nodes[node].fabric_ports}
    return {k[1]: s.ns for k, s in sorted(plane.extras.items()) if k[0] == "qos" and k[1] in cabled}


def qos_pair(fabric: Fabric, node: str) -> tuple[str, str] | None:
    """The hosts (one behind `node`, one of its tenant behind another VTEP) whose RoCE and CNP frames the
    `qos` group sends; None: no host of the node's has a peer elsewhere."""
    return next(
        (
            (a.host, b.host)
            for t in fabric.tenants.values()
            for a in t.attachments
            if a.vtep == node
            for b in t.attachments
            if b.vtep != node
        ),
        None,
    )


def _behaviour(ctx: LabContext, node: str, plane: Plane, q: Qos) -> list[Check]:
    """RoCE and CNP frames of one of `node`'s hosts to a host behind another VTEP leave its fabric
    ports by their classes."""
    fabric = ctx.fabric
    ports, pair = qos_ports(fabric, node, plane), qos_pair(fabric, node)
    if not ports or pair is None:
        return []
    src, dst = pair
    flows = [
        F.flow(fabric, src, dst, 1, count=FRAMES, dscp=ROCE_DSCP),
        F.flow(fabric, src, dst, 2, count=FRAMES, dscp=CNP_DSCP, ecn=0, sport=49153),
    ]
    watch = {(node, p): ns for p, ns in ports.items()}
    before = counted(ctx, watch)
    F.run(ctx, flows, {f.flow_id: True for f in flows}, check_icrc=False)
    after = counted(ctx, watch)
    grew = {tc: sum(after[k].get(tc, 0) - before[k].get(tc, 0) for k in watch) for tc in q.used()}
    out = []
    for dscp, what in SENT.items():
        tc = q.classes.get(dscp, 0)
        ok = grew.get(tc, 0) >= FRAMES
        out.append(
            Check(
                QOS,
                f"{node} {what} class",
                ok,
                f"{what} frames (DSCP {dscp}) of {src} -> {dst} "
                + (
                    f"left {', '.join(sorted(ports))} by traffic class {tc}"
                    if ok
                    else f"did not leave {', '.join(sorted(ports))} by traffic class {tc}: it grew by "
                    f"{grew.get(tc, 0)} of {FRAMES}; by class: {grew}"
                ),
                {"grew": {str(k): v for k, v in grew.items()}, "frames": FRAMES},
            )
        )
    return out


def counted(ctx: LabContext, watch: dict[tuple[str, str], str]) -> dict[tuple[str, str], dict[int, int]]:
    """Packets each traffic class has sent per (node, port) of `watch` (-> the port's namespace)."""
    out: dict[tuple[str, str], dict[int, int]] = {}
    for (node, port), ns in sorted(watch.items()):
        with ctx.ipr(node, ns) as ipr:
            got = read_tc_classes(ipr, port)
        out[(node, port)] = {tc: got[h] for tc in range(8) if (h := class_handle(tc)) in got}
    return out


# --- congestion -------------------------------------------------------------------------------------------
def congestion_run(ctx: LabContext) -> tuple[list[Check], dict]:
    """Every congestion point on a port of a node running `qos roce`, under a burst at twice its rate:
    CE there, RoCE by its class at every hop, the CNPs back at the sender by theirs."""
    nodes = running(ctx.dir, ctx.fabric, ctx.backend, ctx.shaping)
    on = {n: x.plane.qos for n, x in nodes.items() if isinstance(x.plane.qos, Qos)}
    checks, figures = [], []
    for probe in congestion.plan(ctx.fabric)[0]:
        if probe.point.node not in on:
            continue
        t0 = time.monotonic()
        probe = congestion.steer(ctx, probe)
        name = f"{probe.where} RoCE QoS under congestion ({probe.tenant} {probe.src.host} -> {probe.dst.host})"
        if not probe.every and probe.sport is None:
            checks.append(Check(CONGESTION, name, False, congestion.unsteered(probe)[0].message))
            continue
        check, fig = _congested(ctx, {n: x.plane for n, x in nodes.items()}, on, probe, name)
        fig["seconds"] = round(time.monotonic() - t0, 2)
        checks.append(check)
        figures.append(fig)
    return checks, {"qos": figures}


def _congested(
    ctx: LabContext, planes: dict[str, Plane], on: dict[str, Qos], probe: congestion.Probe, name: str
) -> tuple[Check, dict]:
    """One burst of `probe` (again while the host was too slow to drive the point), every hop's classes
    and the point's marks counted, judged."""
    f, a, b = ctx.fabric, probe.src.vtep, probe.dst.vtep
    there, back = route(f, a, b, (probe.dst.port,)), route(f, b, a, (probe.src.port,))
    watch = {
        (n, p): planes[n].extras[("qos", p)].ns
        for r in (there, back)
        for n, ps in r.items()
        if n in on
        for p in ps
        if ("qos", p) in planes[n].extras
    }
    for _ in range(congestion.ATTEMPTS):
        before, marks = counted(ctx, watch), dcqcn.congestion_counters(ctx)
        flow = F.flow(
            f, probe.src.host, probe.dst.host, 1, count=congestion.BURST, payload=probe.payload, sport=probe.port(0)
        )
        r = F.run(ctx, [flow], {1: True}, cnps=True)[1]
        after, at = counted(ctx, watch), dcqcn.delta(marks, dcqcn.congestion_counters(ctx)).get(probe.where, {})
        fig = congestion.figures(probe, r)
        judged, why = congestion.judge_ect(probe, fig)
        if judged is not None:
            break
    grew = {k: {tc: n - before[k].get(tc, 0) for tc, n in after[k].items()} for k in after}
    q = on[probe.point.node]
    roce_hops, roce_bad = _carried(grew, there, on, r.received, lambda x: x.roce)
    cnp_hops, cnp_bad = _carried(grew, back, on, r.cnps_received, lambda x: x.cnp)
    problems = [why] if why else []
    if r.ce > at.get("ce", 0):
        problems.append(f"{r.ce} arrived marked CE, {probe.where} marked {at.get('ce', 0)}: marked elsewhere")
    if sum(grew.get((probe.point.node, probe.point.port), {}).values()) < r.received:
        problems.append(f"the burst's {r.received} frames did not leave {probe.where} by its classes")
    if q.roce not in q.ecn:
        problems.append(
            f"{probe.point.node} puts RoCE in traffic class {q.roce}, which has no ECN there (qos congestion-control): "
            "a switch would not mark it"
        )
    problems += roce_bad + cnp_bad
    said = (
        f"{r.ce} of {r.received} RoCE frames marked CE at {probe.where} (counted there {at.get('ce', 0)}; "
        f"at {fig['arrived_fps']} frames/s, its rate {fig['point_fps']}), out of it by traffic class {q.roce} "
        f"{'with' if q.roce in q.ecn else 'without'} ECN; RoCE by its class at {', '.join(roce_hops) or 'no hop'}; "
        f"{r.cnps_received} of {r.cnps_sent} CNPs back at {probe.src.host}, by traffic class {q.cnp} at "
        f"{', '.join(cnp_hops) or 'no hop'}"
    )
    fig |= {
        "point": probe.where,
        "counted": at,
        "roce_class": q.roce,
        "cnp_class": q.cnp,
        "roce_hops": roce_hops,
        "cnp_hops": cnp_hops,
        "every_path": probe.every,
        "sport": probe.port(0),
    }
    ok = judged is True and not problems
    return Check(CONGESTION, name, ok, said if ok else "; ".join(problems) + f" ({said})", fig), fig


def _carried(
    grew: dict[tuple[str, str], dict[int, int]], r: Route, on: dict[str, Qos], n: int, cls: Callable[[Qos], int]
) -> tuple[list[str], list[str]]:
    """The ports of route `r` that sent `n` frames or more (the hops that carried them), by the class `cls`
    says for their node; and those that sent them by another class, named with it."""
    hops: list[str] = []
    bad: list[str] = []
    for node, ports in r.items():
        for p in ports if node in on and n > 0 else ():
            g = grew.get((node, p), {})
            if sum(g.values()) < n:
                continue
            want = cls(on[node])
            if g.get(want, 0) >= n:
                hops.append(f"{node} {p}")
            else:
                bad.append(f"{node} {p} sent them by traffic class {max(g, key=lambda tc: g[tc])}, not {want}")
    return hops, bad
