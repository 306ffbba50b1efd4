"""A tenant's internet gateway on one VTEP: what it NATs, forwards and announces.

The VTEP joins the tenant's VRF to its own routing table (the underlay) with a
veth pair: the tenant's side is the VRF's default route, the node's side the
route to each of the tenant's public addresses on this VTEP, which BGP announces.
Both ends are unnumbered: each points at the other's link-local address, whose
MAC is a permanent neighbour, so nothing of it is advertised into EVPN.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.topology.model import Fabric, Tenant

NODE_SIDE = "169.254.100.1"  # the VRF's default route points here (the node's end)
TENANT_SIDE = "169.254.100.2"  # the node's routes to public addresses point here (the tenant's end)
DEFAULT = "0.0.0.0/0"


def gateway_name(l3vni: int) -> str:
    """The tenant's end of the gateway pair (in its VRF): its default route leaves here."""
    return f"twingw{l3vni}"


def public_name(l3vni: int) -> str:
    """The node's end of the gateway pair (in the underlay): public addresses are routed here."""
    return f"twinpub{l3vni}"


@dataclass(frozen=True)
class Forward:
    proto: str
    public: str  # public address:port ...
    port: int
    host: str  # ... goes to this host's address:to
    ip: str
    to: int


@dataclass(frozen=True)
class GatewayIntent:
    """Tenant `tenant`'s gateway on one VTEP."""

    tenant: str
    vrf: str
    l3vni: int
    public: dict[str, str]  # public address -> "pool" or the host that has it (1:1)
    nat: dict[str, str]  # local host -> the public address it goes out as
    addresses: dict[str, str]  # local host -> its private address
    out: tuple[str, ...]  # subnets that may go out
    forwards: tuple[Forward, ...]
    inside: tuple[str, ...] = ()  # local hosts that do not go out (their segment stays inside)

    @property
    def gateway(self) -> str:
        return gateway_name(self.l3vni)

    @property
    def uplink(self) -> str:
        return public_name(self.l3vni)


def vtep_gateways(fabric: Fabric, node: str) -> dict[str, GatewayIntent]:
    """Tenant -> the gateway VTEP `node` is for it, for each tenant some of whose hosts on `node` go
    out (in the fabric's order of tenants): the one place a gateway's intent is derived."""
    return {t.name: g for t in fabric.tenants_on(node) if (g := _gateway(fabric, node, t)) is not None}


def _gateway(fabric: Fabric, node: str, t: Tenant) -> GatewayIntent | None:
    """The gateway VTEP `node` is for tenant `t`, if any of its local hosts go out."""
    public = t.gateway(node)
    if not public or t.internet is None:
        return None
    local = [a for a in t.attachments if a.vtep == node and t.goes_out(a)]
    nat = {a.host: p for a in local if (p := t.public_of(a)) is not None}
    forwards = tuple(
        Forward(f.proto, nat[f.host], f.port, f.host, a.ip, f.to)
        for f in t.internet.forwards
        for a in local
        if a.host == f.host
    )
    return GatewayIntent(
        tenant=t.name,
        vrf=t.vrf,
        l3vni=t.l3vni,
        public=public,
        nat=nat,
        addresses={a.host: a.ip for a in local},
        out=tuple(t.segments[s].subnet for s in t.internet.segments),
        forwards=forwards,
        inside=tuple(a.host for a in t.attachments if a.vtep == node and not t.goes_out(a)),
    )


def public_routes(fabric: Fabric) -> dict[str, str]:
    """Every public /32 a router must have a route to, with who announces it."""
    return {p: f"{t}'s public address, announced by {v}" for p, (t, v) in sorted(fabric.public().items())}
