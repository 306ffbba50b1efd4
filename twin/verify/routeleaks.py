"""Route leaks between VRFs, read from each VTEP's RIB (part of the isolation group, issue 44): a
tenant's VRF holding a route whose next hop lies in another VRF (FRR's `import vrf`, NVUE's
`route-import from-vrf`) breaks isolation on a real fabric, whether or not this kernel can forward
it (a route cannot lead from one namespace into another: on the netns VRF backend FRR holds the
leaked route, inactive, and the frames go nowhere; the RIB still says what the switch would do).

    routeleaks.run(ctx)   # one Check per VTEP: which VRF holds whose routes
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from twin.base import timeouts
from twin.base.errors import TwinError
from twin.intent import NodeIntent
from twin.lifecycle.context import LabContext
from twin.runtime import carried, vrf_routes_cmd
from twin.verify.result import Check

GROUP = "isolation"


def leaked(vrf: str, doc: dict) -> dict[str, str]:
    """prefix -> the other VRF its next hop lies in, of `show ip route vrf VRF json`."""
    out = {}
    for prefix, entries in doc.items() if isinstance(doc, dict) else ():
        for e in entries if isinstance(entries, list) else ():
            for nh in e.get("nexthops", []) if isinstance(e, dict) else ():
                other = nh.get("vrf") if isinstance(nh, dict) else None
                if isinstance(other, str) and other != vrf:
                    out[prefix] = other
    return out


def check_node(ctx: LabContext, n: NodeIntent) -> Check:
    vrfs = [t.vrf for t in n.tenants]
    owner = {t.vrf: t.tenant for t in n.tenants}
    try:
        docs = ctx.exec(n.node).vtysh_json(*[vrf_routes_cmd(v) for v in vrfs], timeout=timeouts.VTYSH)
    except TwinError as e:
        return Check(GROUP, f"route leaks {n.node}", False, f"cannot read its VRFs' routes: {e}")
    found = {v: leaked(v, doc) for v, doc in zip(vrfs, docs)}
    msgs = [
        f"{n.node}: VRF {v} ({owner[v]}) holds {p} from VRF {src}"
        + (f" ({owner[src]})" if src in owner else " (the underlay)" if src == "default" else "")
        + f": an import leaks {owner.get(src, src)} into {owner[v]} (route-import from-vrf, FRR's import vrf)"
        for v, got in found.items()
        for p, src in sorted(got.items())
    ]
    return Check(
        GROUP,
        f"route leaks {n.node}",
        not msgs,
        "; ".join(msgs),
        {"leaked": {v: got for v, got in found.items() if got}},
    )


def run(ctx: LabContext) -> list[Check]:
    vteps = [n for n in ctx.intent.nodes.values() if n.vtep]
    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(carried(lambda n: check_node(ctx, n)), vteps))
