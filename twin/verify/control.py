"""Control-plane checks from intent: BGP sessions, VNIs with their VTEPs, VRF contents."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from twin import evpn
from twin.errors import TwinError
from twin.verify import vrfs
from twin.verify.jsoncmp import subset
from twin.verify.result import Check

if TYPE_CHECKING:
    from twin.lab import Lab

GROUP = "control"


def expected_summary(lab: "Lab", node: str) -> dict:
    peers = {s.port: {"state": "Established", "hostname": s.peer} for s in lab.fabric.sessions(node)}
    out = {"ipv4Unicast": {"peers": peers}}
    if lab.fabric.tenants:
        out["l2VpnEvpn"] = {"peers": {p: {"state": "Established"} for p in peers}}
    return out


def expected_vnis(lab: "Lab", node: str) -> dict[int, dict]:
    f = lab.fabric
    out = {}
    for t in f.tenants_on(node):
        out[t.l3vni] = {"vni": t.l3vni, "type": "L3", "vrf": t.vrf}
        for s in t.segments_on(node):
            remotes = sorted(f.nodes[v].loopback for v in t.segment_vteps(s.name) if v != node)
            out[s.l2vni] = {"vni": s.l2vni, "type": "L2", "vrf": t.vrf, "remoteVteps": remotes}
    return out


def check_node(lab: "Lab", node: str) -> list[Check]:
    f = lab.fabric
    ex = lab.node(node)
    vtep = bool(f.tenants_on(node))
    try:
        (summary,) = ex.vtysh_json("show bgp summary json", timeout=20)
        diffs = subset(expected_summary(lab, node), summary)
    except TwinError as e:
        diffs = [f"cannot read BGP state: {e}"]
    checks = [Check(GROUP, f"bgp {node}", not diffs, "; ".join(diffs),
                    {"expected_sessions": [str(s) for s in f.sessions(node)]})]
    if not vtep:
        return checks
    try:  # a separate call: FRR 8.4 prints nothing at all here once EVPN is off on the node
        (vni_doc,) = ex.vtysh_json(evpn.VNIS, timeout=20)
    except TwinError as e:
        vni_doc = {}
        checks.append(Check(GROUP, f"vnis {node}", False, f"cannot read VNI state: {e}"))
    have = evpn.vni_states(vni_doc)
    for vni, want in expected_vnis(lab, node).items():
        got = evpn.normalize_vni(have.get(vni, {}))
        diffs = [f"VNI {vni} missing"] if vni not in have else subset(want, got, f"vni {vni}")
        checks.append(Check(GROUP, f"vni {node} {vni}", not diffs, "; ".join(diffs), {"expected": want}))
    owner = {}
    for t in f.tenants.values():
        for a in t.attachments:
            owner.setdefault(a.address.split("/")[0] + "/32", t.name)
    for t in f.tenants_on(node):
        try:
            actual = vrfs.vrf_routes(ex, t.vrf)
        except TwinError as e:
            checks.append(Check(GROUP, f"vrf {node} {t.vrf}", False, f"cannot read VRF {t.vrf}: {e}"))
            continue
        expected = vrfs.expected_routes(f, node, t)
        diffs = vrfs.compare(expected, actual, {p: f"of tenant {o}" for p, o in owner.items() if o != t.name})
        checks.append(Check(GROUP, f"vrf {node} {t.vrf}", not diffs, "; ".join(diffs),
                            {"expected": {p: sorted(h) for p, h in expected.items()},
                             "actual": {p: sorted(h) for p, h in actual.items()}}))
    return checks


def run(lab: "Lab") -> list[Check]:
    with ThreadPoolExecutor(8) as pool:
        return [c for cs in pool.map(lambda n: check_node(lab, n.name), lab.fabric.routers()) for c in cs]
