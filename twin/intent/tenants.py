"""A tenant on one VTEP: its VNIs, flood and MAC entries, and VRF routes.

type-3: a flood entry to every other VTEP of each local segment (head-end replication);
type-2: each remote host's MAC on a local segment, and a /32 to every remote host (symmetric IRB);
type-5: a route to every tenant subnet that has no local segment, via the nearest VTEPs
        that own it, drains applied (graceful shutdown loses before AS-path length counts).
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.topology.model import Fabric, Tenant

CONNECTED = "connected"  # a next hop of a VRF route: the VTEP's own segment


def vxlan_name(vni: int) -> str:
    return f"vxlan{vni}"


def bridge_name(vni: int) -> str:
    return f"br{vni}"


@dataclass(frozen=True)
class SegmentIntent:
    """A segment with a host behind this VTEP: its L2VNI and what it must know of the others."""

    name: str
    l2vni: int
    remote_vteps: dict[str, str]  # VTEP -> loopback: a flood entry each (type-3)
    remote_macs: tuple[tuple[str, str, str], ...]  # (MAC, host, VTEP) of remote hosts on it (type-2)

    @property
    def vxlan(self) -> str:
        return vxlan_name(self.l2vni)


@dataclass(frozen=True)
class TenantIntent:
    tenant: str
    vrf: str
    l3vni: int
    segments: tuple[SegmentIntent, ...]  # local ones only
    host_routes: dict[str, tuple[str, str]]  # remote host /32 -> (host, VTEP): type-2 MAC/IP
    subnet_routes: dict[str, str]  # remote-only subnet -> segment: type-5
    routes: dict[str, frozenset[str]]  # the whole VRF: prefix -> next hops (CONNECTED or loopbacks)
    allowed: frozenset[str]  # prefixes the VRF may hold at all (any host, any segment)
    loopbacks: dict[str, str]  # VTEP -> loopback, of the tenant's VTEPs
    evpn_counts: dict[str, int]  # routes of the tenant in each VTEP's EVPN table, by type

    @property
    def vnis(self) -> set[int]:
        return {self.l3vni} | {s.l2vni for s in self.segments}

    def vni_entries(self) -> dict[int, dict]:
        """What `show evpn vni detail json` must say of each VNI (subset, FRR 8.4 and 10 normalised)."""
        out = {self.l3vni: {"vni": self.l3vni, "type": "L3", "vrf": self.vrf, "state": "Up"}}
        for s in self.segments:
            out[s.l2vni] = {
                "vni": s.l2vni,
                "type": "L2",
                "vrf": self.vrf,
                "remoteVteps": sorted(s.remote_vteps.values()),
            }
        return out


def tenant_intent(fabric: Fabric, node: str, t: Tenant) -> TenantIntent:
    lo = {v: fabric.loopback_of(v) for v in t.vteps()}
    segments = tuple(
        SegmentIntent(
            name=s.name,
            l2vni=s.l2vni,
            remote_vteps={v: lo[v] for v in t.segment_vteps(s.name) if v != node},
            remote_macs=tuple((a.mac, a.host, a.vtep) for a in t.attachments if a.segment == s.name and a.vtep != node),
        )
        for s in t.segments_on(node)
    )
    local = {s.name for s in segments}
    hosts = {a.ip + "/32": (a.host, a.vtep) for a in t.attachments if a.vtep != node}
    subnets = {s.subnet: s.name for s in t.segments.values() if s.name not in local and t.segment_vteps(s.name)}
    return TenantIntent(
        tenant=t.name,
        vrf=t.vrf,
        l3vni=t.l3vni,
        segments=segments,
        host_routes=hosts,
        subnet_routes=subnets,
        routes=vrf_routes(fabric, node, t),
        loopbacks=lo,
        allowed=frozenset({a.ip + "/32" for a in t.attachments} | {s.subnet for s in t.segments.values()}),
        evpn_counts=evpn_counts(t),
    )


def vrf_routes(fabric: Fabric, node: str, t: Tenant) -> dict[str, frozenset[str]]:
    """prefix -> next hops (CONNECTED or remote VTEP loopbacks) that VTEP `node` must have in `t`'s VRF.

    A subnet several VTEPs announce (type-5) is multipath over the nearest of them:
    BGP keeps the shortest AS paths only. Drains come first: graceful shutdown gives
    every path through a drained node LOCAL_PREF 0, which loses before AS-path length
    counts, so owners reached around every drained node (and not drained) win. A
    drained `node` itself gives everything it receives LOCAL_PREF 0: nothing changes."""
    lo = {n: fabric.loopback_of(n) for n in t.vteps()}
    drained = set() if fabric.nodes[node].drain else set(fabric.drained()) - {node}
    near = fabric.hops(node)  # BGP hops = AS-path length of what they originate
    around = fabric.hops(node, drained) if drained else near
    rank = {v: (0, around[v]) if v in around else (1, near.get(v, 99)) for v in t.vteps()}
    local = {s.name for s in t.segments_on(node)}
    out: dict[str, frozenset[str]] = {s.subnet: frozenset({CONNECTED}) for s in t.segments_on(node)}
    for a in t.attachments:
        if a.vtep != node:
            out[a.ip + "/32"] = frozenset({lo[a.vtep]})
    for s in t.segments.values():
        owners = t.segment_vteps(s.name)
        if s.name not in local and owners:
            best = min(rank[v] for v in owners)
            out[s.subnet] = frozenset(lo[v] for v in owners if rank[v] == best)
    return out


def evpn_routes(fabric: Fabric, t: Tenant) -> dict[tuple[tuple[int, str, str], frozenset[int]], str]:
    """Every EVPN route of tenant `t`, in every VTEP's table: ((type, what, originating VTEP's
    loopback), VNIs of its route targets) -> what it is. Per host a MAC (its L2VNI) and a MAC/IP
    route (its L2VNI and the tenant's L3VNI: symmetric IRB); per segment and VTEP that has it an
    inclusive-multicast route (type-3, its L2VNI) and the subnet (type-5, the L3VNI)."""
    lo = {v: fabric.loopback_of(v) for v in t.vteps()}
    out = {}
    for a in t.attachments:
        seg, ip = t.segments[a.segment], a.ip
        out[((2, a.mac, lo[a.vtep]), frozenset({seg.l2vni}))] = f"type-2 MAC {a.mac} of {a.host} from {a.vtep}"
        out[((2, f"{a.mac} {ip}", lo[a.vtep]), frozenset({seg.l2vni, t.l3vni}))] = (
            f"type-2 MAC/IP {a.mac} {ip} of {a.host} from {a.vtep}"
        )
    for s in t.segments.values():
        for v in t.segment_vteps(s.name):
            out[((3, lo[v], lo[v]), frozenset({s.l2vni}))] = f"type-3 of {s.name} (VNI {s.l2vni}) from {v}"
            out[((5, s.subnet, lo[v]), frozenset({t.l3vni}))] = f"type-5 {s.subnet} ({s.name}) from {v}"
    return out


def evpn_counts(t: Tenant) -> dict[str, int]:
    """The tenant's routes in a VTEP's EVPN table (`show bgp l2vpn evpn route`, counted by
    route target): per host a MAC and a MAC/IP route (type-2), per segment and VTEP an
    inclusive-multicast route (type-3) and an IP prefix route (type-5)."""
    seg_vteps = sum(len(t.segment_vteps(s)) for s in t.segments)
    return {"type2": 2 * len(t.attachments), "type3": seg_vteps, "type5": seg_vteps}
