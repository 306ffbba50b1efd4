"""Semantic validation and derivation: a TopologySpec becomes a Fabric.

Pure functions, no I/O besides reading the file. Every default is derived here
(ASNs per tier, loopbacks from the pool, port names, MTUs) and every rule that
spans entries is checked here, collecting all problems before raising.
"""

from __future__ import annotations

from pathlib import Path

from twin.kinds import KINDS, Kind
from twin.topology.addresses import parse_address, parse_prefix, special_use
from twin.topology.checks import check_against, parse_checks
from twin.topology.connectivity import check_connectivity
from twin.topology.mgmt import build_mgmt
from twin.topology.model import Endpoint, Fabric, Link, Node, Port
from twin.topology.names import check_command, check_image, check_lab_name, check_node_name, check_port_name
from twin.topology.noderun import node_runtime
from twin.topology.nvue_nodes import nvue_fields
from twin.topology.problems import Problems, listing, quoted
from twin.topology.read import load_spec, spec_of
from twin.topology.schema import AS_TRANS, ASN_MAX, TopologySpec
from twin.topology.services import build_services
from twin.topology.tenants import build_tenants

__all__ = ["build", "load", "load_document"]

Ends = list[tuple[str, str | None]]  # (node, port or None: allocate one) of each end of a link


def load(path: str | Path, name: str | None = None) -> Fabric:
    """Topology file -> validated Fabric, or TopologyError with every problem."""
    spec, problems, broken = load_spec(path)
    fabric = build(spec, problems, broken, name=name, source=str(path))
    problems.raise_if_any()
    return fabric


def load_document(doc: dict, source: str, name: str | None = None, lines: dict | None = None) -> Fabric:
    """A topology document made by twin (an import) -> Fabric, checked as a file is; problems are
    placed in `source`, the file it was made from, at `lines` (the document's places -> that file's
    lines) where the import knows them."""
    spec, problems, broken = spec_of(doc, lines or {}, source)
    fabric = build(spec, problems, broken, name=name, source=source)
    problems.raise_if_any()
    return fabric


def build(
    spec: TopologySpec, problems: Problems, broken: set[str], name: str | None = None, source: str = ""
) -> Fabric:
    lab = name if name is not None else spec.name
    reason = check_lab_name(lab) if lab is not None else None
    if reason:
        problems.add(("--name",) if name is not None else ("name",), reason, in_file=name is None)

    kinds = _kinds(spec, problems, broken)
    order = sorted(kinds, key=lambda n: kinds[n].tier)  # stable: file order within a tier
    asns = _assign_asns(spec, kinds, order, problems)
    loopbacks = _assign_loopbacks(spec, kinds, order, problems)
    resolved, ports = _resolve_links(spec, kinds, asns, problems, broken)
    check_connectivity(spec, kinds, resolved, problems, broken)
    mgmt, pinned = build_mgmt(spec, kinds, problems)

    nodes = {
        n: Node(
            name=n,
            kind=kinds[n].name,
            asn=asns.get(n),
            loopback=loopbacks.get(n),
            mgmt=pinned.get(n),
            image=spec.nodes[n].image,
            drain=spec.nodes[n].drain,
            ports=tuple(ports.get(n, [])),
            exec=tuple(spec.nodes[n].exec or ()),
            **node_runtime(n, spec.nodes[n], kinds[n], source, problems),
            **nvue_fields(n, spec.nodes[n], spec.defaults, kinds[n], [p.name for p in ports.get(n, [])], problems),
        )
        for n in spec.nodes
        if n in kinds
    }
    tenants, congestion = build_services(spec, nodes, build_tenants(spec, kinds, nodes, resolved, problems), problems)
    fabric = Fabric(
        name=lab or "",
        source=source,
        nodes=nodes,
        links=tuple(resolved.values()),
        vtep_kind=spec.vtep if isinstance(spec.vtep, str) else ",".join(spec.vtep),
        tenants=tenants,
        congestion=congestion,
        vrf_backend=spec.defaults.vrf_backend,
        mgmt=mgmt,
        images=spec.defaults.images,
    )
    checks = parse_checks(spec.checks or [], ("checks",), problems)  # the user's own, run by `twin verify`
    check_against(checks, fabric, problems, ("checks",))
    return fabric.model_copy(update={"checks": tuple(c for _, c in checks)}) if checks else fabric


def _kinds(spec: TopologySpec, problems: Problems, broken: set[str]) -> dict[str, Kind]:
    """The kind of every well-named node of a known kind; the others join `broken`."""
    kinds: dict[str, Kind] = {}
    for n, s in spec.nodes.items():
        reason = check_node_name(n)
        if reason:
            problems.add(("nodes", n), reason)
            broken.add(n)
            continue
        kind = KINDS.get(s.kind)
        if kind is None:
            problems.add(("nodes", n, "kind"), f"unknown kind {quoted(s.kind)}; known kinds: {', '.join(KINDS)}")
            broken.add(n)
            continue
        kinds[n] = kind
        if s.image is not None and (why := check_image(s.image)):
            problems.add(("nodes", n, "image"), why)
        for i, cmd in enumerate(s.exec or ()):
            if why := check_command(cmd):
                problems.add(("nodes", n, "exec", i), why)
        if not kind.runs_bgp:
            for field in ("asn", "loopback"):
                if getattr(s, field) is not None:
                    problems.add(("nodes", n, field), f"a {kind.name} runs no BGP: '{field}' is not allowed")
            if s.drain:
                problems.add(
                    ("nodes", n, "drain"),
                    f"a {kind.name} runs no BGP, so it cannot be drained; drain is for "
                    f"{', '.join(k.name for k in KINDS.values() if k.runs_bgp)}",
                )
    return kinds


def _assign_asns(spec: TopologySpec, kinds: dict[str, Kind], order: list[str], problems: Problems) -> dict[str, int]:
    explicit = {n: asn for n in order if (asn := spec.nodes[n].asn) is not None}
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
        base: int | None = getattr(spec.defaults.asn, kind.name, None) or kind.asn_base
        if base is None:
            raise TypeError(f"kind {kind.name} runs BGP but has no asn_base")
        if kind.asn_shared:
            asns[n] = base
            continue
        asn = next_asn.get(kind.name, base)
        while asn in taken or asn == AS_TRANS:
            asn += 1
        next_asn[kind.name] = asn + 1
        if asn > ASN_MAX:
            if asn == ASN_MAX + 1:  # the first node of the tier left without one
                problems.add(
                    ("nodes", n),
                    f"no ASN left for {n}: counting up from {base}, the {kind.name} "
                    f"tier passes {ASN_MAX}, the largest ASN; lower defaults.asn."
                    f"{kind.name} or give each {kind.name} an asn",
                )
            continue
        asns[n] = asn
        taken.add(asn)
    _check_unique_asns(kinds, order, asns, explicit, problems)
    return asns


def _check_unique_asns(
    kinds: dict[str, Kind], order: list[str], asns: dict[str, int], explicit: dict[str, int], problems: Problems
) -> None:
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
        problems.add(
            where,
            f"ASN {asns[n]} is already used by {first}; only the "
            f"{', '.join(k.name for k in KINDS.values() if k.asn_shared)} tier shares an ASN, "
            "every other BGP node needs its own",
        )


def _assign_loopbacks(
    spec: TopologySpec, kinds: dict[str, Kind], order: list[str], problems: Problems
) -> dict[str, str]:
    pool, why = parse_prefix(spec.defaults.loopback_pool, "10.255.0.0/24")
    if pool is None:
        problems.add(("defaults", "loopback_pool"), why)
    elif special_use(pool):
        problems.add(
            ("defaults", "loopback_pool"),
            f"{pool} overlaps {special_use(pool)}: loopbacks must be routable unicast addresses",
        )
        pool = None
    loopbacks: dict[str, str] = {}
    owner: dict[str, str] = {}
    for n in order:
        raw = spec.nodes[n].loopback
        if raw is None or not kinds[n].runs_bgp:
            continue
        addr, why = parse_address(raw, "10.255.0.1")
        if addr is None:
            problems.add(("nodes", n, "loopback"), why)
        elif special_use(addr):
            problems.add(
                ("nodes", n, "loopback"),
                f"{addr} is in {special_use(addr)}: a loopback must be a routable unicast address",
            )
        elif str(addr) in owner:
            problems.add(("nodes", n, "loopback"), f"{addr} is already the loopback of {owner[str(addr)]}")
        else:
            owner[str(addr)] = n
            loopbacks[n] = str(addr)
    if pool is None:
        return loopbacks
    free = (str(a) for a in pool.hosts() if str(a) not in owner)
    for n in order:
        if kinds[n].runs_bgp and n not in loopbacks and spec.nodes[n].loopback is None:
            given = next(free, None)
            if given is None:
                problems.add(
                    ("defaults", "loopback_pool"), f"{pool} has no free address left for {n}; use a larger pool"
                )
                break
            loopbacks[n] = given
    return loopbacks


def _resolve_links(
    spec: TopologySpec, kinds: dict[str, Kind], asns: dict[str, int], problems: Problems, broken: set[str]
) -> tuple[dict[int, Link], dict[str, list[Port]]]:
    """The links that are sound, by their index in the file, and the ports of every node."""
    used: dict[tuple[str, str], str] = {}  # (node, port) -> where it is used
    known = listing(spec.nodes)
    parsed: list[tuple[int, Ends, str]] = []
    for i, link in enumerate(spec.links):
        if link is None:
            continue
        ends = _link_ends(i, link.endpoints, spec, known, kinds, broken, problems)
        if ends is None:
            continue
        role = _link_role(i, ends, kinds, asns, problems)
        if role is not None and _reserve_ports(i, ends, used, problems):
            parsed.append((i, ends, role))

    # Then allocate the ports left out, in file order, from each kind's naming.
    counters: dict[tuple[str, str], int] = {}
    resolved: dict[int, Link] = {}
    ports: dict[str, list[Port]] = {}
    for i, ends, role in parsed:
        names = [port or _allocate(node, role, kinds[node], used, counters, i) for node, port in ends]
        given = spec.links[i]
        mtu = (given.mtu if given else None) or (spec.defaults.mtu if role == "fabric" else spec.defaults.host_mtu)
        (na, _), (nb, _) = ends
        a, b = Endpoint(node=na, port=names[0]), Endpoint(node=nb, port=names[1])
        resolved[i] = Link(a=a, b=b, mtu=mtu)
        ports.setdefault(na, []).append(Port(name=a.port, peer_node=nb, peer_port=b.port, mtu=mtu, role=role))
        ports.setdefault(nb, []).append(Port(name=b.port, peer_node=na, peer_port=a.port, mtu=mtu, role=role))
    return resolved, ports


def _link_ends(
    i: int,
    endpoints: list[str],
    spec: TopologySpec,
    known: str,
    kinds: dict[str, Kind],
    broken: set[str],
    problems: Problems,
) -> Ends | None:
    """(node, port) of both ends, or None when an end is wrong (reported) or on a broken node."""
    ends: Ends = []
    ok = True
    for j, ep in enumerate(endpoints):
        node, _, port = ep.partition(":")
        at = ("links", i, "endpoints", j)
        if node not in spec.nodes and node not in broken:
            problems.add(at, f"no node named {quoted(node)}; nodes: {known}")
            ok = False
        elif node in broken or node not in kinds:
            ok = False
        reason = check_port_name(port) if port else None
        if reason:
            problems.add(at, reason)
            ok = False
        ends.append((node, port or None))
    return ends if ok else None


def _link_role(i: int, ends: Ends, kinds: dict[str, Kind], asns: dict[str, int], problems: Problems) -> str | None:
    """'fabric' (BGP on both ends) or 'access' (a host behind a leaf or DPU), or None (reported)."""
    (na, _), (nb, _) = ends
    if na == nb:
        problems.add(("links", i, "endpoints"), f"both ends are on {na}; a link joins two nodes")
        return None
    a, b = kinds[na], kinds[nb]
    for (n, k), (m, j) in (((na, a), (nb, b)), ((nb, b), (na, a))):
        if k.attaches_to is not None and j.name not in k.attaches_to:
            problems.add(
                ("links", i, "endpoints"),
                f"{n} ({k.name}) attaches to a {' or '.join(k.attaches_to)}, not to {m} ({j.name})",
            )
            return None
    if a.runs_bgp and b.runs_bgp:
        if na in asns and asns.get(na) == asns.get(nb):
            problems.add(
                ("links", i, "endpoints"),
                f"{na} and {nb} share ASN {asns[na]}: eBGP between them would drop every route",
            )
            return None
        return "fabric"
    if (a.endpoint and b.accepts_hosts) or (b.endpoint and a.accepts_hosts):
        return "access"
    if (a.user_config or b.user_config) and a.runs_frr and b.runs_frr:
        return "plain"
    hosting = [k.name for k in KINDS.values() if k.accepts_hosts]
    problems.add(
        ("links", i, "endpoints"),
        f"{na} ({a.name}) cannot link to {nb} ({b.name}): BGP nodes link to "
        f"each other, a host to a {', a '.join(hosting[:-1])} or a {hosting[-1]}, "
        "a router to any FRR node",
    )
    return None


def _reserve_ports(i: int, ends: Ends, used: dict[tuple[str, str], str], problems: Problems) -> bool:
    ok = True
    for j, (node, port) in enumerate(ends):
        if port is None:
            continue
        if (node, port) in used:
            problems.add(("links", i, "endpoints", j), f"port {node}:{port} is already used by {used[(node, port)]}")
            ok = False
        else:
            used[(node, port)] = f"links[{i}]"
    return ok


def _allocate(
    node: str, role: str, kind: Kind, used: dict[tuple[str, str], str], counters: dict[tuple[str, str], int], i: int
) -> str:
    naming = kind.fabric_ports if role == "fabric" else kind.access_ports
    key = (node, naming.template)
    idx = counters.get(key, naming.start)
    while (node, naming.name(idx)) in used:
        idx += 1
    counters[key] = idx + 1
    used[(node, naming.name(idx))] = f"links[{i}]"
    return naming.name(idx)
