"""Zero-trust: a workload cannot get anything into another tenant, nor pass as
someone else, whatever it crafts. Each host endpoint attacks:

- IP spoofing: RoCE to a host of its own tenant with another tenant's address
  as source (another host's when it is the only tenant);
- MAC spoofing: the same with another host's MAC;
- VXLAN injection: UDP 4789 frames carrying another tenant's VNI, aimed at the
  victim's VTEP loopback (routed) and, bridged, at a peer on its own segment.

Pass: nothing of it arrives anywhere. What makes it true is in the rendered VTEP
config: per host port, nftables rules that admit only the host's own MAC and
IPv4 address and never VXLAN (`<labdir>/<vtep>/nftables*.nft`).
"""
from __future__ import annotations

from twin.lifecycle.context import LabContext
from twin.traffic import flows as F
from twin.traffic.roce import Flow
from twin.verify.result import Check

GROUP = "zerotrust"
COUNT = 3


def attacks(ctx: LabContext) -> list[tuple[str, Flow]]:
    fabric = ctx.fabric
    hosts = F.hosts(fabric)
    out: list[tuple[str, Flow]] = []

    def add(what: str, f: Flow) -> None:
        out.append((what, Flow(**{**f.__dict__, "flow_id": len(out) + 1})))

    for h in hosts:
        ht, ha = fabric.attachment_of(h)
        peers = [x for x in hosts if x != h and F.same_tenant(fabric, h, x)]
        others = [x for x in hosts if not F.same_tenant(fabric, h, x)]
        mine = ha.address
        # someone else's address: another tenant's first (overlapping plans may share ours)
        victim = next((x for x in others + peers[1:] if fabric.attachment_of(x)[1].address != mine), None)
        if peers and victim:
            target = peers[0]
            va = fabric.attachment_of(victim)[1]
            base = F.flow(fabric, h, target, 0, count=COUNT, payload=64, sport=41000 + len(out))
            add(f"{h} sends as {va.address.split('/')[0]} ({victim}) to {target}",
                Flow(**{**base.__dict__, "src_ip": va.address.split("/")[0]}))
            add(f"{h} sends as MAC {va.mac} ({victim}) to {target}",
                Flow(**{**base.__dict__, "src_mac": va.mac}))
        for v in others[:1]:
            vt, va = fabric.attachment_of(v)
            inner = F.flow(fabric, v, v, 0, count=COUNT, payload=64, sport=42000 + len(out))
            inner = Flow(**{**inner.__dict__, "src": h, "src_mac": "02:66:66:66:66:66",
                            "dst_mac": va.mac, "src_ip": "10.66.66.66"})
            gw_mac = ht.segments[ha.segment].mac
            vni = vt.segments[va.segment].l2vni
            my_ip = ha.address.split("/")[0]
            vtep_ip = fabric.nodes[va.vtep].loopback
            add(f"{h} injects VXLAN VNI {vni} ({vt.name}) to VTEP {va.vtep} {vtep_ip}",
                Flow(**{**inner.__dict__, "vxlan": (ha.mac, gw_mac, my_ip, vtep_ip, vni)}))
            if peers:
                pa = fabric.attachment_of(peers[0])[1]
                add(f"{h} injects VXLAN VNI {vni} ({vt.name}) bridged to {peers[0]}",
                    Flow(**{**inner.__dict__, "vxlan": (ha.mac, pa.mac, my_ip, pa.address.split('/')[0], vni)}))
    return out


def run(ctx: LabContext) -> list[Check]:
    todo = attacks(ctx)
    if not todo:
        return []
    flows = [f for _, f in todo]
    results = F.run(ctx, flows, {f.flow_id: False for f in flows}, check_icrc=False)
    checks = []
    for what, f in todo:
        r = results[f.flow_id]
        seen = {h: n for h, n in r.seen_at.items() if h != f.src}
        a = ctx.fabric.attachment_of(f.src)[1]
        msg = "" if not seen else (f"delivered: seen at {', '.join(f'{h} ({n} frames)' for h, n in seen.items())}; "
                                   f"host port {a.vtep}:{a.port} does not stop it")
        checks.append(Check(GROUP, what, not seen, msg, {"sent": r.sent, "seen_at": seen,
                                                          "port": f"{a.vtep}:{a.port}"}))
    return checks
