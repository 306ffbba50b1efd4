"""`twin status`: what a lab is and how it is doing, as plain data."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from twin import converge, evpn, state
from twin.errors import TwinError
from twin.runtime.exec import NodeExec

if TYPE_CHECKING:
    from twin.lab import Lab

PARALLEL = 8


def lab_status(lab: "Lab") -> dict[str, Any]:
    st, fabric = state.load(lab.dir)
    containers = lab.runtime.containers(lab.name)
    names = list(fabric.nodes) if fabric else sorted(containers)
    evpn_docs: dict[str, dict] = {}
    vni_docs: dict[str, dict] = {}

    def one(n: str) -> dict[str, Any]:
        node = fabric.nodes.get(n) if fabric else None
        c = containers.get(n)
        row: dict[str, Any] = {"node": n, "kind": node.kind if node else c.labels.get("twin.kind", "?"),
                               "state": c.status if c else "missing",
                               "asn": node.asn if node else None,
                               "loopback": node.loopback if node else None}
        if not (node and node.runs_bgp):
            return row
        row.update(sessions_expected=len(fabric.sessions(n)), sessions_up=None)
        if c is None or c.status != "running":
            return row
        vtep = bool(fabric.tenants_on(n))
        cmds = [converge.SUMMARY] + ([evpn.ROUTES, evpn.VNIS] if vtep else [])
        try:
            docs = NodeExec(c, f"{lab.name}/{n}").vtysh_json(*cmds, timeout=15)
        except TwinError as e:
            row["error"] = str(e).splitlines()[0]
            return row
        states = converge.sessions_state(fabric, n, docs[0])
        row["sessions_up"] = sum(s == "Established" for s in states.values())
        row["sessions_down"] = sorted(p for p, s in states.items() if s != "Established")
        if vtep:
            evpn_docs[n], vni_docs[n] = docs[1], docs[2]
        return row

    with ThreadPoolExecutor(PARALLEL) as pool:
        rows = list(pool.map(one, names))

    tenants = []
    for t in (fabric.tenants.values() if fabric else []):
        vteps = {}
        for v in t.vteps():
            if v not in evpn_docs:
                vteps[v] = {"reachable": False}
                continue
            vnis = evpn.vni_states(vni_docs[v])
            expected = [t.l3vni] + [s.l2vni for s in t.segments_on(v)]
            vteps[v] = {"vnis_up": sorted(x for x in expected if x in vnis),
                        "vnis_missing": sorted(x for x in expected if x not in vnis),
                        **evpn.route_counts(evpn_docs[v], t)}
        tenants.append({
            "tenant": t.name, "vrf": t.vrf, "l3vni": t.l3vni,
            "segments": [{"segment": s.name, "l2vni": s.l2vni, "subnet": s.subnet, "gateway": s.gateway,
                          "vteps": t.segment_vteps(s.name)} for s in t.segments.values()],
            "hosts": [{"host": a.host, "segment": a.segment, "address": a.address, "vtep": f"{a.vtep}:{a.port}"}
                      for a in t.attachments],
            "vteps": vteps,
        })
    return {"lab": lab.name, "status": st.status if st else ("orphaned" if containers else "absent"),
            "topology": st.topology if st else None, "image": st.image if st else None,
            "vrf_backend": st.backend if st else None,
            "dir": str(lab.dir), "timings": st.timings if st else {}, "nodes": rows, "tenants": tenants}
