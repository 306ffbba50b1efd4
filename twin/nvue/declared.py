"""What a node's startup.yaml declares, for `twin lint`: NVUE's dialect read into the model the
comparison with intent reads (`twin.lint.declared`), each fact with the line that set it and
words for it (`bridge vlan 10 -> VNI 10201`, `vrf RED -> L3VNI 10200`). Registered as the reader
of `startup.yaml` by NVUE's dialect (`twin.nvue.dialect`: `twin.config.dialect.register` hands it to
`twin.lint`).

The file is read as `twin up` reads it, and built on its node as `twin up` builds it: what twin
refuses of it (a port the node lacks, a VNI mapped twice...) is a problem, with its line. NVUE
names ports as the device does (DOCA HBN's `p0_if` is the DPU's `p0`); a VRF stands for the
tenant whose VRF or name it matches, case aside, as NVUE's plane takes it (`plane.tenant_of`).
Some facts NVUE keeps without twin running them are read too, for they are what the device
would do: a port's `link.mtu`, eBGP `multipaths`, VRFs importing from VRFs.
"""

from __future__ import annotations

from twin.config.backend import DEFAULT_BACKEND
from twin.lint import At, Declared, Peer, Rt, Switch, Vlan, Vrf
from twin.lint.readers import Source
from twin.nvue import load, plane, routed
from twin.nvue.load import NvueFile
from twin.nvue.model import MGMT, NodeConf
from twin.nvue.tree import get

BGP = ("vrf", "default", "router", "bgp")
V4 = BGP + ("address-family", "ipv4-unicast")


def read(src: Source) -> Declared:
    nf = load.read(src.path, src.text)
    plane.build(nf, src.fabric, src.node, DEFAULT_BACKEND, steps=False)  # what twin refuses of it on this node
    conf = NodeConf.of(nf.tree)
    r = _Reader(src, nf, conf)
    d = Declared(src.node, src.path)
    d.loopbacks = {
        a: r.at(("interface", "lo", "ip", "address", a), f"interface lo ip address {a}") for a in conf.loopbacks
    }
    d.interfaces = {
        r.dev(n): r.at(("interface", n), f"interface {n}") for n, kind in conf.ports.items() if kind in ("swp", "bond")
    }
    d.down = {r.dev(n): r.at(("interface", n, "link", "state"), f"interface {n} link state down") for n in conf.down}
    d.mtus = {
        r.dev(n): (m, r.at(("interface", n, "link", "mtu"), f"interface {n} link mtu {m}"))
        for n, i in get(nf.tree, ("interface",), {}).items()
        if isinstance(m := get(i, ("link", "mtu")), int)
    }
    if conf.bgp.enable and conf.bgp.asn:
        _bgp(r, d)
    d.evpn = r.switch(conf.evpn, ("evpn", "enable"), "evpn enable", "NVUE's default: off")
    d.vrfs = {n: _vrf(r, n) for n in conf.vrfs if n != MGMT}
    d.vlans = {v: _vlan(r, v) for v in conf.vlans}
    src_at = ("nve", "vxlan", "source", "address")
    d.vtep_source = (
        (conf.source, r.at(src_at, f"nve vxlan source address {conf.source}"))
        if conf.vxlan
        else (
            None,
            r.at(
                ("nve", "vxlan", "enable") if conf.source else src_at,
                "nve vxlan enable off" if conf.source else "nve vxlan source address not set",
            ),
        )
    )
    return d


class _Reader:
    def __init__(self, src: Source, nf: NvueFile, conf: NodeConf):
        self.src, self.nf, self.conf = src, nf, conf
        self.known = set(routed.platform(src.fabric, src.node)) | set(src.fabric.nodes[src.node].ports_by_name)

    def at(self, path: tuple, text: str) -> At:
        return At(self.src.path, self.nf.line(tuple(str(k) for k in path)), text)

    def dev(self, name: str) -> str:
        """A port as the topology names it (DOCA HBN's p0_if is p0)."""
        return name[:-3] if name not in self.known and name.endswith("_if") and name[:-3] in self.known else name

    def switch(self, on: bool, path: tuple, words: str, default: str) -> Switch:
        given = get(self.nf.tree, path) is not None
        return Switch(
            on, self.at(path, f"{words} {'on' if on else 'off'}" if given else f"{words} not set ({default})")
        )


def _bgp(r: _Reader, d: Declared) -> None:
    conf, tree = r.conf, r.nf.tree
    b = conf.bgp
    d.bgp = r.at(("router", "bgp") if get(tree, ("router", "bgp")) is not None else BGP, "router bgp")
    where = (
        ("router", "bgp", "autonomous-system")
        if get(tree, BGP + ("autonomous-system",)) is None
        else BGP + ("autonomous-system",)
    )
    d.asn, d.asn_at = b.asn, r.at(where, f"router bgp autonomous-system {b.asn}")
    d.neighbors_at = r.at(BGP + ("neighbor",), "neighbor") if get(tree, BGP + ("neighbor",)) else d.bgp
    d.networks_at = r.at(V4, "address-family ipv4-unicast") if get(tree, V4) is not None else d.bgp
    d.networks = {p: r.at(V4 + ("network", p), f"network {p}") for p in b.networks}
    if b.connected:
        d.connected = r.at(V4 + ("redistribute", "connected"), "redistribute connected")
    for name, p in b.neighbors.items():
        at = r.at(BGP + ("neighbor", name), f"neighbor {name}")
        if not p.unnumbered:
            d.stray.append(at)
            continue
        g = b.peer_groups.get(p.peer_group or "")
        d.peers[r.dev(name)] = Peer(
            r.dev(name),
            at,
            p.remote_as or (g.remote_as if g else None),
            evpn=p.evpn is True or bool(g and g.evpn is True),
            ipv4=not (p.ipv4 is False or (g is not None and g.ipv4 is False)),
        )
    d.multipath_relax = r.switch(
        b.multipath_relax,
        BGP + ("path-selection", "multipath", "aspath-ignore"),
        "path-selection multipath aspath-ignore",
        "off",
    )
    paths_ = get(tree, V4 + ("multipaths", "ebgp"))
    if isinstance(paths_, int):
        d.maximum_paths = (paths_, r.at(V4 + ("multipaths", "ebgp"), f"multipaths ebgp {paths_}"))
    d.graceful_shutdown = r.switch(
        conf.graceful_shutdown, ("router", "bgp", "graceful-shutdown"), "router bgp graceful-shutdown", "off"
    )


def _vrf(r: _Reader, name: str) -> Vrf:
    v, tree = r.conf.vrfs[name], r.nf.tree
    t = plane.tenant_of(r.src.fabric, name)
    base = ("vrf", name)
    out = Vrf(name, r.at(base, f"vrf {name}"), tenant=t.name if t else None, l3vni=v.l3vni if v.evpn else None)
    if v.l3vni is not None and v.evpn:
        out.l3vni_at = r.at(base + ("evpn", "vni", str(v.l3vni)), f"vrf {name} -> L3VNI {v.l3vni}")
    elif v.l3vni is not None:
        out.l3vni_at = r.at(base + ("evpn", "enable"), f"vrf {name} evpn enable off")
    if v.bgp is None:
        return out
    bgp = base + ("router", "bgp")
    out.type5 = r.switch(
        v.bgp.to_evpn,
        bgp + ("address-family", "ipv4-unicast", "route-export", "to-evpn", "enable"),
        f"vrf {name} route-export to-evpn",
        "off",
    )
    out.connected = r.switch(
        v.bgp.connected,
        bgp + ("address-family", "ipv4-unicast", "redistribute", "connected"),
        f"vrf {name} redistribute connected",
        "off",
    )
    for kind, where in (("import", ("route-import", "from-evpn")), ("export", ("route-export", "to-evpn"))):
        for rt in get(tree, bgp + where + ("route-target",), {}):
            value = "*:" + rt.split(":", 1)[1] if rt.startswith("ANY:") else rt
            out.rts.append(
                Rt(kind, value, r.at(bgp + where + ("route-target", rt), f"vrf {name} {where[0]} route-target {rt}"))
            )
    leak = bgp + ("address-family", "ipv4-unicast", "route-import", "from-vrf", "list")
    out.leaks = [(x, r.at(leak + (x,), f"vrf {name} route-import from-vrf {x}")) for x in get(tree, leak, {}) or {}]
    return out


def _vlan(r: _Reader, vlan: int) -> Vlan:
    conf = r.conf
    base = ("bridge", "domain", "br_default", "vlan", str(vlan))
    out = Vlan(vlan, r.at(base, f"bridge vlan {vlan}"))
    vnis = conf.vlans[vlan]
    if vnis:
        out.vni, out.vni_at = vnis[0], r.at(base + ("vni", str(vnis[0])), f"bridge vlan {vlan} -> VNI {vnis[0]}")
    svi = conf.svis.get(vlan)
    if svi is not None:
        i = ("interface", svi.name)
        out.svi = r.at(i, f"interface {svi.name}")
        out.svi_vrf = svi.vrf
        out.svi_vrf_at = r.at(i + ("ip", "vrf"), f"interface {svi.name} -> VRF {svi.vrf or 'default'}")
        out.gateway = svi.gateway
        kind = ("ip", "vrr", "address") if svi.vrr else ("ip", "address")
        out.gateway_at = r.at(i + kind + (str(svi.gateway),), f"interface {svi.name} gateway {svi.gateway}")
        if svi.vrr:
            out.mac = svi.vrr_mac or conf.fabric_mac or plane.DEFAULT_VRR_MAC
            where = (
                i + ("ip", "vrr", "mac-address")
                if svi.vrr_mac
                else ("system", "global")
                if conf.fabric_mac
                else i + ("ip", "vrr")
            )
            out.mac_at = r.at(where, f"interface {svi.name} VRR MAC {out.mac}")
    for port, v in conf.access.items():
        if v == vlan:
            at = r.at(("interface", port, "bridge", "domain", "br_default", "access"), f"interface {port} -> VLAN {v}")
            ends = conf.bonds[port].members if port in conf.bonds else [port]
            out.ports.update({r.dev(e): at for e in ends})
    return out
