"""Elements of a VTEP's internet gateways (`twin.config.services`): every rule of each tenant's NAT
table, its default route, the routes to and the BGP announcement of its public addresses, the
internet's default route. (Rate limits and congestion points: `twin.prove.rates`.)

The gateway's rules are read from the ruleset twin renders (`gateway-<vrf>.nft`): each rule with
a comment is deleted by its handle and the file loaded again to restore it. Every rule rendered
stops something in the lab (a gateway without forwards has no `forwards` rule, one whose hosts all
go out no `a segment that does not go out`), so none is exempt. Routes are kernel steps of the
gateway's unit; announcements lines of frr.conf (restored by `frr-reload.py`).
"""

from __future__ import annotations

import re

from twin.config import services
from twin.config.backend import tenant_ns
from twin.config.steps import Step
from twin.intent.gateway import NODE_SIDE, TENANT_SIDE, GatewayIntent, vtep_gateways
from twin.lifecycle.context import LabContext
from twin.prove.element import Element, Exempt, Kernel, NftDelete, Reload, Vtysh, alt
from twin.topology.model import Tenant
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
    f, be, out = ctx.fabric, ctx.backend, []
    for v in f.vteps():
        files = services.rulesets(f, v, be, ctx.shaping)
        gateways = vtep_gateways(f, v)
        for t in f.tenants_on(v):
            g = gateways.get(t.name)
            if g is None:
                continue
            out += _nat_rules(ctx, v, t, g, files[services.gateway_file(t)]) + _routes(ctx, v, t, g)
    inet = [e for e in edges(f) if any(t.internet for t in f.tenants.values())]
    for e in inet:
        asn = f.nodes[e].asn
        out.append(
            Element(
                f"internet-default {e}",
                "internet default route",
                e,
                f"neighbor fabric default-originate on {e}",
                ("gateway",),
                (r"^gateway: \S+ has the internet's default route: ",),
                (
                    Vtysh(
                        e, (f"router bgp {asn}", "address-family ipv4 unicast", "no neighbor fabric default-originate")
                    ),
                ),
                (Reload(e),),
            )
        )
    return out, []


def _nat_rules(ctx: LabContext, v: str, t: Tenant, g: GatewayIntent, text: str) -> list[Element]:
    """Each rule of tenant `t`'s gateway table on `v`, with the probes only it stops or lets through."""
    ns, out = tenant_ns(t, ctx.backend), []
    tn, table = re.escape(t.name), f"ip {services.gateway_table(t, ctx.backend)}"
    going = list(g.nat)  # its hosts here that go out
    staying = g.inside  # hosts here whose segment stays inside
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
        if comment.startswith("forward to "):
            expect = (forward.replace(r"\(forward to .*", rf"\(forward to {re.escape(comment[11:])}.*"),)
        elif comment.endswith(": 1:1"):
            expect = (rf"^gateway: {tn} {re.escape(comment[:-5])} -> internet ",)
        else:
            expect = expects[comment]
        out.append(
            Element(
                f"gateway-rule {v} {t.vrf} {comment}",
                "gateway rule",
                v,
                f'"{comment}" in {table} {chain} on {v} ({t.name})',
                ("gateway",),
                expect,
                (NftDelete(v, ns, comment, table, chain),),
                (Kernel(v, (Step("nft", services.gateway_file(t), ns),)),),
            )
        )
    return out


def _routes(ctx: LabContext, v: str, t: Tenant, g: GatewayIntent) -> list[Element]:
    """The tenant VRF's default route to the gateway, and per public address the node's route to it
    and its BGP announcement."""
    f = ctx.fabric
    unit = next(u for u in services.units(f, v, ctx.backend, ctx.shaping) if u.key == f"gateway {t.name}")
    routes = {s.args["dst"]: s for s in unit.setup if s.op == "route"}
    default, tn = routes["default"], re.escape(t.name)
    going = list(g.nat)  # its hosts here that go out
    out = [
        Element(
            f"gateway-default {v} {t.vrf}",
            "gateway default route",
            v,
            f"default via {NODE_SIDE} dev {g.gateway} in {t.vrf} on {v}",
            ("gateway",),
            (rf"^gateway: {tn} {alt(going)} -> internet .*never reached the internet",),
            (Kernel(v, (Step("unroute", default.dev, default.ns, default.args),)),),
            (Kernel(v, (default,)),),
        )
    ]
    asn = f.nodes[v].asn
    for ip in g.public:
        route = routes[f"{ip}/32"]
        announced = (rf"^gateway: {re.escape(ip)}/32 \({tn}\) announced by {v}, learned by ",)
        out.append(
            Element(
                f"public-route {v} {ip}",
                "public address route",
                v,
                f"{ip}/32 via {TENANT_SIDE} dev {g.uplink} on {v} ({t.name})",
                ("gateway",),
                announced,
                (Kernel(v, (Step("unroute", route.dev, route.ns, route.args),)),),
                (Kernel(v, (route,)),),
            )
        )
        out.append(
            Element(
                f"public-network {v} {ip}",
                "public address announcement",
                v,
                f"network {ip}/32 on {v} ({t.name})",
                ("gateway",),
                announced,
                (Vtysh(v, (f"router bgp {asn}", "address-family ipv4 unicast", f"no network {ip}/32")),),
                (Reload(v),),
            )
        )
    return out
