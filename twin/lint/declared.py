"""What a node's config declares, whatever its dialect: the facts `twin lint` compares with the
topology's intent, each with where it is declared (file, line) and how that config says it.

A dialect (NVUE's startup.yaml, FRR's frr.conf) brings a reader that makes a `Declared` of one
node's file (`twin.lint.readers`); the comparison (`twin.lint.rules`) reads only this. Ports
are named as the topology names them (a reader maps DOCA HBN's `p0_if` to `p0`); a VRF says which
tenant of the topology it stands for, by its dialect's rule. A fact a dialect leaves to the
kernel plane twin builds from the topology (VLANs, the VTEP's source address, the loopback of an
frr.conf) is None: the topology's, so nothing to compare.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class At:
    """Where a fact is declared, and the fact as its config says it (`bridge vlan 10 -> VNI 10201`,
    `neighbor swp1 interface peer-group fabric`); for a fact missing, where it would be."""

    file: str
    line: int | None = None
    text: str = ""

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def __str__(self) -> str:
        return f"{self.where}: {self.text}" if self.text else self.where


@dataclass(frozen=True)
class Switch:
    """A setting that is on or off, and where it is said (or, when it is not said, where it would be:
    `at.text` says which, e.g. `evpn enable not set (NVUE's default: off)`)."""

    on: bool
    at: At


@dataclass(frozen=True)
class Peer:
    """A BGP neighbor on one of the node's ports (unnumbered), in the default VRF."""

    port: str
    at: At
    remote_as: str | None = None  # external, internal, a number (text); None: not given
    evpn: bool = False  # activated for l2vpn evpn (itself or by its peer-group)
    ipv4: bool = True  # activated for IPv4 unicast
    shutdown: bool = False


@dataclass(frozen=True)
class Rt:
    """A route target a VRF (or an L2VNI) imports or exports, as given (`*:N` a wildcard)."""

    kind: str  # import, export
    value: str
    at: At

    @property
    def local(self) -> str:
        return self.value.rsplit(":", 1)[-1]


@dataclass
class Vrf:
    """A VRF of the config, and which tenant of the topology it stands for (None: none)."""

    name: str
    at: At
    tenant: str | None = None
    l3vni: int | None = None
    l3vni_at: At | None = None
    type5: Switch | None = None  # its routes exported to EVPN (type-5); None: it has no BGP instance
    connected: Switch | None = None  # its connected routes (the local segments) in its BGP
    rts: list[Rt] = field(default_factory=list)
    leaks: list[tuple[str, At]] = field(default_factory=list)  # VRFs it imports routes from


@dataclass
class Vlan:
    """A VLAN of the bridge: its VNI, its SVI (VRF, gateway, MAC) and its access ports."""

    vlan: int
    at: At
    vni: int | None = None
    vni_at: At | None = None
    svi: At | None = None  # the SVI's interface
    svi_vrf: str | None = None  # None: the default VRF
    svi_vrf_at: At | None = None
    gateway: str | None = None  # the address its hosts use (CIDR): the VRR's, else the SVI's own
    gateway_at: At | None = None
    mac: str | None = None  # the gateway's MAC (the VRR's), where the config gives one
    mac_at: At | None = None
    ports: dict[str, At] = field(default_factory=dict)  # access ports (topology names) -> where


@dataclass
class Declared:
    """One node's config, as the facts the comparison reads."""

    node: str
    file: str
    bgp: At | None = None  # the default VRF's BGP instance; None: none (or disabled)
    neighbors_at: At | None = None  # where its neighbors are declared (a neighbor missing goes there)
    networks_at: At | None = None  # where its IPv4 networks are declared
    asn: int | None = None
    asn_at: At | None = None
    loopbacks: dict[str, At] | None = None  # addresses on lo; None: the kernel plane's (the topology's)
    networks: dict[str, At] = field(default_factory=dict)  # the default VRF's IPv4 networks
    connected: At | None = None  # the default VRF redistributes connected routes
    peers: dict[str, Peer] = field(default_factory=dict)  # port -> its neighbor
    stray: list[At] = field(default_factory=list)  # neighbors on no port of the node
    down: dict[str, At] = field(default_factory=dict)  # ports set down
    interfaces: dict[str, At] = field(default_factory=dict)  # ports the config declares (topology names)
    evpn: Switch | None = None  # the VTEP's VNIs in EVPN (advertise-all-vni)
    multipath_relax: Switch | None = None
    maximum_paths: tuple[int, At] | None = None  # None: BGP's default (64)
    graceful_shutdown: Switch | None = None
    vrfs: dict[str, Vrf] = field(default_factory=dict)
    vni_rts: dict[int, list[Rt]] = field(default_factory=dict)  # an L2VNI's own route targets
    vlans: dict[int, Vlan] | None = None  # None: the kernel plane's (the topology's segments)
    vtep_source: tuple[str | None, At] | None = None  # VXLAN's source address; None: the kernel plane's
    mtus: dict[str, tuple[int, At]] = field(default_factory=dict)  # port -> its MTU, where given

    def at(self, line: int | None = None, text: str = "") -> At:
        return At(self.file, line, text)

    def tenant_vrfs(self) -> dict[str, Vrf]:
        """Tenant -> the VRF that stands for it (the first, where several do)."""
        out: dict[str, Vrf] = {}
        for v in self.vrfs.values():
            if v.tenant is not None:
                out.setdefault(v.tenant, v)
        return out
