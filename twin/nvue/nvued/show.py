"""The operational state of NVUE's subset, read from the running node (`nv show PATH`, and the
REST API's GET of the same paths without `rev`):

    interface [NAME]                                 links: state, MTU, MAC, addresses (netlink), OSPF (vtysh),
                                                     LLDP neighbours (lldpd: `showlldp`)
    service lldp                                     lldpd's timers and the system name it sends, beside
                                                     what NVUE keeps of it without running it (dot1-tlv...)
    vrf VRF router bgp neighbor [PEER]               BGP neighbors: state, timers, BFD session (vtysh)
    evpn vni [VNI]                                   EVPN VNIs: type, VRF, VLAN, remote VTEPs (vtysh)
    vrf VRF router rib ipv4 route [PREFIX]           a VRF's IPv4 routes (vtysh)
    router policy [...]                              the lists and route maps bgpd runs (`showpolicy`)
    vrf VRF router ospf [neighbor|interface ...]     OSPF: its neighbors and interfaces as ospfd runs them
    vrf VRF router static [PREFIX]                   static routes: installed, or inactive and why
    acl, interface NAME acl, system control-plane    ACLs: each rule's packets where it is bound (nftables)

Names are NVUE's (swp1, p0_if, vlan10, VRF RED); each is mapped to what twin made for it (a
port, the segment's bridge in the tenant's VRF, the tenant's VRF) and shown with it under
`twin`. A name the node does not have is an error, never passed on to vtysh.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from twin.config.backend import tenant_ns
from twin.config.overlay import port_ns
from twin.intent.tenants import bridge_name
from twin.lifecycle.context import LabContext
from twin.nvue import api, judge, routing
from twin.nvue import hostname as nvue_hostname
from twin.nvue.acl import TABLE
from twin.nvue.aclbind import CONTROL_PLANE
from twin.nvue.configs import NvueNode, running
from twin.nvue.nvued.revision import NotFound
from twin.nvue.nvued.showlldp import ports_shown, service_shown
from twin.nvue.nvued.showpolicy import policy_shown
from twin.nvue.plane import VLAN_AWARE, Plane
from twin.nvue.qos import Qos, class_handle
from twin.nvue.tree import get, show
from twin.runtime import (
    FRR_RIB,
    FRR_VNIS,
    nft_counters,
    normalize_vni,
    read_interfaces,
    read_tc_classes,
    route_entries,
    vni_states,
    vrf_routes_cmd,
)

PATHS = (
    ("interface",),
    ("acl",),
    ("system", "control-plane"),
    ("qos",),
    ("evpn", "vni"),
    ("vrf", "*", "router", "bgp", "neighbor"),
    ("vrf", "*", "router", "rib", "ipv4", "route"),
    ("router", "policy"),
    ("vrf", "*", "router", "ospf"),
    ("vrf", "*", "router", "static"),
    ("service", "lldp"),
)


# places `nv show` answers that NVUE's configuration does not have (a port's LLDP neighbours)
SHOWN_ONLY = (("interface", "*", "lldp", "neighbor"),)


def _under(path: tuple[str, ...], p: tuple[str, ...]) -> bool:
    return len(path) >= len(p) and all(a == "*" or a == b for a, b in zip(p, path))


def known(path: tuple[str, ...]) -> str:
    """ "" when `nv show` (a GET) can ask for `path`: a place of NVUE's object tree, or at or below one of
    the places only its operational state has; else why not."""
    return "" if any(_under(path, p) for p in SHOWN_ONLY) else api.known(path)


def operational(path: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(the subset's path it falls under, what is below it), or None when it is not operational."""
    for p in PATHS:
        if _under(path, p):
            return path[: len(p)], path[len(p) :]
    return None


def read(ctx: LabContext, node: str, path: tuple[str, ...]) -> Any:
    """The operational state at `path` (one of PATHS, and below it)."""
    found = operational(path)
    if found is None:
        raise NotFound(f"{show(path)}: no operational state there")
    head, rest = found
    x = _running(ctx, node)
    plane = x.plane if x is not None else None
    if head == ("interface",):
        doc = interfaces(ctx, node, plane)
        for port, acls in acl_counts(ctx, node, plane).items():  # `nv show interface X acl` (issue 44)
            if port in doc:
                doc[port]["acl"] = acls
        for vrf in _ospf_vrfs(plane):  # `nv show interface X router ospf`
            for port, o in ospf_shown(ctx, node, vrf, plane)["interface"].items():
                if port in doc:
                    doc[port]["router"] = {"ospf": o}
        ports = plane.devices if plane else ctx.fabric.nodes[node].ports_by_name
        for port, lldp in ports_shown(ctx, node, _devices(ctx, node, plane), ports).items():  # issue 44
            if port in doc:
                doc[port]["lldp"] = lldp
    elif head == ("service", "lldp"):
        doc = service_shown(ctx, node, get(x.file.tree, head, {}) if x is not None else {})
    elif head == ("acl",):
        doc = acls_shown(ctx, node, plane)
    elif head == ("system", "control-plane"):
        doc = control_plane_shown(ctx, node, plane)
    elif head == ("qos",):
        doc = qos_shown(ctx, node, plane)
    elif head == ("evpn", "vni"):
        doc = vnis(ctx, node, plane)
    elif head == ("router", "policy"):
        doc = policy_shown(ctx, node)
    elif head[-1] == "neighbor":
        doc = neighbors(ctx, node, _vrf(plane, head[1]), plane)
    elif head[-1] == "ospf":
        doc = ospf_shown(ctx, node, _vrf(plane, head[1]), plane)
    elif head[-1] == "static":
        doc = statics_shown(ctx, node, _vrf(plane, head[1]), plane)
    else:
        doc = routes(ctx, node, _vrf(plane, head[1]))
    return below(_pruned(doc), rest, path)


def as_run(tree: dict, node: str) -> dict:
    """The node's applied tree as `nv show` shows it where no operational state is read: with what the
    node runs where NVUE leaves it unset, its host name (`twin.nvue.hostname`: its UTS name, set from
    this very tree or its own name)."""
    return {**tree, "system": {**(tree.get("system") or {}), "hostname": nvue_hostname.of(tree, node)}}


def _pruned(doc: Any) -> Any:
    """The document without the keys FRR or the kernel left empty (None)."""
    if isinstance(doc, dict):
        return {k: _pruned(v) for k, v in doc.items() if v is not None}
    return doc


def below(doc: Any, rest: tuple[str, ...], path: tuple[str, ...]) -> Any:
    for i, k in enumerate(rest):
        if not isinstance(doc, dict) or k not in doc:
            raise NotFound(
                f"{show(path[: len(path) - len(rest) + i + 1])}: no such "
                f"{'entry' if i == 0 else 'key'} in the operational state"
            )
        doc = doc[k]
    return doc


def _running(ctx: LabContext, node: str) -> NvueNode | None:
    """The node's applied NVUE file and the plane it runs (None: it runs twin's rendering)."""
    ctx.node(node)
    return running(ctx.dir, ctx.fabric, ctx.backend, ctx.shaping, nodes=[node]).get(node)


def _vrf(plane: Plane | None, name: str) -> str:
    """The kernel VRF of an NVUE VRF of the node ('default' is the underlay)."""
    if name == "default":
        return name
    known = {**plane.vrfs, **plane.plain} if plane else {}  # its tenants' VRFs and its plain L3 VRFs
    if name not in known:
        raise NotFound(f"vrf.{name}: the node has no such VRF; its VRFs: {', '.join(['default', *known])}")
    return known[name]


# --- interfaces --------------------------------------------------------------------------------------
def interfaces(ctx: LabContext, node: str, plane: Plane | None) -> dict:
    """NVUE interface name -> its state, from the kernel of the node and of its tenant namespaces."""
    where = _devices(ctx, node, plane)
    kernel: dict[str, dict[str, dict]] = {}
    for ns in sorted({ns for ns, _ in where.values()}):
        with ctx.ipr(node, ns) as ipr:
            kernel[ns] = read_interfaces(ipr)
    out: dict[str, dict[str, Any]] = {}
    for name, (ns, dev) in sorted(where.items()):
        k = kernel.get(ns, {}).get(dev)
        kind = (plane.conf.ports.get(name) if plane else None) or ("loopback" if name == "lo" else "swp")
        if k is None:
            out[name] = {
                "type": kind,
                "link": {"oper-status": "absent"},
                "twin": {"device": dev, "namespace": ns or None, "note": "not made on this node"},
            }
            continue
        out[name] = {
            "type": kind,
            "link": {"oper-status": k["state"] if name != "lo" else "up", "mtu": k["mtu"], "mac-address": k["mac"]},
            "ip": {"address": {a: {} for a in k["addresses"]}},
            "twin": {"device": dev, "namespace": ns or None},
        }
        vrf = _svi_vrf(plane, name)
        if vrf:
            out[name]["ip"]["vrf"] = vrf
    return out


def _devices(ctx: LabContext, node: str, plane: Plane | None) -> dict[str, tuple[str, str]]:
    """NVUE interface name -> (namespace, kernel device)."""
    if plane is None:  # twin's rendering: its ports and loopback, by their own names
        n = ctx.fabric.nodes[node]
        return {"lo": ("", "lo"), **{p: ("", p) for p in n.ports_by_name}}
    out = {"lo": ("", "lo")}
    moved = {s.dev: s.args["to"] for s in plane.extras.values() if s.op == "move"}  # into a plain VRF
    for name, dev in plane.devices.items():
        out[name] = (moved.get(dev) or port_ns(plane.fabric, node, dev, ctx.backend), dev)
    for vlan, svi in plane.conf.svis.items():
        vnis = plane.conf.vlans.get(vlan) or []
        t = next((t for t in plane.fabric.tenants.values() if t.vrf == plane.vrfs.get(svi.vrf or "")), None)
        if plane.layout == VLAN_AWARE:
            out[svi.name] = ("", svi.name)
        elif vnis and t is not None:
            out[svi.name] = (tenant_ns(t, ctx.backend), bridge_name(vnis[0]))
        elif ("bridge", svi.name) in plane.extras:  # outside a tenant (twin.nvue.routed)
            out[svi.name] = (plane.extras[("bridge", svi.name)].ns, svi.name)
    return out


def _svi_vrf(plane: Plane | None, name: str) -> str | None:
    return next((s.vrf for s in plane.conf.svis.values() if s.name == name), None) if plane else None


# --- ACLs (issue 44: twin.nvue.acl) -----------------------------------------------------------------------
def acl_counts(ctx: LabContext, node: str, plane: Plane | None) -> dict[str, dict]:
    """NVUE interface -> ACL -> way -> its rules' counters, read from the node's nftables (a binding to an
    interface's control plane under `control-plane`; the system's under CONTROL_PLANE, summed over the
    namespaces it runs in)."""
    if plane is None or not plane.acls.bindings:
        return {}
    got = {(f, ns): nft_counters(ctx.exec(node), f, TABLE, ns) for f, ns in plane.acls.tables()}
    out: dict[str, dict] = {}
    for b in plane.acls.bindings:
        way = out.setdefault(b.port, {}).setdefault(b.acl, {}).setdefault(b.way, {})
        if b.cp and b.port != CONTROL_PLANE:
            way = way.setdefault(CONTROL_PLANE, {})
        rules = way.setdefault("rule", {})
        for r in plane.acls.acls[b.acl].rules:
            n = got[(b.family, b.ns)].get(b.counter(r.seq), 0)
            rules.setdefault(str(r.seq), {"action": r.action, "packets": 0})["packets"] += n
    return out


def acls_shown(ctx: LabContext, node: str, plane: Plane | None) -> dict:
    """Each ACL: its type, and per rule its action and, per interface it is bound to (or the control
    plane), what it counted."""
    if plane is None:
        return {}
    counts = acl_counts(ctx, node, plane)
    out: dict[str, Any] = {}
    for name, a in plane.acls.acls.items():
        rules: dict[str, Any] = {str(r.seq): {"action": r.action} for r in a.rules}
        for port, acls in counts.items():
            for way, d in acls.get(name, {}).items():
                for place, rs in (
                    (port, d.get("rule", {})),
                    (f"{port} {CONTROL_PLANE}", d.get(CONTROL_PLANE, {}).get("rule", {})),
                ):
                    for seq, r in rs.items():
                        rules[seq].setdefault("statistics", {}).setdefault(place, {})[way] = {"packets": r["packets"]}
        out[name] = {"type": a.type, "rule": rules}
    return out


def control_plane_shown(ctx: LabContext, node: str, plane: Plane | None) -> dict:
    """`nv show system control-plane acl`: each ACL bound to the control plane, per way its rules' counters."""
    return {"acl": acl_counts(ctx, node, plane).get(CONTROL_PLANE, {})}


def qos_shown(ctx: LabContext, node: str, plane: Plane | None) -> dict:
    """The RoCE QoS the node runs: mode, DSCP map, lossless and ECN classes, and per port the packets
    each traffic class has sent (its HTB classes, `twin.nvue.qos`)."""
    q = plane.qos if plane is not None else None
    if not isinstance(q, Qos):
        return {"roce": {"enable": "off"}}
    ports: dict[str, Any] = {}
    for key, s in sorted(plane.extras.items()) if plane else []:
        if key[0] == "qos":
            with ctx.ipr(node, s.ns) as ipr:
                got = read_tc_classes(ipr, key[1])
            ports[key[1]] = {"traffic-class": {str(tc): {"packets": got.get(class_handle(tc), 0)} for tc in q.used()}}
    return {
        "roce": {"enable": "on", "mode": q.mode},
        "mapping": {
            "default-global": {"dscp": {str(d): {"switch-priority": sp} for d, sp in sorted(q.classes.items())}}
        },
        "pfc": {"default-global": {"switch-priority": {str(p): {} for p in sorted(q.lossless)}}},
        "congestion-control": {
            "default-global": {
                "traffic-class": {
                    str(tc): {"ecn": "enable", "min-threshold": lo, "max-threshold": hi, "probability": p}
                    for tc, (lo, hi, p) in sorted(q.ecn.items())
                }
            }
        },
        "twin": {"ports": ports},
    }


# --- FRR ------------------------------------------------------------------------------------------------
def neighbors(ctx: LabContext, node: str, vrf: str, plane: Plane | None) -> dict:
    doc = ctx.exec(node).vtysh_json(f"show bgp vrf {vrf} neighbors json")[0]
    names = {dev: name for name, dev in (plane.devices.items() if plane else ())}
    peers = {
        peer: p for peer, p in (doc.items() if isinstance(doc, dict) else ()) if isinstance(p, dict) and "bgpState" in p
    }
    sessions = (
        ctx.exec(node).vtysh_json(f"show bfd vrf {vrf} peers json")[0]
        if any("peerBfdInfo" in p for p in peers.values())
        else []
    )
    out = {}
    for peer, p in peers.items():
        out[names.get(peer, peer)] = {
            "state": str(p.get("bgpState", "")).lower(),
            "remote-as": p.get("remoteAs"),
            "local-as": p.get("localAs"),
            "peer-group": p.get("peerGroup"),
            "type": "numbered" if _is_ip(peer) else "unnumbered",
            "hostname": p.get("hostname"),
            "uptime": p.get("bgpTimerUpString"),
            **_timers_bfd(p, judge.session(sessions, judge.Wanted(vrf, peer, None, None))),
            "twin": {"peer": peer},
        }
    return out


def _timers_bfd(p: dict, session: dict | None) -> dict:
    """A neighbor's timers as the session runs them, and its BFD session (issue 44), in NVUE's words: the
    BFD timers bfdd's session runs (bgpd shows its own defaults for a neighbor whose BFD is a profile's)."""
    ms = lambda k: p[k] // 1000 if isinstance(p.get(k), int) else None  # noqa: E731
    out: dict = {
        "timers": {
            "keepalive": ms("bgpTimerKeepAliveIntervalMsecs"),
            "hold": ms("bgpTimerHoldTimeMsecs"),
            "connection-retry": p.get("connectRetryTimer"),
        }
    }
    bfd = p.get("peerBfdInfo")
    if isinstance(bfd, dict):
        s = session or {}
        out["bfd"] = {
            "enable": "on",
            "status": str(bfd.get("status", "")).lower(),
            "detect-multiplier": s.get("detect-multiplier", bfd.get("detectMultiplier")),
            "min-rx-interval": s.get("receive-interval", bfd.get("rxMinInterval")),
            "min-tx-interval": s.get("transmit-interval", bfd.get("txMinInterval")),
        }
    return out


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def vnis(ctx: LabContext, node: str, plane: Plane | None) -> dict:
    doc = ctx.exec(node).vtysh_json(FRR_VNIS)[0]
    vlan_of = {v: vlan for vlan, vs in (plane.conf.vlans.items() if plane else ()) for v in vs}
    nvue_vrf = {k: n for n, k in (plane.vrfs.items() if plane else ())}
    out: dict[str, dict] = {}
    for vni, e in sorted(vni_states(doc).items()):
        e = normalize_vni(e)
        vrf = str(e.get("vrf"))
        out[str(vni)] = {
            "type": e.get("type"),
            "vrf": nvue_vrf.get(vrf, e.get("vrf")),
            "vlan": vlan_of.get(vni),
            "vxlan-interface": e.get("vxlanInterface") or e.get("vxlanIntf"),
            "remote-vtep": {ip: {} for ip in e.get("remoteVteps", [])},
            "mac-count": e.get("numMacs"),
            "state": e.get("state"),
        }
    return out


def routes(ctx: LabContext, node: str, vrf: str) -> dict:
    doc = ctx.exec(node).vtysh_json(vrf_routes_cmd(vrf) if vrf != "default" else FRR_RIB)[0]
    out = {}
    for prefix in sorted(doc if isinstance(doc, dict) else {}):
        entries = route_entries(doc, prefix)
        best = next((e for e in entries if e["selected"]), entries[0] if entries else None)
        if best is not None:
            out[prefix] = {"protocol": best["protocol"], "via": {h: {} for h in best["nexthops"]}}
    return out


# --- OSPF and static routes (issue 44: twin.nvue.routing) -------------------------------------------------
def ospf_shown(ctx: LabContext, node: str, vrf: str, plane: Plane | None) -> dict:
    """The VRF's OSPF as ospfd runs it: per NVUE interface its area, network type, passive, cost, priority,
    timers, state; its neighbors."""
    ifs, nbrs = ctx.exec(node).vtysh_json(*(c.replace("vrf all", f"vrf {vrf}") for c in routing.OSPF))
    names = {dev: name for name, dev in (plane.devices.items() if plane else ())}
    got = ifs.get(vrf, {}).get("interfaces", {}) if isinstance(ifs, dict) and isinstance(ifs.get(vrf), dict) else {}
    out: dict[str, Any] = {
        "interface": {
            names.get(dev, dev): {
                "area": i.get("area"),
                "network-type": routing.NETWORK_TYPES.get(str(i.get("networkType")), i.get("networkType")),
                "passive": "on" if i.get("timerPassiveIface") else "off",
                "cost": i.get("cost"),
                "priority": i.get("priority"),
                "state": i.get("state"),
                "timers": {
                    "hello-interval": routing.seconds(i["timerMsecs"])
                    if isinstance(i.get("timerMsecs"), int)
                    else None,
                    "dead-interval": i.get("timerDeadSecs"),
                    "retransmit-interval": i.get("timerRetransmitSecs"),
                    "transmit-delay": i.get("transmitDelaySecs"),
                },
                "neighbor-count": i.get("nbrCount"),
            }
            for dev, i in sorted(got.items())
            if isinstance(i, dict)
        },
        "neighbor": {},
    }
    v = nbrs.get(vrf, {}) if isinstance(nbrs, dict) else {}
    for rid, entries in v.get("neighbors", {}).items() if isinstance(v, dict) else ():
        for n in entries if isinstance(entries, list) else ():
            port = str(n.get("ifaceName", "")).split(":")[0]
            out["neighbor"][rid] = {
                "state": n.get("nbrState"),
                "interface": names.get(port, port),
                "address": n.get("ifaceAddress"),
                "uptime": n.get("upTime"),
            }
    return out


def _ospf_vrfs(plane: Plane | None) -> list[str]:
    """The kernel VRFs the node's NVUE runs OSPF in."""
    o = plane.conf.ospf if plane else None
    return (
        sorted({_vrf(plane, n) for n in o.instances if n in ("default", *plane.vrfs, *plane.plain)})
        if o and plane
        else []
    )


def statics_shown(ctx: LabContext, node: str, vrf: str, plane: Plane | None) -> dict:
    """Each static route the VRF declares, by prefix: per next hop installed or inactive (and why)."""
    routes, nht = ctx.exec(node).vtysh_json(*routing.STATIC)
    out: dict[str, Any] = {}
    for v, st in routing.declared(plane) if plane else []:
        if v != vrf:
            continue
        why = routing.static_problem(v, st, routes, nht)
        hop = out.setdefault(st.prefix, {"via": {}})["via"].setdefault(st.via, {})
        hop.update(
            {
                "distance": st.distance or 1,
                "state": "inactive" if why else "installed",
                **({"reason": why.split(": ", 1)[1]} if why else {}),
            }
        )
    return out
