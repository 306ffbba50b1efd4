"""NVUE's `--prove` elements: what the frr.conf an NVUE node runs holds of its user's own beyond
the lines `twin.prove`'s `frr_side` takes from every router: the peer groups and neighbors its
EVPN address family is activated for (twin's own rendering activates its one `fabric` group,
which it does not prove), each static route (issue 44: `no ip route ...`, named by verify's protocols
group), what puts each end of a judged OSPF link in OSPF (its VRF's network, or its own area, and its
own network type: `_ospf`), and, exempt with the reason, the BGP neighbors verify does not judge (a
neighbor on no link of the topology, one in a VRF).

Each activation is an element: `no neighbor X activate` in `address-family l2vpn evpn`, caught by
the node's BGP check (its EVPN sessions with the topology's peers are gone), restored by
`frr-reload.py` of the file (`frr_side.running`: the applied revision's rendering).

So is each neighbor's (or peer group's) BFD and BGP timers its NVUE sets (issue 44): `no neighbor X
bfd`, `no neighbor X timers`, caught by verify's protocols group (`bfd NODE`, `bgp timers NODE`:
FRR runs no BFD for it; FRR has other timers than those set); and each NVUE node's LLDP system name,
caught by verify's lldp group at the far ends of its links (`twin.nvue.lldpcheck.elements`).

The kernel half NVUE runs (ACLs, RoCE QoS, `link.mtu`) has its elements in `twin.nvue.kernelprove`.
"""

from __future__ import annotations

import re

from twin.intent import frrconf
from twin.lifecycle.context import LabContext
from twin.nvue import judge, kernelprove, lldpcheck, ospf, routing
from twin.nvue.configs import NvueNode, runs_nvue
from twin.nvue.configs import running as nvue_running
from twin.prove.element import Element, Exempt, Vtysh, alt
from twin.prove.frr_side import Runs, running

OSPFD = "ospfd"  # an interface's OSPF settings are sent to it alone (zebra -n aborts on them: twin.runtime.ospfdif)


def peer_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    """NVUE's elements: those of the frr.conf its nodes run (this module's), then those of the kernel half
    they run (ACLs, RoCE QoS, `link.mtu`: `twin.nvue.kernelprove`)."""
    out, exempt = [], []
    nvue = nvue_running(ctx.dir, ctx.fabric, ctx.backend, ctx.shaping)
    runs = running(ctx)
    for node, r in runs.items():
        if not runs_nvue(ctx.dir, node):
            continue
        els, ex = _activations(ctx, node, r)
        out += els + (_protocols(node, nvue[node], r) if node in nvue else []) + _statics(node, r)
        exempt += ex + _unjudged(ctx, node, r)
    kernel, kept = kernelprove.elements(ctx, nvue)
    lldps = lldpcheck.elements(ctx.fabric, nvue, ctx.backend)
    return out + _ospf(ctx, nvue, runs) + kernel + lldps, exempt + kept


def _protocols(node: str, x: NvueNode, r: Runs) -> list[Element]:
    """Each neighbor's or peer group's BFD and timers (the FRR line that sets them: the neighbor's own,
    else its group's), taken away by `no neighbor X bfd` / `no neighbor X timers`."""
    plane = x.plane
    asns = {b.vrf: b.asn for b in r.conf.bgp}
    seen: dict[tuple[str, str, str], Element] = {}
    for vrf, b in plane.conf.bgp_instances(plane.vrfs):
        if b is None or vrf not in asns:
            continue
        router = f"router bgp {asns[vrf]}" + ("" if vrf == "default" else f" vrf {vrf}")
        for name, p in b.neighbors.items():
            g = b.peer_groups.get(p.peer_group or "")
            for what, own, check, line in (("bfd", p.bfd, "bfd", "bfd"), ("timers", p.timers, "bgp timers", "timers")):
                at = plane.devices.get(name, name) if own else (p.peer_group if g and getattr(g, what) else None)
                if at is None or (vrf, what, at) in seen:
                    continue
                kind = "BFD" if what == "bfd" else "BGP timers"
                where = "" if vrf == "default" else f" (VRF {vrf})"
                seen[(vrf, what, at)] = Element(
                    f"{'bfd' if what == 'bfd' else 'bgp-timers'} {node} {at}{'' if vrf == 'default' else ' ' + vrf}",
                    kind,
                    node,
                    f"neighbor {at} {line}{where} on {node}",
                    (judge.GROUP,),
                    (rf"^{judge.GROUP}: {check} {re.escape(node)}: ",),
                    (Vtysh(node, (router, f"no neighbor {at} {line}")),),
                    r.back,
                )
    return list(seen.values())


def _activations(ctx: LabContext, node: str, r: Runs) -> tuple[list[Element], list[Exempt]]:
    """Each `neighbor X activate` of the default instance's EVPN address family whose sessions
    with the topology's peers carry EVPN (intent: the lab has tenants; no edge port)."""
    b, ni = r.bgp(), ctx.intent.nodes.get(node)
    if b is None or ni is None:
        return [], []
    evpn = {s.port for s in ni.sessions if ni.evpn and not ni.edge and s.port not in ni.edge_ports}
    out, exempt = [], []
    for name in b.evpn_active:
        ports = sorted(p for p in _members(b, name) if p in evpn)
        what = f"neighbor {name} activate (address-family l2vpn evpn) on {node}"
        if not ports:
            exempt.append(
                Exempt("EVPN activation", f"{node} {name}", "no session of the topology that carries EVPN is in it")
            )
            continue
        out.append(
            Element(
                f"evpn-activate {node} {name}",
                "EVPN activation",
                node,
                what + (f" ({', '.join(ports)})" if ports != [name] else ""),
                ("control",),
                (rf"^control: bgp {re.escape(node)}: .*\.l2VpnEvpn(\.peers\.{alt(ports)}\b|: missing)",),
                (Vtysh(node, (f"router bgp {b.asn}", "address-family l2vpn evpn", f"no neighbor {name} activate")),),
                r.back,
            )
        )
    return out, exempt


def _members(b: frrconf.Bgp, name: str) -> list[str]:
    """The active neighbors EVPN is activated for by `neighbor NAME activate`: NAME itself, or the
    members of peer group NAME that are not activated on their own."""
    if name not in b.groups:
        return [name] if any(n.name == name for n in b.active()) else []
    return [n.name for n in b.active() if n.peer_group == name and n.name not in b.evpn_active]


def _unjudged(ctx: LabContext, node: str, r: Runs) -> list[Exempt]:
    """The neighbors of the node's frr.conf that no check of verify judges."""
    cabled = {p.name for p in ctx.fabric.nodes[node].fabric_ports}
    out = []
    for inst in r.conf.bgp:
        where = "" if inst.vrf == frrconf.DEFAULT_VRF else f" vrf {inst.vrf}"
        for n in inst.active():
            if where or n.name not in cabled:
                out.append(
                    Exempt(
                        "BGP neighbor",
                        f"{node} {n.name}{where}",
                        "a session the topology does not have (verify judges the topology's sessions)",
                    )
                )
    return out


def _statics(node: str, r: Runs) -> list[Element]:
    """Each static route of the node's frr.conf (issue 44): `no ip route ...` (in its `vrf` block), named by
    verify's protocols group (`static routes NODE: PREFIX via ...`), put back by reloading the file."""
    out = []
    for s in r.conf.statics:
        words = list(s.words[:-2] if s.words[-2:] == ("vrf", s.vrf) else s.words)  # `ip route ... vrf X`: in X
        where = () if s.vrf == frrconf.DEFAULT_VRF else (f"vrf {s.vrf}",)
        out.append(
            Element(
                f"static {node} {' '.join(words[2:])}" + (f" vrf {s.vrf}" if where else ""),
                "static route",
                node,
                f"{' '.join(words)} on {node}" + (f" (VRF {s.vrf})" if where else ""),
                ("protocols",),
                (
                    rf"^protocols: static routes {re.escape(node)}: (.*; )?"
                    rf"{re.escape(s.prefix)} via ",
                ),
                (Vtysh(node, where + ("no " + " ".join(words),)),),
                r.back,
            )
        )
    return out


def _ospf(ctx: LabContext, nvue: dict[str, NvueNode], runs: dict[str, Runs]) -> list[Element]:
    """Each end of a judged OSPF link (issue 44), by what puts it in OSPF: its own area (`interface X` / `no ip
    ospf area`, sent to ospfd alone: zebra -n aborts on an interface block), else its VRF's network (`no
    network P area A` in `router ospf`); and each end's own network type other than broadcast (`no ip ospf
    network`: broadcast on a /32 unnumbered port forms no adjacency). Named by verify's protocols group
    (`ospf A - B: ...`); restored by the reload of the node's files, ospfd's interface settings with them."""
    out: dict[str, Element] = {}
    for link in routing.ospf_links(nvue, ctx.fabric):
        for e in link:
            p = nvue[e.node].plane
            name = next((n for n, d in p.devices.items() if d == e.port), e.port)
            vrf, addrs = p.conf.routed.get(name, (None, []))
            inst = p.conf.ospf.instances.get(vrf or "default") if p.conf.ospf else None
            own = p.conf.ospf.ports.get(name) if p.conf.ospf else None
            found = inst.network_of(addrs) if inst else None
            if e.node not in runs or (found is None and (own is None or own.area is None)):
                continue
            where = "" if e.vrf == "default" else f" vrf {e.vrf}"
            expect = (rf"^{judge.GROUP}: ospf [^:]*\b{re.escape(str(e))}\b[^:]*: ",)
            back = runs[e.node].back
            for key, what, line, breaks in _ospf_breaks(e, own, found, where):
                out.setdefault(key, Element(key, what, e.node, line, (judge.GROUP,), expect, breaks, back))
    return list(out.values())


Break = tuple[str, str, str, tuple[Vtysh, ...]]  # an element's id, kind, what, and how it breaks


def _ospf_breaks(e: routing.End, own: ospf.Port | None, found: tuple[str, str] | None, where: str) -> list[Break]:
    """(id, kind, what, how it breaks) of the elements that put link end `e` in OSPF as it does."""
    head = f"interface {e.port}{where}"
    out: list[Break]
    if own is not None and own.area is not None:
        out = [
            (
                f"ospf-interface {e.node} {e.port}{where}",
                "OSPF interface area",
                f"ip ospf area {own.area} (interface {e.port}{where}) on {e.node}",
                (Vtysh(e.node, (head, "no ip ospf area"), daemon=OSPFD),),
            )
        ]
    else:
        prefix, area = found or ("", "")
        out = [
            (
                f"ospf-network {e.node} {prefix}{where}",
                "OSPF network",
                f"network {prefix} area {area} (router ospf{where}) on {e.node}",
                (Vtysh(e.node, (f"router ospf{where}", f"no network {prefix} area {area}")),),
            )
        ]
    if own is not None and own.network not in (None, "broadcast"):
        out.append(
            (
                f"ospf-network-type {e.node} {e.port}{where}",
                "OSPF network type",
                f"ip ospf network {own.network} (interface {e.port}{where}) on {e.node}",
                (Vtysh(e.node, (head, "no ip ospf network"), daemon=OSPFD),),
            )
        )
    return out
