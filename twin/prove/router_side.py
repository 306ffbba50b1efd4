"""Elements of a router running the user's own config (`twin.intent.generic`): what its frr.conf
declares, each removed in turn by typing its `no` form into the router's vtysh, put back by
`frr-reload.py` of the file it runs.

- each BGP neighbor (not shut down): `no neighbor X` in its `router bgp`; the adjacency check of
  that neighbor must fail;
- each OSPF, OSPFv3 and IS-IS interface, passive ones too: `no ip ospf area` on the interface, or
  `no network P area A` of the statements that put it in OSPF (`no ipv6 ospf6 area`, `no ip router
  isis`); its adjacency's check must fail, or the route check of a router of its domain that
  learns its prefix from it alone;
- each static route: its `no ip route ...`; the router's route check must miss it.

Each break only takes lines away, so the restore only adds them back: one `frr-reload.py` of the
file, not a wait until FRR runs nothing else (a user's file may hold deprecated forms FRR shows
otherwise, `passive-interface X` under `router ospf`, which frr-reload never stops rewriting).

An element that nothing can notice (an interface with no neighbour whose prefix no other router
learns from it alone, a static route another one to the same prefix stands in for) is exempt, with
the reason.
"""

from __future__ import annotations

import re

from twin.intent import frrconf
from twin.intent.generic import GenericIntent, Route, network
from twin.lifecycle.context import LabContext
from twin.prove.element import Element, Exempt, Reload, Vtysh

DEFAULT = frrconf.DEFAULT_VRF


def router_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    out, exempt = [], []
    intents = ctx.intent.generic
    for node, gi in intents.items():
        cfg = frrconf.parse(ctx.intent.files.get(node, {}).get("frr.conf", ""))
        out += _neighbors(node, cfg)
        els, ex = _interfaces(node, cfg, gi, intents)
        out += els
        exempt += ex
        els, ex = _statics(node, cfg)
        out += els
        exempt += ex
    return out, exempt


def _vrf(vrf: str) -> str:
    return f" vrf {vrf}" if vrf != DEFAULT else ""


def _neighbors(node: str, cfg: frrconf.FrrConfig) -> list[Element]:
    out = []
    for inst in cfg.bgp:
        opener = f"router bgp {inst.asn}{_vrf(inst.vrf)}"
        for n in inst.active():
            out.append(
                Element(
                    f"bgp-neighbor {node} {n.name}{_vrf(inst.vrf)}",
                    "BGP neighbor",
                    node,
                    f"neighbor {n.name} in {opener} on {node}",
                    ("control",),
                    (rf"^control: bgp {re.escape(node)} {re.escape(n.name)}: ",),
                    (Vtysh(node, (opener, f"no neighbor {n.name}")),),
                    (Reload(node, removes=False),),
                )
            )
    return out


def _removal(cfg: frrconf.FrrConfig, proto: str, iface: str, vrf: str) -> tuple[str, ...]:
    """vtysh lines (after `configure terminal`) that take `iface` out of `proto`."""
    i = cfg.interfaces.get((iface, vrf))
    head = f"interface {iface}{_vrf(vrf)}"
    if proto == "isis" and i is not None:
        return (head, *(f"no {'ip' if f == 4 else 'ipv6'} router isis {i.isis}" for f in sorted(i.isis_families)))
    if proto == "ospf6":
        if i is not None and i.ospf6_area is not None:
            return head, f"no ipv6 ospf6 area {i.ospf6_area}"
        inst = next(o for o in cfg.ospf6 if o.vrf == vrf and iface in o.areas)
        return inst.opener, f"no interface {iface} area {inst.areas[iface]}"
    if i is not None and i.ospf_area is not None:
        return head, "no ip ospf area"
    lines: list[str] = []
    for inst, prefix, area in cfg.ospf_networks(iface, vrf):
        lines += ["exit", inst.opener, f"no network {prefix} area {area}"]
    return tuple(lines[1:])


def _interfaces(
    node: str, cfg: frrconf.FrrConfig, gi: GenericIntent, intents: dict[str, GenericIntent]
) -> tuple[list[Element], list[Exempt]]:
    out, exempt = [], []
    names = {"ospf": "OSPF", "ospf6": "OSPFv3", "isis": "IS-IS"}
    for proto, prefixes in (
        ("ospf", cfg.igp_prefixes("ospf")),
        ("ospf6", cfg.igp_prefixes("ospf6")),
        ("isis", cfg.igp_prefixes("isis")),
    ):
        for (iface, vrf), nets in sorted(prefixes.items()):
            expect = [
                rf"^control: {proto} {re.escape(node)} {re.escape(iface)}: "
                for a in gi.adjacencies
                if a.protocol == proto and a.where == iface and a.vrf == vrf
            ]
            expect += [
                rf"^control: routes {re.escape(r.node)}: .*route to {re.escape(r.prefix)} "
                for r in _learned_from(intents, f"{node}:{iface}", proto, vrf, nets)
            ]
            where = f"{node} {iface}{_vrf(vrf)}"
            if not expect:
                exempt.append(
                    Exempt(
                        f"{names[proto]} interface",
                        where,
                        "no neighbour on it, and no other router learns its prefix from it alone",
                    )
                )
                continue
            out.append(
                Element(
                    f"{proto}-interface {where}",
                    f"{names[proto]} interface",
                    node,
                    f"{names[proto]} on {iface}{_vrf(vrf)} of {node} ({', '.join(nets) or 'no prefix'})",
                    ("control",),
                    tuple(expect),
                    (Vtysh(node, _removal(cfg, proto, iface, vrf)),),
                    (Reload(node, removes=False),),
                )
            )
    return out, exempt


def _learned_from(intents: dict[str, GenericIntent], origin: str, proto: str, vrf: str, nets: list[str]) -> list[Route]:
    """Routes of other routers that `origin` (node:interface) alone gives them: its prefixes that no
    other interface of the domain has too (a link's subnet is both its ends')."""
    return [
        r
        for g in intents.values()
        for r in g.routes
        if r.protocol == proto and r.vrf == vrf and r.prefix in nets and r.origins == (origin,)
    ]


def _statics(node: str, cfg: frrconf.FrrConfig) -> tuple[list[Element], list[Exempt]]:
    out, exempt = [], []
    seen: dict[tuple[str, str], int] = {}
    for st in cfg.statics:
        seen[(st.prefix, st.vrf)] = seen.get((st.prefix, st.vrf), 0) + 1
    for st in cfg.statics:
        text = " ".join(st.words)
        where = f"{node} {st.prefix}{_vrf(st.vrf)}"
        if seen[(st.prefix, st.vrf)] > 1:
            exempt.append(
                Exempt("static route", f"{where} ({text})", "another static route to the same prefix stands in for it")
            )
            continue
        block = (f"vrf {st.vrf}",) if st.vrf != DEFAULT and "vrf" not in st.words else ()
        prefix = network(st.prefix)
        out.append(
            Element(
                f"static {where}",
                "static route",
                node,
                f"{text} on {node}",
                ("control",),
                (rf"^control: routes {re.escape(node)}: .*static route {re.escape(prefix)}\b",),
                (Vtysh(node, (*block, f"no {text}")),),
                (Reload(node, removes=False),),
            )
        )
    return out, exempt
