"""Where tenant traffic crosses the underlay: the paths between VTEPs, worked out from the fabric.

BGP keeps the shortest AS paths and spreads over all of them (multipath, `as-path
multipath-relax`), and every router has its own AS but the spines' shared one, so
the paths a VXLAN frame may take from VTEP `a` to VTEP `b` are the shortest paths
of the fabric graph: at each router, every port whose peer is one hop closer to `b`.
Drained routers (graceful shutdown) are left out when `b` can be reached without them.

    paths.next_hops(fabric, "dpu1", "dpu2")   # {"dpu1": ("p0", "p1"), "leaf1": ("swp4",), ...}
    paths.carried(fabric)                     # every (router, port) a tenant's frame may leave by
    paths.branching(fabric)                   # routers that choose between ports (ECMP) on those paths
    paths.uneven(fabric, "dpu1")              # a pair whose equal-cost ports lead to different ASes (relax)
    paths.cover(fabric)                       # a few VTEP pairs whose paths cross all of that
    paths.crosses(fabric, "dpu2", "dpu1", "leaf1", "swp2")   # every path dpu2 -> dpu1 leaves leaf1 by swp2
"""

from __future__ import annotations

from twin.topology.model import Fabric


def avoidable(fabric: Fabric, src: str, dst: str) -> list[str]:
    """Drained routers that frames from VTEP `src` to VTEP `dst` must not cross: every drained
    router other than the two VTEPs, if some fabric path joins them without crossing one.
    Without such a path BGP still uses the drained paths (at LOCAL_PREF 0): nothing to avoid."""
    drained = set(fabric.drained()) - {src, dst}
    return sorted(drained) if drained and dst in fabric.hops(src, drained) else []


def next_hops(fabric: Fabric, src: str, dst: str) -> dict[str, tuple[str, ...]]:
    """Every router on the shortest paths from `src` to `dst` (but `dst`) -> its ports towards `dst`."""
    avoid = set(avoidable(fabric, src, dst))
    dist = fabric.hops(dst, avoid)
    if src not in dist:
        return {}
    out: dict[str, tuple[str, ...]] = {}
    todo = [src]
    while todo:
        node = todo.pop()
        if node == dst or node in out:
            continue
        ports = tuple(p.name for p in fabric.nodes[node].fabric_ports if dist.get(p.peer_node, -1) == dist[node] - 1)
        out[node] = ports
        todo += [fabric.nodes[node].ports_by_name[p].peer_node for p in ports]
    return out


def vtep_pairs(fabric: Fabric) -> list[tuple[str, str]]:
    """Ordered pairs of VTEPs that carry a tenant's traffic between them (a tenant on both)."""
    out = []
    for a in fabric.vteps():
        for b in fabric.vteps():
            if a != b and any(a in t.vteps() and b in t.vteps() for t in fabric.tenants.values()):
                out.append((a, b))
    return out


def carried(fabric: Fabric) -> set[tuple[str, str]]:
    """(router, port) pairs some tenant frame may leave by: the links of tenant paths, each way."""
    return {(n, p) for a, b in vtep_pairs(fabric) for n, ports in next_hops(fabric, a, b).items() for p in ports}


def branching(fabric: Fabric) -> dict[str, set[tuple[str, str]]]:
    """Routers that spread some VTEP pair's frames over several ports (ECMP) -> those pairs."""
    out: dict[str, set[tuple[str, str]]] = {}
    for a, b in vtep_pairs(fabric):
        for n, ports in next_hops(fabric, a, b).items():
            if len(ports) > 1:
                out.setdefault(n, set()).add((a, b))
    return out


def uneven(fabric: Fabric, node: str) -> tuple[str, str, tuple[str, ...]] | None:
    """A VTEP pair whose equal-cost ports at `node` lead to peers of different ASes (their AS paths
    differ, so only `as-path multipath-relax` makes them multipath), with those ports; None: none."""
    ports = fabric.nodes[node].ports_by_name
    for a, b in sorted(branching(fabric).get(node, ())):
        hops = next_hops(fabric, a, b)[node]
        if len({fabric.nodes[ports[p].peer_node].asn for p in hops}) > 1:
            return a, b, hops
    return None


def chooses_twice(fabric: Fabric) -> bool:
    """Does some VTEP pair's path cross two routers that each choose between ports (a leaf, then a
    spine)? Then the second must not repeat the first one's choice (hash seeds of their own)."""
    return any(sum(len(ps) > 1 for ps in next_hops(fabric, a, b).values()) > 1 for a, b in vtep_pairs(fabric))


def cover(fabric: Fabric) -> list[tuple[str, str]]:
    """A few VTEP pairs whose paths together leave by every carried (router, port) and pass every
    branching router: chosen greedily (most new ports first, then the farthest pair), so flows
    between them cross every link and every ECMP choice that tenant traffic can use."""
    pairs = vtep_pairs(fabric)
    hops = {a: fabric.hops(a) for a in fabric.vteps()}
    want = carried(fabric) | {(n, "") for n in branching(fabric)}
    reach = {}
    for a, b in pairs:
        nh = next_hops(fabric, a, b)
        reach[(a, b)] = {(n, p) for n, ports in nh.items() for p in ports} | {
            (n, "") for n, ps in nh.items() if len(ps) > 1
        }
    chosen: list[tuple[str, str]] = []
    while want:
        best = max(pairs, key=lambda ab: (len(reach[ab] & want), hops[ab[0]].get(ab[1], 0), ab))
        if not reach[best] & want:
            break
        chosen.append(best)
        want -= reach[best]
    return chosen


def crosses(fabric: Fabric, src: str, dst: str, node: str, port: str) -> bool:
    """Does every path from VTEP `src` to VTEP `dst` leave `node` by `port` (whatever ECMP chooses)?"""
    nh = next_hops(fabric, src, dst)
    memo: dict[str, bool] = {}

    def every(x: str) -> bool:  # every path on from x crosses node:port
        if x == node:
            return nh.get(x) == (port,)
        if not nh.get(x):
            return False
        if x not in memo:
            memo[x] = all(every(fabric.nodes[x].ports_by_name[p].peer_node) for p in nh[x])
        return memo[x]

    return node in nh and every(src)
