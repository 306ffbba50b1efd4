"""What `twin verify` judges of NVUE's OSPF and static routes (issue 44), in group `protocols` beside
BFD and BGP timers (`twin.nvue.judge`), read from FRR on the running nodes:

- OSPF: on every link of the topology whose two ends run NVUE with OSPF on their ports (a network of
  the port's VRF's instance covers an address of it, or the port's own `router.ospf.area`), each end has
  its neighbor Full. Where not, what differs between the two ends is named with both values (area,
  network type, hello and dead intervals, as each end's ospfd runs them; passive on one end; MD5
  authentication on one end, or other keys), else what each end's ospfd sees of the other. Full across
  two network types is named too (point-to-point on one end, broadcast on the other: their LSAs
  describe the link apart). A link both of whose ends are passive is not judged: no adjacency is meant.
- static routes: every next hop a node declares is in its VRF's RIB and selected; else it is named
  inactive, with why: its next hop unreachable (zebra tracks no route to it in the VRF), or another
  route preferred.

    checks(ctx, nodes)     # nodes: configs.running's {node: NvueNode}
"""

from __future__ import annotations

from dataclasses import dataclass, field

from twin.base import timeouts
from twin.base.errors import TwinError
from twin.intent.generic import network
from twin.kinds import MGMT_NS, MGMT_PORT
from twin.lifecycle.context import LabContext
from twin.nvue.configs import NvueNode
from twin.nvue.model import MGMT, Static
from twin.nvue.plane import Plane
from twin.runtime import read_routes
from twin.topology.model import Fabric
from twin.verify.result import Check

GROUP = "protocols"
OSPF = ("show ip ospf vrf all interface json", "show ip ospf vrf all neighbor json")
STATIC = ("show ip route vrf all static json", "show ip nht vrf all json")
# ospfd's network types by NVUE's names (`network-type`)
NETWORK_TYPES = {
    "BROADCAST": "broadcast",
    "POINTOPOINT": "point-to-point",
    "NBMA": "non-broadcast",
    "POINTOMULTIPOINT": "point-to-multipoint",
    "LOOPBACK": "loopback",
}
# what must match across a link, as ospfd's `show ip ospf interface json` names it
SAME = (
    ("area", "area", str),
    ("network type", "networkType", lambda t: NETWORK_TYPES.get(str(t), str(t).lower())),
    ("hello", "timerMsecs", lambda ms: f"{seconds(ms)} s"),
    ("dead", "timerDeadSecs", lambda s: f"{s} s"),
)


def seconds(ms: int) -> int | float:
    """ospfd's milliseconds in seconds, as NVUE sets them (a fraction for `dead-interval minimal`'s hellos)."""
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


@dataclass(frozen=True)
class End:
    """One end of a link with OSPF on it, as the node's NVUE declares it."""

    node: str
    port: str  # the kernel device (FRR's interface)
    vrf: str  # FRR's (kernel) VRF
    area: str  # dotted
    passive: bool = False  # `interface.<name>.router.ospf.passive`: it sends no hello
    key: tuple[int, str] | None = field(default=None, repr=False)  # its MD5 key (id, key); never shown

    def __str__(self) -> str:
        return f"{self.node} {self.port}"


def ospf_links(nodes: dict[str, NvueNode], fabric: Fabric) -> list[tuple[End, End]]:
    """The topology's links whose two ends run OSPF by their NVUE (by a network of their VRF's instance, or
    their own area), but not both passive (no adjacency is what both ends declare)."""
    ends: dict[tuple[str, str], End] = {}
    for node, x in nodes.items():
        o, p = x.plane.conf.ospf, x.plane
        for name, (vrf, addrs) in p.conf.routed.items() if o else ():
            area = o.port_area(name, vrf or "default", addrs) if o else None
            if area:
                own = o.ports.get(name) if o else None
                dev = p.devices.get(name, name)
                kvrf = {**p.vrfs, **p.plain}.get(vrf or "", vrf or "default")
                ends[(node, dev)] = End(node, dev, kvrf, area, bool(own and own.passive), own.key if own else None)
    out = []
    for (node, dev), e in sorted(ends.items()):
        port = fabric.nodes[node].ports_by_name.get(dev)
        far = ends.get((port.peer_node, port.peer_port)) if port else None
        if far is not None and (node, dev) < (far.node, far.port) and not (e.passive and far.passive):
            out.append((e, far))
    return out


def checks(ctx: LabContext, nodes: dict[str, NvueNode]) -> list[Check]:
    out: list[Check] = []
    links = ospf_links(nodes, ctx.fabric)
    docs: dict[str, tuple | str] = {}
    for n in sorted({e.node for link in links for e in link}):
        try:
            docs[n] = tuple(ctx.exec(n).vtysh_json(*OSPF, timeout=timeouts.VTYSH))
        except TwinError as e:
            docs[n] = f"cannot read {n}'s OSPF: {e}"
    for a, b in links:
        bad = [d for d in (docs[a.node], docs[b.node]) if isinstance(d, str)]
        msg = "; ".join(bad) if bad else "; ".join(adjacency(a, docs[a.node], b, docs[b.node]))  # type: ignore[arg-type]
        out.append(Check(GROUP, f"ospf {a} - {b}", not msg, msg, {"area": {str(a): a.area, str(b): b.area}}))
    for node, x in sorted(nodes.items()):
        out += _statics(ctx, node, x)
    return out


def adjacency(a: End, da: tuple, b: End, db: tuple) -> list[str]:
    """What keeps the link's OSPF adjacency from Full (nothing: Full on both ends, of one network type)."""
    ia, ib = _iface(da[0], a), _iface(db[0], b)
    if ia is None or ib is None:
        return [f"{e}: ospfd runs no OSPF on it (area {e.area} set)" for e, i in ((a, ia), (b, ib)) if i is None]
    differ = [
        f"{what} {show(ia[key])} on {a}, {show(ib[key])} on {b}"
        for what, key, show in SAME
        if ia.get(key) != ib.get(key) and ia.get(key) is not None and ib.get(key) is not None
    ]
    passive = [e for e, i in ((a, ia), (b, ib)) if i.get("timerPassiveIface")]
    if len(passive) == 1:  # it sends no hello, and takes none: its peer never hears it
        differ.insert(0, f"passive on {passive[0]} (it sends no hello), not on {b if passive[0] is a else a}")
    if (a.key is None) != (b.key is None) or (a.key and b.key and a.key != b.key):
        differ.append(_keys(a, b))
    states = {e: _state(d[1], e) for e, d in ((a, da), (b, db))}
    if all(s.startswith("Full") for s in states.values()):
        types = [d for d in differ if d.startswith("network type")]
        return [f"{a} - {b}: Full, but " + types[0] + ": their LSAs describe the link apart"] if types else []
    if differ:
        return [f"{a} - {b}: no adjacency: " + "; ".join(differ) + " (OSPF forms none unless they match)"]
    return [f"{a} - {b}: not Full: " + ", ".join(f"{e} sees {s}" for e, s in states.items())]


def _keys(a: End, b: End) -> str:
    """The two ends' MD5 authentication in words, never the keys themselves."""
    if a.key and b.key:
        same = a.key[0] == b.key[0]
        ids = f"key id {a.key[0]} on both" if same else f"key id {a.key[0]} on {a}, {b.key[0]} on {b}"
        return "MD5 keys differ (" + ids + ")"
    keyed, bare = (a, b) if a.key else (b, a)
    return f"MD5 authentication on {keyed} (key id {keyed.key[0] if keyed.key else '?'}), none on {bare}"


def _iface(doc: object, e: End) -> dict | None:
    vrf = doc.get(e.vrf) if isinstance(doc, dict) else None
    got = vrf.get("interfaces", {}).get(e.port) if isinstance(vrf, dict) else None
    return got if isinstance(got, dict) and got.get("ospfEnabled", True) else None


def _state(doc: object, e: End) -> str:
    """The state of the neighbor ospfd holds on the end's port ('no neighbor heard' where none)."""
    vrf = doc.get(e.vrf) if isinstance(doc, dict) else None
    for entries in vrf.get("neighbors", {}).values() if isinstance(vrf, dict) else ():
        for n in entries if isinstance(entries, list) else ():
            if isinstance(n, dict) and str(n.get("ifaceName", "")).split(":")[0] == e.port:
                return str(n.get("nbrState", "?"))
    return "no neighbor heard"


# --- static routes ------------------------------------------------------------------------------------
def declared(p: Plane) -> list[tuple[str, Static]]:
    """(FRR's VRF, static next hop) of every static route the node's FRR runs (mgmt's are not FRR's)."""
    kernel = {**p.vrfs, **p.plain}
    return [("default", s) for s in p.conf.statics] + [
        (kernel.get(v.name, v.name), s) for v in p.conf.vrfs.values() if v.name in kernel for s in v.statics
    ]


def mgmt_declared(p: Plane) -> list[Static]:
    """The management VRF's static routes the node runs: the kernel's, in its management namespace."""
    v = p.conf.vrfs.get(MGMT)
    return list(v.statics) if v and p.fabric.nodes[p.node].mgmt else []


def _statics(ctx: LabContext, node: str, x: NvueNode) -> list[Check]:
    want, mgmt = declared(x.plane), mgmt_declared(x.plane)
    if not want and not mgmt:
        return []
    try:
        routes, nht = ctx.exec(node).vtysh_json(*STATIC, timeout=timeouts.VTYSH) if want else ({}, {})
        kernel = _mgmt_routes(ctx, node) if mgmt else {}
    except TwinError as e:
        return [Check(GROUP, f"static routes {node}", False, f"cannot read {node}'s static routes: {e}")]
    msgs = [m for vrf, s in want if (m := static_problem(vrf, s, routes, nht))]
    msgs += [
        f"{' '.join(_words(s))} in VRF mgmt: not in the management namespace's routes (eth0)"
        for s in mgmt
        if MGMT_PORT not in kernel.get(network(s.prefix), set())
    ]
    return [
        Check(
            GROUP,
            f"static routes {node}",
            not msgs,
            "; ".join(msgs),
            {
                "routes": [f"{' '.join(_words(s))}" + (f" (VRF {v})" if v != "default" else "") for v, s in want]
                + [f"{' '.join(_words(s))} (VRF mgmt)" for s in mgmt]
            },
        )
    ]


def _mgmt_routes(ctx: LabContext, node: str) -> dict[str, set[str]]:
    with ctx.ipr(node, MGMT_NS) as ipr:
        return read_routes(ipr, host_only=False)


def static_problem(vrf: str, s: Static, routes: object, nht: object) -> str:
    """Why the static next hop is not what the VRF's RIB runs ('' where it is)."""
    prefix = network(s.prefix)
    where = " ".join(_words(s)) + (f" in VRF {vrf}" if vrf != "default" else "")
    found = _get(routes, vrf, prefix, default=[])
    entries = [
        e for e in (found if isinstance(found, list) else []) if isinstance(e, dict) and e.get("protocol") == "static"
    ]
    mine = [e for e in entries if (e.get("distance") or 1) == (s.distance or 1) and _hop(e, s)]
    if mine and mine[0].get("selected"):
        return ""
    if mine:
        won = [e for e in entries if e.get("selected")]
        if won and (won[0].get("distance") or 1) < (s.distance or 1):
            return ""  # a floating static: the route at a lower distance is selected, as meant
        return f"{where}: in the RIB, not selected (another route to {prefix} is preferred)"
    if s.via in ("blackhole", "reject"):
        return f"{where}: not in the RIB"
    tracked = _get(nht, vrf, "ipv4", s.via, default=None)
    if isinstance(tracked, dict) and not tracked.get("nexthops"):
        return (
            f"{where}: inactive: its next hop {s.via} is unreachable (VRF {vrf} has no route to it), so zebra "
            "installs nothing"
        )
    return f"{where}: not in the RIB" + (f" (its next hop {s.via} resolves)" if tracked else "")


def _hop(entry: dict, s: Static) -> bool:
    hops = [h for h in entry.get("nexthops", []) if isinstance(h, dict)]
    if s.via in ("blackhole", "reject"):
        return any(h.get(s.via) or h.get("unreachable") for h in hops)
    return any(h.get("ip") == s.via for h in hops)


def _get(doc: object, *keys: str, default: object) -> object:
    for k in keys:
        if not isinstance(doc, dict) or k not in doc:
            return default
        doc = doc[k]
    return doc


def _words(s: Static) -> list[str]:
    return (
        [s.prefix, "via", s.via]
        + (["interface", s.interface] if s.interface else [])
        + (["distance", str(s.distance)] if s.distance else [])
    )
