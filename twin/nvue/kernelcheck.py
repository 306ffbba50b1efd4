"""`twin verify`'s `acl` group, which NVUE brings (`Dialect.groups`): the ACLs each NVUE node runs,
judged by what they do to what the topology's intent says must pass (`twin.nvue.aclflows`).

For every ACL bound to a port, bond, SVI or the control plane, its table is in the namespace that runs it
(else: not loaded), and for every rule that denies: the kernel holds it in the binding's chain, dropping
(else: it does not run, with what the kernel has instead: a deny rule no intended flow meets would
otherwise go unseen when gone; issue 44, `--prove`). Then what the rule cuts:
- a BGP or BFD session of the node it leaves no way to open: the check fails naming the session, the
  packets the rule drops, the session's state as bgpd has it and what the rule counted (the session goes
  down once its hold time runs out: the check does not wait for it);
- the tenant flows crossing the port or SVI that way that the ACL decides with this rule (RoCEv2, UDP
  4791, DSCP 26, as twin's flows are): 4 frames of one of them are sent; the check fails naming the ACL
  and rule when they are dropped and counted (the ACL cuts what must pass), and says so too when they pass
  (the rule does not run).
A deny rule that cuts nothing passes, with what it has counted (and why a session it meets stays up).
"""

from __future__ import annotations

import json

from twin.base.errors import TwinError
from twin.lifecycle.context import LabContext
from twin.nvue import aclflows
from twin.nvue.acl import NETDEV, TABLE, Rule
from twin.nvue.aclbind import Binding
from twin.nvue.configs import NvueNode, running
from twin.runtime import FRR_SUMMARY_ALL, nft_listing, nft_of_counters, nft_rules
from twin.runtime import nft_counters as counters
from twin.traffic import flows as F
from twin.traffic.roce import Flow
from twin.verify.result import Check

GROUP = "acl"
FRAMES = 4
ROCE = aclflows.ROCE


def applies(ctx: LabContext) -> bool:
    return any(x.plane.acls.bindings for x in running(ctx.dir, ctx.fabric, ctx.backend, ctx.shaping).values())


def table_name(node: str, family: str, ns: str) -> str:
    """The check of one table: `NODE NS` (netdev), `NODE NS control-plane` (inet)."""
    return f"{node} {ns or 'default'}" + ("" if family == NETDEV else " control-plane")


def run(ctx: LabContext) -> list[Check]:
    out: list[Check] = []
    for node, x in sorted(running(ctx.dir, ctx.fabric, ctx.backend, ctx.shaping).items()):
        acls = x.plane.acls
        if not acls.bindings:
            continue
        loaded = {}
        for family, ns in acls.tables():
            try:
                loaded[(family, ns)] = nft_listing(ctx.exec(node), family, TABLE, ns)
            except TwinError as e:
                what = "ACLs" if family == NETDEV else "control-plane ACLs"
                out.append(
                    Check(
                        GROUP,
                        table_name(node, family, ns),
                        False,
                        f"the {what} of {node} are not loaded (table {family} {TABLE}"
                        f"{' in namespace ' + ns if ns else ''}): {str(e).splitlines()[0]}",
                    )
                )
        judge = _Node(ctx, node, x)
        for b in acls.bindings:
            if (b.family, b.ns) in loaded:
                out += [judge.rule(b, r, loaded[(b.family, b.ns)]) for r in acls.acls[b.acl].rules if r.drops]
    return out


def not_running(b: Binding, r: Rule, listing: list[dict]) -> str:
    """Why deny rule `r` of binding `b` does not run as the kernel holds the table ("": it does): its chain
    missing, the rule missing from it, or the rule doing something else than drop."""
    chains = nft_rules(listing)
    what = f"chain {b.chain} ({b.hooked})"
    if b.chain not in chains:
        return f"the kernel has no {what}"
    verdict = chains[b.chain].get(f"acl {b.acl} rule {r.seq}")
    if verdict is None:
        return f"{what} has no rule {r.seq}"
    return "" if verdict == "drop" else f"rule {r.seq} in {what} does not drop: {verdict}"


class _Node:
    """One node's judgement: its sessions and their state read once, when a rule meets one."""

    def __init__(self, ctx: LabContext, node: str, x: NvueNode):
        self.ctx, self.node, self.x = ctx, node, x
        self._sessions: list[aclflows.Session] | None = None
        self._states: dict[str, str] | None = None

    @property
    def sessions(self) -> list[aclflows.Session]:
        if self._sessions is None:
            plane = self.x.plane
            addresses = link_locals(self.ctx, self.node) if aclflows.needs_addresses(plane.acls) else None
            self._sessions = aclflows.sessions(self.ctx.fabric, self.node, plane, addresses)
        return self._sessions

    def state(self, port: str) -> str:
        """The BGP session's state on `port` as bgpd has it ("unknown" where it cannot be read)."""
        if self._states is None:
            try:
                (doc,) = self.ctx.exec(self.node).vtysh_json(FRR_SUMMARY_ALL)
                peers = doc.get("ipv4Unicast", {}).get("peers", {})
                self._states = {p: str(v.get("state", "?")) for p, v in peers.items()}
            except TwinError:
                self._states = {}
        return self._states.get(port, "unknown")

    def rule(self, b: Binding, r: Rule, listing: list[dict]) -> Check:
        name = f"{self.node} {b.place} {b.way} acl {b.acl} rule {r.seq}"
        before = nft_of_counters(listing).get(b.counter(r.seq), 0)
        wrong = not_running(b, r, listing)
        if wrong:
            return Check(GROUP, name, False, f"does not run: {wrong}", {"counted": before})
        met = [(s, p) for s in self.sessions for b2, r2, p in s.drops if (b2, r2) == (b, r)]
        cut = [(s, p) for s, p in met if s.cut]
        if cut:
            return self._cuts(name, b, r, cut, before)
        pairs = aclflows.crossing(self.x.plane.as_run(self.ctx.fabric), self.node, self.x.plane, b, r)
        if pairs:
            return self._sends(name, b, r, pairs, before)
        why = "".join(f"; it drops {p.what}, and {s.named} opens the other way" for s, p in met)
        if r.v == 4 and aclflows.BGP in r.ports:
            why += "; twin's BGP sessions are unnumbered (IPv6 link-local): an ipv4 ACL never meets them"
        return Check(
            GROUP,
            name,
            True,
            f"denies no flow the topology says must pass{why}; counted {before}",
            {"counted": before},
        )

    def _cuts(self, name: str, b: Binding, r: Rule, cut: list, counted: int) -> Check:
        s = cut[0][0]
        mine = ", ".join(p.what for s2, p in cut if s2 is s)
        others = sorted(
            {
                f"{'acl ' + b2.acl + ' ' if b2.acl != b.acl else ''}rule {r2.seq}"
                for b2, r2, _ in s.drops
                if (b2.acl, r2.seq) != (b.acl, r.seq)
            }
        )
        state = self.state(s.port)
        how = "no way to open it remains" if s.kind == "BGP" else "it cannot run one way"
        return Check(
            GROUP,
            name,
            False,
            f"cuts {s.named}: drops {mine}"
            + (f" (with {', '.join(others)})" if others else "")
            + f": {how}, and the topology says it must be up; bgpd has it {state}, counted {counted}",
            {"sessions": sorted({s2.named for s2, _ in cut}), "state": state, "counted": counted},
        )

    def _sends(self, name: str, b: Binding, r: Rule, pairs: list[tuple[str, str]], before: int) -> Check:
        ctx = self.ctx
        src, dst = pairs[0]
        f: Flow = F.flow(ctx.fabric, src, dst, 1, count=FRAMES)
        res = F.run(ctx, [f], {f.flow_id: False}, check_icrc=False)[f.flow_id]
        after = counters(ctx.exec(self.node), b.family, TABLE, b.ns).get(b.counter(r.seq), 0)
        counted = after - before
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


def link_locals(ctx: LabContext, node: str) -> dict[str, tuple[str, str]]:
    """Fabric port -> (the node's, its peer's) IPv6 link-local address on that link, as the kernels have them."""
    me = ctx.fabric.nodes[node]
    out = {}
    for p in me.fabric_ports:
        ends = [_link_local(ctx, node, p.name), _link_local(ctx, p.peer_node, p.peer_port)]
        if all(ends):
            out[p.name] = (ends[0], ends[1])
    return out


def _link_local(ctx: LabContext, node: str, port: str) -> str:
    try:
        res = ctx.exec(node).check(["ip", "-j", "-6", "addr", "show", "dev", port, "scope", "link"])
        return next(a["local"] for i in json.loads(res.stdout) for a in i.get("addr_info", []))
    except (TwinError, ValueError, StopIteration, KeyError, TypeError):
        return ""
