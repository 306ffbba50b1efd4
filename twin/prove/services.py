"""Elements of a VTEP's services (`twin.config.services`): each tenant's internet gateway (every
rule of its NAT table, its default route, the routes to and the BGP announcement of its public
addresses, the internet's default route) and every rate limit a noisy neighbour is held to.

The gateway's rules are read from the ruleset twin renders (`gateway-<vrf>.nft`): each rule with
a comment is deleted by its handle and the file loaded again to restore it. Routes are kernel
steps of the gateway's unit; announcements lines of frr.conf (restored by `frr-reload.py`).
A rate limit is broken by its unit's own teardown (tc) or by deleting its rule (nftables), and
restored by its setup or its file. What twin renders and no verify check can see in this lab is
listed as exempt, with the reason.
"""
from __future__ import annotations

import re

from twin.config import services
from twin.config.backend import tenant_ns
from twin.config.steps import Step
from twin.intent.gateway import NODE_SIDE, TENANT_SIDE, GatewayIntent, gateway_intent
from twin.lifecycle.context import LabContext
from twin.prove.element import Element, Exempt, Kernel, NftDelete, Reload, Vtysh, alt
from twin.topology.model import Attachment, Tenant
from twin.verify import performance
from twin.verify.gateway_probes import edges

_CHAIN = re.compile(r"^\s*chain (\S+) \{")
_COMMENT = re.compile(r'comment "([^"]+)"')


def commented(text: str) -> list[tuple[str, str]]:
    """(chain, comment) of every rule of a rendered ruleset that has a comment, in order."""
    out, chain = [], ""
    for line in text.splitlines():
        if m := _CHAIN.match(line):
            chain = m[1]
        elif (c := _COMMENT.search(line)) and chain:
            out.append((chain, c[1]))
    return out



def gateway_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    f, be, out, exempt = ctx.fabric, ctx.backend, [], []
    for v in f.vteps():
        files = services.rulesets(f, v, be, ctx.shaping)
        for t in f.tenants_on(v):
            g = gateway_intent(f, v, t)
            if g is None:
                continue
            els, ex = _nat_rules(ctx, v, t, g, files[services.gateway_file(t)])
            out += els + _routes(ctx, v, t, g)
            exempt += ex
    inet = [e for e in edges(f) if any(t.internet for t in f.tenants.values())]
    for e in inet:
        asn = f.nodes[e].asn
        out.append(Element(f"internet-default {e}", "internet default route", e,
                           f"neighbor fabric default-originate on {e}", ("gateway",),
                           (r"^gateway: \S+ has the internet's default route: ",),
                           (Vtysh(e, (f"router bgp {asn}", "address-family ipv4 unicast",
                                      "no neighbor fabric default-originate")),), (Reload(e),)))
    return out, exempt


def _nat_rules(ctx: LabContext, v: str, t: Tenant, g: GatewayIntent, text: str) -> tuple[list[Element], list[Exempt]]:
    """Each rule of tenant `t`'s gateway table on `v`, with the probes only it stops or lets through."""
    ns, out, exempt = tenant_ns(t, ctx.backend), [], []
    tn, table = re.escape(t.name), f"ip {services.gateway_table(t, ctx.backend)}"
    going = list(g.nat)   # its hosts here that go out
    staying = [a.host for a in t.attachments if a.vtep == v and not t.goes_out(a)]
    out_probe = rf"^gateway: {tn} {alt(going)} -> internet "
    forward = rf"^gateway: .*-> {tn} .*\(forward to .*never reached"
    expects = {
        "replies": (out_probe + r".*no reply came back",),
        "forwards": (forward,),
        "unsolicited inbound": (rf"^gateway: internet -> {tn} .*\(no forward\): ",),
        "a segment that does not go out": (rf"^gateway: {tn} {alt(staying)} -> internet .*: reached the internet",),
        "the fabric's own addresses": (rf"^gateway: {tn} {alt(going)} -> fabric .*: a reply came back",),
        "pool": (rf"^gateway: {tn} {alt(h for h, p in g.nat.items() if g.public.get(p) == 'pool')} -> internet ",),
    }
    for chain, comment in commented(text):
        if comment in ("forwards",) and not g.forwards:
            exempt.append(Exempt("gateway rule", f"{v} {t.name}", f'"{comment}": no forward of {t.name} on {v}'))
            continue
        if comment == "a segment that does not go out" and not staying:
            exempt.append(Exempt("gateway rule", f"{v} {t.name}", f'"{comment}": every host of {t.name} on {v} '
                                                                     "goes out"))
            continue
        if comment.startswith("forward to "):
            expect = (forward.replace(r"\(forward to .*", rf"\(forward to {re.escape(comment[11:])}.*"),)
        elif comment.endswith(": 1:1"):
            expect = (rf"^gateway: {tn} {re.escape(comment[:-5])} -> internet ",)
        else:
            expect = expects[comment]
        out.append(Element(f"gateway-rule {v} {t.vrf} {comment}", "gateway rule", v,
                           f'"{comment}" in {table} {chain} on {v} ({t.name})', ("gateway",), expect,
                           (NftDelete(v, ns, comment, table, chain),),
                           (Kernel(v, (Step("nft", services.gateway_file(t), ns),)),)))
    return out, exempt


def _routes(ctx: LabContext, v: str, t: Tenant, g: GatewayIntent) -> list[Element]:
    """The tenant VRF's default route to the gateway, and per public address the node's route to it
    and its BGP announcement."""
    f = ctx.fabric
    unit = next(u for u in services.units(f, v, ctx.backend, ctx.shaping) if u.key == f"gateway {t.name}")
    routes = {s.args["dst"]: s for s in unit.setup if s.op == "route"}
    default, tn = routes["default"], re.escape(t.name)
    going = list(g.nat)   # its hosts here that go out
    out = [Element(f"gateway-default {v} {t.vrf}", "gateway default route", v,
                   f"default via {NODE_SIDE} dev {g.gateway} in {t.vrf} on {v}", ("gateway",),
                   (rf"^gateway: {tn} {alt(going)} -> internet .*never reached the internet",),
                   (Kernel(v, (Step("unroute", default.dev, default.ns, default.args),)),), (Kernel(v, (default,)),))]
    asn = f.nodes[v].asn
    for ip in g.public:
        route = routes[f"{ip}/32"]
        announced = (rf"^gateway: {re.escape(ip)}/32 \({tn}\) announced by {v}, learned by ",)
        out.append(Element(f"public-route {v} {ip}", "public address route", v,
                           f"{ip}/32 via {TENANT_SIDE} dev {g.uplink} on {v} ({t.name})", ("gateway",), announced,
                           (Kernel(v, (Step("unroute", route.dev, route.ns, route.args),)),), (Kernel(v, (route,)),)))
        out.append(Element(f"public-network {v} {ip}", "public address announcement", v,
                           f"network {ip}/32 on {v} ({t.name})", ("gateway",), announced,
                           (Vtysh(v, (f"router bgp {asn}", "address-family ipv4 unicast", f"no network {ip}/32")),),
                           (Reload(v),)))
    return out


def _binding(src: Attachment, dst: Attachment, direction: str) -> bool:
    """Is `src`'s egress limit (or `dst`'s ingress limit) what holds a flood from src to dst?"""
    eg, ing = src.rate_limit and src.rate_limit.egress, dst.rate_limit and dst.rate_limit.ingress
    mine, other = (eg, ing) if direction == "egress" else (ing, eg)
    return bool(mine) and (not other or mine.per_second(1098) <= other.per_second(1098))


def limit_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """Each rate limit of each workload, where a noisy-neighbour flood of the performance group is
    held by it (else exempt: nothing verify sends would notice it gone)."""
    f, out, exempt = ctx.fabric, [], []
    floods = [s.noisy for s in performance.scenarios(f)]
    for t in f.tenants.values():
        for a in t.attachments:
            for direction in ("egress", "ingress"):
                rate = a.rate_limit and getattr(a.rate_limit, direction)
                if not rate:
                    continue
                held = [(nt, src, dst) for nt, src, dst in floods
                        if (src.host if direction == "egress" else dst.host) == a.host and _binding(src, dst, direction)]
                where = f"{a.vtep}:{a.port} ({a.host})"
                if not held:
                    exempt.append(Exempt(f"rate limit ({direction})", where,
                                         "no flood of the performance group is held by it"))
                    continue
                expect = tuple(rf"^performance: {re.escape(nt.name)} {re.escape(src.host)} -> {re.escape(dst.host)} "
                               r"held to its limit" for nt, src, dst in held)
                breaks, restores, how = _limit_actions(ctx, t, a, direction)
                out.append(Element(f"rate-limit {a.vtep}:{a.port} {direction}", "rate limit", a.vtep,
                                   f"{direction} {rate} of {a.host} on {a.vtep}:{a.port} ({how})", ("performance",),
                                   expect, breaks, restores))
    for p in f.congestion:
        exempt.append(Exempt("congestion point", f"{p.node}:{p.port}",
                             "verify's traffic (16 frames a flow) stays within its burst; `twin traffic --congest` "
                             "drives it over"))
    return out, exempt


def _limit_actions(ctx: LabContext, t: Tenant, a: Attachment, direction: str) -> tuple[tuple, tuple, str]:
    f, ns = ctx.fabric, tenant_ns(t, ctx.backend)
    rate = getattr(a.rate_limit, direction)
    if services.shaped(rate, ctx.shaping):
        unit = next(u for u in services.units(f, a.vtep, ctx.backend, ctx.shaping) if u.key == f"shaping {a.port}")
        port_tbf = [s for s in unit.setup if s.op == "tbf" and s.dev == a.port]
        if direction == "ingress":
            return ((Kernel(a.vtep, (Step("noqdisc", a.port, ns, {"parent": "root"}),)),),
                    (Kernel(a.vtep, tuple(port_tbf)),), "tc TBF")
        teardown = tuple(s for s in unit.teardown if s.args.get("parent") != "root")
        return ((Kernel(a.vtep, teardown),), (Kernel(a.vtep, tuple(s for s in unit.setup if s not in port_tbf)),),
                "tc TBF on an IFB")
    comment = f"{a.host}: {direction} {rate}"
    return ((NftDelete(a.vtep, ns, comment, "bridge twin_rate", direction),),
            (Kernel(a.vtep, (Step("nft", services.policing_file(ns), ns),)),), "nftables limit")
