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
from twin.runtime import nft_counters as counters
from twin.runtime import nft_listing, nft_of_counters, nft_rules
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
