"""The tenants a VTEP's config declares, against the intent: each VLAN's VNI, SVI (VRF, gateway and
MAC) and access ports; each tenant's VRF with its L3VNI, its routes exported to EVPN; EVPN for the
VNIs and the VTEP's source address; and no route leaking between tenants (route targets, VRFs
importing from VRFs).

A VLAN carries the segment most of what is said of it agrees on: its VNI, its SVI (a VRF and a
subnet) and the hosts the topology cables to its access ports (the cabling counts first where
they tie); what disagrees with that segment is the mistake."""

from __future__ import annotations

import ipaddress
from collections import Counter

from twin.lint.declared import Declared, Vlan, Vrf
from twin.lint.findings import Finding
from twin.lint.scope import Scope, control, segment_checks, tenant_checks, traffic_of, vtep_checks
from twin.topology.model import Segment, Tenant


def vlans(s: Scope, d: Declared) -> list[Finding]:
    if d.vlans is None:
        return []
    out: list[Finding] = []
    carried: dict[tuple[str, str], int] = {}
    meanings = {v.vlan: _meaning(s, d, v) for v in d.vlans.values()}
    for v in d.vlans.values():
        m = meanings[v.vlan]
        if m is not None:
            carried.setdefault(m, v.vlan)
    for v in d.vlans.values():
        if (m := meanings[v.vlan]) is not None:
            out += _vlan(s, d, v, *m, carried)
    placed = {p for v in d.vlans.values() for p in v.ports}
    for (vtep, port), (t, a) in s.hosts.items():
        if vtep == d.node and port not in placed:
            out.append(
                Finding(
                    d.node,
                    "access-vlan",
                    d.interfaces.get(port) or d.at(None, f"{port} in no VLAN"),
                    f"{port} leads to {a.host}, {t.name}'s {a.segment} ({a.ip}): in no VLAN, it reaches no one",
                    traffic_of([a.host]),
                )
            )
    return out


def _meaning(s: Scope, d: Declared, v: Vlan) -> tuple[str, str] | None:
    """(tenant, segment) the VLAN carries, by the most votes of its access ports, VNI and SVI."""
    votes = [((t.name, a.segment), 0) for p in v.ports if (hit := s.hosts.get((d.node, p))) for t, a in [hit]]
    if v.vni in s.segments:
        t, seg = s.segments[v.vni]
        votes.append(((t.name, seg.name), 1))
    svi = _svi_segment(s, d, v)
    if svi is not None:
        votes.append((svi, 2))
    if not votes:
        return None
    count = Counter(k for k, _ in votes)
    best = max(count.values())
    return min((rank, k) for k, rank in votes if count[k] == best)[1]


def _svi_segment(s: Scope, d: Declared, v: Vlan) -> tuple[str, str] | None:
    vrf = d.vrfs.get(v.svi_vrf or "")
    if vrf is None or vrf.tenant is None or v.gateway is None:
        return None
    subnet = str(ipaddress.ip_interface(v.gateway).network)
    t = s.fabric.tenants[vrf.tenant]
    return next(((t.name, x.name) for x in t.segments.values() if x.subnet == subnet), None)


def _vlan(s: Scope, d: Declared, v: Vlan, tenant: str, segment: str, carried: dict) -> list[Finding]:
    t = s.fabric.tenants[tenant]
    seg = t.segments[segment]
    explains = segment_checks(s, d.node, t, seg)
    what = f"VLAN {v.vlan} carries {tenant}'s {segment} segment ({seg.subnet}"
    out = []
    if v.vni != seg.l2vni:
        other = s.segments.get(v.vni) if v.vni is not None else None
        more = segment_checks(s, d.node, *other) if other is not None and other[0].name != tenant else ()
        why = f"{what}), whose VNI is {seg.l2vni}; " + (
            f"{v.vni} is {s.vni_owner(v.vni)}" if v.vni is not None else "it is mapped to no VNI"
        )
        out.append(Finding(d.node, "vlan-vni", v.vni_at or v.at, why, explains + more))
    vrf = d.vrfs.get(v.svi_vrf or "")
    if v.svi is None:
        out.append(
            Finding(
                d.node,
                "svi-vrf",
                v.at,
                f"{what}, VNI {seg.l2vni}) but has no SVI: its hosts have no "
                f"gateway ({seg.gateway_cidr} in VRF {t.vrf})",
                explains,
            )
        )
    elif vrf is None or vrf.tenant != tenant:
        whose = f"{vrf.tenant}'s" if vrf is not None and vrf.tenant else "no tenant's"
        named = f"VRF {v.svi_vrf}" if v.svi_vrf else "the default VRF"
        out.append(
            Finding(
                d.node,
                "svi-vrf",
                v.svi_vrf_at or v.svi,
                f"{what}, VNI {seg.l2vni}), whose VRF is {t.vrf}; {named} is {whose}",
                explains + (control("vni", d.node, t.l3vni),) + _also(s, vrf, tenant),
            )
        )
    out += _gateway(d, v, t, seg, explains)
    for port, at in v.ports.items():
        hit = s.hosts.get((d.node, port))
        if hit is None or (hit[0].name, hit[1].segment) == (tenant, segment):
            continue
        ht, a = hit
        theirs = carried.get((ht.name, a.segment))
        here = (
            f"{ht.name}'s {a.segment} is VLAN {theirs} here"
            if theirs
            else f"no VLAN of {d.node} carries {ht.name}'s {a.segment}"
        )
        own = segment_checks(s, d.node, ht, ht.segments[a.segment]) + (control("vni", d.node, ht.l3vni),)
        out.append(
            Finding(
                d.node,
                "access-vlan",
                at,
                f"{port} leads to {a.host}, {ht.name}'s {a.segment} ({a.ip}); "
                f"VLAN {v.vlan} carries {tenant}'s {segment} (VNI {seg.l2vni}); {here}",
                own + explains,
            )
        )
    return out


def _also(s: Scope, vrf: Vrf | None, tenant: str) -> tuple[str, ...]:
    if vrf is None or vrf.tenant is None or vrf.tenant == tenant:
        return ()
    return tenant_checks(s.fabric.tenants[vrf.tenant])


def _gateway(d: Declared, v: Vlan, t: Tenant, seg: Segment, explains: tuple[str, ...]) -> list[Finding]:
    out = []
    if v.svi is not None and v.gateway is not None and v.gateway != seg.gateway_cidr:
        out.append(
            Finding(
                d.node,
                "gateway",
                v.gateway_at or v.svi,
                f"{t.name}'s {seg.name} gateway is {seg.gateway_cidr} (the topology's): its hosts route through it",
                explains,
            )
        )
    if v.svi is not None and v.mac is not None and v.mac.lower() != seg.mac.lower():
        out.append(
            Finding(
                d.node,
                "gateway",
                v.mac_at or v.svi,
                f"{t.name}'s {seg.name} gateway MAC is {seg.mac} "
                f"(the topology's, the same on every VTEP): its hosts resolve {seg.gateway} to it",
                explains + (rf"^arp: .* resolves {seg.gateway}\b",),
            )
        )
    return out


def vrfs(s: Scope, d: Declared) -> list[Finding]:
    """Each tenant of the VTEP has a VRF with its L3VNI, exporting its routes to EVPN (type-5)."""
    out = []
    mine = d.tenant_vrfs()
    for want in s.wants(d.node).tenants:
        t = s.fabric.tenants[want.tenant]
        hosts = ", ".join(a.host for a in s.local_hosts(d.node, t.name))
        explains = (control("vni", d.node, t.l3vni),) + tenant_checks(t)
        vrf = mine.get(t.name)
        if vrf is None:
            out.append(
                Finding(
                    d.node,
                    "l3vni",
                    d.at(d.bgp.line if d.bgp else None, f"no VRF for tenant {t.name}"),
                    f"{d.node} is a VTEP of {t.name} ({hosts}): {t.name}'s VRF {t.vrf}, with its L3VNI "
                    f"{t.l3vni}, routes it between VTEPs",
                    explains,
                )
            )
            continue
        if vrf.l3vni != t.l3vni:
            other = s.tenant_of_vni(vrf.l3vni) if vrf.l3vni is not None else None
            theirs = f"{vrf.l3vni} is {s.vni_owner(vrf.l3vni)}" if vrf.l3vni is not None else "it has none"
            out.append(
                Finding(
                    d.node,
                    "l3vni",
                    vrf.l3vni_at or vrf.at,
                    f"VRF {vrf.name} is tenant {t.name}'s, whose L3VNI is {t.l3vni}; {theirs}",
                    explains + (tenant_checks(other) if other else ()),
                )
            )
        out += _type5(d, vrf, t, explains)
    return out


def _type5(d: Declared, vrf: Vrf, t: Tenant, explains: tuple[str, ...]) -> list[Finding]:
    subnets = ", ".join(seg.subnet for seg in t.segments_on(d.node))
    if vrf.type5 is None:
        return [
            Finding(
                d.node,
                "evpn",
                vrf.at,
                f"VRF {vrf.name} has no BGP instance: {d.node} announces none of "
                f"{t.name}'s subnets ({subnets}) as type-5 routes, and routes none it learns",
                explains,
            )
        ]
    out = []
    if not vrf.type5.on:
        out.append(
            Finding(
                d.node,
                "evpn",
                vrf.type5.at,
                f"VRF {vrf.name}'s routes are not exported to EVPN: no "
                f"type-5 route announces {t.name}'s subnets here ({subnets})",
                explains,
            )
        )
    if vrf.connected is not None and not vrf.connected.on:
        out.append(
            Finding(
                d.node,
                "evpn",
                vrf.connected.at,
                f"VRF {vrf.name}'s connected routes (its segments "
                f"{subnets}) are not in its BGP: no type-5 route announces them",
                explains,
            )
        )
    return out


def vtep(s: Scope, d: Declared) -> list[Finding]:
    """A VTEP has EVPN on for its VNIs, and sends VXLAN from its loopback."""
    want = s.wants(d.node)
    if not want.vtep:
        return []
    me = s.node(d.node)
    tenants = [s.fabric.tenants[t.tenant] for t in want.tenants]
    names = " and ".join(t.name for t in tenants)
    explains = vtep_checks(s, d.node)
    out = []
    if d.evpn is not None and not d.evpn.on:
        out.append(
            Finding(
                d.node,
                "evpn",
                d.evpn.at,
                f"{d.node} is a VTEP of {names}: with EVPN off for its VNIs "
                f"BGP learns none of them ({', '.join(map(str, sorted(want.vnis)))}) and {d.node} "
                "announces no type-2, type-3 or type-5 route",
                explains,
            )
        )
    if d.vtep_source is not None and d.vtep_source[0] != me.loopback:
        addr, at = d.vtep_source
        owner = (
            (f"{s.loopback_of[addr]}'s loopback" if addr in s.loopback_of else "no router's loopback")
            if addr
            else "not given: no VXLAN device is made"
        )
        others = sorted({v for t in want.tenants for v in t.loopbacks if v != d.node})
        out.append(
            Finding(
                d.node,
                "vtep-source",
                at,
                f"{d.node}'s VTEP address is its loopback {me.loopback} (the "
                f"topology's): the other VTEPs ({', '.join(others) or 'none'}) send its tenants' VXLAN "
                f"frames there; {addr or 'the source'} is {owner}",
                explains,
            )
        )
    return out


def leaks(s: Scope, d: Declared) -> list[Finding]:
    """Route targets and VRF imports that take another tenant's routes, or none of a tenant's own."""
    out = []
    for vrf in d.vrfs.values():
        if vrf.tenant is None:
            continue
        t = s.fabric.tenants[vrf.tenant]
        out += _rts(s, d, f"VRF {vrf.name}", t, vrf.rts, {t.l3vni})
        for other, at in vrf.leaks:
            ov = d.vrfs.get(other)
            whose = f" ({ov.tenant}'s)" if ov is not None and ov.tenant else ""
            more = tenant_checks(s.fabric.tenants[ov.tenant]) if ov is not None and ov.tenant else ()
            out.append(
                Finding(
                    d.node,
                    "leak",
                    at,
                    f"VRF {vrf.name} (tenant {t.name}) takes the routes of VRF "
                    f"{other}{whose}: a tenant's VRF holds its own routes alone",
                    tenant_checks(t) + more,
                )
            )
    for vni, rts in d.vni_rts.items():
        if vni in s.segments:
            t, seg = s.segments[vni]
            out += _rts(s, d, f"VNI {vni} ({t.name}'s {seg.name})", t, rts, {vni})
    return out


def _rts(s: Scope, d: Declared, where: str, t: Tenant, rts: list, own: set[int]) -> list[Finding]:
    out = []
    for r in rts:
        other = s.tenant_of_vni(int(r.local)) if r.local.isdigit() else None
        if other is not None and other.name != t.name:
            way = "takes" if r.kind == "import" else "gives its routes to"
            out.append(
                Finding(
                    d.node,
                    "leak",
                    r.at,
                    f"{r.local} is {s.vni_owner(int(r.local))}: {where} "
                    f"(tenant {t.name}) {way} {other.name}'s routes: a leak between tenants",
                    tenant_checks(t) + tenant_checks(other),
                )
            )
    others = sorted(set(t.vteps()) - {d.node})
    for kind in ("import", "export"):
        given = [r for r in rts if r.kind == kind]
        if given and others and not any(r.local.isdigit() and int(r.local) in own for r in given):
            way = (
                f"{d.node} takes none of {t.name}'s routes from {', '.join(others)}"
                if kind == "import"
                else f"{', '.join(others)} take none of {t.name}'s routes from {d.node}"
            )
            out.append(
                Finding(
                    d.node,
                    "leak",
                    given[0].at,
                    f"none of {where}'s {kind} route targets "
                    f"({', '.join(r.value for r in given)}) names {t.name}'s VNI "
                    f"{', '.join(map(str, sorted(own)))}: given, they replace the auto-derived one, so "
                    f"{way}",
                    tenant_checks(t),
                )
            )
    return out
