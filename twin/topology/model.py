"""The validated, fully derived fabric: what every later stage reads.

Every default is resolved here (ASNs, loopbacks, port names, MTUs), so the
renderer, the runtime and the checks never guess. It is plain data, saved as
JSON in the lab directory and golden-tested.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, model_serializer

from twin.topology.schema import AnyCheck


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Port(_Frozen):
    name: str
    peer_node: str
    peer_port: str
    mtu: int
    role: Literal["fabric", "access", "plain"]  # fabric: BGP session; access: host endpoint;
                                                # plain: a router's link, what runs on it is its config's


class Node(_Frozen):
    name: str
    kind: str
    asn: int | None = None
    loopback: str | None = None
    image: str | None = None       # None: the lab's node image
    drain: bool = False            # BGP graceful shutdown: carries no transit traffic
    ports: tuple[Port, ...] = ()
    exec: tuple[str, ...] = ()     # commands run in the node once it is configured (containerlab's exec)

    @model_serializer(mode="wrap")
    def _only_when_set(self, handler):
        """`drain` and `exec` are written only when set: a node without them is recorded as it was."""
        data = handler(self)
        if not self.drain:
            data.pop("drain", None)
        if not self.exec:
            data.pop("exec", None)
        return data

    @property
    def runs_bgp(self) -> bool:
        return self.asn is not None

    @property
    def ports_by_name(self) -> dict[str, Port]:
        return {p.name: p for p in self.ports}

    @property
    def fabric_ports(self) -> tuple[Port, ...]:
        return tuple(p for p in self.ports if p.role == "fabric")


class Endpoint(_Frozen):
    node: str
    port: str

    def __str__(self) -> str:
        return f"{self.node}:{self.port}"


class Link(_Frozen):
    a: Endpoint
    b: Endpoint
    mtu: int


class Session(_Frozen):
    """One BGP session as seen from one side: `node` peers on `port` with `peer`."""

    node: str
    port: str
    peer: str

    def __str__(self) -> str:
        return f"{self.node}:{self.port} -> {self.peer}"


class Segment(_Frozen):
    name: str
    subnet: str            # e.g. 10.1.1.0/24
    l2vni: int
    gateway: str           # anycast gateway address, the same on every VTEP
    mac: str               # anycast gateway MAC

    @property
    def gateway_cidr(self) -> str:
        return f"{self.gateway}/{self.subnet.split('/')[1]}"


class Attachment(_Frozen):
    """Host `host` (port `host_port`, address `address`) in `segment`, behind VTEP port `vtep`:`port`."""

    host: str
    host_port: str
    segment: str
    vtep: str
    port: str
    address: str           # with prefix length, e.g. 10.1.1.11/24
    mac: str               # the host port's MAC, fixed so the twin knows who is who


class Tenant(_Frozen):
    name: str
    vrf: str
    l3vni: int
    segments: dict[str, Segment]
    attachments: tuple[Attachment, ...]

    def vteps(self) -> list[str]:
        return sorted({a.vtep for a in self.attachments})

    def segments_on(self, vtep: str) -> list[Segment]:
        """Segments with a host behind `vtep`: the only ones it instantiates."""
        names = {a.segment for a in self.attachments if a.vtep == vtep}
        return [s for s in self.segments.values() if s.name in names]

    def segment_vteps(self, segment: str) -> list[str]:
        return sorted({a.vtep for a in self.attachments if a.segment == segment})


class Fabric(_Frozen):
    name: str
    source: str            # the topology file it came from
    nodes: dict[str, Node]
    links: tuple[Link, ...]
    vtep_kind: str = "dpu"
    tenants: dict[str, Tenant] = {}
    checks: tuple[AnyCheck, ...] = ()   # the topology's own `checks:` (twin verify runs them)

    @model_serializer(mode="wrap")
    def _checks_only_when_given(self, handler):
        """`checks` is written only when the topology has some: other labs' recorded intent stays as it was."""
        data = handler(self)
        if not self.checks:
            data.pop("checks", None)
        return data

    def tenants_on(self, node: str) -> list[Tenant]:
        """Tenants with a host behind `node` (so `node` is their VTEP)."""
        return [t for t in self.tenants.values() if node in t.vteps()]

    def vteps(self) -> list[str]:
        return [n for n in self.nodes if self.tenants_on(n)]

    def attachment_of(self, host: str) -> tuple[Tenant, Attachment] | None:
        for t in self.tenants.values():
            for a in t.attachments:
                if a.host == host:
                    return t, a
        return None

    def routers(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.runs_bgp]

    def drained(self) -> list[str]:
        """Nodes drained for maintenance (BGP graceful shutdown)."""
        return [n.name for n in self.routers() if n.drain]

    def hops(self, node: str, avoid: frozenset[str] | set[str] = frozenset()) -> dict[str, int]:
        """Fabric hops from `node` to every router reached without entering a node of `avoid`."""
        dist, todo = {node: 0}, [node]
        while todo:
            nxt = []
            for n in todo:
                for p in self.nodes[n].fabric_ports:
                    if p.peer_node not in dist and p.peer_node not in avoid:
                        dist[p.peer_node] = dist[n] + 1
                        nxt.append(p.peer_node)
            todo = nxt
        return dist

    def sessions(self, node: str | None = None) -> list[Session]:
        """Every BGP session the topology implies: one per side of each fabric link."""
        return [
            Session(node=n.name, port=p.name, peer=p.peer_node)
            for n in self.nodes.values()
            if node is None or n.name == node
            for p in n.fabric_ports
        ]

    def expected_loopbacks(self, node: str) -> dict[str, str]:
        """Loopbacks `node` must have a route to: peer name -> /32 prefix.

        eBGP drops a path that carries its own ASN, so nodes sharing an ASN
        (the spines) do not learn each other's loopbacks; that is intended.
        """
        me = self.nodes[node]
        return {
            n.name: f"{n.loopback}/32"
            for n in self.routers()
            if n.name != node and n.asn != me.asn
        }
