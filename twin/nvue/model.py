"""The emulated subset of a checked NVUE tree, as typed data: what the FRR renderer and the
kernel plane read (`NodeConf.of(tree)`). Defaults are NVUE's (Cumulus Linux 5.9): an
`enable` not given is on where NVUE's default is on (router bgp, a VRR, nve vxlan once a
source address is set), off where it is off (evpn).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from twin.nvue.ospf import Ospf
from twin.nvue.policy import Policy
from twin.nvue.tree import get

DOMAIN = "br_default"  # the one bridge domain emulated
MGMT = "mgmt"  # the management VRF: the node's management network (eth0), not the fabric's
FABRIC_MAC = "00:00:5e:00:01:{:02x}"  # VRR MAC from the fabric id (NVUE: 00:00:5E:00:01:<fabric-id>)


@dataclass(frozen=True)
class Bfd:
    """A neighbor's BFD (`bfd`), NVUE's defaults: 3 x 300 ms each way; FRR's bfdd runs it."""

    multiplier: int = 3
    rx: int = 300
    tx: int = 300

    @property
    def profile(self) -> str | None:
        """The FRR BFD profile holding these timers (None: FRR's defaults, which are NVUE's)."""
        return None if self == Bfd() else f"nvue-{self.multiplier}x{self.rx}x{self.tx}"

    @classmethod
    def of(cls, t: dict | None) -> "Bfd | None":
        if t is None or t.get("enable", True) is False:  # `bfd` named: on, as NVUE takes it
            return None
        return cls(
            _num(t.get("detect-multiplier")) or 3,
            _num(t.get("min-rx-interval")) or 300,
            _num(t.get("min-tx-interval")) or 300,
        )


@dataclass
class Peer:
    """A BGP neighbor or peer-group as NVUE declares it."""

    name: str
    remote_as: str | None = None  # "external", "internal" or a number (text)
    peer_group: str | None = None
    unnumbered: bool = False
    ipv4: bool | None = None  # address-family ipv4-unicast enable (None: not said)
    evpn: bool | None = None  # address-family l2vpn-evpn enable
    connect: int | None = None  # timers connection-retry
    advertise: int | None = None  # timers route-advertisement (None: NVUE's default, 0)
    policy: dict[str, str] = field(default_factory=dict)  # "route-map in" -> name (ipv4-unicast policy)
    bfd: Bfd | None = None  # bfd (issue 44)
    keepalive: int | None = None  # timers keepalive / hold (None: NVUE's auto, FRR's 3 / 9)
    hold: int | None = None

    @property
    def timers(self) -> tuple[int, int] | None:
        """FRR's `timers KEEPALIVE HOLD` when either is set (the other at its default)."""
        if self.keepalive is None and self.hold is None:
            return None
        return (3 if self.keepalive is None else self.keepalive, 9 if self.hold is None else self.hold)

    @classmethod
    def of(cls, name: str, t: dict) -> "Peer":
        ra = get(t, ("remote-as",))
        af = get(t, ("address-family",), {})
        timers = get(t, ("timers",), {})
        pol = get(af, ("ipv4-unicast", "policy"), {})
        return cls(
            name,
            None if ra is None else str(ra),
            get(t, ("peer-group",)) if get(t, ("peer-group",)) not in (None, "none") else None,
            get(t, ("type",)) == "unnumbered" or (get(t, ("type",)) is None and not _is_ip(name)),
            get(af, ("ipv4-unicast", "enable")),
            get(af, ("l2vpn-evpn", "enable")),
            _num(timers.get("connection-retry")),
            _num(timers.get("route-advertisement")),
            {
                f"{kind} {'in' if way == 'inbound' else 'out'}": n
                for way, b in pol.items()
                for kind, n in b.items()
                if kind in ("route-map", "prefix-list")
            },
            Bfd.of(get(t, ("bfd",))),
            _num(timers.get("keepalive")),
            _num(timers.get("hold")),
        )


@dataclass
class Bgp:
    """`vrf.<name>.router.bgp` (with `router.bgp` for the default VRF's instance)."""

    enable: bool = True
    asn: int | None = None
    router_id: str | None = None
    ipv4: bool = True  # address-family ipv4-unicast enable
    connected: bool = False  # redistribute connected
    connected_map: str | None = None  # ... its route-map
    static: bool = False  # redistribute static
    static_map: str | None = None
    networks: list[str] = field(default_factory=list)
    to_evpn: bool = False  # route-export to-evpn: type-5 from this VRF
    evpn: bool = False  # address-family l2vpn-evpn enable
    peer_groups: dict[str, Peer] = field(default_factory=dict)
    neighbors: dict[str, Peer] = field(default_factory=dict)
    multipath_relax: bool = False  # path-selection multipath aspath-ignore
    rt_import: list[str] = field(default_factory=list)
    rt_export: list[str] = field(default_factory=list)
    import_vrfs: list[str] = field(default_factory=list)  # route-import from-vrf list: VRF route leaking

    @classmethod
    def of(cls, t: dict, asn: int | None, router_id: str | None) -> "Bgp":
        v4 = get(t, ("address-family", "ipv4-unicast"), {})
        conn = get(v4, ("redistribute", "connected"))
        stat = get(v4, ("redistribute", "static"))
        return cls(
            enable=get(t, ("enable",), True) is not False,
            asn=get(t, ("autonomous-system",), asn) if get(t, ("autonomous-system",)) != "none" else asn,
            router_id=(
                get(t, ("router-id",), router_id) if get(t, ("router-id",)) not in ("none", "auto") else router_id
            ),
            ipv4=get(v4, ("enable",), True) is not False,
            connected=conn is not None and get(conn, ("enable",), True) is not False,
            connected_map=get(conn or {}, ("route-map",)),
            static=stat is not None and get(stat, ("enable",), True) is not False,
            static_map=get(stat or {}, ("route-map",)),
            networks=list(get(v4, ("network",), {})),
            to_evpn=get(v4, ("route-export", "to-evpn", "enable"), False) is True,
            evpn=get(t, ("address-family", "l2vpn-evpn", "enable"), False) is True,
            peer_groups={n: Peer.of(n, p) for n, p in get(t, ("peer-group",), {}).items()},
            neighbors={n: Peer.of(n, p) for n, p in get(t, ("neighbor",), {}).items()},
            multipath_relax=get(t, ("path-selection", "multipath", "aspath-ignore"), False) is True,
            rt_import=[_rt(r) for r in get(t, ("route-import", "from-evpn", "route-target"), {})],
            rt_export=[_rt(r) for r in get(t, ("route-export", "to-evpn", "route-target"), {})],
            import_vrfs=(
                list(get(v4, ("route-import", "from-vrf", "list"), {}))
                if get(v4, ("route-import", "from-vrf", "enable"), True) is not False
                else []
            ),
        )


@dataclass
class Bond:
    """`interface.<bond>` of type bond: its members and how it bonds them (NVUE's defaults: LACP, fast)."""

    name: str
    members: list[str]
    mode: str = "lacp"  # lacp (802.3ad) or static (balance-xor)
    lacp_rate: str = "fast"

    @classmethod
    def of(cls, name: str, i: dict) -> "Bond":
        b = get(i, ("bond",), {})
        return cls(name, list(get(b, ("member",), {})), get(b, ("mode",), "lacp"), get(b, ("lacp-rate",), "fast"))


@dataclass
class Svi:
    name: str
    vlan: int
    vrf: str | None
    addresses: list[str]  # ip.address (IPv4)
    vrr: list[str]  # ip.vrr.address, when the VRR is on
    vrr_mac: str | None

    @property
    def gateway(self) -> str | None:
        """The address hosts use: the VRR's, else the SVI's own."""
        found = self.vrr or self.addresses
        return found[0] if found else None


@dataclass
class Static:
    """`vrf.<name>.router.static.<prefix>.via.<via>`: one next hop of a static route."""

    prefix: str
    via: str  # an address, blackhole or reject
    interface: str | None = None
    distance: int | None = None  # `distance.<n>.via.<via>` (None: FRR's 1)
    tag: int | None = None
    onlink: bool = False  # `flag onlink`


@dataclass
class Vrf:
    name: str
    l3vni: int | None
    evpn: bool
    bgp: Bgp | None
    statics: list[Static] = field(default_factory=list)

    @property
    def plain(self) -> bool:
        """A VRF without EVPN: no L3VNI, or EVPN off (a plain L3 VRF, or mgmt)."""
        return self.l3vni is None or not self.evpn


@dataclass
class NodeConf:
    hostname: str | None
    loopbacks: list[str]  # interface.lo.ip.address
    ports: dict[str, str]  # interface name -> type (swp, svi, loopback, eth, bond...)
    down: set[str]  # link.state down
    access: dict[str, int]  # port -> VLAN (bridge.domain.br_default.access)
    vlans: dict[int, list[int]]  # VLAN -> its VNIs
    svis: dict[int, Svi]  # VLAN -> its SVI
    vxlan: bool  # nve.vxlan enable (on once a source address is set)
    source: str | None  # nve.vxlan.source.address
    suppress: bool  # nve.vxlan.arp-nd-suppress
    evpn: bool  # evpn.enable
    vrr: bool  # router.vrr.enable
    fabric_mac: str | None
    anycast_mac: str | None
    graceful_shutdown: bool
    bgp: Bgp  # the default VRF's
    vrfs: dict[str, Vrf]  # the other VRFs
    statics: list[Static] = field(default_factory=list)  # the default VRF's static routes
    routed: dict[str, tuple[str | None, list[str]]] = field(default_factory=dict)  # port -> (ip.vrf, addresses)
    policy: Policy = field(default_factory=Policy)
    bonds: dict[str, Bond] = field(default_factory=dict)
    ospf: Ospf | None = None  # OSPFv2 instances (issue 44)

    def bgp_instances(self, vrfs: dict[str, str]) -> list[tuple[str, Bgp | None]]:
        """(kernel VRF, its BGP instance or None) of the default VRF, then of each VRF, `vrfs` mapping
        NVUE's VRF names to the kernel's."""
        return [
            ("default", self.bgp if self.bgp.enable else None),
            *((vrfs.get(n, n), v.bgp) for n, v in self.vrfs.items()),
        ]

    @classmethod
    def of(cls, tree: dict) -> "NodeConf":
        ifs = get(tree, ("interface",), {})
        rbgp = get(tree, ("router", "bgp"), {})
        asn, rid = get(rbgp, ("autonomous-system",)), get(rbgp, ("router-id",))
        asn = asn if isinstance(asn, int) else None
        rid = rid if rid not in ("none", "auto") else None
        vrr_on = get(tree, ("router", "vrr", "enable"), True) is not False
        gl = get(tree, ("system", "global"), {})
        fid = gl.get("fabric-id")
        fabric_mac = gl.get("fabric-mac") if gl.get("fabric-mac") not in (None, "none") else None
        vxlan = get(tree, ("nve", "vxlan"), {})
        source = get(vxlan, ("source", "address"))
        bgp = Bgp.of(get(tree, ("vrf", "default", "router", "bgp"), {}), asn, rid)
        bgp.enable = bgp.enable and rbgp.get("enable") is not False  # router.bgp.enable off: BGP off
        vrfs = {
            n: Vrf(
                n,
                _first_int(get(v, ("evpn", "vni"), {})),
                get(v, ("evpn", "enable"), True) is not False,
                Bgp.of(get(v, ("router", "bgp")), asn, rid) if get(v, ("router", "bgp")) is not None else None,
                _statics(v),
            )
            for n, v in get(tree, ("vrf",), {}).items()
            if n != "default"
        }
        return cls(
            hostname=get(tree, ("system", "hostname")),
            loopbacks=_v4(get(ifs, ("lo", "ip", "address"), {})),
            ports={n: get(i, ("type",)) or _type_of(n, i) for n, i in ifs.items()},
            down={n for n, i in ifs.items() if get(i, ("link", "state")) == "down"},
            access={
                n: a for n, i in ifs.items() if isinstance(a := get(i, ("bridge", "domain", DOMAIN, "access")), int)
            },
            vlans={
                int(v): [int(x) for x in get(d, ("vni",), {})]
                for v, d in get(tree, ("bridge", "domain", DOMAIN, "vlan"), {}).items()
            },
            svis={s.vlan: s for n, i in ifs.items() if (s := _svi(n, i, vrr_on)) is not None},
            vxlan=get(vxlan, ("enable",), source not in (None, "auto")) is True,
            source=source if source != "auto" else None,
            suppress=get(vxlan, ("arp-nd-suppress",), False) is True,
            evpn=get(tree, ("evpn", "enable"), False) is True,
            vrr=vrr_on,
            fabric_mac=fabric_mac or (FABRIC_MAC.format(fid) if isinstance(fid, int) else None),
            anycast_mac=gl.get("anycast-mac") if gl.get("anycast-mac") != "none" else None,
            graceful_shutdown=rbgp.get("graceful-shutdown") is True,
            bgp=bgp,
            vrfs=vrfs,
            statics=_statics(get(tree, ("vrf", "default"), {})),
            routed={
                n: (get(i, ("ip", "vrf")), _v4(get(i, ("ip", "address"), {})))
                for n, i in ifs.items()
                if (get(i, ("type",)) or _type_of(n, i)) in ("swp", "bond")
                and (get(i, ("ip", "address")) or get(i, ("ip", "vrf")))
            },
            policy=Policy.of(tree),
            bonds={n: Bond.of(n, i) for n, i in ifs.items() if (get(i, ("type",)) or _type_of(n, i)) == "bond"},
            ospf=Ospf.of(tree),
        )


def _statics(v: dict) -> list[Static]:
    """Each next hop of each static route: `via.<via>`, and `distance.<n>.via.<via>` at distance n."""
    out = []
    for p, r in get(v, ("router", "static"), {}).items():
        tag = _num(r.get("tag"))
        hops = [(None, tag, r.get("via") or {})] + [
            (int(d), _num((x or {}).get("tag")) or tag, (x or {}).get("via") or {})
            for d, x in (r.get("distance") or {}).items()
        ]
        out += [
            Static(p, via, (h or {}).get("interface"), d if d != 1 else None, t, (h or {}).get("flag") == "onlink")
            for d, t, vias in hops
            for via, h in vias.items()
        ]
    return out


def policy_uses(tree: dict) -> dict[tuple, tuple[str, str]]:
    """Every place that names a route map or prefix list: path -> (kind, name)."""
    out: dict[tuple, tuple[str, str]] = {}
    for vn in get(tree, ("vrf",), {}):
        bgp = ("vrf", vn, "router", "bgp")
        for kind in ("neighbor", "peer-group"):
            for pn, p in get(tree, bgp + (kind,), {}).items():
                for way, b in get(p, ("address-family", "ipv4-unicast", "policy"), {}).items():
                    out.update(
                        {
                            bgp + (kind, pn, "address-family", "ipv4-unicast", "policy", way, k): (k, name)
                            for k, name in b.items()
                            if k in ("route-map", "prefix-list")
                        }
                    )
        for what in ("connected", "static"):
            at = bgp + ("address-family", "ipv4-unicast", "redistribute", what, "route-map")
            if get(tree, at) is not None:
                out[at] = ("route-map", get(tree, at))
    return out


def _svi(name: str, i: dict, vrr_on: bool) -> Svi | None:
    if (get(i, ("type",)) or _type_of(name, i)) != "svi":
        return None
    vlan = get(i, ("vlan",)) or (int(name[4:]) if name[4:].isdigit() else None)
    if vlan is None:
        return None
    vrr = get(i, ("ip", "vrr"), {})
    on = vrr_on and vrr.get("enable", True) is not False and vrr.get("state") != "down"
    mac = vrr.get("mac-address")
    return Svi(
        name,
        vlan,
        get(i, ("ip", "vrf")),
        _v4(get(i, ("ip", "address"), {})),
        _v4(vrr.get("address", {})) if on else [],
        mac if mac not in (None, "auto") else None,
    )


def _type_of(name: str, i: dict) -> str:
    """NVUE's type of an interface not given one: from its name, as NVUE infers it."""
    if name == "lo":
        return "loopback"
    if name.startswith("vlan") and name[4:].isdigit():
        return "svi"
    if name == "eth0":
        return "eth"
    return "bond" if get(i, ("bond",)) is not None else "swp"


def _v4(addrs: dict) -> list[str]:
    return [a for a in addrs if a != "dhcp" and isinstance(ipaddress.ip_interface(a), ipaddress.IPv4Interface)]


def _first_int(d: dict) -> int | None:
    return next((int(k) for k in d), None)


def _num(v: object) -> int | None:
    return v if isinstance(v, int) else None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def _rt(rt: str) -> str:
    """NVUE's ANY:N is FRR's wildcard *:N."""
    return "*:" + rt.split(":", 1)[1] if rt.startswith("ANY:") else rt
