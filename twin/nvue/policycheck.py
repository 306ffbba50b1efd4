"""What `twin verify` judges of NVUE's route policy (issue 44), group `protocols`: for each route map
bound to a BGP neighbor (its own, else its peer group's), where the routes it targets end, read from
FRR, and named where they do not end as the policy says or as the fabric needs:

- outbound: the routes of the node's table the map denies (FRR's own verdict: `show bgp ... route-map
  NAME`) must not be advertised to the neighbor; a route the fabric needs there (a loopback the peer
  must reach) withheld by the map is named with the map, its rule and the prefixes; a map denying every
  route of the session too; a community a rule sets must reach the peer (the peer's table, when the
  peer is a node of the lab);
- inbound (the neighbor keeps what it receives: FRR's soft-reconfiguration inbound, set by twin where an
  inbound map is bound): what the neighbor sent and the map refused, with the same verdicts.

The rule named is the first whose matches the route meets (prefix list, community, large-community and
AS-path lists, evaluated here on the route's attributes as FRR holds them); the verdict itself is FRR's.

    checks(ctx)   # [Check], one per NVUE node that binds a route map to a neighbor
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from twin.base import timeouts
from twin.base.errors import TwinError
from twin.lifecycle.context import LabContext
from twin.nvue.configs import running
from twin.nvue.model import NodeConf
from twin.nvue.policy import Policy, RouteMapRule
from twin.verify.result import Check

GROUP = "protocols"


@dataclass(frozen=True)
class Bound:
    """A route map bound to one BGP neighbor, one way."""

    vrf: str  # FRR's (kernel) VRF
    peer: str  # FRR's key: the port of an unnumbered neighbor, else its address
    way: str  # in | out
    route_map: str

    def commands(self) -> list[str]:
        at = f"show bgp vrf {self.vrf} ipv4 unicast"
        if self.way == "out":
            return [
                f"{at} detail json",
                f"{at} neighbors {self.peer} advertised-routes detail json",
                f"{at} route-map {self.route_map} json",
            ]
        # received-routes as a summary: FRR 10.3's bgpd dies on `received-routes detail json` (a route the map
        # refused); the communities of what was received are read from the sender, when it is a node of the lab
        return [
            f"{at} neighbors {self.peer} received-routes json",
            f"{at} neighbors {self.peer} routes json",
            f"{at} detail json",
        ]


@dataclass(frozen=True)
class Route:
    prefix: str
    aspath: str = ""  # FRR's string ("" for a local route)
    communities: tuple[str, ...] = ()
    large: tuple[str, ...] = ()
    source: str = ""  # the neighbor it was learned from (its port, else address)


def bound(conf: NodeConf, devices: dict[str, str], vrfs: dict[str, str]) -> list[Bound]:
    out = []
    for vrf, b in conf.bgp_instances(vrfs):
        for name, p in b.neighbors.items() if b else ():
            g = b.peer_groups.get(p.peer_group or "") if b else None
            for way in ("in", "out"):
                m = p.policy.get(f"route-map {way}") or (g.policy.get(f"route-map {way}") if g else None)
                if m:
                    out.append(Bound(vrf, devices.get(name, name), way, m))
    return out


# --- FRR's JSON ------------------------------------------------------------------------------------------
def route(prefix: str, path: dict) -> Route:
    """A path of FRR's detail JSON as the attributes a route map matches."""
    asp = path.get("aspath")
    aspath = asp.get("string", "") if isinstance(asp, dict) else ""
    comm = path.get("community")
    large = path.get("largeCommunity")
    p = path.get("peer")
    peer: dict = p if isinstance(p, dict) else {}
    return Route(
        prefix,
        "" if aspath == "Local" else str(aspath),
        tuple(comm.get("list", [])) if isinstance(comm, dict) else (),
        tuple(large.get("list", [])) if isinstance(large, dict) else (),
        str(peer.get("interface") or peer.get("peerId") or ""),
    )


def table(doc: object) -> dict[str, Route]:
    """The best path of each prefix of `show bgp ... detail json`."""
    routes = doc.get("routes") if isinstance(doc, dict) else None
    out = {}
    for prefix, paths in routes.items() if isinstance(routes, dict) else ():
        best = (
            [
                p
                for p in paths
                if isinstance(p, dict) and isinstance(p.get("bestpath"), dict) and p["bestpath"].get("overall")
            ]
            if isinstance(paths, list)
            else []
        )
        if best:
            out[prefix] = route(prefix, best[0])
    return out


def per_neighbor(doc: object, key: str) -> dict[str, Route]:
    """`advertisedRoutes` / `receivedRoutes` of `show bgp ... neighbors X ... [detail] json`."""
    got = doc.get(key) if isinstance(doc, dict) else None
    out = {}
    for prefix, e in got.items() if isinstance(got, dict) else ():
        paths = e.get("paths") if isinstance(e, dict) else None
        if isinstance(paths, list) and paths and isinstance(paths[0], dict):
            out[prefix] = route(prefix, paths[0])
        elif isinstance(e, dict):  # the summary: its AS path only
            out[prefix] = Route(prefix, str(e.get("path", "")))
    return out


def prefixes(doc: object) -> set[str]:
    """The prefixes of a summary `show bgp ... json` (`routes`)."""
    routes = doc.get("routes") if isinstance(doc, dict) else None
    return set(routes) if isinstance(routes, dict) else set()


def paths_from(doc: object, port: str) -> dict[str, Route]:
    """The paths a node holds from its neighbor on `port`, in `show bgp ... detail json`."""
    routes = doc.get("routes") if isinstance(doc, dict) else None
    out = {}
    for prefix, paths in routes.items() if isinstance(routes, dict) else ():
        for p in paths if isinstance(paths, list) else ():
            if isinstance(p, dict) and isinstance(p.get("peer"), dict) and p["peer"].get("interface") == port:
                out[prefix] = route(prefix, p)
    return out


# --- which rule: the route map evaluated on a route ----------------------------------------------------
def rule_of(policy: Policy, name: str, r: Route) -> RouteMapRule | None:
    """The first rule of route map `name` whose matches `r` meets (None: none, FRR's implicit deny);
    a rule matching what a BGP route does not carry (interface, tag) is passed over."""
    for rule in policy.route_maps.get(name, []):
        if rule.interface is None and rule.tag is None and _meets(policy, rule, r):
            return rule
    return None


def _meets(policy: Policy, rule: RouteMapRule, r: Route) -> bool:
    if rule.prefix_list is not None and not _in_prefix_list(policy, rule.prefix_list, r.prefix):
        return False
    for kind, name in rule.lists.items():
        if not _in_list(policy, kind, name, r):
            return False
    return True


def _in_prefix_list(policy: Policy, name: str, prefix: str) -> bool:
    net = ipaddress.ip_network(prefix, strict=False)
    for pr in policy.prefix_lists.get(name, []):
        want = ipaddress.ip_network(pr.prefix, strict=False)
        if net.version != want.version or not net.subnet_of(want):  # type: ignore[arg-type]
            continue
        lo = pr.ge if pr.ge is not None else want.prefixlen
        hi = pr.le if pr.le is not None else (want.prefixlen if pr.ge is None else net.max_prefixlen)
        if lo <= net.prefixlen <= hi:
            return pr.action == "permit"
    return False


def _in_list(policy: Policy, kind: str, name: str, r: Route) -> bool:
    for lr in policy.lists[kind].get(name, []):
        if kind == "as-path-list":
            hit = any(re.search(aspath_regex(v), r.aspath) for v in lr.values)
        else:
            have = set(r.communities if kind == "community-list" else r.large)
            hit = set(lr.values) <= have
        if hit:
            return lr.action == "permit"
    return False


def aspath_regex(frr: str) -> str:
    """FRR's AS-path regular expression as Python's: `_` is a boundary (start, end, space, , { } ( ))."""
    return frr.replace("_", r"(^|[,{}() ]|$)")


def _rule_text(policy: Policy, name: str, r: Route) -> str:
    rule = rule_of(policy, name, r)
    if rule is None:
        return f"route-map {name} (no rule matches it: the implicit deny)"
    what = [f"ip-prefix-list {rule.prefix_list}"] if rule.prefix_list else []
    what += [f"{k} {n}" for k, n in sorted(rule.lists.items())]
    return f"route-map {name} rule {rule.seq} ({rule.action}{', ' + ', '.join(what) if what else ''})"


# --- the verdicts --------------------------------------------------------------------------------------
def judge(
    node: str,
    b: Bound,
    policy: Policy,
    docs: list,
    needed: dict[str, str],
    peer: str | None,
    at_peer: dict[str, Route] | None,
) -> tuple[list[str], dict]:
    """The problems of one binding and what it found. `needed`: prefix -> whose loopback, of the routes
    the fabric needs across this session; `peer`: the node on the other end (None: not a node of the
    lab); `at_peer`: outbound, what that node holds from this one; inbound, what it advertised to this
    one (its communities), when read."""
    where = f"{node} {b.peer}{'' if b.vrf == 'default' else f' (VRF {b.vrf})'} {b.way}"
    other = peer or b.peer
    if b.way == "out":
        mine, sent, permitted = table(docs[0]), per_neighbor(docs[1], "advertisedRoutes"), prefixes(docs[2])
        denied = {p: r for p, r in mine.items() if p not in permitted}
        out = [
            f"{where}: {_rule_text(policy, b.route_map, r)} denies {p}, still advertised to {other}"
            for p, r in sorted(denied.items())
            if p in sent
        ]
        # what the peer needs from this node: not what it sent, nor what carries its own AS (it refuses a loop)
        theirs = {r.aspath.split()[0] for r in mine.values() if r.source == b.peer and r.aspath}
        needed = {
            p: w
            for p, w in needed.items()
            if p in mine and mine[p].source != b.peer and not theirs & set(mine[p].aspath.split())
        }
        verb, held = "withholds", mine
    else:
        recv, accepted = per_neighbor(docs[0], "receivedRoutes"), prefixes(docs[1])
        local_as = str(docs[0].get("localAS", "")) if isinstance(docs[0], dict) else ""
        # a route carrying this node's own AS is refused by BGP itself (a loop), not by the map
        recv = {p: r for p, r in recv.items() if local_as not in r.aspath.split()}
        recv = {
            p: Route(p, r.aspath, at_peer[p].communities, at_peer[p].large) if at_peer and p in at_peer else r
            for p, r in recv.items()
        }
        denied = {p: r for p, r in recv.items() if p not in accepted}
        # what the node needs from this session: a loopback it holds from no other neighbor
        needed = {p: w for p, w in needed.items() if p not in table(docs[2])}
        out, verb, held = [], "refuses", recv
    for p, r in sorted(denied.items()):
        if p in needed:
            whose = f"{needed[p]}'s loopback"
            out.append(
                f"{where}: {_rule_text(policy, b.route_map, r)} {verb} {p} ({whose}) "
                f"{'from' if b.way == 'out' else 'sent by'} {other}: the fabric needs it"
            )
    if held and len(denied) == len(held):
        rules = " and ".join(sorted({_rule_text(policy, b.route_map, r) for r in denied.values()}))
        out.append(
            f"{where}: {rules} denies every route of the session ({len(held)}: "
            f"{', '.join(sorted(held)[:6])}{', ...' if len(held) > 6 else ''}): "
            f"{'nothing is advertised to' if b.way == 'out' else 'nothing is accepted from'} {other}"
        )
    if b.way == "out" and at_peer is not None:
        out += _communities(where, policy, b, mine, denied, at_peer, other, node)
    return out, {"route-map": b.route_map, "way": b.way, "denied": sorted(denied)}


def _communities(
    where: str,
    policy: Policy,
    b: Bound,
    mine: dict[str, Route],
    denied: dict[str, Route],
    at_peer: dict[str, Route],
    other: str,
    node: str,
) -> list[str]:
    """A community a rule sets on a route it permits, absent where the peer holds the route from this node."""
    out = []
    for p, r in sorted(mine.items()):
        rule = rule_of(policy, b.route_map, r)
        if p in denied or rule is None or p not in at_peer:
            continue
        for key, want, has in (
            ("community", rule.community, at_peer[p].communities),
            ("large-community", rule.large, at_peer[p].large),
        ):
            values = [v for v in want if v not in ("additive", "none")]
            missing = [v for v in values if v not in has]
            if missing or ("none" in want and has):
                out.append(
                    f"{where}: route-map {b.route_map} rule {rule.seq} sets {key} "
                    f"{' '.join(want)} on {p}; {other} holds it from {node} with "
                    f"{' '.join(has) or 'no ' + key}"
                )
    return out


def checks(ctx: LabContext) -> list[Check]:
    out: list[Check] = []
    nodes = running(ctx.dir, ctx.fabric, ctx.backend, ctx.shaping)
    for node, x in nodes.items():
        binds = bound(x.plane.conf, x.plane.devices, x.plane.vrfs)
        if not binds:
            continue
        cmds = list(dict.fromkeys(c for b in binds for c in b.commands()))
        try:
            got = dict(zip(cmds, ctx.exec(node).vtysh_json(*cmds, timeout=timeouts.VTYSH)))
        except TwinError as e:
            out.append(Check(GROUP, f"route policy {node}", False, f"cannot read its BGP routes: {e}"))
            continue
        problems: list[str] = []
        data: dict[str, dict] = {}
        for b in binds:
            port = ctx.fabric.nodes[node].ports_by_name.get(b.peer) if node in ctx.fabric.nodes else None
            peer = port.peer_node if port is not None else None
            needed = _needed(ctx, peer if b.way == "out" else node)
            at_peer = (
                _at_peer(ctx, peer, port.peer_port, b)
                if (port is not None and peer is not None and peer in ctx.intent.nodes)
                else None
            )
            found, d = judge(node, b, x.plane.conf.policy, [got[c] for c in b.commands()], needed, peer, at_peer)
            problems += found
            data[f"{b.peer} {b.way}"] = d
        out.append(Check(GROUP, f"route policy {node}", not problems, "; ".join(problems), {"bindings": data}))
    return out


def _needed(ctx: LabContext, node: str | None) -> dict[str, str]:
    """prefix -> whose loopback, of the loopbacks `node` must reach (none for a node twin has no intent for)."""
    n = ctx.intent.nodes.get(node) if node else None
    return {p: who for who, p in (n.loopbacks.items() if n else ())}


def _at_peer(ctx: LabContext, peer: str, port: str, b: Bound) -> dict[str, Route] | None:
    """Outbound, what the peer holds from this node (on its `port`); inbound, what it advertises to it."""
    at = f"show bgp vrf {b.vrf} ipv4 unicast"
    cmd = f"{at} detail json" if b.way == "out" else f"{at} neighbors {port} advertised-routes detail json"
    try:
        doc = ctx.exec(peer).vtysh_json(cmd, timeout=timeouts.VTYSH)[0]
    except TwinError:
        return None  # the peer's own checks say why it does not answer
    return paths_from(doc, port) if b.way == "out" else per_neighbor(doc, "advertisedRoutes")
