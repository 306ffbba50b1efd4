"""MTU evidence: every link carries the largest frame the topology's intent puts on it, and frames
of that size cross the fabric.

- every link, both ends as the kernel has them now (whatever made them: twin's rendering, a
  node's own configuration such as NVUE's `link.mtu`): a host link must carry its host's frames
  (the host port's MTU in the topology), a fabric link the largest VXLAN frame of the tenants
  (their hosts' MTU + 50 bytes of VXLAN) and at least the topology's MTU for it. An end below
  that is named with what needs it (`leaf01 swp51 mtu 1500 < 9000 needed by VXLAN frames of red
  (8950 + 50)`); two ends that differ are said, as on a switch;
- frames of the hosts' full MTU (IPv4, DF set) between VTEP pairs whose paths together cross
  every link tenant traffic may use (`twin.intent.paths.cover`), each way, 16 flows each over
  the equal-cost paths: every frame arrives (a veth drops a frame above its MTU, where the
  switch would). A pair that loses frames names the short links of its paths.
"""

from __future__ import annotations

from twin.config.backend import tenant_ns
from twin.intent import paths
from twin.lifecycle.context import LabContext
from twin.runtime import read_interfaces
from twin.topology.model import Attachment, Fabric
from twin.topology.tenant_checks import VXLAN_OVERHEAD
from twin.traffic import flows as F
from twin.verify.result import Check

GROUP = "mtu"
FLOWS = 16  # per pair and way: spread over the equal-cost paths by their UDP source ports


def needs(fabric: Fabric) -> dict[tuple[str, str], tuple[int, str]]:
    """(node, port) -> (the MTU it must have, what needs it), for both ends of every link."""
    tenant_mtu = {
        t.name: max((F.host_mtu(fabric, a) for a in t.attachments), default=0) for t in fabric.tenants.values()
    }
    inner = max(tenant_mtu.values(), default=0)
    out: dict[tuple[str, str], tuple[int, str]] = {}
    for t in fabric.tenants.values():
        for a in t.attachments:
            m = F.host_mtu(fabric, a)
            for end in ((a.host, a.host_port), (a.vtep, a.port)):
                out[end] = (m, f"{a.host}'s frames ({t.name})")
    carried = paths.carried(fabric) if fabric.tenants else set()
    for n in fabric.routers():
        for p in n.fabric_ports:
            over = (
                inner + VXLAN_OVERHEAD
                if inner and ((n.name, p.name) in carried or (p.peer_node, p.peer_port) in carried)
                else 0
            )
            if over > p.mtu:
                names = ", ".join(sorted(t for t, m in tenant_mtu.items() if m == inner))
                out[(n.name, p.name)] = (over, f"VXLAN frames of {names} ({inner} + {VXLAN_OVERHEAD})")
            else:
                out[(n.name, p.name)] = (p.mtu, "the topology's MTU of this link")
    return out


def kernel_mtus(ctx: LabContext) -> dict[tuple[str, str], int]:
    """(node, port) -> its MTU in the kernel now, for every port of the topology found there."""
    out: dict[tuple[str, str], int] = {}
    for n in ctx.fabric.nodes.values():
        if not n.ports_by_name:
            continue
        spaces = [""] + sorted({tenant_ns(t, ctx.backend) for t in ctx.fabric.tenants_on(n.name)} - {""})
        for ns in spaces:
            with ctx.ipr(n.name, ns) as ipr:
                links = read_interfaces(ipr)
            for port in n.ports_by_name:
                if port in links and (n.name, port) not in out and links[port].get("mtu"):
                    out[(n.name, port)] = int(links[port]["mtu"])
    return out


def run(ctx: LabContext) -> list[Check]:
    fabric = ctx.fabric
    need = needs(fabric)
    now = kernel_mtus(ctx)
    short: dict[tuple[str, str], str] = {}
    checks = []
    seen = set()
    for (node, port), (m, why) in sorted(need.items()):
        p = fabric.nodes[node].ports_by_name[port]
        link = tuple(sorted([(node, port), (p.peer_node, p.peer_port)]))
        if link in seen:
            continue
        seen.add(link)
        problems, ends = [], {}
        for end in link:
            want, what = need.get(end, (m, why))
            have = now.get(end)
            ends[f"{end[0]}:{end[1]}"] = have
            if have is None:
                problems.append(f"{end[0]} {end[1]}: not found in the kernel")
            elif have < want:
                problems.append(f"{end[0]} {end[1]} mtu {have} < {want} needed by {what}")
                short[end] = f"{end[0]} {end[1]} mtu {have}"
        mtus = {v for v in ends.values() if v is not None}
        note = [f"its ends differ ({', '.join(f'{k} {v}' for k, v in ends.items())})"] if len(mtus) > 1 else []
        a, b = link
        checks.append(
            Check(
                GROUP,
                f"{a[0]}:{a[1]} - {b[0]}:{b[1]}",
                not problems,
                "; ".join(problems + note),
                {"mtu": ends, "needed": max(need.get(e, (0, ""))[0] for e in link)},
            )
        )
    return checks + _frames(ctx, short)


def _frames(ctx: LabContext, short: dict[tuple[str, str], str]) -> list[Check]:
    """Full-size frames both ways between the covering VTEP pairs' hosts."""
    fabric = ctx.fabric
    pairs = []
    for va, vb in paths.cover(fabric):
        t = next((t for t in fabric.tenants.values() if va in t.vteps() and vb in t.vteps()), None)
        if t is None:
            continue
        src = min((a for a in t.attachments if a.vtep == va), key=_unlimited_first)
        dst = min((a for a in t.attachments if a.vtep == vb), key=_unlimited_first)
        pairs += [(t.name, src.host, dst.host), (t.name, dst.host, src.host)]
    if not pairs:
        return []
    flows: list = []
    mine: list[tuple[int, list[int]]] = []
    for _, s, d in pairs:
        sa, da = fabric.attachment(s)[1], fabric.attachment(d)[1]
        size = min(fabric.nodes[s].ports_by_name[sa.host_port].mtu, fabric.nodes[d].ports_by_name[da.host_port].mtu)
        ids = []
        for _ in range(FLOWS):
            f = F.flow(fabric, s, d, len(flows) + 1, count=1, payload=size - F.ROCE_HEADERS, sport=41000 + len(flows))
            flows.append(f)
            ids.append(f.flow_id)
        mine.append((size, ids))
    results = F.run(ctx, flows, {f.flow_id: True for f in flows}, check_icrc=False)
    out = []
    for (tenant, s, d), (size, ids) in zip(pairs, mine):
        sent = sum(results[i].sent for i in ids)
        got = sum(results[i].received for i in ids)
        sa, da = fabric.attachment(s)[1], fabric.attachment(d)[1]
        on_path = [
            why for (n, p), why in sorted(short.items()) if n in (s, d) or _on_paths(fabric, sa.vtep, da.vtep, n, p)
        ]
        msg = (
            ""
            if got >= sent
            else (
                f"{sent - got}/{sent} frames of {size} B (DF) lost"
                + (f"; on their paths: {', '.join(on_path)}" if on_path else "")
            )
        )
        out.append(
            Check(
                GROUP,
                f"{tenant} {s} -> {d} ({size} B frames)",
                got >= sent,
                msg,
                {"sent": sent, "delivered": got, "size": size, "flows": len(ids)},
            )
        )
    return out


def _on_paths(fabric: Fabric, a: str, b: str, node: str, port: str) -> bool:
    """Does some path between VTEPs `a` and `b` (either way) cross `node`:`port`?"""
    if node not in fabric.nodes or port not in fabric.nodes[node].ports_by_name:
        return False
    peer = fabric.nodes[node].ports_by_name[port]
    hops = [paths.next_hops(fabric, x, y) for x, y in ((a, b), (b, a))]
    return any(port in nh.get(node, ()) or peer.peer_port in nh.get(peer.peer_node, ()) for nh in hops)


def _unlimited_first(a: Attachment) -> tuple[bool, str]:
    """A host no rate limit holds back first (its frames measure MTUs, not its limit)."""
    return a.rate_limit is not None, a.host
