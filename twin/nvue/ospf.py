"""NVUE's OSPFv2 (issue 44), as Cumulus Linux 5.9 declares it and FRR's ospfd runs it:

- `router.ospf` (`enable` off: no OSPF in any VRF; `router-id`: the one of every VRF that sets none);
- `vrf.<name>.router.ospf` (`enable`, `router-id`, `area.<id>.network.<prefix>`): an instance per VRF,
  `router ospf [vrf X]` with `ospf router-id` and `network PREFIX area A`: OSPF runs on every interface
  of the VRF with an address in one of the prefixes, in that area, with NVUE's (and FRR's) defaults:
  network type broadcast, hello 10 s, dead 40 s.

`interface.<name>.router.ospf` (an interface's area, network type, passive, timers) is checked by its
NVUE type and stored, not run: FRR 10.3's zebra with the netns VRF backend (what this kernel needs
for VRFs) aborts on any `interface` block of a frr.conf (docs/limitations.md), and every one of
those keys is an `ip ospf ...` line of such a block.

Pure: a checked tree in, frozen data out.

    Ospf.of(tree)     # the node's OSPF instances (None where it declares none)
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from twin.nvue.tree import get

HELLO, DEAD, NETWORK = 10, 40, "broadcast"  # what an interface of an instance runs (NVUE's defaults)


def area_id(a: object) -> str:
    """An area as FRR shows it: 0 (or '0') -> 0.0.0.0; a dotted one as it is."""
    if isinstance(a, int) or (isinstance(a, str) and a.isdigit()):
        return str(ipaddress.IPv4Address(int(a)))
    return str(a)


@dataclass(frozen=True)
class Instance:
    """One VRF's OSPF instance (`router ospf [vrf X]`)."""

    vrf: str  # NVUE's VRF name
    router_id: str | None = None
    networks: tuple[tuple[str, str], ...] = ()  # (prefix, dotted area) of `area.<id>.network.<prefix>`

    def network_of(self, addresses: list[str]) -> tuple[str, str] | None:
        """(prefix, area) of the network that puts an interface with these addresses (CIDR) in OSPF: the
        longest covering one, as FRR takes it."""
        for prefix, area in sorted(self.networks, key=lambda n: -ipaddress.ip_network(n[0], strict=False).prefixlen):
            net = ipaddress.ip_network(prefix, strict=False)
            if any(ipaddress.ip_interface(a).ip in net for a in addresses):
                return prefix, area
        return None

    def area_of(self, addresses: list[str]) -> str | None:
        """The area an interface with these addresses runs in (None: OSPF does not run on it)."""
        found = self.network_of(addresses)
        return found[1] if found else None


@dataclass
class Ospf:
    """What the node's NVUE declares of OSPF: per VRF its instance."""

    instances: dict[str, Instance] = field(default_factory=dict)  # NVUE VRF -> instance

    @classmethod
    def of(cls, tree: dict) -> "Ospf | None":
        glob = get(tree, ("router", "ospf"), {})
        if glob.get("enable") is False:
            return None  # router ospf enable off: no OSPF anywhere
        rid = _rid(glob.get("router-id"))
        out = cls()
        for vrf, v in get(tree, ("vrf",), {}).items():
            o = get(v, ("router", "ospf"))
            if o is None or o.get("enable") is False:
                continue
            nets = tuple(
                (str(ipaddress.ip_network(p, strict=False)), area_id(a))  # as FRR shows it
                for a, d in sorted(get(o, ("area",), {}).items())
                for p in sorted(get(d or {}, ("network",), {}))
            )
            out.instances[vrf] = Instance(vrf, _rid(o.get("router-id")) or rid, nets)
        return out if out.instances else None


def _rid(v: object) -> str | None:
    return v if isinstance(v, str) and v not in ("none", "auto") else None
