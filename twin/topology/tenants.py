"""Tenants: VRFs, L3VNIs, segments (L2VNI + anycast gateway) and host attachments.

Validated and derived like the rest of the topology: every problem collected
with its place in the file; defaults (VRF name, gateway, gateway MAC, host
addresses and MACs, the VTEP port of each host) resolved here.
"""
from __future__ import annotations

import hashlib
import ipaddress
import re

from twin.kinds import KINDS, Kind
from twin.topology.load import Problems
from twin.topology.model import Attachment, Node, Segment, Tenant
from twin.topology.schema import TopologySpec

VXLAN_OVERHEAD = 50
VRF_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,14}$")
MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
DEFAULT_GATEWAY_MAC = "00:00:5e:00:01:01"


def host_mac(host: str) -> str:
    """A stable, locally administered unicast MAC for a host's tenant port."""
    b = hashlib.sha256(host.encode()).digest()[:5]
    return "02:" + ":".join(f"{x:02x}" for x in b)


def build_tenants(spec: TopologySpec, kinds: dict[str, Kind], nodes: dict[str, Node],
                  problems: Problems) -> dict[str, Tenant]:
    vtep_kinds = [k.name for k in KINDS.values() if k.can_be_vtep]
    if spec.vtep not in vtep_kinds:
        problems.add(("vtep",), f"{spec.vtep!r} cannot be a VTEP; VTEP kinds: {', '.join(vtep_kinds)}")
    if not spec.tenants:
        return {}
    if spec.defaults.host_mtu > spec.defaults.mtu - VXLAN_OVERHEAD:
        problems.add(("defaults", "host_mtu"),
                     f"{spec.defaults.host_mtu} does not fit in VXLAN over the fabric MTU {spec.defaults.mtu}: "
                     f"at most {spec.defaults.mtu - VXLAN_OVERHEAD}")

    vnis: dict[int, str] = {}
    vrfs: dict[str, str] = {}
    hosts_used: dict[str, str] = {}
    tenants: dict[str, Tenant] = {}

    def claim_vni(vni: int, where: tuple) -> None:
        place = ".".join(map(str, where))
        if vni in vnis:
            problems.add(where, f"VNI {vni} is already used by {vnis[vni]}; every VNI is unique")
        else:
            vnis[vni] = place

    for tname, t in spec.tenants.items():
        at = ("tenants", tname)
        vrf = t.vrf or tname
        if not VRF_NAME.match(vrf):
            problems.add(at + (("vrf",) if t.vrf else ()),
                         f"VRF name {vrf!r} is not allowed: 1-15 of a-z 0-9 _ -, starting with a letter")
        elif vrf in vrfs:
            problems.add(at + ("vrf",), f"VRF {vrf!r} is already the VRF of tenant {vrfs[vrf]}")
        else:
            vrfs[vrf] = tname
        claim_vni(t.l3vni, at + ("l3vni",))

        segments: dict[str, Segment] = {}
        nets: dict[str, ipaddress.IPv4Network] = {}
        for sname, s in t.segments.items():
            sat = at + ("segments", sname)
            claim_vni(s.l2vni, sat + ("l2vni",))
            try:
                net = ipaddress.IPv4Network(s.subnet)
            except ValueError as e:
                problems.add(sat + ("subnet",), f"{s.subnet!r} is not an IPv4 prefix like 10.1.1.0/24 ({e})")
                continue
            if net.num_addresses < 4:
                problems.add(sat + ("subnet",), f"{net} is too small for a gateway and hosts (at most /30)")
                continue
            gw = s.gateway or str(next(net.hosts()))
            try:
                gw_ip = ipaddress.IPv4Address(gw)
                if gw_ip not in net or gw_ip in (net.network_address, net.broadcast_address):
                    problems.add(sat + ("gateway",), f"{gw} is outside its subnet {net} (or not a host address)")
                    continue
            except ValueError:
                problems.add(sat + ("gateway",), f"{gw!r} is not an IPv4 address")
                continue
            mac = (s.mac or DEFAULT_GATEWAY_MAC).lower()
            if not MAC.match(mac) or int(mac[:2], 16) & 1:
                problems.add(sat + ("mac",), f"{s.mac!r} is not a unicast MAC like 00:00:5e:00:01:01")
                continue
            segments[sname] = Segment(name=sname, subnet=str(net), l2vni=s.l2vni, gateway=gw, mac=mac)
            nets[sname] = net

        attachments: list[Attachment] = []
        taken: dict[str, set[str]] = {n: {segments[n].gateway} for n in segments}
        pending_auto: list[tuple[int, Attachment]] = []
        for i, a in enumerate(t.attachments):
            aat = at + ("attachments", i)
            ok = True
            host = nodes.get(a.host)
            if host is None or host.kind != "host":
                hosts = [n for n, nd in nodes.items() if nd.kind == "host"]
                problems.add(aat + ("host",), f"no host named {a.host!r}; hosts: {', '.join(hosts) or 'none'}")
                ok = False
            elif a.host in hosts_used:
                problems.add(aat + ("host",), f"{a.host} is already attached by {hosts_used[a.host]}; "
                                              "a host belongs to one tenant and one segment")
                ok = False
            if a.segment not in t.segments:
                problems.add(aat + ("segment",),
                             f"no segment {a.segment!r} in tenant {tname}; segments: {', '.join(t.segments)}")
                ok = False
            elif a.segment not in segments:
                ok = False  # the segment itself is reported
            if not ok or spec.vtep not in vtep_kinds:
                continue
            hosts_used[a.host] = f"tenants.{tname}.attachments[{i}]"
            link = _vtep_port(a.port, host, nodes, spec.vtep, problems, aat)
            if link is None:
                continue
            vtep, port, host_port = link
            address = None
            if a.address is not None:
                net = nets[a.segment]
                try:
                    ip = ipaddress.IPv4Address(a.address)
                except ValueError:
                    problems.add(aat + ("address",), f"{a.address!r} is not an IPv4 address")
                    continue
                if ip not in net or ip in (net.network_address, net.broadcast_address):
                    problems.add(aat + ("address",), f"{ip} is outside segment {a.segment} ({net})")
                    continue
                if str(ip) in taken[a.segment]:
                    problems.add(aat + ("address",), f"{ip} is already used in segment {a.segment} "
                                                     "(by the gateway or another host)")
                    continue
                taken[a.segment].add(str(ip))
                address = f"{ip}/{net.prefixlen}"
            att = Attachment(host=a.host, host_port=host_port, segment=a.segment, vtep=vtep, port=port,
                             address=address or "", mac=host_mac(a.host))
            if address is None:
                pending_auto.append((i, att))
            attachments.append(att)
        for i, att in pending_auto:  # after explicit addresses are known
            net = nets[att.segment]
            free = next((str(h) for h in net.hosts() if str(h) not in taken[att.segment]), None)
            if free is None:
                problems.add(at + ("attachments", i), f"segment {att.segment} ({net}) has no free address left")
                continue
            taken[att.segment].add(free)
            attachments[attachments.index(att)] = att.model_copy(update={"address": f"{free}/{net.prefixlen}"})
        tenants[tname] = Tenant(name=tname, vrf=vrf, l3vni=t.l3vni, segments=segments,
                                attachments=tuple(attachments))
    return tenants


def _vtep_port(port: str | None, host: Node, nodes: dict[str, Node], vtep_kind: str,
               problems: Problems, at: tuple) -> tuple[str, str, str] | None:
    """(vtep node, vtep port, host port) of an attachment, or None after reporting why not."""
    links = [p for p in host.ports if nodes[p.peer_node].kind == vtep_kind] if host.ports else []
    if port is None:
        if len(links) == 1:
            return links[0].peer_node, links[0].peer_port, links[0].name
        if not links:
            problems.add(at, f"{host.name} has no link to a {vtep_kind} (vtep: {vtep_kind}); "
                             "link it to its VTEP or name the port")
        else:
            problems.add(at + ("port",), f"{host.name} has links to several VTEPs; say which: " +
                         ", ".join(f"{p.peer_node}:{p.peer_port}" for p in links))
        return None
    node, _, pname = port.partition(":")
    if node not in nodes:
        problems.add(at + ("port",), f"no node named {node!r}")
        return None
    if nodes[node].kind != vtep_kind:
        problems.add(at + ("port",), f"{node} is a {nodes[node].kind}, but this topology's VTEPs are "
                                     f"{vtep_kind}s (vtep: {vtep_kind}); a {nodes[node].kind} cannot be one here")
        return None
    for p in nodes[node].ports:
        if p.name == pname and p.peer_node == host.name:
            return node, p.name, p.peer_port
    mine = [f"{node}:{p.name}" for p in nodes[node].ports if p.peer_node == host.name]
    problems.add(at + ("port",), f"{port} is not a port linked to {host.name}"
                                 + (f"; its links to {node}: {', '.join(mine)}" if mine else f"; it has no link to {node}"))
    return None
