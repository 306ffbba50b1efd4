"""Semantic validation and derivation: a TopologySpec becomes a Fabric.

Pure functions, no I/O besides reading the file. Every default is derived here
(ASNs per tier, loopbacks from the pool, port names, MTUs) and every rule that
spans entries is checked here, collecting all problems before raising.
"""
from __future__ import annotations

import ipaddress
import re
from pathlib import Path

from twin.kinds import KINDS, Kind
from twin.topology.load import Problems, load_spec
from twin.topology.model import Endpoint, Fabric, Link, Node, Port
from twin.topology.schema import TopologySpec
from twin.topology.tenants import build_tenants

LAB_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,14}[a-z0-9])?$")
NODE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,22}[a-z0-9])?$")
PORT_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
LAB_NAME_RULE = "1-16 lowercase letters, digits or '-', not starting or ending with '-'"


def load(path: str | Path, name: str | None = None) -> Fabric:
    """Topology file -> validated Fabric, or TopologyError with every problem."""
    spec, problems, broken = load_spec(path)
    fabric = build(spec, problems, broken, name=name, source=str(path))
    problems.raise_if_any()
    return fabric


def build(spec: TopologySpec, problems: Problems, broken: set[str],
          name: str | None = None, source: str = "") -> Fabric:
    lab = name if name is not None else spec.name
    if not LAB_NAME.match(lab or ""):
        where = ("--name",) if name is not None else ("name",)
        problems.add(where, f"lab name {lab!r} is not allowed: {LAB_NAME_RULE}")

    kinds: dict[str, Kind] = {}
    for n, s in spec.nodes.items():
        if not NODE_NAME.match(n):
            problems.add(("nodes", n), "node names are 1-24 lowercase letters, digits or '-'")
        kind = KINDS.get(s.kind)
        if kind is None:
            problems.add(("nodes", n, "kind"), f"unknown kind {s.kind!r}; known kinds: {', '.join(KINDS)}")
            broken.add(n)
            continue
        kinds[n] = kind
        if not kind.runs_bgp:
            for field in ("asn", "loopback"):
                if getattr(s, field) is not None:
                    problems.add(("nodes", n, field), f"a {kind.name} runs no BGP: '{field}' is not allowed")
            if s.drain:
                problems.add(("nodes", n, "drain"),
                             f"a {kind.name} runs no BGP, so it cannot be drained; drain is for "
                             f"{', '.join(k.name for k in KINDS.values() if k.runs_bgp)}")

    order = sorted(kinds, key=lambda n: kinds[n].tier)  # stable: file order within a tier
    asns = _assign_asns(spec, kinds, order, problems)
    loopbacks = _assign_loopbacks(spec, kinds, order, problems)
    links, ports = _resolve_links(spec, kinds, asns, problems, broken)

    # Only for nodes that no link names at all: a link already reported as wrong
    # must not make its nodes look isolated too.
    linked = {ep.partition(":")[0] for link in spec.links if link for ep in link.endpoints}
    for n in order:
        if kinds[n].runs_bgp and n not in linked:
            problems.add(("nodes", n), "has no link to a BGP peer, so it could never converge")

    nodes = {
        n: Node(name=n, kind=kinds[n].name, asn=asns.get(n), loopback=loopbacks.get(n),
                image=spec.nodes[n].image, drain=spec.nodes[n].drain, ports=tuple(ports.get(n, [])))
        for n in spec.nodes if n in kinds
    }
    tenants = build_tenants(spec, kinds, nodes, problems)
    return Fabric(name=lab or "", source=source, nodes=nodes, links=tuple(links),
                  vtep_kind=spec.vtep, tenants=tenants)


def _assign_asns(spec: TopologySpec, kinds: dict[str, Kind], order: list[str],
                 problems: Problems) -> dict[str, int]:
    explicit = {n: spec.nodes[n].asn for n in order if spec.nodes[n].asn is not None}
    taken = set(explicit.values())
    asns: dict[str, int] = {}
    next_asn: dict[str, int] = {}
    for n in order:
        kind = kinds[n]
        if not kind.runs_bgp:
            continue
        if n in explicit:
            asns[n] = explicit[n]
            continue
        base = getattr(spec.defaults.asn, kind.name, None) or kind.asn_base
        if kind.asn_shared:
            asns[n] = base
            continue
        asn = next_asn.get(kind.name, base)
        while asn in taken:
            asn += 1
        asns[n] = asn
        taken.add(asn)
        next_asn[kind.name] = asn + 1

    owner: dict[int, str] = {}
    for n in order:
        if n not in asns:
            continue
        first = owner.setdefault(asns[n], n)
        if first == n:
            continue
        if kinds[n].asn_shared and kinds[first].name == kinds[n].name:
            continue  # spines share their tier's ASN on purpose
        where = ("nodes", n, "asn") if n in explicit else ("nodes", n)
        problems.add(where, f"ASN {asns[n]} is already used by {first}; only the "
                            f"{', '.join(k.name for k in KINDS.values() if k.asn_shared)} tier shares an ASN, "
                            "every other BGP node needs its own")
    return asns


def _assign_loopbacks(spec: TopologySpec, kinds: dict[str, Kind], order: list[str],
                      problems: Problems) -> dict[str, str]:
    pool = None
    try:
        pool = ipaddress.IPv4Network(spec.defaults.loopback_pool)
    except ValueError as e:
        problems.add(("defaults", "loopback_pool"),
                     f"{spec.defaults.loopback_pool!r} is not an IPv4 prefix like 10.255.0.0/24 ({e})")
    loopbacks: dict[str, str] = {}
    owner: dict[str, str] = {}
    for n in order:
        raw = spec.nodes[n].loopback
        if raw is None:
            continue
        try:
            addr = str(ipaddress.IPv4Address(raw))
        except ValueError:
            problems.add(("nodes", n, "loopback"), f"{raw!r} is not an IPv4 address like 10.255.0.1")
            continue
        if addr in owner:
            problems.add(("nodes", n, "loopback"), f"{addr} is already the loopback of {owner[addr]}")
            continue
        owner[addr] = n
        loopbacks[n] = addr
    if pool is None:
        return loopbacks
    free = (str(a) for a in pool.hosts() if str(a) not in owner)
    for n in order:
        if kinds[n].runs_bgp and n not in loopbacks:
            addr = next(free, None)
            if addr is None:
                problems.add(("defaults", "loopback_pool"),
                             f"{pool} has no free address left for {n}; use a larger pool")
                break
            loopbacks[n] = addr
    return loopbacks


def _resolve_links(spec: TopologySpec, kinds: dict[str, Kind], asns: dict[str, int],
                   problems: Problems, broken: set[str]) -> tuple[list[Link], dict[str, list[Port]]]:
    known = ", ".join(spec.nodes)
    parsed: list[tuple[int, list[tuple[str, str | None]], str, int | None]] = []
    used: dict[tuple[str, str], str] = {}  # (node, port) -> where it is used

    # Pass 1: parse endpoints, check nodes and pairing, reserve explicit ports.
    for i, link in enumerate(spec.links):
        if link is None:
            continue
        ends: list[tuple[str, str | None]] = []
        ok = True
        for j, ep in enumerate(link.endpoints):
            node, _, port = ep.partition(":")
            at = ("links", i, "endpoints", j)
            if node not in spec.nodes and node not in broken:
                problems.add(at, f"no node named {node!r}; nodes: {known}")
                ok = False
            elif node in broken or node not in kinds:
                ok = False
            if port and (not PORT_NAME.match(port) or port == "lo"):
                problems.add(at, f"port name {port!r} is not allowed: 1-15 letters, digits, '_', '.', '-' (not 'lo')")
                ok = False
            ends.append((node, port or None))
        if not ok:
            continue
        (na, _), (nb, _) = ends
        if na == nb:
            problems.add(("links", i, "endpoints"), f"both ends are on {na}; a link joins two nodes")
            continue
        role = _role(kinds[na], kinds[nb])
        if role is None:
            problems.add(("links", i, "endpoints"),
                         f"{na} ({kinds[na].name}) cannot link to {nb} ({kinds[nb].name}): "
                         "BGP nodes link to each other, a host links to a leaf or a DPU")
            continue
        if role == "fabric" and asns.get(na) == asns.get(nb):
            problems.add(("links", i, "endpoints"),
                         f"{na} and {nb} share ASN {asns.get(na)}: eBGP between them would drop every route")
            continue
        for j, (node, port) in enumerate(ends):
            if port is None:
                continue
            if (node, port) in used:
                problems.add(("links", i, "endpoints", j), f"port {node}:{port} is already used by {used[(node, port)]}")
                ok = False
            else:
                used[(node, port)] = f"links[{i}]"
        if ok:
            parsed.append((i, ends, role, link.mtu))

    # Pass 2: allocate the ports left out, in file order, from each kind's naming.
    counters: dict[tuple[str, str], int] = {}
    links: list[Link] = []
    ports: dict[str, list[Port]] = {}
    for i, ends, role, mtu in parsed:
        names = []
        for node, port in ends:
            if port is None:
                naming = kinds[node].fabric_ports if role == "fabric" else kinds[node].access_ports
                key = (node, naming.template)
                idx = counters.get(key, naming.start)
                while (node, naming.name(idx)) in used:
                    idx += 1
                port = naming.name(idx)
                counters[key] = idx + 1
                used[(node, port)] = f"links[{i}]"
            names.append(port)
        mtu = mtu or (spec.defaults.mtu if role == "fabric" else spec.defaults.host_mtu)
        (na, _), (nb, _) = ends
        a, b = Endpoint(node=na, port=names[0]), Endpoint(node=nb, port=names[1])
        links.append(Link(a=a, b=b, mtu=mtu))
        ports.setdefault(na, []).append(Port(name=a.port, peer_node=nb, peer_port=b.port, mtu=mtu,
                                             role="fabric" if role == "fabric" else "access"))
        ports.setdefault(nb, []).append(Port(name=b.port, peer_node=na, peer_port=a.port, mtu=mtu,
                                             role="fabric" if role == "fabric" else "access"))
    return links, ports


def _role(a: Kind, b: Kind) -> str | None:
    if a.runs_bgp and b.runs_bgp:
        return "fabric"
    if (not a.runs_bgp and b.accepts_hosts) or (not b.runs_bgp and a.accepts_hosts):
        return "access"
    return None
