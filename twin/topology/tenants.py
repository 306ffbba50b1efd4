"""Tenants: VRFs, L3VNIs, segments (L2VNI + anycast gateway) and host attachments.

Validated and derived like the rest of the topology: every problem collected
with its place in the file; defaults (VRF name, gateway, gateway MAC, host
addresses and MACs, the VTEP port of each host) resolved here. Rules that tie
tenants to the underlay (loopbacks, MTUs) are in `tenant_checks`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from ipaddress import IPv4Address, IPv4Network

from twin.kinds import KINDS, Kind
from twin.topology.addresses import parse_address, parse_prefix, special_use
from twin.topology.model import Attachment, Link, Node, Segment, Tenant
from twin.topology.names import check_mac, check_port_name, check_segment_name, check_tenant_name, check_vrf_name
from twin.topology.problems import Path_, Problems, dotted, listing, quoted
from twin.topology.schema import AttachmentSpec, SegmentSpec, TenantSpec, TopologySpec
from twin.topology.tenant_checks import VXLAN_OVERHEAD, check_host_mtus, check_loopbacks

DEFAULT_GATEWAY_MAC = "00:00:5e:00:01:01"

__all__ = ["DEFAULT_GATEWAY_MAC", "VXLAN_OVERHEAD", "build_tenants", "host_mac"]


def host_mac(host: str) -> str:
    """A stable, locally administered unicast MAC for a host's tenant port."""
    b = hashlib.sha256(host.encode()).digest()[:5]
    return "02:" + ":".join(f"{x:02x}" for x in b)


def build_tenants(
    spec: TopologySpec, kinds: dict[str, Kind], nodes: dict[str, Node], links: dict[int, Link], problems: Problems
) -> dict[str, Tenant]:
    vtep_kinds = [k.name for k in KINDS.values() if k.can_be_vtep]
    wrong: list[str | list[str]]  # kinds that cannot be VTEPs, or `vtep: []` itself
    wrong = [k for k in vteps_of(spec) if k not in vtep_kinds] or ([] if vteps_of(spec) else [spec.vtep])
    for k in wrong:
        problems.add(("vtep",), f"{quoted(k)} cannot be a VTEP; VTEP kinds: {', '.join(vtep_kinds)}")
    if not spec.tenants:
        return {}
    host_mtu_fits = spec.defaults.host_mtu <= spec.defaults.mtu - VXLAN_OVERHEAD
    if not host_mtu_fits:
        problems.add(
            ("defaults", "host_mtu"),
            f"{spec.defaults.host_mtu} does not fit in VXLAN over the fabric MTU {spec.defaults.mtu}: "
            f"at most {spec.defaults.mtu - VXLAN_OVERHEAD}",
        )
    builder = _Tenants(spec, nodes, problems, vtep_ok=not wrong)
    tenants: dict[str, Tenant] = {}
    for tname, t in spec.tenants.items():
        tenant = builder.tenant(tname, t)
        if tenant is not None:
            tenants[tname] = tenant
    check_loopbacks(spec, nodes, tenants, problems)
    check_host_mtus(spec, nodes, links, tenants, problems, report_defaults=host_mtu_fits)
    return tenants


class _Tenants:
    """What all tenants of a file share: VNIs, VRF names and hosts already claimed."""

    def __init__(self, spec: TopologySpec, nodes: dict[str, Node], problems: Problems, vtep_ok: bool):
        self.spec, self.nodes, self.problems, self.vtep_ok = spec, nodes, problems, vtep_ok
        self.vnis: dict[int, str] = {}
        self.vrfs: dict[str, str] = {}
        self.hosts_used: dict[str, str] = {}
        self.hosts = [n for n, nd in nodes.items() if KINDS[nd.kind].endpoint]
        self.vtep_ports = {p.name: n for n, nd in nodes.items() if nd.kind in vteps_of(spec) for p in nd.ports}

    def tenant(self, tname: str, t: TenantSpec) -> Tenant | None:
        at = ("tenants", tname)
        reason = check_tenant_name(tname)
        if reason:
            self.problems.add(at, reason)
            return None
        vrf = self._vrf(tname, t, at)
        self._claim_vni(t.l3vni, at + ("l3vni",))
        segments: dict[str, Segment] = {}
        nets: dict[str, IPv4Network] = {}
        for sname, s in t.segments.items():
            built = self._segment(sname, s, at + ("segments", sname))
            if built is not None:
                segments[sname], nets[sname] = built
        _check_overlaps(nets, at, self.problems)
        attachments = _Attachments(self, t, segments, nets, at).build()
        return Tenant(name=tname, vrf=vrf, l3vni=t.l3vni, segments=segments, attachments=tuple(attachments))

    def _vrf(self, tname: str, t: TenantSpec, at: Path_) -> str:
        vrf = t.vrf if t.vrf is not None else tname
        where = at + ("vrf",) if t.vrf is not None else at
        reason = check_vrf_name(vrf)
        if reason:
            self.problems.add(
                where,
                reason
                + ("" if t.vrf is not None else "; the tenant name is its VRF name unless 'vrf:' says otherwise"),
            )
        elif vrf in self.vrfs:
            self.problems.add(at + ("vrf",), f"VRF {vrf!r} is already the VRF of tenant {self.vrfs[vrf]}")
        elif vrf in self.vtep_ports:
            self.problems.add(
                where,
                f"VRF name {vrf!r} is also a port of {self.vtep_ports[vrf]}: on a VTEP "
                "the VRF is a device of its own name; rename one of them",
            )
        else:
            self.vrfs[vrf] = tname
        return vrf

    def _claim_vni(self, vni: int, where: Path_) -> None:
        if vni in self.vnis:
            self.problems.add(where, f"VNI {vni} is already used by {self.vnis[vni]}; every VNI is unique")
        else:
            self.vnis[vni] = dotted(where)

    def _segment(self, sname: str, s: SegmentSpec, sat: Path_) -> tuple[Segment, IPv4Network] | None:
        reason = check_segment_name(sname)
        if reason:
            self.problems.add(sat, reason)
        self._claim_vni(s.l2vni, sat + ("l2vni",))
        net, why = parse_prefix(s.subnet, "10.1.1.0/24")
        if net is None:
            self.problems.add(sat + ("subnet",), why)
            return None
        if special_use(net):
            self.problems.add(
                sat + ("subnet",), f"{net} overlaps {special_use(net)}: a tenant subnet must be routable unicast space"
            )
            return None
        if net.num_addresses < 4:
            self.problems.add(sat + ("subnet",), f"{net} is too small for a gateway and hosts (at most /30)")
            return None
        gateway = self._gateway(s, net, sat)
        mac = (s.mac or DEFAULT_GATEWAY_MAC).lower()
        bad_mac = check_mac(mac) and check_mac(s.mac)
        if bad_mac:
            self.problems.add(sat + ("mac",), bad_mac)
            return None
        if reason or gateway is None:
            return None
        return Segment(name=sname, subnet=str(net), l2vni=s.l2vni, gateway=gateway, mac=mac), net

    def _gateway(self, s: SegmentSpec, net: IPv4Network, sat: Path_) -> str | None:
        if s.gateway is None:
            return str(next(net.hosts()))
        gw, why = parse_address(s.gateway, "10.1.1.1")
        if gw is None:
            self.problems.add(sat + ("gateway",), why)
            return None
        if gw not in net or gw in (net.network_address, net.broadcast_address):
            self.problems.add(sat + ("gateway",), f"{gw} is outside its subnet {net} (or not a host address)")
            return None
        return str(gw)


class _Attachments:
    """The hosts of one tenant: each checked, placed behind its VTEP port and given an address."""

    def __init__(
        self, tenants: _Tenants, t: TenantSpec, segments: dict[str, Segment], nets: dict[str, IPv4Network], at: Path_
    ):
        self.all, self.t, self.segments, self.nets, self.at = tenants, t, segments, nets, at
        self.problems = tenants.problems
        self.taken: dict[str, set[str]] = {n: {segments[n].gateway} for n in segments}

    def build(self) -> list[Attachment]:
        attachments: list[Attachment] = []
        auto: list[tuple[int, int]] = []  # (index in the file, index in attachments): address left out
        for i, a in enumerate(self.t.attachments):
            att = self._attachment(a, self.at + ("attachments", i))
            if att is not None:
                if not att.address:
                    auto.append((i, len(attachments)))
                attachments.append(att)
        free: dict[str, Iterator[IPv4Address]] = {}  # per segment: one pass over its hosts
        for i, k in auto:  # after explicit addresses are known
            att = attachments[k]
            net, taken = self.nets[att.segment], self.taken[att.segment]
            if att.segment not in free:
                free[att.segment] = (h for h in net.hosts() if str(h) not in taken)
            addr = next(free[att.segment], None)
            if addr is None:
                self.problems.add(
                    self.at + ("attachments", i), f"segment {att.segment} ({net}) has no free address left"
                )
                continue
            taken.add(str(addr))
            attachments[k] = att.model_copy(update={"address": f"{addr}/{net.prefixlen}"})
        return attachments

    def _attachment(self, a: AttachmentSpec, aat: Path_) -> Attachment | None:
        ok = self._host_ok(a, aat)
        if a.segment not in self.t.segments:
            self.problems.add(
                aat + ("segment",),
                f"no segment {quoted(a.segment)} in tenant {self.at[-1]}; segments: {listing(self.t.segments)}",
            )
            ok = False
        elif a.segment not in self.segments:
            ok = False  # the segment itself is reported
        if not ok or not self.all.vtep_ok:
            return None
        self.all.hosts_used[a.host] = dotted(aat)
        link = _vtep_port(a.port, self.all.nodes[a.host], self.all.nodes, vteps_of(self.all.spec), self.problems, aat)
        if link is None:
            return None
        address: str | None = ""
        if a.address is not None:
            address = self._address(a, aat)
        if address is None:
            return None
        vtep, port, host_port = link
        return Attachment(
            host=a.host,
            host_port=host_port,
            segment=a.segment,
            vtep=vtep,
            port=port,
            address=address,
            mac=host_mac(a.host),
        )

    def _host_ok(self, a: AttachmentSpec, aat: Path_) -> bool:
        host = self.all.nodes.get(a.host)
        if host is None or not KINDS[host.kind].endpoint:
            self.problems.add(
                aat + ("host",), f"no host named {quoted(a.host)}; hosts: {listing(self.all.hosts) or 'none'}"
            )
            return False
        if a.host in self.all.hosts_used:
            self.problems.add(
                aat + ("host",),
                f"{a.host} is already attached by {self.all.hosts_used[a.host]}; "
                "a host belongs to one tenant and one segment",
            )
            return False
        return True

    def _address(self, a: AttachmentSpec, aat: Path_) -> str | None:
        net, taken = self.nets[a.segment], self.taken[a.segment]
        ip, why = parse_address(a.address, "10.1.1.11")
        if ip is None:
            self.problems.add(aat + ("address",), why)
            return None
        if ip not in net or ip in (net.network_address, net.broadcast_address):
            self.problems.add(aat + ("address",), f"{ip} is outside segment {a.segment} ({net})")
            return None
        if str(ip) in taken:
            self.problems.add(
                aat + ("address",), f"{ip} is already used in segment {a.segment} (by the gateway or another host)"
            )
            return None
        taken.add(str(ip))
        return f"{ip}/{net.prefixlen}"


def _check_overlaps(nets: dict[str, IPv4Network], at: Path_, problems: Problems) -> None:
    """Segments of one tenant (one VRF) need separate subnets; another tenant may reuse them."""
    position = {name: i for i, name in enumerate(nets)}
    widest: tuple[str, IPv4Network] | None = None
    for name, net in sorted(nets.items(), key=lambda kv: (kv[1].network_address, kv[1].prefixlen)):
        if widest is not None and net.network_address <= widest[1].broadcast_address:
            (first, a), (second, b) = sorted([widest, (name, net)], key=lambda kv: position[kv[0]])
            problems.add(
                at + ("segments", second, "subnet"),
                f"{b} overlaps {a} of segment {first}: the segments of one tenant (one VRF) need "
                "separate subnets; another tenant may reuse them",
            )
        if widest is None or net.broadcast_address > widest[1].broadcast_address:
            widest = (name, net)


def vteps_of(spec: TopologySpec) -> tuple[str, ...]:
    """The kinds that are VTEPs: `vtep: dpu`, or a list (`vtep: [leaf, dpu]`)."""
    return (spec.vtep,) if isinstance(spec.vtep, str) else tuple(spec.vtep)


def _vtep_port(
    port: str | None, host: Node, nodes: dict[str, Node], vtep_kinds: tuple[str, ...], problems: Problems, at: Path_
) -> tuple[str, str, str] | None:
    """(vtep node, vtep port, host port) of an attachment, or None after reporting why not."""
    links = [p for p in host.ports if nodes[p.peer_node].kind in vtep_kinds]
    said = f"vtep: {vtep_kinds[0]}" if len(vtep_kinds) == 1 else f"vtep: [{', '.join(vtep_kinds)}]"
    if port is None:
        if len(links) == 1:
            return links[0].peer_node, links[0].peer_port, links[0].name
        if not links:
            problems.add(
                at,
                f"{host.name} has no link to a {' or '.join(vtep_kinds)} ({said}); "
                "link it to its VTEP or name the port",
            )
        else:
            problems.add(
                at + ("port",),
                f"{host.name} has links to several VTEPs; say which: "
                + listing([f"{p.peer_node}:{p.peer_port}" for p in links]),
            )
        return None
    node, _, pname = port.partition(":")
    if node not in nodes:
        problems.add(at + ("port",), f"no node named {quoted(node)}")
        return None
    if nodes[node].kind not in vtep_kinds:
        problems.add(
            at + ("port",),
            f"{node} is a {nodes[node].kind}, but this topology's VTEPs are "
            f"{' and '.join(k + 's' for k in vtep_kinds)} ({said}); a {nodes[node].kind} "
            "cannot be one here",
        )
        return None
    for p in nodes[node].ports:
        if p.name == pname and p.peer_node == host.name:
            return node, p.name, p.peer_port
    mine = [f"{node}:{p.name}" for p in nodes[node].ports if p.peer_node == host.name]
    shown = port if check_port_name(pname) is None else quoted(port)
    problems.add(
        at + ("port",),
        f"{shown} is not a port linked to {host.name}"
        + (f"; its links to {node}: {listing(mine)}" if mine else f"; it has no link to {node}"),
    )
    return None
