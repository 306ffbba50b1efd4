"""Elements of a lab's rates: every rate limit of every workload and every congestion point.

A rate limit is broken two ways, each an element: removed (its unit's own teardown for tc,
its rule deleted for nftables) and loosened LOOSEN-fold (the TBF replaced by one of ten
times the rate, or its nftables rule by one with ten times the rate); restored by its unit's
setup or its file. The performance group's check of that limit must name it (its flood,
`twin.verify.limits`).

A congestion point is broken three ways: its marking rule deleted (the congestion group's
ECN-capable burst must come out unmarked where the rule marks it), its ECT match removed
(the rule marks what is not ECN-capable: that burst is lost at the VTEP that decapsulates
it), its rate removed (the rule marks every ECN-capable frame: the paced flow below its rate
comes out marked); restored by loading `congestion.nft` again.

A limit or point that no flood of verify can drive in this lab is exempt, with the reason.
"""

from __future__ import annotations

import re

from twin.base.errors import TwinError
from twin.config import services
from twin.config.backend import tenant_ns
from twin.config.steps import Step
from twin.lifecycle.context import LabContext
from twin.prove.element import Element, Exempt, Kernel, NftDelete, NftRule
from twin.runtime import NFT_CONGESTION
from twin.topology.model import Attachment, CongestionPoint, Rate, Tenant
from twin.verify import congestion, limits

LOOSEN = 10  # a loosened limit lets this many times its rate through


def limit_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """Each rate limit of each workload, removed and loosened, named by its check of the performance group."""
    f, out, exempt = ctx.fabric, [], []
    tests, _ = limits.plan(f)
    driven = {(t.holder.host, t.direction) for t in tests}
    for t, a, d, rate in limits.declared(f):
        where = f"{a.vtep}:{a.port}"
        if (a.host, d) not in driven:
            exempt.append(
                Exempt(
                    f"rate limit ({d})",
                    f"{where} ({a.host})",
                    "no other workload of its tenant can flood it without a limit of its own holding the flood first",
                )
            )
            continue
        expect = (rf"^performance: {re.escape(limits.check_name(t.name, a, d, rate))}: ",)
        what = f"{d} {rate} of {a.host} on {where}"
        breaks, restores, how = _removed(ctx, t, a, d)
        out.append(
            Element(
                f"rate-limit {where} {d}",
                "rate limit",
                a.vtep,
                f"{what} ({how})",
                ("performance",),
                expect,
                breaks,
                restores,
            )
        )
        breaks, loose_restores, how = _loosened(ctx, t, a, d)
        out.append(
            Element(
                f"rate-limit-loose {where} {d}",
                "rate limit, loosened",
                a.vtep,
                f"{what}, raised {LOOSEN}-fold ({how})",
                ("performance",),
                expect,
                breaks,
                loose_restores or restores,
            )
        )
    return out, exempt


def _shaping_unit(ctx: LabContext, a: Attachment) -> services.Unit:
    return next(u for u in services.units(ctx.fabric, a.vtep, ctx.backend, ctx.shaping) if u.key == f"shaping {a.port}")


def _removed(ctx: LabContext, t: Tenant, a: Attachment, direction: str) -> tuple[tuple, tuple, str]:
    """(breaking actions, restoring actions, the mechanism) of a limit taken away."""
    ns, rate = tenant_ns(t, ctx.backend), getattr(a.rate_limit, direction)
    if services.shaped(rate, ctx.shaping):
        unit = _shaping_unit(ctx, a)
        port_tbf = [s for s in unit.setup if s.op == "tbf" and s.dev == a.port]
        if direction == "ingress":
            return (
                (Kernel(a.vtep, (Step("noqdisc", a.port, ns, {"parent": "root"}),)),),
                (Kernel(a.vtep, tuple(port_tbf)),),
                "tc TBF",
            )
        teardown = tuple(s for s in unit.teardown if s.args.get("parent") != "root")
        return (
            (Kernel(a.vtep, teardown),),
            (Kernel(a.vtep, tuple(s for s in unit.setup if s not in port_tbf)),),
            "tc TBF on an IFB",
        )
    return (
        (NftDelete(a.vtep, ns, _comment(a, direction, rate), "bridge twin_rate", direction),),
        (Kernel(a.vtep, (Step("nft", services.policing_file(ns), ns),)),),
        "nftables limit",
    )


def _loosened(ctx: LabContext, t: Tenant, a: Attachment, direction: str) -> tuple[tuple, tuple, str]:
    """(breaking actions, restoring actions (none: as a removed one), the mechanism) of a limit
    raised LOOSEN-fold."""
    ns, rate = tenant_ns(t, ctx.backend), getattr(a.rate_limit, direction)
    loose = Rate(value=rate.value * LOOSEN, unit=rate.unit)
    if services.shaped(rate, ctx.shaping):
        tbf = next(
            s for s in _shaping_unit(ctx, a).setup if s.op == "tbf" and (s.dev == a.port) == (direction == "ingress")
        )
        mtu = ctx.fabric.nodes[a.vtep].ports_by_name[a.port].mtu
        return (
            (Kernel(a.vtep, (Step("tbf", tbf.dev, ns, services.tbf_args(loose, mtu)),)),),
            (Kernel(a.vtep, (tbf,)),),
            f"tc TBF on {tbf.dev}",
        )
    comment = _comment(a, direction, rate)
    text = services.rulesets(ctx.fabric, a.vtep, ctx.backend, ctx.shaping)[services.policing_file(ns)]
    rule = rule_of(text, comment).replace(
        services.nft_limit(rate, services.SHAPE_BURST_S), services.nft_limit(loose, services.SHAPE_BURST_S)
    )
    return (NftRule(a.vtep, ns, comment, "bridge twin_rate", direction, rule),), (), "nftables limit"


def _comment(a: Attachment, direction: str, rate: Rate) -> str:
    return f"{a.host}: {direction} {rate}"


def rule_of(text: str, comment: str) -> str:
    """The rule of a rendered ruleset that carries `comment`, as one line."""
    lines = [ln.strip() for ln in text.splitlines() if f'comment "{comment}"' in ln]
    if len(lines) != 1:
        raise TwinError(f"{len(lines)} rules with comment {comment!r} in the rendered ruleset, expected 1")
    return lines[0]


def congestion_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """Each congestion point's marking rule deleted, its ECT match removed, its rate removed."""
    f, out, exempt = ctx.fabric, [], []
    probes, _ = congestion.plan(f)
    driven = {p.point for p in probes}
    for p in f.congestion:
        where = f"{p.node}:{p.port}"
        if p not in driven:
            exempt.append(
                Exempt(
                    "congestion point", where, "no two hosts of a tenant send across it on every path at twice its rate"
                )
            )
            continue
        out += _point(ctx, p)
    return out, exempt


def _point(ctx: LabContext, p: CongestionPoint) -> list[Element]:
    where, comment, names = f"{p.node}:{p.port}", f"above {p.above}", congestion.names(p)
    line = rule_of(services.rulesets(ctx.fabric, p.node, ctx.backend, ctx.shaping)["congestion.nft"], comment)
    restore = (Kernel(p.node, (Step("nft", "congestion.nft"),)),)
    table, chain = " ".join(NFT_CONGESTION), "postrouting"
    limit = f"limit rate over {services.nft_limit(p.above, services.CONGESTION_BURST_S)} "
    expect = {k: (rf"^congestion: {re.escape(n)}",) for k, n in names.items()}
    return [
        Element(
            f"congestion-mark {where}",
            "congestion point marking",
            p.node,
            f'the rule "{comment}" of {where}',
            ("congestion",),
            expect["ect"],
            (NftDelete(p.node, "", comment, table, chain),),
            restore,
        ),
        Element(
            f"congestion-ect {where}",
            "congestion point ECT match",
            p.node,
            f'the ECT match of the rule "{comment}" of {where}',
            ("congestion",),
            expect["plain"],
            (NftRule(p.node, "", comment, table, chain, re.sub(r"ip ecn \{[^}]*\} ", "", line, count=1)),),
            restore,
        ),
        Element(
            f"congestion-rate {where}",
            "congestion point rate",
            p.node,
            f'the rate of the rule "{comment}" of {where}',
            ("congestion",),
            expect["below"],
            (NftRule(p.node, "", comment, table, chain, line.replace(limit, "")),),
            restore,
        ),
    ]
