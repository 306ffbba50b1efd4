"""The validated, fully derived fabric: what every later stage reads.

Every default is resolved here (ASNs, loopbacks, port names, MTUs), so the
renderer, the runtime and the checks never guess. It is plain data, saved as
JSON in the lab directory and golden-tested.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from twin.base.errors import TwinError
from twin.kinds import KINDS
from twin.topology.schema import AnyCheck


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Sparse(_Frozen):
    """A model whose optional features are written only when used, so the recorded intent
    (and the golden files) of a fabric without them stays as it was."""

    _sparse: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _omit_unused(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        for key in self._sparse:
            if not data.get(key):
                data.pop(key, None)
        return data


class Rate(_Frozen):
    value: int  # bits or packets per second
    unit: Literal["bit", "pps"]

    def __str__(self) -> str:
        if self.unit == "pps":
            return f"{self.value}pps"
        for scale, name in ((1000**3, "gbit"), (1000**2, "mbit"), (1000, "kbit")):
            if self.value % scale == 0:
                return f"{self.value // scale}{name}"
        return f"{self.value}bit"

    def per_second(self, frame_bytes: int) -> float:
        """Frames per second of `frame_bytes` each that this rate lets through."""
        return float(self.value) if self.unit == "pps" else self.value / (8.0 * frame_bytes)


class RateLimit(_Sparse):
    """Limits of one workload: egress is what it sends, ingress what it receives."""

    _sparse: ClassVar[tuple[str, ...]] = ("egress", "ingress")
    egress: Rate | None = None
    ingress: Rate | None = None


class Port(_Frozen):
    name: str
    peer_node: str
    peer_port: str
    mtu: int
    role: Literal["fabric", "access", "plain"]  # fabric: BGP session; access: host endpoint;
    # plain: a router's link, what runs on it is its config's


class Confined(_Frozen):
    """A lab from an untrusted source (`twin.topology.confine`): its files from `root` only, the images it may run."""

    root: str = ""  # every bind's source is beneath it (the request's files; "": the topology's directory)
    images: tuple[str, ...] = ()  # images a node may name (besides twin's own node image)


class Bind(_Frozen):
    """A file or directory of this host in a node (containerlab's binds)."""

    source: str  # absolute path on this host
    target: str  # absolute path in the node
    read_only: bool = False

    def __str__(self) -> str:
        return f"{self.source}:{self.target}" + (":ro" if self.read_only else "")


class Node(_Frozen):
    name: str
    kind: str
    asn: int | None = None
    loopback: str | None = None
    image: str | None = None  # its own image, as the topology names it (None: twin's node image)
    drain: bool = False  # BGP graceful shutdown: carries no transit traffic
    ports: tuple[Port, ...] = ()
    exec: tuple[str, ...] = ()  # commands run in the node once it is configured (containerlab's exec)
    binds: tuple[Bind, ...] = ()  # the user's files and directories in the node
    cmd: tuple[str, ...] = ()  # a host's own command (its words), run once its ports are up
    entrypoint: tuple[str, ...] = ()
    env: dict[str, str] = {}
    mgmt: str | None = None  # its address on the lab's management network (eth0), once chosen
    platform_ports: tuple[str, ...] = ()  # the topology's list of the platform's ports (): its kind's)
    nvue: Literal["blank"] | None = None  # runs NVUE with nothing configured yet (twin.topology.nvue_nodes)

    @model_serializer(mode="wrap")
    def _only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Optional fields are written only when set: a node without them is recorded as it was."""
        data = handler(self)
        for key in ("drain", "exec", "binds", "cmd", "entrypoint", "env", "mgmt", "platform_ports", "nvue"):
            if not data.get(key):
                data.pop(key, None)
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
    subnet: str  # e.g. 10.1.1.0/24
    l2vni: int
    gateway: str  # anycast gateway address, the same on every VTEP
    mac: str  # anycast gateway MAC

    @property
    def gateway_cidr(self) -> str:
        return f"{self.gateway}/{self.subnet.split('/')[1]}"


class Attachment(_Sparse):
    """Host `host` (port `host_port`, address `address`) in `segment`, behind VTEP port `vtep`:`port`."""

    _sparse: ClassVar[tuple[str, ...]] = ("rate_limit",)

    host: str
    host_port: str
    segment: str
    vtep: str
    port: str
    address: str  # with prefix length, e.g. 10.1.1.11/24
    mac: str  # the host port's MAC, fixed so the twin knows who is who
    rate_limit: RateLimit | None = None  # enforced on its VTEP port (its own, else its tenant's)

    @property
    def ip(self) -> str:
        return self.address.split("/")[0]


class Forward(_Frozen):
    """Inbound from the internet: `proto` to `port` of the host's public address -> `host`:`to`."""

    proto: Literal["tcp", "udp"]
    port: int
    host: str
    to: int


class Internet(_Sparse):
    """A tenant's way out: each VTEP of its hosts is their gateway and NATs them to public addresses."""

    _sparse: ClassVar[tuple[str, ...]] = ("pool", "hosts", "forwards")
    pool: str | None = None  # public prefix, one address of it per gateway VTEP (source NAT with ports)
    vteps: dict[str, str] = {}  # gateway VTEP -> its address from the pool
    hosts: dict[str, str] = {}  # host -> a public address of its own (1:1 NAT)
    segments: tuple[str, ...]  # segments that may go out
    forwards: tuple[Forward, ...] = ()


class Tenant(_Sparse):
    _sparse: ClassVar[tuple[str, ...]] = ("internet",)
    name: str
    vrf: str
    l3vni: int
    segments: dict[str, Segment]
    attachments: tuple[Attachment, ...]
    internet: Internet | None = None

    def goes_out(self, a: Attachment) -> bool:
        """May this workload reach the internet (through its VTEP's gateway)?"""
        return self.internet is not None and a.segment in self.internet.segments

    def public_of(self, a: Attachment) -> str | None:
        """The public address the internet sees `a` as (None: it does not go out)."""
        if self.internet is None or not self.goes_out(a):
            return None
        return self.internet.hosts.get(a.host) or self.internet.vteps.get(a.vtep)

    def gateway(self, vtep: str) -> dict[str, str]:
        """What VTEP `vtep` NATs for this tenant: public address -> "pool" or the host it belongs to."""
        out: dict[str, str] = {}
        if self.internet is None:
            return out
        for a in self.attachments:
            if a.vtep == vtep and self.goes_out(a):
                if a.host in self.internet.hosts:
                    out[self.internet.hosts[a.host]] = a.host
                else:
                    out[self.internet.vteps[vtep]] = "pool"
        return dict(sorted(out.items()))

    def vteps(self) -> list[str]:
        return sorted({a.vtep for a in self.attachments})

    def segments_on(self, vtep: str) -> list[Segment]:
        """Segments with a host behind `vtep`: the only ones it instantiates."""
        names = {a.segment for a in self.attachments if a.vtep == vtep}
        return [s for s in self.segments.values() if s.name in names]

    def segment_vteps(self, segment: str) -> list[str]:
        return sorted({a.vtep for a in self.attachments if a.segment == segment})


class CongestionPoint(_Frozen):
    """ECN-capable frames leaving `node`:`port` above `above` are marked CE instead of dropped."""

    node: str
    port: str
    above: Rate


class BgpTimers(_Frozen):
    """BGP keepalive and hold time (s) of twin's rendered fabric sessions, when the host is small or
    busy for the lab (`twin.lifecycle.admission.timers_for`, chosen by `twin up`); a Fabric without
    them runs FRR's `datacenter` defaults, keepalive 3 s and hold 9 s."""

    keepalive: int
    hold: int

    @property
    def watchfrr(self) -> int:
        """FRR's watchfrr timeouts (-t, -T; 90 s by default) with them: ten hold times, at most 600 s
        (how long bgpd itself waits for the end of its configuration)."""
        return min(600, 10 * self.hold)

    def __str__(self) -> str:
        return f"keepalive {self.keepalive} s, hold {self.hold} s"


class Mgmt(_Frozen):
    """The lab's management network (`twin.topology.mgmt`): its subnet and this host's address on it,
    as the topology gives them or, when it does not, chosen at `twin up`; every node with a
    management port has its address (`Node.mgmt`) once the subnet is known. The password of user
    cumulus, when the topology gives one, is never written with the fabric."""

    subnet: str | None = None  # e.g. 192.168.200.0/24 (None: not chosen yet)
    gateway: str | None = None  # this host's address on it
    password: str | None = Field(default=None, exclude=True, repr=False)

    @property
    def prefixlen(self) -> int:
        return int((self.subnet or "/24").split("/")[1])


class Fabric(_Sparse):
    _sparse: ClassVar[tuple[str, ...]] = (
        "congestion",
        "checks",
        "vrf_backend",
        "timers",
        "images",
        "mgmt",
        "confined",
    )  # written only when given
    name: str
    source: str  # the topology file it came from
    nodes: dict[str, Node]
    links: tuple[Link, ...]
    vtep_kind: str = "dpu"
    tenants: dict[str, Tenant] = {}
    congestion: tuple[CongestionPoint, ...] = ()
    checks: tuple[AnyCheck, ...] = ()  # the topology's own `checks:` (twin verify runs them)
    vrf_backend: Literal["netns", "device"] | None = None  # as the topology asks (None: the default, netns)
    timers: BgpTimers | None = None  # scaled BGP timers chosen at `twin up` (None: FRR's datacenter ones)
    images: Literal["twin", "own", "auto"] | None = None  # which image a node with its own runs (None: auto)
    mgmt: Mgmt | None = None  # the management network (None: none, as the topology says or an older lab)
    confined: Confined | None = None  # a lab whose user is not trusted with this host (twin.topology.confine)

    def public(self) -> dict[str, tuple[str, str]]:
        """Every public address a gateway announces: /32 -> (tenant, VTEP)."""
        return {
            f"{ip}/32": (t.name, v)
            for t in self.tenants.values()
            if t.internet
            for v in t.vteps()
            for ip in t.gateway(v)
        }

    def loopback_of(self, node: str) -> str:
        """The loopback of `node`, a BGP speaker or VTEP (the model gives each one): an error naming it if none."""
        lo = self.nodes[node].loopback
        if lo is None:
            raise TwinError(f"{node}: a {self.nodes[node].kind} has no loopback")
        return lo

    def tenants_on(self, node: str) -> list[Tenant]:
        """Tenants with a host behind `node` (so `node` is their VTEP)."""
        return [t for t in self.tenants.values() if node in t.vteps()]

    def vteps(self) -> list[str]:
        return [n for n in self.nodes if self.tenants_on(n)]

    def attachment(self, host: str) -> tuple[Tenant, Attachment]:
        """The tenant and attachment of host endpoint `host`: an error naming the hosts if it is none."""
        found = self.attachment_of(host)
        if found is None:
            hosts = [n for n in self.nodes if self.attachment_of(n)]
            raise TwinError(f"{host!r} is not a host endpoint of lab {self.name}; hosts: {', '.join(hosts) or 'none'}")
        return found

    def attachment_of(self, host: str) -> tuple[Tenant, Attachment] | None:
        for t in self.tenants.values():
            for a in t.attachments:
                if a.host == host:
                    return t, a
        return None

    def managed(self) -> list[Node]:
        """The nodes with a management port (switches, DPUs, routers); once `twin up` chose their addresses
        (`twin.topology.mgmt.resolve`), those of them on the network have one (`Node.mgmt`): the others run
        an image of their own."""
        return [n for n in self.nodes.values() if self.mgmt is not None and KINDS[n.kind].mgmt]

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
        return {n.name: f"{n.loopback}/32" for n in self.routers() if n.name != node and n.asn != me.asn}
