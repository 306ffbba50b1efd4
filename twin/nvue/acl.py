"""NVUE's ACLs as rules the kernel runs: `acl NAME type ipv4|ipv6`, `rule N match ip ... action
permit|deny|log|set dscp`, each rule as one nftables rule (`Rule.nft`) of a `netdev` chain (a port, bond
or SVI: `twin.nvue.aclbind`) or of an `inet` one (the control plane), and as a decision on a packet's
fields (`Acl.decide`: what `twin verify` sends, and the BGP sessions it judges).

As on Cumulus Linux: rules in order of their number, the first that matches decides; traffic no rule
matches passes; an ipv4 ACL sees IPv4 only, an ipv6 ACL IPv6 only (ARP and the rest pass). A deny rule
counts, then logs to twin's drop events (`acl NAME rule N`, NFLOG: `twin.config.droplog`), then drops;
NVUE's own `log` action logs to the kernel's log too, with its own prefix. What twin does not run is
refused on the node rather than run half (a rule without it would match more, or do less): matches on
fragments, ICMP types, state or TTL, actions police/span/erspan, `set class`/`cos`, a VLAN match.

ACLs of type mac (`match mac source-mac`/`dest-mac`, each with its `-mask`, and `protocol`: arp, ipv4,
ipv6, ANY or an EtherType) match a frame's Ethernet header, in the netdev chains of ports, bonds and SVIs
(`ether saddr & MASK == MAC`, `ether type arp`); the control plane's chains see packets, not frames, so
a mac ACL does not bind there (refused), nor does one `set dscp` or match `ip`.

TCP flags (`match ip tcp flags F` with `mask M`, each a set of ack, fin, psh, rst, syn, urg, all, none):
a packet matches when its flags under the mask are the flags (no mask: the flags themselves are the mask,
`none` alone: no flag of `all` set); ECN (`match ip ecn ip-ect N`, 0-3: the IP header's ECN codepoint,
not-ECT, ECT(1), ECT(0), CE; `match ip ecn flags tcp-cwr|tcp-ece`: those TCP flags set). Both run as
nftables' own matches (`tcp flags & M == F`, `ip ecn ce`); a TCP flag match needs `protocol tcp`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from twin.config import droplog
from twin.nvue.tree import Path, get

TABLE = "twin_acl"  # the table of NVUE's ACLs in each namespace that runs one (netdev: ports; inet: control plane)
NETDEV, INET = "netdev", "inet"
FAMILY = NETDEV  # ports', bonds' and SVIs' bindings
PRIORITY = -500  # before anything else twin hooks there
HALF = ("fragment", "icmp-type", "icmpv6-type", "state", "ttl")  # matches refused on the node
# TCP's flags as NVUE names them, and their bits (nftables names ECE `ecn`); `all` the six of RFC 793
TCP_FLAGS = {"fin": 0x01, "syn": 0x02, "rst": 0x04, "psh": 0x08, "ack": 0x10, "urg": 0x20}
TCP_ALL = sum(TCP_FLAGS.values())
ECN_FLAGS = {"tcp-ece": 0x40, "tcp-cwr": 0x80}
NFT_FLAGS = {**{k: k for k in TCP_FLAGS}, "tcp-ece": "ecn", "tcp-cwr": "cwr"}
ECT = ("not-ect", "ect1", "ect0", "ce")  # the ECN codepoints 0-3 as nftables names them
PROTOS = {"tcp": 6, "udp": 17, "icmp": 1, "icmpv6": 58}
TYPES = {"ipv4": 4, "ipv6": 6, "mac": 0}  # the ACL types twin runs, and the IP version each sees (0: frames)
ETHERTYPES = {"arp": 0x0806, "ipv4": 0x0800, "ipv6": 0x86DD}  # a mac rule's `protocol` by NVUE's names
NFT_ETHER = {0x0806: "arp", 0x0800: "ip", 0x86DD: "ip6"}
# what restricts a rule to its IP version where nothing else in it does, per table family
ONLY = {
    (NETDEV, 4): "meta protocol ip",
    (NETDEV, 6): "meta protocol ip6",
    (INET, 4): "meta nfproto ipv4",
    (INET, 6): "meta nfproto ipv6",
}


@dataclass(frozen=True)
class Headers:
    """What a rule decides on: an IP packet's addresses, protocol, ports, DSCP, ECN codepoint and TCP flags,
    and its frame's Ethernet header (a MAC not known, "", meets no rule that names one)."""

    src: str
    dst: str
    proto: int
    sport: int
    dport: int
    dscp: int
    flags: int = 0
    ecn: int = 0
    smac: str = ""
    dmac: str = ""
    ethertype: int = 0x0800


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
    v: int = 4  # the IP version its ACL sees (4: ipv4, 6: ipv6)
    tcp_flags: int = 0  # TCP flags that must be set under `tcp_mask` (0 mask: no match on flags)
    tcp_mask: int = 0
    ect: int | None = None  # the ECN codepoint (0-3) of the IP header
    smac: str | None = None  # a mac ACL's: source and destination MAC, each under its mask (None: any)
    smask: str | None = None
    dmac: str | None = None
    dmask: str | None = None
    ethertype: int | None = None

    def nft(self, acl: str, counter: str, family: str = NETDEV) -> str:
        """The rule as an nftables rule of a chain of table `family` (netdev or inet)."""
        ip = "ip" if self.v == 4 else "ip6"
        m = [f"{ip} {k} {p}" for k, p in (("saddr", self.src), ("daddr", self.dst)) if p] if self.v else self._ether()
        proto = {v: k for k, v in PROTOS.items() if k != "icmpv6"}.get(self.proto) if self.proto is not None else None
        if self.proto is not None and self.v == 4:
            m.append(f"ip protocol {proto or self.proto}")
        if not m and self.dscp is None and self.v:
            m.insert(0, ONLY[(family, self.v)])  # nothing else says which IP version it sees
        if self.proto is not None and self.v == 6:
            m.append(f"meta l4proto {proto if proto in ('tcp', 'udp') else self.proto}")
        for way, ports in (("sport", self.sports), ("dport", self.dports)):
            if ports:
                m.append(
                    f"{proto} {way} " + (str(ports[0]) if len(ports) == 1 else "{ " + ", ".join(map(str, ports)) + " }")
                )
        if self.dscp is not None:
            m.append(f"{ip} dscp {self.dscp}")
        if self.ect is not None:
            m.append(f"{ip} ecn {ECT[self.ect]}")
        if self.tcp_mask:
            m.append(f"tcp flags & {_flags(self.tcp_mask)} == {_flags(self.tcp_flags) if self.tcp_flags else '0x0'}")
        what = f"acl {acl} rule {self.seq}"
        act = ["counter name", f'"{counter}"']
        if self.log:
            act.append(f'log prefix "{what}: "')
        if self.drops:
            act.append(droplog.log("acl", f"{acl} rule {self.seq}"))
        if self.set_dscp is not None:
            act.append(f"{ip} dscp set {self.set_dscp}")
        act.append("drop" if self.drops else "accept")
        return " ".join(m + act + [f'comment "{what}"'])

    def _ether(self) -> list[str]:
        """A mac rule's matches on the Ethernet header."""
        m = []
        for k, mac, mask in (("saddr", self.smac, self.smask), ("daddr", self.dmac, self.dmask)):
            if mac is not None:
                m.append(f"ether {k} & {mask} == {_masked(mac, mask)}" if mask else f"ether {k} {mac}")
        if self.ethertype is not None:
            m.append(f"ether type {NFT_ETHER.get(self.ethertype, f'{self.ethertype:#06x}')}")
        return m

    def matches(self, h: Headers) -> bool:
        """Whether a packet of headers `h` matches the rule (one of another IP version never does; a mac rule
        looks at its Ethernet header alone)."""
        if not self.v:
            return (
                _mac_in(h.smac, self.smac, self.smask)
                and _mac_in(h.dmac, self.dmac, self.dmask)
                and self.ethertype in (None, h.ethertype)
            )

        def within(a: str, p: str | None) -> bool:
            return p is None or ipaddress.ip_address(a) in ipaddress.ip_network(p, strict=False)

        return (
            ipaddress.ip_address(h.src).version == self.v
            and within(h.src, self.src)
            and within(h.dst, self.dst)
            and self.proto in (None, h.proto)
            and (not self.sports or h.sport in self.sports)
            and (not self.dports or h.dport in self.dports)
            and self.dscp in (None, h.dscp)
            and self.ect in (None, h.ecn)
            and h.flags & self.tcp_mask == self.tcp_flags
        )

    @property
    def drops(self) -> bool:
        return self.action == "deny"

    @property
    def ports(self) -> set[int]:
        return set(self.sports) | set(self.dports)


@dataclass(frozen=True)
class Acl:
    name: str
    type: str
    rules: tuple[Rule, ...]

    def decide(self, h: Headers) -> Rule | None:
        """The rule that decides a packet of headers `h`, None: no rule matches (it passes)."""
        return next((r for r in self.rules if r.matches(h)), None)


def acls_of(tree: dict, problems: list[tuple[Path, str]]) -> dict[str, Acl]:
    """The ACLs an NVUE tree declares, with every problem (NVUE path, why) of what twin would run half."""
    out = {}
    for name, a in sorted(get(tree, ("acl",), {}).items()):
        kind = get(a, ("type",), "ipv4")
        rules = []
        for seq, r in sorted(get(a, ("rule",), {}).items(), key=lambda kv: int(kv[0])):
            at = ("acl", name, "rule", seq)
            rule = (
                _mac_rule(at, int(seq), r, problems)
                if kind == "mac"
                else _rule(at, int(seq), r, TYPES.get(kind, 4), problems)
            )
            if rule is not None:
                rules.append(rule)
        out[name] = Acl(name, kind, tuple(rules))
    return out


def _rule(at: Path, seq: int, r: dict, v: int, problems: list) -> Rule | None:
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
    verdict = _action(at, seq, act, problems)
    if verdict is None:
        return None
    proto = ip.get("protocol")
    proto = PROTOS.get(proto, proto) if proto is not None else None
    if proto in ((58,) if v == 4 else (1,)):
        other = "ICMPv6 is IPv6's (an ipv6 ACL)" if v == 4 else "ICMP is IPv4's: an ipv6 ACL matches icmpv6 (58)"
        problems.append((at + ("match", "ip", "protocol"), f"rule {seq}: {other}"))
        return None
    sports, dports = (tuple(sorted(int(p) for p in ip.get(k, {}) if p != "ANY")) for k in ("source-port", "dest-port"))
    if (sports or dports) and proto not in (6, 17):
        problems.append((at + ("match", "ip"), f"rule {seq} matches ports: it needs protocol tcp or udp"))
        return None
    tcp_flags, tcp_mask = _tcp(ip)
    if tcp_flags & ~tcp_mask:
        problems.append((at + ("match", "ip", "tcp"), f"rule {seq}: its TCP flags must be within its mask"))
        return None
    if tcp_mask and proto != 6:
        problems.append((at + ("match", "ip"), f"rule {seq} matches TCP flags: it needs protocol tcp"))
        return None
    ect = get(ip, ("ecn", "ip-ect"))
    src, dst = (ip.get(k) if ip.get(k) not in (None, "ANY") else None for k in ("source-ip", "dest-ip"))
    for k, p in (("source-ip", src), ("dest-ip", dst)):
        if p is not None and ipaddress.ip_network(p, strict=False).version != v:
            problems.append((at + ("match", "ip", k), f"rule {seq}: {p} is not IPv{v} (an ipv{v} ACL)"))
            return None
    return Rule(
        seq,
        verdict,
        "log" in act,
        get(act, ("set", "dscp")),
        str(ipaddress.ip_network(src, strict=False)) if src else None,
        str(ipaddress.ip_network(dst, strict=False)) if dst else None,
        proto,
        sports,
        dports,
        ip.get("dscp"),
        v,
        tcp_flags,
        tcp_mask,
        int(ect) if ect is not None else None,
    )


def _action(at: Path, seq: int, act: dict, problems: list) -> str | None:
    """A rule's verdict (permit or deny; log and set dscp permit), None with the problem said."""
    kinds = [k for k in ("permit", "deny") if k in act]
    if len(kinds) > 1:
        problems.append((at + ("action",), f"rule {seq} both permits and denies"))
        return None
    if not kinds and not ("log" in act or "set" in act):
        problems.append((at, f"rule {seq} has no action (permit, deny, log, set dscp)"))
        return None
    return kinds[0] if kinds else "permit"


def _mac_rule(at: Path, seq: int, r: dict, problems: list) -> Rule | None:
    """A rule of a mac ACL: its Ethernet matches (`match mac`), its verdict."""
    act = get(r, ("action",), {}) or {}
    mac = get(r, ("match", "mac"), {}) or {}
    half = [k for k in act if k in ("police", "span", "erspan")] + [f"set.{k}" for k in get(act, ("set",), {})]
    half += ["match.ip"] if get(r, ("match", "ip")) is not None else []
    half += ["match.mac.vlan"] if "vlan" in mac else []
    if half:
        problems.append(
            (
                at,
                f"rule {seq}: {', '.join(half)} is not run in a mac ACL here: without it the rule would match more, "
                "or do less (set dscp and match ip are an ipv4 or ipv6 ACL's; twin's ports carry untagged frames)",
            )
        )
        return None
    verdict = _action(at, seq, act, problems)
    if verdict is None:
        return None
    proto = mac.get("protocol")
    kind = None if proto in (None, "ANY") else ETHERTYPES.get(str(proto), proto)
    pick = {
        k: (None if mac.get(k) in (None, "ANY") else str(mac[k]).lower())
        for k in ("source-mac", "source-mac-mask", "dest-mac", "dest-mac-mask")
    }
    return Rule(
        seq,
        verdict,
        "log" in act,
        smac=pick["source-mac"],
        smask=pick["source-mac-mask"] if pick["source-mac"] else None,
        dmac=pick["dest-mac"],
        dmask=pick["dest-mac-mask"] if pick["dest-mac"] else None,
        ethertype=int(kind) if kind is not None else None,
        v=0,
    )


def _mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def _masked(mac: str, mask: str) -> str:
    """`mac` under `mask`, as nftables compares it (`ether saddr & MASK == MAC&MASK`)."""
    v = f"{_mac_int(mac) & _mac_int(mask):012x}"
    return ":".join(v[i : i + 2] for i in range(0, 12, 2))


def _mac_in(got: str, mac: str | None, mask: str | None) -> bool:
    """Whether a frame's MAC `got` meets a rule's `mac` under `mask` (no MAC in the rule: any)."""
    if mac is None:
        return True
    if not got:
        return False
    m = _mac_int(mask) if mask else (1 << 48) - 1
    return _mac_int(got) & m == _mac_int(mac) & m


def _names(x: dict | None) -> list[str]:
    """A set of NVUE's as the tree holds it (its schema's collection: `flags: {syn: {}}`)."""
    return [str(k) for k in x or {}]


def _bits(names: list[str]) -> int:
    return sum(TCP_ALL if n == "all" else TCP_FLAGS.get(n, 0) for n in names)


def _tcp(ip: dict) -> tuple[int, int]:
    """(flags, mask) of a rule's `match ip tcp` and `match ip ecn flags`: the flags must be set under the mask."""
    flags, mask = _names(get(ip, ("tcp", "flags"))), _names(get(ip, ("tcp", "mask")))
    value = _bits(flags)
    under = _bits(mask) if mask else (TCP_ALL if flags == ["none"] else value)
    ecn = sum(ECN_FLAGS.get(n, 0) for n in _names(get(ip, ("ecn", "flags"))))
    return value | ecn, under | ecn


def _flags(bits: int) -> str:
    """TCP flag bits as nftables writes them: `syn | ack`."""
    names = [n for n, b in (*TCP_FLAGS.items(), ("tcp-ece", 0x40), ("tcp-cwr", 0x80)) if bits & b]
    return "(" + " | ".join(NFT_FLAGS[n] for n in names) + ")" if len(names) > 1 else NFT_FLAGS[names[0]]
