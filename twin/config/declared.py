"""What a user's frr.conf declares, for `twin lint`: FRR's dialect read into the model the
comparison with intent reads (`twin.lint.declared`), each fact with its line and the line's own
words. Registered as the reader of `frr.conf` (`twin.lint.register`).

FRR leaves the kernel plane to the topology (VLANs, VXLAN devices, bridges and the loopback are
twin's, as ifupdown2's beside FRR on a switch): those facts stay None. A VRF stands for the
tenant whose VRF it is by name (FRR's VRF is the kernel's).
"""

from __future__ import annotations

from twin.intent import frrconf
from twin.lint import At, Declared, Peer, Rt, Switch, Vrf, register
from twin.lint.readers import Source

FRR_CONF = "frr.conf"
V4 = ("ipv4 unicast", "", "ipv4")  # the address families IPv4 unicast lines sit in
EVPN = "l2vpn evpn"


def read(src: Source) -> Declared:
    cfg = frrconf.parse(src.text)
    d = Declared(src.node, src.path)
    b = cfg.default_bgp()
    d.vrfs = _vrfs(src, cfg)
    if b is None:
        return d
    where = _Lines(src.path, b)
    d.bgp = At(src.path, b.line, f"router bgp {b.asn}")
    d.asn, d.asn_at = b.asn, d.bgp
    d.neighbors_at = d.bgp
    d.networks_at = where.family("ipv4 unicast") or d.bgp
    d.networks = {p: where.at(V4, f"network {p}") for p in b.networks}
    if "connected" in b.redistribute:
        d.connected = where.at(V4, "redistribute connected", prefix=True)
    _peers(src, b, where, d)
    d.evpn = Switch(
        b.advertise_all_vni,
        where.at((EVPN,), "advertise-all-vni")
        if b.advertise_all_vni
        else At(src.path, b.line, "no advertise-all-vni (address-family l2vpn evpn)"),
    )
    relax = "bgp bestpath as-path multipath-relax"
    d.multipath_relax = Switch(
        b.multipath_relax, where.at(("",), relax) if b.multipath_relax else At(src.path, b.line, f"no {relax}")
    )
    if b.maximum_paths is not None:
        d.maximum_paths = (b.maximum_paths, where.at(V4, f"maximum-paths {b.maximum_paths}"))
    d.graceful_shutdown = Switch(
        b.graceful_shutdown,
        where.at(("",), "bgp graceful-shutdown")
        if b.graceful_shutdown
        else At(src.path, b.line, "no bgp graceful-shutdown"),
    )
    d.vni_rts = {
        vni: [
            Rt(k, rt, where.at((f"{EVPN} vni {vni}",), f"route-target {kind} {rt}"))
            for kind, rts in kinds.items()
            for rt in rts
            for k in _ways(kind)
        ]
        for vni, kinds in b.vni_rts.items()
    }
    return d


class _Lines:
    """Where each line of a `router bgp` is, by address family and words."""

    def __init__(self, path: str, b: frrconf.Bgp):
        self.path, self.b = path, b
        self.text = {n: t for (_, t), n in b.lines.items()}

    def at(self, afs: tuple[str, ...], text: str, prefix: bool = False) -> At:
        for (af, t), n in self.b.lines.items():
            if af in afs and (t == text or (prefix and t.startswith(text))):
                return At(self.path, n, t)
        return At(self.path, self.b.line, text)

    def family(self, af: str) -> At | None:
        """Where `address-family AF` opens (its first line), or None."""
        return next(
            (At(self.path, n, t) for (a, t), n in self.b.lines.items() if a == af and t.startswith("address-family")),
            None,
        )

    def line(self, number: int) -> At:
        return At(self.path, number or self.b.line, self.text.get(number, ""))


def _peers(src: Source, b: frrconf.Bgp, where: _Lines, d: Declared) -> None:
    ports = src.fabric.nodes[src.node].ports_by_name
    for n in b.neighbors.values():
        at = where.line(n.line)
        if n.name not in ports:
            d.stray.append(at)
            continue
        group = b.groups.get(n.peer_group or "")
        ipv4 = b.ipv4.get(n.name, b.ipv4.get(n.peer_group or "", b.ipv4_default))
        d.peers[n.name] = Peer(
            n.name,
            at,
            n.remote_as or (group.remote_as if group else None),
            evpn=n.name in b.evpn_active or (n.peer_group or "") in b.evpn_active,
            ipv4=ipv4,
            shutdown=n.shutdown or bool(group and group.shutdown),
        )


def _vrfs(src: Source, cfg: frrconf.FrrConfig) -> dict[str, Vrf]:
    tenants = {t.vrf: t.name for t in src.fabric.tenants.values()}
    out: dict[str, Vrf] = {}
    names = list(cfg.vrfs) + [b.vrf for b in cfg.bgp if b.vrf != frrconf.DEFAULT_VRF and b.vrf not in cfg.vrfs]
    for name in names:
        inst = next((b for b in cfg.bgp if b.vrf == name), None)
        line = cfg.lines.get(f"vrf {name}") or (inst.line if inst else None)
        v = Vrf(name, At(src.path, line, f"vrf {name}"), tenant=tenants.get(name), l3vni=cfg.vrfs.get(name))
        if v.l3vni is not None:
            v.l3vni_at = At(src.path, cfg.lines.get(f"vrf {name} vni"), f"vrf {name} vni {v.l3vni}")
        if inst is not None:
            where = _Lines(src.path, inst)
            v.at = At(src.path, line, f"vrf {name}")
            adv = "ipv4 unicast" in inst.advertise
            v.type5 = Switch(
                adv,
                where.at((EVPN,), "advertise ipv4 unicast", prefix=True)
                if adv
                else At(src.path, inst.line, f"router bgp {inst.asn} vrf {name}: no advertise ipv4 unicast"),
            )
            conn = "connected" in inst.redistribute
            no = f"router bgp {inst.asn} vrf {name}: no redistribute connected"
            v.connected = Switch(
                conn, where.at(V4, "redistribute connected", prefix=True) if conn else At(src.path, inst.line, no)
            )
            v.rts = [
                Rt(k, rt, where.at((EVPN,), f"route-target {kind} {rt}"))
                for kind, rts in inst.rts.items()
                for rt in rts
                for k in _ways(kind)
            ]
            v.leaks = [(x, where.at(V4, f"import vrf {x}")) for x in inst.import_vrfs]
        out[name] = v
    return out


def _ways(kind: str) -> tuple[str, ...]:
    return ("import", "export") if kind == "both" else (kind,)


register(FRR_CONF, read)
