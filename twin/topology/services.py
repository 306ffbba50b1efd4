"""Services of a tenant at its VTEPs, and of the fabric: internet access through NAT
gateways, rate limits of workloads, congestion points on fabric ports.

Validated like the rest of the topology (every problem at its place in the file)
and resolved here: which segments go out, the public address of every VTEP
that is a gateway (from the pool, in node order) and of hosts with their own,
each workload's limits (its own per direction, else its tenant's), each rate
as bits or packets per second.

Public addresses must be public to the lab: not a special range, not inside any
tenant's subnet, the loopbacks or the internet's test ranges, and each used once.
"""

from __future__ import annotations

from ipaddress import IPv4Network

from twin.kinds import KINDS
from twin.topology.addresses import parse_address, parse_prefix, special_use
from twin.topology.model import Attachment, CongestionPoint, Forward, Internet, Node, RateLimit, Tenant
from twin.topology.problems import Path_, Problems, listing, quoted
from twin.topology.rates import parse_rate
from twin.topology.schema import ForwardSpec, InternetSpec, RateLimitSpec, TenantSpec, TopologySpec

__all__ = ["build_services"]


def build_services(
    spec: TopologySpec, nodes: dict[str, Node], tenants: dict[str, Tenant], problems: Problems
) -> tuple[dict[str, Tenant], tuple[CongestionPoint, ...]]:
    """Tenants with their rate limits and internet access resolved; the congestion points."""
    out: dict[str, Tenant] = {}
    public = _Public(spec, nodes, tenants, problems)
    for name, t in tenants.items():
        t = _rate_limits(spec.tenants[name], t, ("tenants", name), problems)
        if (wanted := spec.tenants[name].internet) is not None:
            t = t.model_copy(update={"internet": public.internet(name, wanted, t)})
        out[name] = t
    return out, _congestion(spec, nodes, problems)


# --- rate limits ---------------------------------------------------------------------------
def _limit(raw: RateLimitSpec | None, at: Path_, problems: Problems) -> RateLimit | None:
    if raw is None:
        return None
    rates = {}
    for direction in ("egress", "ingress"):
        text = getattr(raw, direction)
        if text is not None:
            rate, why = parse_rate(text)
            if rate is None:
                problems.add(at + (direction,), why)
            rates[direction] = rate
    return RateLimit(**rates)


def _rate_limits(ts: TenantSpec, t: Tenant, at: Path_, problems: Problems) -> Tenant:
    tenant = _limit(ts.rate_limit, at + ("rate_limit",), problems)
    own = {
        a.host: _limit(a.rate_limit, at + ("attachments", i, "rate_limit"), problems)
        for i, a in enumerate(ts.attachments)
        if a.rate_limit is not None
    }
    if tenant is None and not own:
        return t

    def resolved(a: Attachment) -> Attachment:
        mine = own.get(a.host) or RateLimit()
        limit = RateLimit(
            egress=mine.egress or (tenant.egress if tenant else None),
            ingress=mine.ingress or (tenant.ingress if tenant else None),
        )
        return a.model_copy(update={"rate_limit": limit if (limit.egress or limit.ingress) else None})

    return t.model_copy(update={"attachments": tuple(resolved(a) for a in t.attachments)})


# --- internet access ----------------------------------------------------------------------
class _Public:
    """Public addresses of every tenant, each claimed once, none where the lab already routes."""

    def __init__(self, spec: TopologySpec, nodes: dict[str, Node], tenants: dict[str, Tenant], problems: Problems):
        self.spec, self.nodes, self.problems = spec, nodes, problems
        self.edges = [n for n, nd in nodes.items() if KINDS[nd.kind].edge]
        self.claimed: dict[IPv4Network, str] = {}
        self.taken: list[tuple[IPv4Network, str]] = [
            (IPv4Network(s.subnet), f"subnet {s.subnet} of tenant {t.name}")
            for t in tenants.values()
            for s in t.segments.values()
        ]
        self.taken += [
            (IPv4Network(f"{n.loopback}/32"), f"the loopback of {n.name}") for n in nodes.values() if n.loopback
        ]
        pool, _ = parse_prefix(spec.defaults.loopback_pool, "")
        self.taken += [(pool, f"the loopback pool {pool}")] if pool else []
        for n in self.edges:
            self.taken += [
                (IPv4Network(f"{ip}/24", strict=False), f"the test range of {n}")
                for ip in KINDS[nodes[n].kind].test_addresses
            ]

    def internet(self, name: str, spec: InternetSpec, t: Tenant) -> Internet | None:
        at: Path_ = ("tenants", name, "internet")
        if not self.edges:
            edge = [k.name for k in KINDS.values() if k.edge]
            self.problems.add(
                at,
                f"the topology has no {listing(edge)} node to reach: add one (kind: {edge[0]}) "
                f"linked to a spine or leaf",
            )
        segments = self._segments(spec, t, at)
        hosts = self._hosts(spec, t, segments, at)
        out = {a.host for a in t.attachments if a.segment in segments}
        needy = [
            v
            for v in self.nodes
            if any(a.vtep == v and a.host in out and a.host not in spec.hosts for a in t.attachments)
        ]
        vteps = self._pool(spec, needy, at)
        internet = Internet(pool=spec.pool, vteps=vteps, hosts=hosts, segments=segments)
        forwards = tuple(
            f
            for i, fs in enumerate(spec.forwards)
            if (f := self._forward(fs, t, internet, at + ("forwards", i))) is not None
        )
        seen: dict[tuple, int] = {}
        for i, f in enumerate(forwards):
            key = (t.public_of(a) if (a := _att(t, f.host)) else None, f.proto, f.port)
            if key in seen:
                self.problems.add(
                    at + ("forwards", i),
                    f"{f.proto} port {f.port} of {key[0]} is already forwarded by forwards[{seen[key]}]",
                )
            seen.setdefault(key, i)
        return internet.model_copy(update={"forwards": forwards})

    def _segments(self, spec: InternetSpec, t: Tenant, at: Path_) -> tuple[str, ...]:
        if spec.segments is None:
            return tuple(t.segments)
        for i, s in enumerate(spec.segments):
            if s not in t.segments:
                self.problems.add(
                    at + ("segments", i), f"no segment {quoted(s)} in tenant {t.name}; segments: {listing(t.segments)}"
                )
        return tuple(s for s in dict.fromkeys(spec.segments) if s in t.segments)

    def _hosts(self, spec: InternetSpec, t: Tenant, segments: tuple[str, ...], at: Path_) -> dict[str, str]:
        hosts: dict[str, str] = {}
        for host, text in spec.hosts.items():
            a, where = _att(t, host), at + ("hosts", host)
            if a is None:
                self.problems.add(
                    where,
                    f"{quoted(host)} is no host of tenant {t.name}; its hosts: "
                    f"{listing([x.host for x in t.attachments]) or 'none'}",
                )
                continue
            if a.segment not in segments:
                self.problems.add(
                    where,
                    f"{host} is in segment {a.segment}, which does not go out (internet.segments: {listing(segments)})",
                )
                continue
            ip, why = parse_address(text, "192.0.2.10")
            if ip is None:
                self.problems.add(where, why)
            elif self._claim(IPv4Network(ip), f"the public address of {host} (tenant {t.name})", where):
                hosts[host] = str(ip)
        return hosts

    def _pool(self, spec: InternetSpec, needy: list[str], at: Path_) -> dict[str, str]:
        if spec.pool is None:
            if needy:
                self.problems.add(
                    at,
                    f"its hosts behind {listing(needy)} go out with no public address: "
                    "give a pool, or each of them an address under hosts",
                )
            return {}
        pool, why = parse_prefix(spec.pool, "192.0.2.16/29")
        if pool is None:
            self.problems.add(at + ("pool",), why)
            return {}
        if not self._claim(pool, f"the public pool of tenant {at[1]}", at + ("pool",)):
            return {}
        free = [str(a) for a in (pool.hosts() if pool.prefixlen < 31 else pool)]
        if len(free) < len(needy):
            self.problems.add(
                at + ("pool",),
                f"{pool} has {len(free)} address(es) for {len(needy)} gateway "
                f"VTEP(s) ({listing(needy)}): each needs one of its own",
            )
        return dict(zip(needy, free))

    def _claim(self, net: IPv4Network, what: str, where: Path_) -> bool:
        reason = special_use(net)
        reason = reason or next((w for n, w in self.taken if n.overlaps(net)), None)
        reason = reason or next((w for n, w in self.claimed.items() if n.overlaps(net)), None)
        if reason:
            shown = net.network_address if net.prefixlen == 32 else net
            self.problems.add(
                where,
                f"{shown} overlaps {reason}; a public address is announced in the underlay: "
                "not in a special range, a tenant subnet, a loopback or the internet's test "
                "ranges, and used once",
            )
            return False
        self.claimed[net] = what
        return True

    def _forward(self, fs: ForwardSpec, t: Tenant, internet: Internet, at: Path_) -> Forward | None:
        ok = True
        if fs.proto not in ("tcp", "udp"):
            self.problems.add(at + ("proto",), f"{quoted(fs.proto)} cannot be forwarded: tcp or udp")
            ok = False
        a = _att(t, fs.host)
        if a is None:
            self.problems.add(at + ("host",), f"{quoted(fs.host)} is no host of tenant {t.name}")
            ok = False
        elif a.segment not in internet.segments:
            self.problems.add(at + ("host",), f"{fs.host} is in segment {a.segment}, which does not go out")
            ok = False
        return Forward(proto=fs.proto, port=fs.port, host=fs.host, to=fs.to or fs.port) if ok else None


def _att(t: Tenant, host: str) -> Attachment | None:
    return next((a for a in t.attachments if a.host == host), None)


# --- congestion points -----------------------------------------------------------------------
def _congestion(spec: TopologySpec, nodes: dict[str, Node], problems: Problems) -> tuple[CongestionPoint, ...]:
    out: list[CongestionPoint] = []
    where: dict[tuple[str, str], int] = {}
    for i, c in enumerate(spec.congestion):
        if c is None:
            continue  # its structure is reported
        at: Path_ = ("congestion", i)
        rate, why = parse_rate(c.above)
        if rate is None:
            problems.add(at + ("above",), why)
        node, _, port = c.port.partition(":")
        fabric = [p.name for p in nodes[node].fabric_ports] if node in nodes else []
        if not fabric:
            routers = [n for n, nd in nodes.items() if nd.fabric_ports]
            problems.add(
                at + ("port",),
                f"{quoted(c.port)} is no fabric port: a congestion point is a port of a "
                f'BGP node towards another, "node:port" of {listing(routers)}',
            )
        elif port not in fabric:
            problems.add(
                at + ("port",), f"{quoted(c.port)} is no fabric port of {node}; its fabric ports: {listing(fabric)}"
            )
        elif (node, port) in where:
            problems.add(
                at + ("port",), f"{node}:{port} is already a congestion point (congestion[{where[node, port]}])"
            )
        elif rate is not None:
            where[(node, port)] = i
            out.append(CongestionPoint(node=node, port=port, above=rate))
    return tuple(out)
