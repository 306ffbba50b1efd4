"""The intent as the rules read it: the topology's tenants by VNI and by port, every router's ASN as
it will run (its config's, else the topology's), and the words the findings use for them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from twin import kinds
from twin.intent import Intent, NodeIntent, paths
from twin.lint.declared import Declared
from twin.topology.model import Attachment, Fabric, Node, Segment, Tenant


@dataclass
class Scope:
    fabric: Fabric
    declared: dict[str, Declared]  # nodes whose config the user gives, read
    intent: Intent = field(init=False)

    def __post_init__(self) -> None:
        self.intent = Intent(self.fabric)

    def judged(self) -> list[Declared]:
        """The declared nodes whose intent the topology gives (spines, leafs, DPUs; not routers running
        their own config, nor the internet), in the topology's order."""
        return [
            self.declared[n]
            for n, node in self.fabric.nodes.items()
            if n in self.declared
            and not kinds.of(node).user_config
            and not kinds.of(node).edge
            and n in self.intent.nodes
        ]

    def node(self, name: str) -> Node:
        return self.fabric.nodes[name]

    def wants(self, name: str) -> NodeIntent:
        return self.intent.nodes[name]

    @cached_property
    def segments(self) -> dict[int, tuple[Tenant, Segment]]:
        """L2VNI -> its tenant and segment."""
        return {s.l2vni: (t, s) for t in self.fabric.tenants.values() for s in t.segments.values()}

    @cached_property
    def l3vnis(self) -> dict[int, Tenant]:
        return {t.l3vni: t for t in self.fabric.tenants.values()}

    @cached_property
    def hosts(self) -> dict[tuple[str, str], tuple[Tenant, Attachment]]:
        """(VTEP, port) -> the host cabled there, with its tenant."""
        return {(a.vtep, a.port): (t, a) for t in self.fabric.tenants.values() for a in t.attachments}

    @cached_property
    def asn(self) -> dict[str, int | None]:
        """Every router's ASN as it will run: its config's, else the topology's."""
        out: dict[str, int | None] = {n.name: n.asn for n in self.fabric.routers()}
        out.update({n: d.asn for n, d in self.declared.items() if n in out and d.bgp is not None})
        return out

    @cached_property
    def loopback_of(self) -> dict[str, str]:
        """Loopback address -> its router."""
        return {n.loopback: n.name for n in self.fabric.routers() if n.loopback}

    @cached_property
    def branching(self) -> dict[str, set[tuple[str, str]]]:
        return paths.branching(self.fabric)

    def vni_owner(self, vni: int) -> str:
        """Whose a VNI is, in words: `blue's web`, `blue's L3VNI`, `no tenant's`."""
        if vni in self.segments:
            t, s = self.segments[vni]
            return f"{t.name}'s {s.name}"
        if vni in self.l3vnis:
            return f"{self.l3vnis[vni].name}'s L3VNI"
        return "no segment's nor tenant's VNI in the topology"

    def tenant_of_vni(self, vni: int) -> Tenant | None:
        return self.segments[vni][0] if vni in self.segments else self.l3vnis.get(vni)

    def local_hosts(self, node: str, tenant: str, segment: str | None = None) -> list[Attachment]:
        t = self.fabric.tenants[tenant]
        return [a for a in t.attachments if a.vtep == node and (segment is None or a.segment == segment)]


# what a finding explains of `twin verify`: regular expressions over "group: check: message"
def control(kind: str, *words: str | int) -> str:
    """A control check by its name (`vni dpu1 10101`; `*` for any word)."""
    parts = [r"\S+" if w == "*" else re.escape(str(w)) for w in words]
    return rf"^control: {kind} " + " ".join(parts) + r"(:|$)"


def traffic_of(hosts: list[str]) -> tuple[str, ...]:
    """The data-plane checks of flows to or from these hosts (traffic, underlay, isolation, arp)."""
    if not hosts:
        return ()
    names = "|".join(re.escape(h) for h in hosts)
    return (rf"^(traffic|underlay|isolation|arp|gateway|performance): [^:]*\b({names})\b",)


def tenant_checks(tenant: Tenant) -> tuple[str, ...]:
    """Every check of a tenant's routes and flows."""
    return (
        control("evpn", "*", tenant.name),
        control("vrf", "*", tenant.vrf),
        control("route-targets", "*", tenant.name),
    ) + traffic_of([a.host for a in tenant.attachments])


def route_checks(loopback: str | None) -> tuple[str, ...]:
    """Every check a router's loopback (its routes' next hop, a VTEP's address) decides."""
    if not loopback:
        return ()
    lo = re.escape(loopback)
    return (
        rf"^control: loopbacks \S+: .*\b{lo}/32",
        rf"^control: (vni|evpn) .*\b{lo}\b",
        rf"^control: vrf \S+ \S+: .*\bvia {lo}\b",
    )


def session_checks(fabric: Fabric, node: str, port: str) -> tuple[str, ...]:
    """The checks of one fabric session: both ends' BGP, and each one's route to the other's loopback."""
    p = fabric.nodes[node].ports_by_name[port]
    out: tuple[str, ...] = (control("bgp", node), control("bgp", p.peer_node))
    for a, b in ((node, p.peer_node), (p.peer_node, node)):
        if fabric.nodes[b].loopback:
            out += (rf"^control: loopbacks {re.escape(a)}: .*\b{re.escape(fabric.nodes[b].loopback or '')}/32",)
    return out


def vtep_checks(s: "Scope", node: str) -> tuple[str, ...]:
    """Every check of what a VTEP announces or holds: its VNIs, EVPN routes from it, routes via it."""
    hosts = [a.host for t in s.fabric.tenants_on(node) for a in t.attachments if a.vtep == node]
    return (
        (
            control("vni", node, "*"),
            control("evpn", node, "*"),
            control("vrf", node, "*"),
            rf"^control: evpn \S+ \S+: .*\bfrom {re.escape(node)}\b",
        )
        + route_checks(s.node(node).loopback)
        + traffic_of(hosts)
    )


def segment_checks(s: "Scope", node: str, t: Tenant, seg: Segment) -> tuple[str, ...]:
    """Every check of one segment on one VTEP: its VNI there and elsewhere (this VTEP as a remote one), its
    EVPN routes (type-3 of its VNI, type-2 of its hosts), the routes to it, its hosts' flows."""
    lo = re.escape(s.node(node).loopback or "")
    hosts = s.local_hosts(node, t.name, seg.name)
    names = "|".join(re.escape(a.host) for a in hosts) or "$^"
    prefixes = "|".join(re.escape(p) for p in [seg.subnet] + [f"{a.ip}/32" for a in hosts])
    return (
        control("vni", node, seg.l2vni),
        rf"^control: vni \S+ {seg.l2vni}:.*\b{lo}\b",
        rf"^control: evpn \S+ {re.escape(t.name)}: .*(\(VNI {seg.l2vni}\)|\b({names})\b)",
        rf"^control: vrf \S+ {re.escape(t.vrf)}: .*\b({prefixes})( |;|$)",
    ) + traffic_of([a.host for a in hosts])


def peer_of(fabric: Fabric, node: str, port: str) -> str:
    """`spine1:swp1`: the far end of a node's port."""
    p = fabric.nodes[node].ports_by_name[port]
    return f"{p.peer_node}:{p.peer_port}"
