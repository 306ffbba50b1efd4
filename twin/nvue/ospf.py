"""NVUE's OSPFv2 (issue 44), as Cumulus Linux 5.9 declares it and FRR's ospfd runs it:

- `router.ospf` (`enable` off: no OSPF in any VRF; `router-id`: the one of every VRF that sets none);
- `vrf.<name>.router.ospf` (`enable`, `router-id`, `area.<id>.network.<prefix>`): an instance per VRF,
  `router ospf [vrf X]` with `ospf router-id` and `network PREFIX area A`: OSPF runs on every interface
  of the VRF with an address in one of the prefixes, in that area;
- `interface.<name>.router.ospf` (`area`, `network-type`, `passive`, `cost`, `priority`, `mtu-ignore`,
  `timers` hello/dead/retransmit/transmit-delay, `authentication` MD5): the interface's own settings,
  each an `ip ospf ...` line of its `interface` block (`Port.lines`). An interface with an area runs OSPF
  in its VRF's instance, made where the VRF declares none. FRR 10.3's zebra with the netns VRF backend
  (what this kernel needs for VRFs) aborts on any `interface` block it is sent, and `vtysh` sends one to
  every daemon: these lines are not in frr.conf but in a file of their own that only ospfd is sent
  (`twin.runtime.ospfdif`; FRR's start loads it into ospfd alone, the node image's frr-ospfd-interfaces.py).

What FRR itself refuses is refused here, with the NVUE path (`problems`): an interface's area in a VRF
whose instance has networks (FRR takes one or the other per instance), a network type on the loopback,
`dead-interval minimal` without its hello multiplier, an MD5 key without its key id.

Pure: a checked tree in, frozen data out.

    Ospf.of(tree)     # the node's OSPF instances and interfaces (None where it declares none)
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from twin.nvue.tree import Path, get

HELLO, DEAD, NETWORK = 10, 40, "broadcast"  # what an interface runs unless set (NVUE's and FRR's defaults)
# FRR's defaults ospfd never shows (a line at one changes nothing; ospfd's running config would never hold it)
UNSHOWN = {"hello-interval": HELLO, "retransmit-interval": 5, "transmit-delay": 1, "priority": 1}


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


@dataclass(frozen=True)
class Port:
    """An interface's own OSPF settings (`interface.<name>.router.ospf`), ospfd's `ip ospf ...` lines."""

    name: str  # NVUE's interface name
    vrf: str  # NVUE's VRF ("default")
    area: str | None = None  # dotted
    network: str | None = None  # network-type
    passive: bool = False
    cost: int | None = None
    priority: int | None = None
    hello: int | None = None
    dead: int | str | None = None  # seconds, or "minimal" (with `multiplier` hellos a second)
    multiplier: int | None = None
    retransmit: int | None = None
    delay: int | None = None  # transmit-delay
    mtu_ignore: bool = False
    auth: bool = False  # MD5 (message-digest) authentication
    key: tuple[int, str] | None = None  # (message-digest-key, md5-key)

    @classmethod
    def of(cls, name: str, vrf: str, o: dict) -> "Port":
        t, a = o.get("timers") or {}, o.get("authentication") or {}
        kid, md5 = a.get("message-digest-key"), a.get("md5-key")
        return cls(
            name,
            vrf,
            area_id(o["area"]) if o.get("area") is not None else None,
            o.get("network-type"),
            o.get("passive") is True,
            o["cost"] if isinstance(o.get("cost"), int) else None,
            o.get("priority"),
            t.get("hello-interval"),
            t.get("dead-interval"),
            t.get("hello-multiplier"),
            t.get("retransmit-interval"),
            t.get("transmit-delay"),
            o.get("mtu-ignore") is True,
            a.get("enable") is True,
            (kid, str(md5)) if a.get("enable") is True and kid is not None and md5 is not None else None,
        )

    def lines(self) -> list[str]:
        """ospfd's lines for the interface, as ospfd shows them: sorted, without the defaults it never shows."""
        dead = (
            f"minimal hello-multiplier {self.multiplier}" if self.dead == "minimal" else self.dead
        )  # FRR's one line for both
        words = {
            "area": self.area,
            "authentication": "message-digest" if self.auth else None,
            "cost": self.cost,
            "dead-interval": dead,
            "hello-interval": self.hello,
            "message-digest-key": f"{self.key[0]} md5 {self.key[1]}" if self.key else None,
            "mtu-ignore": "" if self.mtu_ignore else None,
            "network": self.network,
            "passive": "" if self.passive else None,
            "priority": self.priority,
            "retransmit-interval": self.retransmit,
            "transmit-delay": self.delay,
        }
        return [f"ip ospf {k} {v}".rstrip() for k, v in sorted(words.items()) if v is not None and UNSHOWN.get(k) != v]


@dataclass
class Ospf:
    """What the node's NVUE declares of OSPF: per VRF its instance, per interface its own settings."""

    instances: dict[str, Instance] = field(default_factory=dict)  # NVUE VRF -> instance
    ports: dict[str, Port] = field(default_factory=dict)  # NVUE interface -> its settings

    @classmethod
    def of(cls, tree: dict) -> "Ospf | None":
        glob = get(tree, ("router", "ospf"), {})
        if glob.get("enable") is False:
            return None  # router ospf enable off: no OSPF anywhere
        rid = _rid(glob.get("router-id"))
        out = cls()
        off = set()
        for vrf, v in get(tree, ("vrf",), {}).items():
            o = get(v, ("router", "ospf"))
            if o is None:
                continue
            if o.get("enable") is False:
                off.add(vrf)
                continue
            nets = tuple(
                (str(ipaddress.ip_network(p, strict=False)), area_id(a))  # as FRR shows it
                for a, d in sorted(get(o, ("area",), {}).items())
                for p in sorted(get(d or {}, ("network",), {}))
            )
            out.instances[vrf] = Instance(vrf, _rid(o.get("router-id")) or rid, nets)
        for name, i in get(tree, ("interface",), {}).items():
            o = get(i, ("router", "ospf"))
            if o is not None and o.get("enable") is not False:
                out.ports[name] = Port.of(name, get(i, ("ip", "vrf")) or "default", o)
        for p in out.ports.values():  # an interface's area runs in its VRF's instance, made where none is declared
            if p.area is not None and p.vrf not in off:
                out.instances.setdefault(p.vrf, Instance(p.vrf, rid))
        return out if out.instances or out.ports else None

    def port_area(self, name: str, vrf: str, addresses: list[str]) -> str | None:
        """The area interface `name` (of NVUE VRF `vrf`, these addresses) runs OSPF in: its own, else its
        instance's network's (None: OSPF does not run on it)."""
        inst = self.instances.get(vrf)
        if inst is None:
            return None
        p = self.ports.get(name)
        return p.area if p is not None and p.area is not None else inst.area_of(addresses)


def problems(o: Ospf | None, tree: dict) -> list[tuple[Path, str]]:
    """What FRR refuses of the interfaces' OSPF settings, each with its NVUE path."""
    out: list[tuple[Path, str]] = []
    for name, p in sorted((o.ports if o else {}).items()):
        at = ("interface", name, "router", "ospf")
        inst = o.instances.get(p.vrf) if o else None
        if p.area is not None and inst is not None and inst.networks:
            out.append(
                (
                    at + ("area",),
                    f"VRF {p.vrf}'s OSPF puts interfaces in areas by network (vrf.{p.vrf}.router.ospf.area.*.network):"
                    " FRR takes an interface's area or networks in one instance, not both",
                )
            )
        if p.vrf == "mgmt" or name == "eth0":
            out.append((at, "the management port runs no OSPF here: it is the node's management network"))
        if p.network is not None and name == "lo":
            out.append((at + ("network-type",), "the loopback runs OSPF as a loopback: FRR sets no network type there"))
        if p.dead == "minimal" and (p.multiplier is None or p.multiplier < 2):
            out.append(
                (
                    at + ("timers", "hello-multiplier"),
                    "dead-interval minimal needs hello-multiplier 2-10 (FRR's is 2-20)",
                )
            )
        if p.dead == "minimal" and p.hello is not None:
            out.append(
                (
                    at + ("timers", "hello-interval"),
                    "dead-interval minimal sends its hellos every 1/hello-multiplier s: no hello-interval with it",
                )
            )
        a = get(tree, at + ("authentication",), {}) or {}
        if (a.get("md5-key") is None) != (a.get("message-digest-key") is None):
            missing = "md5-key" if a.get("md5-key") is None else "message-digest-key"
            out.append((at + ("authentication", missing), "FRR takes an MD5 key with its key id: both or neither"))
    return out


def _rid(v: object) -> str | None:
    return v if isinstance(v, str) and v not in ("none", "auto") else None
