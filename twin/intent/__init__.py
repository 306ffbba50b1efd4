"""What every node must hold, worked out once from the Fabric.

The convergence barrier, `twin verify`, `twin status` and `twin rehearse` all
read this: nothing else derives what a node should have. Pure: a Fabric in,
plain frozen data out.

    intent = Intent(fabric)
    n = intent.nodes["dpu1"]
    n.sessions, n.loopbacks            # the underlay: BGP sessions, loopback routes
    n.vnis                             # every VNI zebra must know (L3VNIs, local L2VNIs)
    for t in n.tenants: t.routes       # each tenant's VRF, prefix -> next hops, drains applied
    n.gateways, n.public_routes        # tenants' internet gateways on this VTEP, public /32s to route

Nodes whose intent twin does not derive (routers running the user's config) have
what that config declares instead: `Intent(fabric, files).generic["r1"]` (its
daemons and adjacencies, `twin.intent.generic`), from the files the nodes run.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Mapping

from twin import kinds
from twin.intent.gateway import (
    DEFAULT,
    NODE_SIDE,
    TENANT_SIDE,
    GatewayIntent,
    public_name,
    public_routes,
    vtep_gateways,
)
from twin.intent.generic import Adjacency, GenericIntent, Route, generic_intents, network
from twin.intent.tenants import (
    CONNECTED,
    SegmentIntent,
    TenantIntent,
    bridge_name,
    evpn_routes,
    tenant_intent,
    vxlan_name,
)
from twin.topology.model import Fabric, Session


@dataclass(frozen=True)
class NodeIntent:
    """What one FRR node must hold."""

    node: str
    sessions: tuple[Session, ...]  # one per fabric port
    peer_loopbacks: dict[str, str]  # port -> /32 of the peer on it (a route over the port proves the session)
    loopbacks: dict[str, str]  # router -> /32 this node must have a route to
    evpn: bool  # EVPN rides the underlay sessions (the fabric has tenants)
    tenants: tuple[TenantIntent, ...]  # as this node's VTEP
    gateways: tuple[GatewayIntent, ...] = ()  # tenants' internet gateways on this VTEP
    public_routes: dict[str, str] = field(default_factory=dict)  # public /32 -> whose: a route to each
    default_route: str = ""  # who announces the default route it must have ("": none)
    edge: bool = False  # the internet: its /32 routes are exactly loopbacks and public ones
    edge_ports: frozenset[str] = frozenset()  # ports towards the internet: no EVPN on them
    # port -> the names its peer may send in BGP's hostname capability, where it has another than its node
    # name: the host name its FRR config gives it (bgpd sends the system's name as it started: on day 2 a
    # renamed peer sends its old one until FRR starts again)
    names: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def vtep(self) -> bool:
        return bool(self.tenants)

    @property
    def vnis(self) -> set[int]:
        return {v for t in self.tenants for v in t.vnis}

    def bgp_summary(self) -> dict:
        """The subset `show bgp summary json` must contain: every session Established with its peer."""
        peers = {
            s.port: {"state": "Established", **({} if s.port in self.names else {"hostname": s.peer})}
            for s in self.sessions
        }
        out: dict = {"ipv4Unicast": {"peers": peers}}
        if self.evpn and not self.edge:
            out["l2VpnEvpn"] = {"peers": {p: {"state": "Established"} for p in peers if p not in self.edge_ports}}
        return out

    def hostname_diffs(self, summary: dict) -> list[str]:
        """The peers of `names` whose hostname in `show bgp summary json` is none of their names (the
        others' hostnames are in `bgp_summary`)."""
        table = summary.get("ipv4Unicast") if isinstance(summary, dict) else None
        peers = (table.get("peers") if isinstance(table, dict) else None) or {}
        out = []
        for port, names in sorted(self.names.items()):
            got = peers.get(port, {}).get("hostname") if isinstance(peers.get(port), dict) else None
            if port in peers and got not in names:
                out.append(f".ipv4Unicast.peers.{port}.hostname: expected {' or '.join(map(repr, names))}, got {got!r}")
        return out

    def tenant(self, name: str) -> TenantIntent | None:
        return next((t for t in self.tenants if t.tenant == name), None)


class Intent:
    """The intent of every FRR node of a fabric (hosts hold what `twin.config.overlay` gives them).

    `files`: each node's files as it runs them (node -> file name -> text); only the nodes whose
    intent is their own config's (`generic`) need them. `hostnames`: node -> the host name its FRR
    config gives it, where another than its name (an NVUE `system hostname`): its peers may see either."""

    def __init__(
        self,
        fabric: Fabric,
        files: Mapping[str, Mapping[str, str]] | None = None,
        hostnames: Mapping[str, str] | None = None,
    ):
        self.fabric = fabric
        self.files = files or {}
        self.hostnames = {n: h for n, h in (hostnames or {}).items() if h != n}

    @cached_property
    def nodes(self) -> dict[str, NodeIntent]:
        return {n.name: self._node(n.name) for n in self.fabric.routers()}

    @cached_property
    def generic(self) -> dict[str, GenericIntent]:
        """Routers running the user's config: what that config declares (daemons, adjacencies)."""
        return generic_intents(self.fabric, self.files)

    def _node(self, name: str) -> NodeIntent:
        f = self.fabric
        me = f.nodes[name]
        edges = [n for n, nd in f.nodes.items() if kinds.of(nd).edge]
        gateways = tuple(vtep_gateways(f, name).values())
        tenants = tuple(tenant_intent(f, name, t) for t in f.tenants_on(name))
        if gateways:  # the VRF's default route leaves through the gateway
            gw = {g.tenant for g in gateways}
            tenants = tuple(
                replace(t, routes={**t.routes, DEFAULT: frozenset({NODE_SIDE})}, allowed=t.allowed | {DEFAULT})
                if t.tenant in gw
                else t
                for t in tenants
            )
        return NodeIntent(
            node=name,
            sessions=tuple(f.sessions(name)),
            peer_loopbacks={p.name: f"{f.nodes[p.peer_node].loopback}/32" for p in me.fabric_ports},
            loopbacks=f.expected_loopbacks(name),
            evpn=bool(f.tenants),
            tenants=tenants,
            gateways=gateways,
            public_routes=public_routes(f) if edges else {},
            default_route="" if name in edges else ", ".join(edges),
            edge=name in edges,
            edge_ports=frozenset(p.name for p in me.fabric_ports if p.peer_node in edges),
            names={s.port: (s.peer, self.hostnames[s.peer]) for s in f.sessions(name) if s.peer in self.hostnames},
        )

    def vteps(self) -> list[str]:
        return [n for n, i in self.nodes.items() if i.vtep]

    def evpn_routes(self, tenant: str) -> dict[tuple[tuple[int, str, str], frozenset[int]], str]:
        """Every EVPN route of a tenant, as every one of its VTEPs holds it (see tenants.evpn_routes)."""
        return evpn_routes(self.fabric, self.fabric.tenants[tenant])

    def owner_of(self) -> dict[str, str]:
        """Host /32 -> tenant, over every tenant: names the owner of a leaked route."""
        out: dict[str, str] = {}
        for t in self.fabric.tenants.values():
            for a in t.attachments:
                out.setdefault(a.ip + "/32", t.name)
        return out


__all__ = [
    "Intent",
    "NodeIntent",
    "TenantIntent",
    "SegmentIntent",
    "GatewayIntent",
    "GenericIntent",
    "Adjacency",
    "vtep_gateways",
    "CONNECTED",
    "DEFAULT",
    "NODE_SIDE",
    "TENANT_SIDE",
    "bridge_name",
    "frrconf",
    "generic",
    "network",
    "paths",
    "public_name",
    "Route",
    "vxlan_name",
]
