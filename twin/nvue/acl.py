"""NVUE's ACLs as the node runs them: `acl NAME rule N match ip ... action permit|deny|log|set dscp`,
bound to ports (`interface X acl NAME inbound|outbound`), compiled to nftables in the namespace that
holds each port (`netdev` chains on the port's own ingress and egress hooks: bridged and routed
frames alike, before any bridge or VRF sees them inbound, as they leave outbound). Each rule of each
binding has its own named counter (`r<binding>_<rule>`), read back by `nv show acl` and
`nv show interface X acl`, and by `twin verify` (`twin.nvue.kernelcheck`).

As on Cumulus Linux: rules in order of their number, the first that matches decides; traffic no
rule matches passes; an ipv4 ACL sees IPv4 only (ARP and the rest pass). What twin does not run is
refused on the node rather than run half (a rule without it would match more, or do less): matches
on TCP flags, ECN, fragments, ICMP types, state or TTL, actions police/span/erspan, `set class`/`cos`;
ACLs of type ipv6 and mac bound to a port; a binding to the control plane (kept: listed as stored).
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass, field
from typing import Any

from twin.base.errors import TopologyError
from twin.config.backend import Backend
from twin.config.steps import Step
from twin.nvue import mtu as nvue_mtu
from twin.nvue import qos as nvue_qos
from twin.nvue.tree import Path, get

TABLE = "twin_acl"  # the netdev table in each namespace holding a bound port
FAMILY = "netdev"
PRIORITY = -500  # before anything else twin hooks there
HALF = ("tcp", "ecn", "fragment", "icmp-type", "icmpv6-type", "state", "ttl")  # matches refused on the node
PROTOS = {"tcp": 6, "udp": 17, "icmp": 1}


@dataclass(frozen=True)
class Rule:
    """One rule of an ACL: what it matches (None: anything) and what it does."""

    seq: int
    action: str  # permit or deny (log and set dscp permit)
    log: bool = False
    set_dscp: int | None = None
    src: str | None = None  # a prefix
    dst: str | None = None
    proto: int | None = None
    sports: tuple[int, ...] = ()
    dports: tuple[int, ...] = ()
    dscp: int | None = None

    def nft(self, acl: str, counter: str) -> str:
        """The rule as an nftables rule of a netdev chain."""
        m = []
        if self.src:
            m.append(f"ip saddr {self.src}")
        if self.dst:
            m.append(f"ip daddr {self.dst}")
        proto = {v: k for k, v in PROTOS.items()}.get(self.proto) if self.proto is not None else None
        if self.proto is not None:
            m.append(f"ip protocol {proto or self.proto}")
        if not m and self.dscp is None:
            m.append("meta protocol ip")
        for way, ports in (("sport", self.sports), ("dport", self.dports)):
            if ports:
                m.append(
                    f"{proto} {way} " + (str(ports[0]) if len(ports) == 1 else "{ " + ", ".join(map(str, ports)) + " }")
                )
        if self.dscp is not None:
            m.append(f"ip dscp {self.dscp}")
        what = f"acl {acl} rule {self.seq}"
        act = ["counter name", f'"{counter}"']
        if self.log:
            act.append(f'log prefix "{what}: "')
        if self.set_dscp is not None:
            act.append(f"ip dscp set {self.set_dscp}")
        act.append("drop" if self.action == "deny" else "accept")
        return " ".join(m + act + [f'comment "{what}"'])

    def matches(self, src: str, dst: str, proto: int, sport: int, dport: int, dscp: int) -> bool:
        """Whether an IPv4 packet of these fields matches the rule."""

        def within(a: str, p: str | None) -> bool:
            return p is None or ipaddress.ip_address(a) in ipaddress.ip_network(p, strict=False)

        return (
            within(src, self.src)
            and within(dst, self.dst)
            and self.proto in (None, proto)
            and (not self.sports or sport in self.sports)
            and (not self.dports or dport in self.dports)
            and self.dscp in (None, dscp)
        )

    @property
    def drops(self) -> bool:
        return self.action == "deny"


@dataclass(frozen=True)
class Acl:
    name: str
    type: str
    rules: tuple[Rule, ...]

    def decide(self, src: str, dst: str, proto: int, sport: int, dport: int, dscp: int) -> Rule | None:
        """The rule that decides a packet (`Rule.matches`' fields), None: no rule matches (it passes)."""
        return next((r for r in self.rules if r.matches(src, dst, proto, sport, dport, dscp)), None)


@dataclass(frozen=True)
class Binding:
    """ACL `acl` bound to NVUE port `port` (kernel device `dev`, in namespace `ns`) one way."""

    port: str
    dev: str
    ns: str
    way: str  # inbound or outbound
    acl: str
    index: int  # its place among the node's bindings: its chain and counters

    @property
    def chain(self) -> str:
        return f"b{self.index}_{'in' if self.way == 'inbound' else 'out'}"

    def counter(self, seq: int) -> str:
        return f"r{self.index}_{seq}"


@dataclass
class Acls:
    """A node's ACLs and their bindings, and what NVUE declares of them that twin does not run."""

    acls: dict[str, Acl] = field(default_factory=dict)
    bindings: list[Binding] = field(default_factory=list)
    problems: list[tuple[Path, str]] = field(default_factory=list)

    def namespaces(self) -> list[str]:
        return sorted({b.ns for b in self.bindings})

    def file(self, ns: str) -> str:
        """The node's file of the ACLs bound to ports in namespace `ns`."""
        return f"acl-{ns}.nft" if ns else "acl.nft"

    def render(self, ns: str, node: str) -> str:
        """The nftables file of namespace `ns`: its table made anew, a chain per binding."""
        out = [
            f"# {node}: NVUE's ACLs bound to its ports{' in namespace ' + ns if ns else ''} (twin.nvue.acl).",
            "# Per binding a chain on the port's own hook (ingress: inbound, egress: outbound), its rules",
            "# in order, each counted; what no rule matches passes.",
            f"table {FAMILY} {TABLE}",
            f"delete table {FAMILY} {TABLE}",
            f"table {FAMILY} {TABLE} {{",
        ]
        mine = [b for b in self.bindings if b.ns == ns]
        for b in mine:
            out += [line for r in self.acls[b.acl].rules for line in (f"\tcounter {b.counter(r.seq)} {{", "\t}")]
        for b in mine:
            hook = "ingress" if b.way == "inbound" else "egress"
            out += [
                f"\tchain {b.chain} {{",
                f"\t\t# acl {b.acl} {b.way} on {b.port}",
                f'\t\ttype filter hook {hook} device "{b.dev}" priority {PRIORITY}; policy accept;',
            ]
            out += [f"\t\t{r.nft(b.acl, b.counter(r.seq))}" for r in self.acls[b.acl].rules]
            out.append("\t}")
        return "\n".join(out + ["}", ""])

    def files(self, node: str) -> dict[str, str]:
        return {self.file(ns): self.render(ns, node) for ns in self.namespaces()}

    def steps(self, node: str) -> list[Step]:
        """Loaded in each namespace once its ports are there (the plane's last steps); the file's digest
        in its arguments, so a changed ACL is loaded again on day 2."""
        return [
            Step("nft", self.file(ns), ns, {"sha": hashlib.sha256(self.render(ns, node).encode()).hexdigest()[:16]})
            for ns in self.namespaces()
        ]

    def of_port(self, port: str) -> list[Binding]:
        return [b for b in self.bindings if b.port == port]


def of(tree: dict, where: dict[str, tuple[str, str]]) -> Acls:
    """The ACLs of an NVUE tree and their bindings to ports (`where`: NVUE port -> (namespace, kernel
    device)), with every problem (NVUE path, why) of what twin would run half."""
    out = Acls()
    for name, a in sorted(get(tree, ("acl",), {}).items()):
        rules = []
        for seq, r in sorted(get(a, ("rule",), {}).items(), key=lambda kv: int(kv[0])):
            rule = _rule(("acl", name, "rule", seq), int(seq), r, out.problems)
            if rule is not None:
                rules.append(rule)
        out.acls[name] = Acl(name, get(a, ("type",), "ipv4"), tuple(rules))
    for port, i in sorted(get(tree, ("interface",), {}).items()):
        for name, ways in sorted(get(i, ("acl",), {}).items()):
            at: Path = ("interface", port, "acl", name)
            if name not in out.acls:
                out.problems.append((at, f"ACL {name} is not declared in this file (acl.{name})"))
                continue
            if out.acls[name].type != "ipv4":
                out.problems.append((at, f"ACL {name} is of type {out.acls[name].type}: only ipv4 ACLs are run here"))
                continue
            for way in ("inbound", "outbound"):
                if way not in ways:
                    continue
                if get(ways, (way, "control-plane")) is not None:
                    continue  # stored: twin.nvue.acl.stored
                if port not in where:
                    out.problems.append(
                        (
                            at + (way,),
                            f"{port} is no port twin makes on this node: an ACL binds "
                            "to a port of the node (swp, or a bond it makes)",
                        )
                    )
                    continue
                ns, dev = where[port]
                out.bindings.append(Binding(port, dev, ns, way, name, len(out.bindings)))
    return out


def _rule(at: Path, seq: int, r: dict, problems: list) -> Rule | None:
    act = get(r, ("action",), {}) or {}
    half = [k for k in act if k in ("police", "span", "erspan")] + [
        f"set.{k}" for k in get(act, ("set",), {}) if k != "dscp"
    ]
    ip = get(r, ("match", "ip"), {}) or {}
    half += [f"match.ip.{k}" for k in ip if k in HALF] + (["match.mac"] if get(r, ("match", "mac")) is not None else [])
    if half:
        problems.append(
            (at, f"rule {seq}: {', '.join(half)} is not run here: without it the rule would match more, or do less")
        )
        return None
    kinds = [k for k in ("permit", "deny") if k in act]
    if len(kinds) > 1:
        problems.append((at + ("action",), f"rule {seq} both permits and denies"))
        return None
    if not kinds and not ("log" in act or "set" in act):
        problems.append((at, f"rule {seq} has no action (permit, deny, log, set dscp)"))
        return None
    proto = ip.get("protocol")
    proto = PROTOS.get(proto, proto) if proto is not None else None
    sports, dports = (tuple(sorted(int(p) for p in ip.get(k, {}) if p != "ANY")) for k in ("source-port", "dest-port"))
    if (sports or dports) and proto not in (6, 17):
        problems.append((at + ("match", "ip"), f"rule {seq} matches ports: it needs protocol tcp or udp"))
        return None
    src, dst = (ip.get(k) if ip.get(k) not in (None, "ANY") else None for k in ("source-ip", "dest-ip"))
    for k, p in (("source-ip", src), ("dest-ip", dst)):
        if p is not None and ipaddress.ip_network(p, strict=False).version != 4:
            problems.append((at + ("match", "ip", k), f"rule {seq}: {p} is not IPv4 (an ipv4 ACL)"))
            return None
    return Rule(
        seq,
        kinds[0] if kinds else "permit",
        "log" in act,
        get(act, ("set", "dscp")),
        str(ipaddress.ip_network(src, strict=False)) if src else None,
        str(ipaddress.ip_network(dst, strict=False)) if dst else None,
        proto,
        sports,
        dports,
        ip.get("dscp"),
    )


def stored(tree: dict) -> list[str]:
    """Bindings twin keeps without running them (to the control plane)."""
    return [
        f"interface.{p}.acl.{n}.{w}.control-plane"
        for p, i in sorted(get(tree, ("interface",), {}).items())
        for n, ways in sorted(get(i, ("acl",), {}).items())
        for w in ("inbound", "outbound")
        if get(ways, (w, "control-plane")) is not None
    ]


def attach(plane: Any, nf: Any, backend: Backend, steps: bool, red: bool = False) -> None:
    """A node's plane (`twin.nvue.plane.Plane`, of NVUE file `nf`) with the MTUs and ACLs it runs: their
    steps last, once every port is in its namespace, kept as extras (day 2); TopologyError with what
    twin would run half."""
    where = nvue_mtu.places(plane, backend)
    plane.acls = of(nf.tree, where)
    if plane.acls.problems:
        raise TopologyError([nf.problem(at, why) for at, why in plane.acls.problems])
    if not steps:
        return
    mtus, notes = nvue_mtu.steps(plane, nf.tree, backend)
    plane.notes += notes + [f"{plane.node}: {p}: kept, not run (an ACL on the control plane)" for p in stored(nf.tree)]
    acls = {("acl", s.ns): s for s in plane.acls.steps(plane.node)}
    plane.extras.update(mtus | acls)
    plane.steps += list(mtus.values()) + list(acls.values())
    plane.kfiles = plane.acls.files(plane.node) | nvue_qos.attach(plane, nf.tree, red, where)
