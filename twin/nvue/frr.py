"""frr.conf from a node's NVUE configuration, as NVUE renders FRR on Cumulus Linux 5.9
(`templates/frr.conf.j2` says where twin's file differs and why).

What goes where, as on a switch: BGP (the default VRF's instance from `router.bgp` and
`vrf.default.router.bgp`, one instance per tenant VRF with BGP on), `vrf X / vni N` for
each VRF's L3VNI and `advertise-all-vni` from `evpn.enable` go to FRR; interface
addresses, VRR, VLANs, VXLAN and bridges are the kernel's (`twin.nvue.plane`). An interface's OSPF
settings are ospfd's alone, in a file of their own (`ospfd_interfaces`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import jinja2

from twin.config.render import ZEBRA_DPLANE_LIMIT
from twin.config.safetext import UnsafeText, finalize, template_line
from twin.nvue.model import MGMT, Bfd, Bgp, NodeConf, Peer, Static, Vrf
from twin.nvue.policy import Policy
from twin.nvue.schema import VERSION

Dev = Callable[[str], str]  # an NVUE interface's name -> its kernel device's

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("twin.nvue", "templates"),
    finalize=finalize,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


@dataclass
class _Neighbor:
    dev: str
    peer_group: str | None
    remote_as: str | None
    unnumbered: bool
    connect: int | None
    policy: dict[str, str]
    bfd: Bfd | None = None
    timers: tuple[int, int] | None = None


@dataclass
class _Vrf:
    kernel: str
    l3vni: int | None
    bgp: Bgp | None
    statics: list[Static]
    peers: list[_Neighbor]
    v4_off: list[str]
    imports: list[str]  # route-import from-vrf: the kernel VRFs it leaks routes from


def render(conf: NodeConf, node: str, devices: dict[str, str], vrfs: dict[str, str], ifname: Dev | None = None) -> str:
    """The node's frr.conf. `devices`: NVUE port name -> kernel device (HBN's p0_if is the BlueField's
    p0), a BGP neighbor's; `vrfs`: NVUE VRF -> the kernel VRF it runs as (its tenant's, or its own);
    `ifname`: NVUE interface name -> the kernel device a static route's next hop or a route map's
    `match interface` names (an SVI's is its bridge; default: `devices`)."""
    b = conf.bgp if conf.bgp.enable and conf.bgp.asn else None

    def dev(n: str) -> str:
        return devices.get(n, n)

    kernel = ifname or dev

    groups = b.peer_groups if b else {}
    evpn_on = [g for g, p in groups.items() if p.evpn] + [
        dev(n) for n, p in (b.neighbors.items() if b else ()) if _evpn(p, groups)
    ]
    tenant_vrfs = [
        _vrf(v, vrfs.get(v.name, v.name), dev, kernel, bool(b), vrfs) for v in conf.vrfs.values() if v.name != MGMT
    ]
    try:  # a value holding a control character is refused, never written (twin.config.safetext)
        return _env.get_template("frr.conf.j2").render(
            node=node,
            version=VERSION,
            dplane_limit=ZEBRA_DPLANE_LIMIT,
            hostname=conf.hostname or node,
            bgp=b,
            neighbors_=_peers(b, dev),
            graceful_shutdown=conf.graceful_shutdown,
            v4_off=_v4_off(b, dev),
            evpn_on=evpn_on,
            evpn_block=bool(b and (b.evpn or conf.evpn or evpn_on)),
            advertise_all_vni=conf.evpn,
            vrfs=tenant_vrfs,
            statics=_on_devices(conf.statics, kernel),
            policy=_policy_on_devices(conf.policy, kernel),
            bfd_profiles=_bfd_profiles([b] + [v.bgp for v in tenant_vrfs]),
            ospf=[(vrfs.get(n, n), o) for n, o in (conf.ospf.instances.items() if conf.ospf else ()) if n != MGMT],
        )
    except UnsafeText as e:
        raise UnsafeText(e.value, f"frr.conf ({template_line(e) or 'frr.conf.j2'})") from None


def ospfd_interfaces(conf: NodeConf, node: str, vrfs: dict[str, str], ifname: Dev) -> str:
    """ospfd's interface settings (`interface.<name>.router.ospf`), each interface's `ip ospf` lines in its
    block as ospfd shows it (`interface DEV [vrf X]`, DEV the kernel device `ifname` gives, X its VRF's kernel
    name): the file only ospfd is sent (`twin.runtime.ospfdif`)."""
    blocks = []
    for p in conf.ospf.ports.values() if conf.ospf else ():
        kvrf = vrfs.get(p.vrf, p.vrf)
        if p.lines() and p.vrf != MGMT:
            blocks.append((f"interface {ifname(p.name)}" + (f" vrf {kvrf}" if kvrf != "default" else ""), p.lines()))
    try:
        return _env.get_template("ospfd_interfaces.j2").render(node=node, version=VERSION, blocks=sorted(blocks))
    except UnsafeText as e:
        raise UnsafeText(e.value, f"ospfd-interfaces.conf ({template_line(e) or 'ospfd_interfaces.j2'})") from None


def _vrf(v: Vrf, kernel: str, dev: Dev, ifname: Dev, default_bgp: bool, vrfs: dict[str, str]) -> _Vrf:
    bgp = v.bgp if v.bgp and v.bgp.enable and v.bgp.asn and default_bgp else None
    return _Vrf(
        kernel,
        v.l3vni if v.evpn else None,
        bgp,
        _on_devices(v.statics, ifname),
        _peers(bgp, dev),
        _v4_off(bgp, dev),
        [vrfs.get(x, x) for x in (bgp.import_vrfs if bgp else [])],
    )


def _on_devices(statics: list[Static], ifname: Dev) -> list[Static]:
    """Static routes with their next hops' interfaces by the kernel's names (FRR's)."""
    return [replace(s, interface=ifname(s.interface)) if s.interface else s for s in statics]


def _policy_on_devices(policy: Policy, ifname: Dev) -> Policy:
    """The route maps with their `match interface` by the kernel's names (FRR's)."""
    maps = {
        n: [replace(r, interface=ifname(r.interface)) if r.interface else r for r in rules]
        for n, rules in policy.route_maps.items()
    }
    return replace(policy, route_maps=maps)


def _peers(b: Bgp | None, dev: Dev) -> list[_Neighbor]:
    return [
        _Neighbor(dev(n), p.peer_group, p.remote_as, p.unnumbered, p.connect, p.policy, p.bfd, p.timers)
        for n, p in (b.neighbors.items() if b else ())
    ]


def _bfd_profiles(instances: list[Bgp | None]) -> list[Bfd]:
    """The BFD profiles the neighbors' timers need (bfdd's `profile`), each once, by name."""
    found = {
        p.bfd.profile: p.bfd
        for b in instances
        if b
        for p in [*b.peer_groups.values(), *b.neighbors.values()]
        if p.bfd and p.bfd.profile
    }
    return [found[k] for k in sorted(found)]


def _v4_off(b: Bgp | None, dev: Dev) -> list[str]:
    if b is None:
        return []
    return [g for g, p in b.peer_groups.items() if p.ipv4 is False] + [
        dev(n) for n, p in b.neighbors.items() if p.ipv4 is False
    ]


def _evpn(p: Peer, groups: dict[str, Peer]) -> bool:
    """A neighbor activated for EVPN on its own (its peer-group's activation covers the rest)."""
    return p.evpn is True and not (p.peer_group in groups and groups[p.peer_group].evpn)
