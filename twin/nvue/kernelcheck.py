"""`twin verify`'s `acl` group, which NVUE brings (`Dialect.groups`): the ACLs each NVUE node runs,
judged by what they do to the flows the topology's intent says must pass.

For every ACL bound to a port, its table is in the port's namespace (else: not loaded), and for every
rule that denies: the kernel holds it in the binding's chain, dropping (else: it does not run, with
what the kernel has instead: a deny rule no intended flow meets would otherwise go unseen when gone;
issue 44, `--prove`); then the tenant flows of the topology that cross the port that way and that
the ACL decides with this rule (RoCEv2, UDP 4791, DSCP 26, as twin's flows are) are sent, 4 frames
of one of them; the check fails naming the ACL and rule when they are dropped and counted (the ACL
cuts what must pass), and says so too when they pass (the rule does not run). A deny rule no
intended flow meets passes, with what it has counted.
"""

from __future__ import annotations

from twin.base.errors import TwinError
from twin.lifecycle.context import LabContext
from twin.nvue.acl import FAMILY, TABLE, Acls, Binding, Rule
from twin.nvue.configs import running
from twin.nvue.plane import Plane
from twin.nvue.qos import CNP_DSCP, ROCE_DSCP, Qos
from twin.runtime import nft_counters as counters
from twin.runtime import nft_listing, nft_of_counters, nft_rules, read_tc_classes
from twin.topology.model import Fabric
from twin.traffic import flows as F
from twin.traffic.roce import Flow
from twin.verify.result import Check

GROUP = "acl"
FRAMES = 4
ROCE = (17, 49152, 4791, 26)  # protocol, source port, destination port, DSCP of twin's RoCE flows


def applies(ctx: LabContext) -> bool:
    return any(x.plane.acls.bindings for x in running(ctx.dir, ctx.fabric, ctx.backend, ctx.shaping).values())


def run(ctx: LabContext) -> list[Check]:
    out: list[Check] = []
    for node, x in sorted(running(ctx.dir, ctx.fabric, ctx.backend, ctx.shaping).items()):
        acls = x.plane.acls
        if not acls.bindings:
            continue
        loaded = {}
        for ns in acls.namespaces():
            try:
                loaded[ns] = nft_listing(ctx.exec(node), FAMILY, TABLE, ns)
            except TwinError as e:
                out.append(
                    Check(
                        GROUP,
                        f"{node} {ns or 'default'}",
                        False,
                        f"the ACLs of {node} are not loaded (table {FAMILY} {TABLE}"
                        f"{' in namespace ' + ns if ns else ''}): {str(e).splitlines()[0]}",
                    )
                )
        for b in acls.bindings:
            if b.ns not in loaded:
                continue
            for r in acls.acls[b.acl].rules:
                if r.drops:
                    out.append(_judge(ctx, node, acls, b, r, loaded[b.ns]))
    return out


def not_running(b: Binding, r: Rule, listing: list[dict]) -> str:
    """Why deny rule `r` of binding `b` does not run as the kernel holds the table ("": it does): its chain
    missing, the rule missing from it, or the rule doing something else than drop."""
    chains = nft_rules(listing)
    what = f"chain {b.chain} ({b.port}'s {'ingress' if b.way == 'inbound' else 'egress'})"
    if b.chain not in chains:
        return f"the kernel has no {what}"
    verdict = chains[b.chain].get(f"acl {b.acl} rule {r.seq}")
    if verdict is None:
        return f"{what} has no rule {r.seq}"
    return "" if verdict == "drop" else f"rule {r.seq} in {what} does not drop: {verdict}"


def crossing(fabric: Fabric, node: str, acls: Acls, b: Binding, r: Rule) -> list[tuple[str, str]]:
    """(source host, destination host) of the intended flows crossing `b`'s port its way that the ACL
    decides with rule `r`."""
    out = []
    for t in fabric.tenants.values():
        here = [a for a in t.attachments if a.vtep == node and a.port == b.dev]
        for a in here:
            for o in t.attachments:
                if o.host == a.host:
                    continue
                s, d = (a, o) if b.way == "inbound" else (o, a)
                if acls.acls[b.acl].decide(s.ip, d.ip, *ROCE) == r:
                    out.append((s.host, d.host))
    return out


def _judge(ctx: LabContext, node: str, acls: Acls, b: Binding, r: Rule, listing: list[dict]) -> Check:
    name = f"{node} {b.port} {b.way} acl {b.acl} rule {r.seq}"
    before = nft_of_counters(listing)
    wrong = not_running(b, r, listing)
    if wrong:
        return Check(GROUP, name, False, f"does not run: {wrong}", {"counted": before.get(b.counter(r.seq))})
    pairs = crossing(ctx.fabric, node, acls, b, r)
    if not pairs:
        return Check(
            GROUP,
            name,
            True,
            f"denies no flow the topology says must pass; counted {before.get(b.counter(r.seq), 0)}",
            {"counted": before.get(b.counter(r.seq))},
        )
    src, dst = pairs[0]
    f: Flow = F.flow(ctx.fabric, src, dst, 1, count=FRAMES)
    res = F.run(ctx, [f], {f.flow_id: False}, check_icrc=False)[f.flow_id]
    after = counters(ctx.exec(node), FAMILY, TABLE, b.ns).get(b.counter(r.seq), 0)
    counted = after - before.get(b.counter(r.seq), 0)
    cut = ", ".join(f"{s} -> {d}" for s, d in pairs)
    data = {"flows": [list(p) for p in pairs], "sent": res.sent, "delivered": res.received, "counted": counted}
    if res.received:
        return Check(
            GROUP,
            name,
            False,
            f"does not run: {res.received}/{res.sent} frames of {src} -> {dst} it denies "
            f"were delivered (counted {counted})",
            data,
        )
    return Check(
        GROUP,
        name,
        False,
        f"drops {cut}, which the topology says must pass: {res.sent - res.received}/"
        f"{res.sent} frames of {src} -> {dst} dropped, counted {counted}",
        data,
    )


# --- qos (twin.nvue.qos) ----------------------------------------------------------------------------------
QOS = "qos"
SENT = {ROCE_DSCP: "RoCE", CNP_DSCP: "CNP"}  # the DSCPs the group sends, by the name of their checks


def qos_run(ctx: LabContext) -> list[Check]:
    """Every NVUE node's RoCE QoS: the same classes as the other NVUE nodes' (RoCE's DSCP lossless or
    not alike, CNPs in their class), and what it does: RoCE frames and CNP-marked frames of its hosts
    to hosts behind other VTEPs leave its fabric ports by their classes (the classes' counters)."""
    nodes = running(ctx.dir, ctx.fabric, ctx.backend, ctx.shaping)
    on = {n: x.plane.qos for n, x in nodes.items() if isinstance(x.plane.qos, Qos)}
    if not on:
        return []
    out = []
    ways = {n: _way(q) for n, q in on.items()}
    for n in sorted(nodes):
        if n not in on:
            if ctx.fabric.tenants_on(n):
                out.append(
                    Check(
                        QOS,
                        f"{n} classes",
                        False,
                        f"qos roce is off on {n}, a VTEP of RoCE traffic; "
                        f"on: {', '.join(f'{m} ({w})' for m, w in sorted(ways.items()))}",
                    )
                )
            continue
        others = {m: w for m, w in ways.items() if m != n and w != ways[n]}
        out.append(
            Check(
                QOS,
                f"{n} classes",
                not others,
                ways[n] + (f"; unlike {', '.join(f'{m} ({w})' for m, w in sorted(others.items()))}" if others else ""),
                {"mode": on[n].mode, "classes": {str(k): v for k, v in on[n].classes.items()}},
            )
        )
        out += _qos_behaviour(ctx, n, nodes[n].plane, on[n])
    mine = set(nodes)
    plain = sorted(x.name for x in ctx.fabric.routers() if x.name not in mine)
    if plain and out:
        out[0].message += f" (twin's rendering on {', '.join(plain)}: no RoCE QoS, not judged)"
    return out


def _way(q: Qos) -> str:
    return (
        f"RoCE (DSCP {ROCE_DSCP}) in traffic class {q.roce} "
        f"{'lossless' if q.roce in q.lossless else 'lossy'}, CNPs (DSCP {CNP_DSCP}) in {q.cnp}"
    )


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


def _qos_behaviour(ctx: LabContext, node: str, plane: Plane, q: Qos) -> list[Check]:
    fabric = ctx.fabric
    ports, pair = qos_ports(fabric, node, plane), qos_pair(fabric, node)
    if not ports or pair is None:
        return []
    src, dst = pair
    flows = [
        F.flow(fabric, src, dst, 1, count=FRAMES, dscp=ROCE_DSCP),
        F.flow(fabric, src, dst, 2, count=FRAMES, dscp=CNP_DSCP, ecn=0, sport=49153),
    ]

    def classes() -> dict[int, int]:
        total: dict[int, int] = {}
        for dev, ns in ports.items():
            with ctx.ipr(node, ns) as ipr:
                for h, n in read_tc_classes(ipr, dev).items():
                    total[h] = total.get(h, 0) + n
        return total

    before = classes()
    F.run(ctx, flows, {f.flow_id: True for f in flows}, check_icrc=False)
    after = classes()
    grew = {tc: after.get(0x10010 + tc, 0) - before.get(0x10010 + tc, 0) for tc in q.used()}
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
