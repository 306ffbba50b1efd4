"""The proof: every element broken in turn on the live lab, judged by verify, put back.

Per element: break it; run the verify groups that must notice (again, until one of
their failing checks names it, or `timeouts.PROVE_DETECT`); restore it; wait for the
barrier (`twin.lifecycle.barrier`) and for the same groups to pass again
(`timeouts.PROVE_RESTORE`). An element that cannot be restored ends the proof: the
next ones would be judged on a broken lab.
"""

from __future__ import annotations

import json
import time
from fnmatch import fnmatch
from typing import Callable

from twin import verify
from twin.base import timeouts, wait
from twin.base.errors import ConvergenceTimeout, TwinError
from twin.config.dialect import dialects
from twin.config.steps import Step
from twin.lifecycle import barrier
from twin.lifecycle.bringup import wait_vnis
from twin.lifecycle.context import LabContext, context_of
from twin.prove import frr_side, kernel_side, ports, rates, router_side, services
from twin.prove.element import Action, Element, Exempt, Kernel, NftDelete, NftRule, Reload, Unlearn, Vtysh, ZebraVni
from twin.prove.report import Outcome, Proof, line
from twin.runtime import apply_live, apply_steps, frr_take, in_ns_command, learned_macs
from twin.traffic.flows import Target
from twin.verify.result import Check

DERIVE = (
    ports.rule_elements,
    kernel_side.vni_elements,
    frr_side.evpn_elements,
    frr_side.underlay_elements,
    kernel_side.gateway_elements,
    kernel_side.vxlan_elements,
    kernel_side.link_elements,
    kernel_side.hash_elements,
    kernel_side.port_elements,
    services.gateway_elements,
    rates.limit_elements,
    rates.congestion_elements,
    router_side.router_elements,
)


def elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """Every element of the lab's intent that carries a guarantee, and what it renders that carries none
    (twin's own, then each dialect's: NVUE's)."""
    out, exempt = [], []
    for derive in (*DERIVE, *(d.prove for d in dialects())):
        els, ex = derive(ctx)
        out += els
        exempt += ex
    ids = [e.id for e in out]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise TwinError(f"elements named twice: {', '.join(dup)}")
    return out, exempt


def select(els: list[Element], patterns: list[str] | None) -> list[Element]:
    """Elements whose id matches one of the glob `patterns` (all without any)."""
    if not patterns:
        return els
    chosen = [e for e in els if any(fnmatch(e.id, p) for p in patterns)]
    if not chosen:
        raise TwinError(
            f"no element matches {', '.join(patterns)}; elements are named like "
            f"{', '.join(sorted({e.id.split()[0] + ' ...' for e in els}))}"
        )
    return chosen


def perform(ctx: LabContext, actions: tuple[Action, ...], restoring: bool = False) -> None:
    """Run actions in order. Restoring, a kernel step whose object is already there (or already
    gone) is passed over, as in a rollback: putting an element back works however far it broke."""
    for a in actions:
        if isinstance(a, Kernel):
            apply_live(list(a.steps), ctx.pid(a.node), ctx.exec(a.node), tolerant=restoring)
        elif isinstance(a, Vtysh):
            ctx.exec(a.node).vtysh("configure terminal", *a.lines, timeout=timeouts.VTYSH, daemon=a.daemon)
        elif isinstance(a, Reload):
            frr_take(ctx.exec(a.node), removes=a.removes)
        elif isinstance(a, (NftDelete, NftRule)):
            _nft_rule(ctx, a)
        elif isinstance(a, ZebraVni):
            wait_vnis(ctx.exec(a.node), {a.vni})
        elif isinstance(a, Unlearn):
            with ctx.ipr(a.node, a.ns) as ipr:
                macs = learned_macs(ipr, a.port)
            if macs:
                apply_steps([Step("unfdb", a.port, a.ns, {"mac": m}) for m in macs], ctx.pid(a.node), ctx.exec(a.node))


def _nft_rule(ctx: LabContext, a: NftDelete | NftRule) -> None:
    """Delete the rule with `a.comment` (NftDelete), or replace it with `a.rule` (NftRule)."""
    ex = ctx.exec(a.node)
    ns = in_ns_command(a.ns)
    table = a.table.split()
    doc = json.loads(ex.check(ns + ["nft", "-j", "list", "chain", *table, a.chain]).stdout)
    handles = [x["rule"]["handle"] for x in doc.get("nftables", []) if x.get("rule", {}).get("comment") == a.comment]
    if len(handles) != 1:
        raise TwinError(
            f"{ctx.name}/{a.node}: {len(handles)} rules with comment {a.comment!r} in {a.table} {a.chain}, expected 1"
        )
    verb = (
        ["replace", "rule", *table, a.chain, "handle", str(handles[0]), a.rule]
        if isinstance(a, NftRule)
        else ["delete", "rule", *table, a.chain, "handle", str(handles[0])]
    )
    ex.check(ns + ["nft", *verb])


def _failing(ctx: LabContext, groups: list[str]) -> list[str]:
    """Failing checks of `groups`, each as "group: name: message"."""
    return [line(c) for c in verify.run(ctx, only=groups).failures()] if groups else []


def detect(ctx: LabContext, e: Element, groups: list[str]) -> tuple[list[Check], list[Check]]:
    """The failing checks that name `e` (and the others), once verify sees it, or at the deadline."""
    failing: list[Check] = []

    def unnamed() -> list[str]:
        failing[:] = verify.run(ctx, only=groups).failures()
        return [] if any(e.names(line(c)) for c in failing) else [f"a failing check of {', '.join(groups)} naming it"]

    if groups:
        try:
            wait.until(unnamed, timeouts.PROVE_DETECT, f"verify noticing {e.id}", first=0.05, cap=0.5)
        except ConvergenceTimeout:
            pass  # not caught: a miss, reported with what did fail
    named = [c for c in failing if e.names(line(c))]
    return named, [c for c in failing if c not in named]


def confirm(ctx: LabContext, groups: list[str]) -> str:
    """ "" once the lab holds its intent again (the barrier) and `groups` pass; else what is wrong."""
    t0 = time.monotonic()
    try:
        barrier.converge(ctx, timeouts.PROVE_RESTORE)
        left = max(1.0, timeouts.PROVE_RESTORE - (time.monotonic() - t0))
        wait.until(lambda: _failing(ctx, groups), left, "verify passing again", first=0.2, cap=1.0)
    except ConvergenceTimeout as e:
        return f"{e.what}: still {'; '.join(e.missing[:5])}"
    return ""


def _restore(ctx: LabContext, e: Element) -> str:
    """ "" once `e`'s restoring actions are done and the lab is whole again; else what is wrong."""
    try:
        perform(ctx, e.restores, restoring=True)
        return confirm(ctx, list(e.groups))
    except (TwinError, OSError) as err:
        return f"could not restore it: {err}"


def prove_one(ctx: LabContext, e: Element, only: list[str] | None = None) -> Outcome:
    groups = [g for g in e.groups if not only or g in only]
    out = Outcome(e)
    t0 = time.monotonic()
    try:
        perform(ctx, e.breaks)
        t1 = time.monotonic()
        out.named_by, out.also_failed = detect(ctx, e, groups)
        out.seconds["detect"] = round(time.monotonic() - t1, 2)
    except (TwinError, OSError) as err:
        out.detail = f"could not break it: {err}"
    except BaseException:  # Ctrl-C, or a bug: the element goes back before anything else
        perform(ctx, e.restores, restoring=True)
        raise
    t2 = time.monotonic()
    wrong = _restore(ctx, e)
    if wrong:  # once more: zebra may have read a binding before it knew the VNI made again with it
        again = _restore(ctx, e)
        out.detail = "; ".join(x for x in (out.detail, f"restored by a second pass (the first: {wrong})") if x)
        wrong = again
    out.restored = not wrong
    out.detail = "; ".join(x for x in (out.detail, wrong) if x)
    out.seconds["restore"] = round(time.monotonic() - t2, 2)
    out.seconds["total"] = round(time.monotonic() - t0, 2)
    return out


def prove(
    lab: Target,
    patterns: list[str] | None = None,
    only: list[str] | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> Proof:
    """Break, judge and restore every element (or those whose id matches `patterns`) of a running
    lab, holding its lock; `only` limits the verify groups that may catch them."""
    verify.known(only)
    ctx = context_of(lab)
    with ctx.writing("twin verify --prove"):
        els, exempt = elements(ctx)
        chosen = select(els, patterns)
        groups = sorted({g for e in chosen for g in e.groups})
        proof = Proof(ctx.name, exempt=exempt, total=len(els))
        t0 = time.monotonic()
        whole = confirm(ctx, groups)
        if whole:
            raise TwinError(
                f"lab {ctx.name!r} is not whole before the proof ({whole}); `twin verify "
                f"{ctx.name}` and `twin status {ctx.name}` show what is wrong"
            )
        for i, e in enumerate(chosen, 1):
            say(f"[{i}/{len(chosen)}] {e.id}: {e.how}")
            o = prove_one(ctx, e, only)
            proof.outcomes.append(o)
            if not o.restored:
                proof.aborted = f"{e.id} could not be restored ({o.detail}); the proof stopped there"
                break
        proof.seconds = round(time.monotonic() - t0, 1)
    return proof
