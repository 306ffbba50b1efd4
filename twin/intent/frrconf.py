"""What an frr.conf declares, read the way FRR's own config reads (pure).

Only what twin judges or infers from a user's config is kept: interfaces with
their addresses and IGP settings (OSPF, OSPFv3, IS-IS, passive or not), every
`router bgp` (ASN, VRF, router-id, neighbors with their peer-groups and
shutdowns, networks, multipath-relax, maximum-paths, graceful shutdown, VRFs it
imports from, EVPN: advertise-all-vni and the other advertisements, the peers it is
activated for, per-VNI and per-VRF route targets), `router ospf`/`ospf6`/`isis`
instances, and `vrf NAME` / `vni N`; with the line of each (`Bgp.lines`,
`FrrConfig.lines`, `Interface.lines`), for messages that name it (`twin lint`).
Everything else is skipped, never refused: FRR's own parser
(`twin.runtime.dryrun`) is the judge of what a file may hold.

Blocks follow FRR's layout: a line at column 0 opens a block (`interface X`,
`router ...`, `vrf X`...) or is a global command; indented lines belong to the
open block, `address-family ...` opens a sub-block until `exit-address-family`.
A hand-written file without indentation works too: an unindented line that is
no global command stays in the open block.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

DEFAULT_VRF = "default"
_OPENERS = (
    "interface",
    "router",
    "vrf",
    "line",
    "route-map",
    "key",
    "segment-routing",
    "mpls",
    "bfd",
    "pbr-map",
    "nexthop-group",
    "rpki",
    "evpn",
    "srv6",
)
_GLOBALS = (
    "hostname",
    "log",
    "frr",
    "service",
    "password",
    "enable",
    "debug",
    "agentx",
    "access-list",
    "bgp",
    "ip",
    "ipv6",
    "no",
    "end",
    "zebra",
    "fpm",
    "allow-external-route-update",
    "table",
    "domainname",
)


@dataclass
class Interface:
    name: str
    vrf: str = DEFAULT_VRF
    addresses: list[str] = field(default_factory=list)  # CIDRs, IPv4 and IPv6
    ospf_area: str | None = None  # `ip ospf [N] area A`
    ospf_passive: bool = False
    ospf6_area: str | None = None  # `ipv6 ospf6 area A`
    ospf6_passive: bool = False
    isis: str | None = None  # `ip router isis TAG` / `ipv6 router isis TAG`
    isis_passive: bool = False
    isis_families: set[int] = field(default_factory=set)  # 4 (`ip router isis`), 6 (`ipv6 router isis`)
    line: int = 0
    lines: dict[str, int] = field(default_factory=dict)  # each line of the block (its words) -> its number


@dataclass
class Neighbor:
    name: str  # an address, or an interface (BGP unnumbered)
    interface: bool = False
    remote_as: str | None = None
    peer_group: str | None = None
    shutdown: bool = False
    line: int = 0


@dataclass
class Bgp:
    asn: int
    vrf: str = DEFAULT_VRF
    router_id: str | None = None
    neighbors: dict[str, Neighbor] = field(default_factory=dict)
    groups: dict[str, Neighbor] = field(default_factory=dict)  # peer-groups, by name
    networks: list[str] = field(default_factory=list)
    redistribute: list[str] = field(default_factory=list)  # what it redistributes into IPv4 unicast
    evpn: bool = False  # an `address-family l2vpn evpn` block
    advertise_all_vni: bool = False
    advertise: list[str] = field(default_factory=list)  # its other `advertise ...` (`ipv4 unicast`)
    evpn_active: list[str] = field(default_factory=list)  # `neighbor X activate` in it (peers, groups)
    multipath_relax: bool = False  # `bgp bestpath as-path multipath-relax`
    rts: dict[str, list[str]] = field(default_factory=dict)  # "import"/"export"/"both" -> RTs (VRF level)
    vni_rts: dict[int, dict[str, list[str]]] = field(default_factory=dict)  # per `vni N` block
    maximum_paths: int | None = None  # `maximum-paths N` (eBGP) in IPv4 unicast
    graceful_shutdown: bool = False  # `bgp graceful-shutdown`
    import_vrfs: list[str] = field(default_factory=list)  # `import vrf X` in IPv4 unicast (route leaking)
    ipv4_default: bool = True  # `no bgp default ipv4-unicast` turns it off
    ipv4: dict[str, bool] = field(default_factory=dict)  # `[no] neighbor X activate` in IPv4 unicast
    line: int = 0
    lines: dict[tuple[str, str], int] = field(default_factory=dict)  # (address family, line's words) -> number

    def active(self) -> list[Neighbor]:
        """Neighbors that should come up: not shut down, nor in a shut-down peer-group."""
        return [
            n
            for n in self.neighbors.values()
            if not n.shutdown and not (n.peer_group in self.groups and self.groups[n.peer_group].shutdown)
        ]


@dataclass
class Ospf:
    vrf: str = DEFAULT_VRF
    opener: str = "router ospf"  # the line that opens it, as written (`router ospf vrf red`)
    router_id: str | None = None
    networks: list[tuple[str, str]] = field(default_factory=list)  # (prefix, area)
    passive_default: bool = False
    passive: set[str] = field(default_factory=set)
    active: set[str] = field(default_factory=set)  # `no passive-interface X`
    areas: dict[str, str] = field(default_factory=dict)  # ospf6 (old form): interface -> area


@dataclass(frozen=True)
class Static:
    """A static route: `ip route PREFIX ...` (or ipv6), globally or in a `vrf` block."""

    prefix: str
    vrf: str
    words: tuple[str, ...]  # as written, from `ip`/`ipv6` on (a `vrf X` at the end included)
    line: int = 0


@dataclass
class FrrConfig:
    hostname: str | None = None
    interfaces: dict[tuple[str, str], Interface] = field(default_factory=dict)  # (name, vrf)
    bgp: list[Bgp] = field(default_factory=list)
    ospf: list[Ospf] = field(default_factory=list)
    ospf6: list[Ospf] = field(default_factory=list)
    isis: dict[str, str] = field(default_factory=dict)  # tag -> VRF
    vrfs: dict[str, int | None] = field(default_factory=dict)  # `vrf X` -> its `vni N`
    statics: list[Static] = field(default_factory=list)  # `ip route` / `ipv6 route`
    routers: set[str] = field(default_factory=set)  # `router X` kinds seen (bgp, ospf, rip...)
    lines: dict[str, int] = field(default_factory=dict)  # `vrf X` and `vrf X vni N` -> their line numbers

    @property
    def static(self) -> bool:
        return bool(self.statics)

    def interface(self, name: str, vrf: str = DEFAULT_VRF) -> Interface:
        return self.interfaces.setdefault((name, vrf), Interface(name, vrf))

    def default_bgp(self) -> Bgp | None:
        return next((b for b in self.bgp if b.vrf == DEFAULT_VRF), None)

    def ospf_interfaces(self) -> dict[tuple[str, str], bool]:
        """(interface, VRF) -> passive, of every interface OSPF runs on: `ip ospf area` on the
        interface, or a `network` statement of its VRF's `router ospf` covering an address of it."""
        out = {}
        for (name, vrf), i in self.interfaces.items():
            inst = next((o for o in self.ospf if o.vrf == vrf), None)
            covered = inst is not None and any(_covers(p, a) for p, _ in inst.networks for a in i.addresses)
            if i.ospf_area is None and not covered:
                continue
            passive = i.ospf_passive or (
                inst is not None and (name in inst.passive or (inst.passive_default and name not in inst.active))
            )
            out[(name, vrf)] = passive
        return out

    def ospf6_interfaces(self) -> dict[tuple[str, str], bool]:
        out = {(n, v): i.ospf6_passive for (n, v), i in self.interfaces.items() if i.ospf6_area is not None}
        for inst in self.ospf6:
            out.update({(n, inst.vrf): out.get((n, inst.vrf), False) for n in inst.areas})
        return out

    def isis_interfaces(self) -> dict[tuple[str, str], bool]:
        return {(n, v): i.isis_passive for (n, v), i in self.interfaces.items() if i.isis is not None}

    def ospf_networks(self, name: str, vrf: str = DEFAULT_VRF) -> list[tuple[Ospf, str, str]]:
        """(instance, prefix, area) of every `network` statement that puts interface `name` in OSPF."""
        i = self.interfaces.get((name, vrf))
        return [
            (o, p, area)
            for o in self.ospf
            if o.vrf == vrf
            for p, area in o.networks
            if i is not None and any(_covers(p, a) for a in i.addresses)
        ]

    def igp_prefixes(self, protocol: str) -> dict[tuple[str, str], list[str]]:
        """(interface, VRF) -> the prefixes (networks of its addresses) an IGP advertises of each of its
        interfaces, passive ones too: OSPF IPv4, OSPFv3 IPv6, IS-IS the families it is enabled for."""
        read = {"ospf": self.ospf_interfaces, "ospf6": self.ospf6_interfaces, "isis": self.isis_interfaces}[protocol]
        out = {}
        for key in read():
            i = self.interfaces.get(key)
            families = {"ospf": {4}, "ospf6": {6}}.get(protocol) or (i.isis_families if i else set())
            nets = [ipaddress.ip_interface(a).network for a in (i.addresses if i else []) if is_cidr(a)]
            out[key] = sorted({str(n) for n in nets if n.version in families and not n.is_link_local})
        return out

    def addresses(self) -> dict[str, str]:
        """Every interface address (without its length) -> the interface it is on."""
        return {a.split("/")[0]: name for (name, _), i in self.interfaces.items() for a in i.addresses}


def is_cidr(cidr: str) -> bool:
    try:
        ipaddress.ip_interface(cidr)
        return True
    except ValueError:
        return False


def _covers(prefix: str, cidr: str) -> bool:
    try:
        return ipaddress.ip_interface(cidr).ip in ipaddress.ip_network(prefix, strict=False)
    except ValueError:
        return False


def hostname(text: str) -> str | None:
    """The `hostname` a config gives FRR (None: none), without reading the rest of it."""
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] == "hostname":
            return words[1]
    return None


def parse(text: str) -> FrrConfig:
    cfg = FrrConfig()
    block: list[str] = []  # the words of the line that opened the block
    target: object = None  # what the block fills in
    family: list[list[str]] = []  # open sub-blocks: `address-family ...`, then `vni N` inside EVPN
    for number, raw in enumerate(text.splitlines(), 1):
        words = [] if raw.lstrip().startswith("!") else raw.split()
        if not words:
            continue
        top = not raw[:1].isspace()
        if words[0] in ("exit-address-family", "exit-vni") or (words[0] == "exit" and family and not top):
            family = [] if words[0] == "exit-address-family" else family[:-1]
            continue
        if words[0] in ("exit", "exit-vrf", "end", "quit"):
            block, target, family = [], None, []
            continue
        if top and (words[0] in _OPENERS or words[0] in _GLOBALS or not block):
            opener = words[0] in _OPENERS
            block, family = (words if opener else []), []
            if opener:
                target = _open(cfg, words, number)
            else:
                target = None
                _global(cfg, words, number)
            continue
        if words[0] == "address-family":
            family = [words]
            if isinstance(target, Bgp):
                target.lines.setdefault((" ".join(words[1:3]), " ".join(words)), number)
        elif words[0] == "vni" and isinstance(target, Bgp) and family:
            family = family[:1] + [words]
        else:
            _inner(cfg, target, family, words, number)
    return cfg


def _open(cfg: FrrConfig, words: list[str], number: int) -> object:
    kind = words[0]
    vrf = words[words.index("vrf") + 1] if "vrf" in words[1:-1] else DEFAULT_VRF
    if kind == "interface" and len(words) > 1:
        i = cfg.interface(words[1], vrf)
        i.line = i.line or number
        return i
    if kind == "vrf" and len(words) > 1:
        cfg.vrfs.setdefault(words[1], None)
        cfg.lines.setdefault(f"vrf {words[1]}", number)
        return ("vrf", words[1])
    if kind != "router" or len(words) < 2:
        return None
    cfg.routers.add(words[1])
    if words[1] == "bgp" and len(words) > 2 and words[2].isdigit():
        same = next((b for b in cfg.bgp if b.asn == int(words[2]) and b.vrf == vrf), None)
        if same is None:  # a second block of one instance adds to it, as in FRR
            same = Bgp(int(words[2]), vrf, line=number)
            cfg.bgp.append(same)
        return same
    if words[1] in ("ospf", "ospf6"):
        o = Ospf(vrf, " ".join(words))
        (cfg.ospf if words[1] == "ospf" else cfg.ospf6).append(o)
        return o
    if words[1] == "isis" and len(words) > 2:
        cfg.isis[words[2]] = vrf
    return None


def _global(cfg: FrrConfig, words: list[str], number: int) -> None:
    """A global command; it opens no block (returns None)."""
    if words[0] == "hostname" and len(words) > 1:
        cfg.hostname = words[1]
    elif words[0] in ("ip", "ipv6") and len(words) > 2 and words[1] == "route":
        vrf = words[words.index("vrf") + 1] if "vrf" in words[3:-1] else DEFAULT_VRF
        cfg.statics.append(Static(words[2], vrf, tuple(words), number))


def _inner(cfg: FrrConfig, target: object, family: list[list[str]], words: list[str], number: int) -> None:
    if isinstance(target, Interface):
        target.lines.setdefault(" ".join(words), number)
        _interface(target, words)
    elif isinstance(target, Bgp):
        _bgp(target, family, words, number)
    elif isinstance(target, Ospf):
        _ospf(target, words)
    elif isinstance(target, tuple) and target[0] == "vrf":
        if words[0] == "vni" and len(words) > 1 and words[1].isdigit():
            cfg.vrfs[target[1]] = int(words[1])
            cfg.lines[f"vrf {target[1]} vni"] = number
        elif words[0] in ("ip", "ipv6") and len(words) > 2 and words[1] == "route":
            cfg.statics.append(Static(words[2], target[1], tuple(words), number))


def _interface(i: Interface, w: list[str]) -> None:
    if w[:2] in (["ip", "address"], ["ipv6", "address"]) and len(w) > 2:
        i.addresses.append(w[2])
    elif w[:2] == ["ip", "ospf"] and "area" in w and w.index("area") + 1 < len(w):
        i.ospf_area = w[w.index("area") + 1]
    elif w[:3] == ["ip", "ospf", "passive"]:
        i.ospf_passive = True
    elif w[:2] == ["ipv6", "ospf6"] and len(w) > 3 and w[2] == "area":
        i.ospf6_area = w[3]
    elif w[:3] == ["ipv6", "ospf6", "passive"]:
        i.ospf6_passive = True
    elif w[1:3] == ["router", "isis"] and w[0] in ("ip", "ipv6"):
        i.isis = w[3] if len(w) > 3 else ""
        i.isis_families.add(4 if w[0] == "ip" else 6)
    elif w[:2] == ["isis", "passive"]:
        i.isis_passive = True


_RT = re.compile(r"^route-target (import|export|both) (\S+)")


def _bgp(b: Bgp, family: list[list[str]], w: list[str], number: int) -> None:
    af = family[0][1:3] if family else []
    vni = int(family[1][1]) if len(family) > 1 and family[1][1:2] and family[1][1].isdigit() else None
    b.lines.setdefault((" ".join(af) + (f" vni {vni}" if vni is not None else ""), " ".join(w)), number)
    v4 = af in ([], ["ipv4"], ["ipv4", "unicast"])
    if w[:2] == ["bgp", "router-id"] and len(w) > 2:
        b.router_id = w[2]
    elif w == ["bgp", "bestpath", "as-path", "multipath-relax"]:
        b.multipath_relax = True
    elif w == ["bgp", "graceful-shutdown"]:
        b.graceful_shutdown = True
    elif w == ["no", "bgp", "default", "ipv4-unicast"]:
        b.ipv4_default = False
    elif w[0] == "neighbor" and len(w) > 2 and not family:
        _neighbor(b, w, number)
    elif w[0] == "network" and len(w) > 1 and af in ([], ["ipv4"], ["ipv4", "unicast"], ["ipv6"], ["ipv6", "unicast"]):
        b.networks.append(w[1])
    elif w[0] == "redistribute" and len(w) > 1 and v4:
        b.redistribute.append(w[1])
    elif w[0] == "maximum-paths" and len(w) == 2 and w[1].isdigit() and v4:
        b.maximum_paths = int(w[1])
    elif w[:2] == ["import", "vrf"] and len(w) == 3 and w[2] != "route-map" and v4:
        b.import_vrfs.append(w[2])
    elif v4 and family and len(w) == 3 and w[2] == "activate" and w[0] == "neighbor":
        b.ipv4[w[1]] = True
    elif v4 and family and len(w) == 4 and w[3] == "activate" and w[:1] == ["no"] and w[1] == "neighbor":
        b.ipv4[w[2]] = False
    if af != ["l2vpn", "evpn"]:
        return
    b.evpn = True
    m = _RT.match(" ".join(w))
    if w[0] == "advertise-all-vni":
        b.advertise_all_vni = True
    elif w[0] == "advertise" and len(w) > 1 and vni is None:
        b.advertise.append(" ".join(w[1:]))
    elif w[0] == "neighbor" and w[2:] == ["activate"] and vni is None:
        b.evpn_active.append(w[1])
    elif m and vni is not None:
        b.vni_rts.setdefault(vni, {}).setdefault(m.group(1), []).append(m.group(2))
    elif m:
        b.rts.setdefault(m.group(1), []).append(m.group(2))


def _neighbor(b: Bgp, w: list[str], number: int) -> None:
    name, rest = w[1], w[2:]
    if rest == ["peer-group"]:
        b.groups.setdefault(name, Neighbor(name, line=number))
        return
    n = b.groups.get(name) or b.neighbors.setdefault(name, Neighbor(name, line=number))
    if rest[0] == "interface":
        n.interface = True
        rest = rest[1:]
        if rest[:1] == ["v6only"]:
            rest = rest[1:]
    if rest[:1] == ["peer-group"] and len(rest) > 1:
        n.peer_group = rest[1]
    elif rest[:1] == ["remote-as"] and len(rest) > 1:
        n.remote_as = rest[1]
    elif rest[:1] == ["shutdown"]:
        n.shutdown = True


def _ospf(o: Ospf, w: list[str]) -> None:
    if w[0] in ("ospf", "ospf6") and w[1:2] == ["router-id"] and len(w) > 2:
        o.router_id = w[2]
    elif w[0] == "router-id" and len(w) > 1:
        o.router_id = w[1]
    elif w[0] == "network" and "area" in w and len(w) > 3:
        o.networks.append((w[1], w[3]))
    elif w[:2] == ["passive-interface", "default"]:
        o.passive_default = True
    elif w[0] == "passive-interface" and len(w) > 1:
        o.passive.add(w[1])
    elif w[:2] == ["no", "passive-interface"] and len(w) > 2:
        o.active.add(w[2])
    elif w[0] == "interface" and "area" in w and len(w) > 3:  # ospf6, before FRR 8
        o.areas[w[1]] = w[3]
