"""What changed between two fabrics (pure): the one diff that plan text, refusals,
kernel steps and host/link changes are all read from."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cached_property

from twin import kinds
from twin.config.backend import NAMES, wanted
from twin.topology import mgmt
from twin.topology.model import Fabric, Internet, Link, RateLimit

# a node changed in these is a new node (its container's mounts, command and environment included)
NODE_FIXED = ("kind", "asn", "loopback", "image", "binds", "cmd", "entrypoint", "env")
NODE_LIVE = ("drain",)  # changed on a running node


def link_key(link: Link) -> frozenset[str]:
    return frozenset((str(link.a), str(link.b)))


def unified(before: str, after: str, name: str) -> str:
    """A unified diff of one file ("" when equal)."""
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), name, name))


@dataclass(frozen=True)
class FabricDiff:
    """`new` is a running `old`'s next intent: what `twin up` chose for `old`'s management network it
    has too where its file leaves it to twin (`twin.topology.mgmt.carry`)."""

    old: Fabric
    new: Fabric

    # --- nodes --------------------------------------------------------------------------
    @cached_property
    def nodes_added(self) -> list[str]:
        return sorted(set(self.new.nodes) - set(self.old.nodes))

    @cached_property
    def nodes_removed(self) -> list[str]:
        return sorted(set(self.old.nodes) - set(self.new.nodes))

    @cached_property
    def node_changes(self) -> list[tuple[str, str, object, object]]:
        """(node, attribute, old, new) of every node in both fabrics."""
        out = []
        for n in sorted(set(self.old.nodes) & set(self.new.nodes)):
            o, w = self.old.nodes[n], self.new.nodes[n]
            out += [
                (n, a, getattr(o, a), getattr(w, a)) for a in NODE_FIXED + NODE_LIVE if getattr(o, a) != getattr(w, a)
            ]
        return out

    @cached_property
    def hosts_added(self) -> list[str]:
        """Workload endpoints that come with the change (their containers are made)."""
        return [n for n in self.new.nodes if n in self.nodes_added and kinds.of(self.new.nodes[n]).endpoint]

    @cached_property
    def hosts_removed(self) -> list[str]:
        return [n for n in self.old.nodes if n in self.nodes_removed and kinds.of(self.old.nodes[n]).endpoint]

    def fixed(self) -> list[str]:
        """What a running lab cannot take: routers that come or go, or a node that becomes another."""
        out = [f"add node {n} ({self.new.nodes[n].kind})" for n in self.nodes_added if n not in self.hosts_added]
        out += [
            f"remove node {n} ({self.old.nodes[n].kind})" for n in self.nodes_removed if n not in self.hosts_removed
        ]
        out += [f"change {a} of {n} ({o} -> {w})" for n, a, o, w in self.node_changes if a in NODE_FIXED]
        old_word, new_word = (NAMES[wanted(f, None)[0]] for f in (self.old, self.new))
        if old_word != new_word:  # every VTEP made anew
            out.append(f"change defaults.vrf_backend ({old_word} -> {new_word})")
        return sorted(out + mgmt.differs(self.old, self.new))  # the management network stays as `up` made it

    # --- links ----------------------------------------------------------------------------
    @cached_property
    def _links(self) -> tuple[dict[frozenset[str], Link], dict[frozenset[str], Link]]:
        return {link_key(link): link for link in self.old.links}, {link_key(link): link for link in self.new.links}

    @property
    def links_added(self) -> list[Link]:
        old, new = self._links
        return [new[k] for k in new if k not in old]

    @property
    def links_removed(self) -> list[Link]:
        old, new = self._links
        return [old[k] for k in old if k not in new]

    @property
    def link_mtus(self) -> list[tuple[frozenset[str], int, int]]:
        old, new = self._links
        return [(k, old[k].mtu, new[k].mtu) for k in old if k in new and old[k].mtu != new[k].mtu]

    # --- the whole change, in words ------------------------------------------------------------
    def lines(self) -> list[str]:
        """Every topology-level change, one line each (the head of `twin plan`)."""
        c = [f"add node {n} ({self.new.nodes[n].kind})" for n in self.nodes_added]
        c += [f"remove node {n} ({self.old.nodes[n].kind})" for n in self.nodes_removed]
        c += [f"change {n} {a}: {o} -> {w}" for n, a, o, w in self.node_changes]
        show = lambda k: " <-> ".join(sorted(k))  # noqa: E731
        c += [
            f"add link {show(link_key(link))} (mtu {link.mtu})"
            for link in sorted(self.links_added, key=lambda link: sorted(link_key(link)))
        ]
        c += [
            f"remove link {show(link_key(link))}"
            for link in sorted(self.links_removed, key=lambda link: sorted(link_key(link)))
        ]
        c += [f"change mtu of {show(k)}: {o} -> {w}" for k, o, w in sorted(self.link_mtus, key=lambda x: sorted(x[0]))]
        c += [f for f in self.fixed() if f.startswith("change defaults.vrf_backend")] + mgmt.differs(self.old, self.new)
        return c + self._tenant_lines()

    def _tenant_lines(self) -> list[str]:
        old, new, c = self.old.tenants, self.new.tenants, []
        for t in sorted(set(new) - set(old)):
            c.append(f"add tenant {t} (l3vni {new[t].l3vni}, VTEPs {', '.join(new[t].vteps())})")
        c += [f"remove tenant {t}" for t in sorted(set(old) - set(new))]
        for t in sorted(set(old) & set(new)):
            o, w = old[t], new[t]
            c += [
                f"add segment {t}/{s} ({w.segments[s].subnet}, l2vni {w.segments[s].l2vni})"
                for s in sorted(set(w.segments) - set(o.segments))
            ]
            c += [f"remove segment {t}/{s}" for s in sorted(set(o.segments) - set(w.segments))]
            c += [
                f"change segment {t}/{s}"
                for s in sorted(set(o.segments) & set(w.segments))
                if o.segments[s] != w.segments[s]
            ]
            oa, wa = {a.host: a for a in o.attachments}, {a.host: a for a in w.attachments}
            c += [
                f"attach {h} to {t}/{wa[h].segment} at {wa[h].vtep}:{wa[h].port} ({wa[h].address})"
                for h in sorted(set(wa) - set(oa))
            ]
            c += [f"detach {h} from {t}/{oa[h].segment}" for h in sorted(set(oa) - set(wa))]
            same = [h for h in sorted(set(oa) & set(wa)) if oa[h] != wa[h]]
            c += [
                f"change rate limits of {h} in {t}: {_limits(oa[h].rate_limit)} -> {_limits(wa[h].rate_limit)}"
                if oa[h].model_copy(update={"rate_limit": None}) == wa[h].model_copy(update={"rate_limit": None})
                else f"change attachment of {h} in {t}"
                for h in same
            ]
            c += _internet_line(t, o.internet, w.internet)
        return c + self._congestion_lines()

    def _congestion_lines(self) -> list[str]:
        old = {f"{p.node}:{p.port}": p.above for p in self.old.congestion}
        new = {f"{p.node}:{p.port}": p.above for p in self.new.congestion}
        return (
            [f"add congestion point {p} (above {new[p]})" for p in new if p not in old]
            + [f"remove congestion point {p}" for p in old if p not in new]
            + [f"change congestion point {p}: above {old[p]} -> {new[p]}" for p in new if p in old and old[p] != new[p]]
        )


def _limits(limit: RateLimit | None) -> str:
    parts = [f"{d} {getattr(limit, d)}" for d in ("egress", "ingress") if limit and getattr(limit, d)]
    return ", ".join(parts) or "none"


def _internet_line(tenant: str, old: Internet | None, new: Internet | None) -> list[str]:
    def shown(i: Internet) -> str:
        parts = [f"pool {i.pool}"] if i.pool else []
        parts += [f"{len(i.hosts)} host address(es)"] if i.hosts else []
        return ", ".join(
            parts + [f"segments {', '.join(i.segments)}"] + ([f"{len(i.forwards)} forward(s)"] if i.forwards else [])
        )

    if old == new:
        return []
    if new is None:
        return [f"take internet access from tenant {tenant}"]
    if old is None:
        return [f"give tenant {tenant} internet access ({shown(new)})"]
    return [f"change internet access of tenant {tenant}: {shown(old)} -> {shown(new)}"]
