"""What NVUE itself refuses (or twin cannot make) of what goes beyond twin's tenants, every
problem at once with its NVUE path: route maps and prefix lists named and not declared, a route
map's rule twin would run half, the management VRF holding more than eth0 or EVPN, a port or
SVI in a VRF the file does not declare, an interface's OSPF settings FRR refuses (`twin.nvue.ospf`)."""

from __future__ import annotations

from twin.nvue import ospf
from twin.nvue.model import MGMT, NodeConf, policy_uses
from twin.nvue.tree import Path, get


def problems(conf: NodeConf, tree: dict) -> list[tuple[Path, str]]:
    out = conf.policy.problems(tree, policy_uses(tree))
    for name, pl in get(tree, ("router", "policy", "prefix-list"), {}).items():
        out += [
            (
                ("router", "policy", "prefix-list", name, "rule", seq, "match"),
                f"rule {seq} matches {len(r['match'])} prefixes; a prefix-list rule matches one",
            )
            for seq, r in pl.get("rule", {}).items()
            if len(r.get("match", {})) > 1
        ]
    mgmt = conf.vrfs.get(MGMT)
    if mgmt is not None and mgmt.l3vni is not None:
        out.append(
            (
                ("vrf", MGMT, "evpn", "vni"),
                "the management VRF carries no EVPN: it is the node's management network (eth0)",
            )
        )
    if mgmt is not None and get(tree, ("vrf", MGMT, "router", "ospf")) is not None:
        out.append(
            (
                ("vrf", MGMT, "router", "ospf"),
                "the management VRF runs no OSPF here: it is the node's management network (eth0)",
            )
        )
    out += ospf.problems(conf.ospf, tree)  # what FRR refuses of the interfaces' OSPF settings
    out += [
        (("vrf", v, "router", "static", p, *at), why)
        for v, r in get(tree, ("vrf",), {}).items()
        for p, st in (get(r, ("router", "static"), {}) or {}).items()
        for at, why in _onlink(st)
    ]
    if mgmt is not None and mgmt.bgp is not None:
        out.append(
            (
                ("vrf", MGMT, "router", "bgp"),
                "the management VRF runs no BGP here: it is the node's management network (eth0)",
            )
        )
    for name, (vrf, _) in sorted(conf.routed.items()):
        if vrf == MGMT:
            out.append((("interface", name, "ip", "vrf"), "only eth0 is in the management VRF"))
        elif vrf not in (None, "default") and vrf not in conf.vrfs:
            out.append((("interface", name, "ip", "vrf"), f"VRF {vrf} is not declared in this file (vrf.{vrf})"))
        elif vrf in conf.vrfs and not conf.vrfs[vrf].plain:
            out.append(
                (
                    ("interface", name, "ip", "vrf"),
                    f"a routed port in EVPN VRF {vrf} is not emulated: twin's EVPN VRFs hold SVIs",
                )
            )
    for name, v in sorted(conf.vrfs.items()):  # route-import from-vrf: a VRF this file declares (issue 44)
        allowed = ", ".join(sorted((set(conf.vrfs) - {MGMT, name}) | {"default"}))
        for src in v.bgp.import_vrfs if v.bgp else []:
            why = (
                "the management VRF"
                if src == MGMT
                else "this VRF itself"
                if src == name
                else "not declared in this file"
                if src != "default" and src not in conf.vrfs
                else ""
            )
            if why:
                out.append(
                    (
                        (
                            "vrf",
                            name,
                            "router",
                            "bgp",
                            "address-family",
                            "ipv4-unicast",
                            "route-import",
                            "from-vrf",
                            "list",
                            src,
                        ),
                        f"VRF {src} is {why}; {name} may import from {allowed}",
                    )
                )
    for svi in conf.svis.values():
        if svi.vrf == MGMT:
            out.append((("interface", svi.name, "ip", "vrf"), "only eth0 is in the management VRF"))
        elif svi.vrf not in (None, "default") and svi.vrf not in conf.vrfs:
            out.append(
                (
                    ("interface", svi.name, "ip", "vrf"),
                    f"{svi.name} is in VRF {svi.vrf}, which this file does not declare (vrf.{svi.vrf})",
                )
            )
    return out


def _onlink(route: dict) -> list[tuple[Path, str]]:
    """`flag onlink` without the interface FRR needs for it (`ip route P NH IF onlink`)."""
    hops = [(("via", v), h) for v, h in (route.get("via") or {}).items()] + [
        (("distance", d, "via", v), h)
        for d, x in (route.get("distance") or {}).items()
        for v, h in ((x or {}).get("via") or {}).items()
    ]
    return [
        (at + ("flag",), "onlink needs the interface the next hop is on (interface)")
        for at, h in hops
        if (h or {}).get("flag") == "onlink" and not (h or {}).get("interface")
    ]
