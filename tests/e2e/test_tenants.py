"""Tenants on real EVPN-VXLAN: the default lab (DPUs are the VTEPs) and the
leaf-VTEP lab must give the same answers. Both have tenants red and blue with
the same subnets; host?a/host?b even share addresses across tenants.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from scapy.layers.inet import IP
from scapy.layers.vxlan import VXLAN

from twin.intent.tenants import vrf_routes
from twin.runtime import frr
from twin.traffic.capture import Capture
from twin.verify.control import compare

pytestmark = pytest.mark.e2e

LABS = {"dpu": ("topologies/aipod.yml", "t-ev-dpu"), "leaf": ("topologies/leaf-vtep.yml", "t-ev-leaf")}


@pytest.fixture(scope="module", params=sorted(LABS))
def lab(request, make_lab):
    topology, name = LABS[request.param]
    lab = make_lab(topology, name)
    yield lab
    lab.down()


def ping(lab, host: str, dst: str, count: int = 3, tos: int = 0) -> bool:
    cmd = ["ping", "-c", str(count), "-i", "0.05", "-W", "1", dst] + (["-Q", str(tos)] if tos else [])
    return lab.node(host).run(cmd).ok


def routes_of(lab, vtep: str, vrf: str) -> dict:
    (doc,) = lab.node(vtep).vtysh_json(frr.vrf_routes_cmd(vrf))
    return frr.vrf_routes(doc)


def vnis_of(t) -> set[int]:
    return {t.l3vni} | {s.l2vni for s in t.segments.values()}


def address(lab, host: str) -> str:
    return lab.fabric.attachment_of(host)[1].address.split("/")[0]


def test_the_vrf_backend_is_netns_on_every_kernel_unless_asked(lab):
    assert lab.backend == "netns" and lab.loaded.vrf_backend is None
    assert lab.status().vrf_backend == lab.backend


@pytest.mark.parametrize(
    "src,dst,how",
    [
        ("host1a", "host2a", "red web stretched across VTEPs (L2VNI)"),
        ("host1b", "host2b", "blue web stretched across VTEPs (L2VNI)"),
        ("host2a", "host1c", "red web -> db routed across VTEPs (L3VNI, type-5/type-2)"),
        ("host1a", "host1c", "red web -> db routed on one VTEP"),
        ("host1b", "host2c", "blue web -> db routed across VTEPs"),
    ],
)
def test_same_tenant_hosts_reach_each_other(lab, src, dst, how):
    assert ping(lab, src, address(lab, dst)), f"{src} cannot reach {dst}: {how}"


@pytest.mark.parametrize(
    "src,dst", [("host1a", "host2c"), ("host2a", "host2c"), ("host1b", "host1c"), ("host2b", "host1c")]
)
def test_hosts_of_different_tenants_cannot_reach_each_other(lab, src, dst):
    assert not ping(lab, src, address(lab, dst), count=2), f"{src} reached {dst} of another tenant"


def test_the_same_address_in_two_tenants_reaches_only_its_own_tenant(lab):
    """blue host2b -> 10.1.1.11: blue's host1b must answer; red's host1a (also 10.1.1.11) sees nothing."""
    a1, b1 = lab.fabric.attachment_of("host1a")[1], lab.fabric.attachment_of("host1b")[1]
    assert a1.address == b1.address == "10.1.1.11/24"
    with Capture(lab.node("host1a"), "eth1", "icmp") as red, Capture(lab.node("host1b"), "eth1", "icmp") as blue:
        assert ping(lab, "host2b", "10.1.1.11", count=10)
    assert len([p for p in blue.packets if IP in p and p[IP].src == "10.1.1.12"]) == 10, "blue host1b got the pings"
    assert [p.summary() for p in red.packets] == [], "red host1a saw blue's traffic"
    neigh = lab.node("host2b").check(["ip", "neigh", "show", "10.1.1.11"]).stdout
    assert b1.mac in neigh and a1.mac not in neigh, neigh


def test_no_prefix_of_one_tenant_appears_in_another_vrf(lab):
    fabric = lab.fabric
    failures = {}
    for vtep in fabric.vteps():
        for t in fabric.tenants_on(vtep):
            expected = vrf_routes(fabric, vtep, t)
            diffs = compare(expected, routes_of(lab, vtep, t.vrf))
            if diffs:
                failures[f"{vtep}/{t.vrf}"] = diffs
    assert failures == {}
    # and the check is not vacuous: blue's db host is a /32 in blue's VRF on the other VTEP, never in red's
    a = fabric.attachment_of("host2c")[1]
    other = next(v for v in fabric.vteps() if v != a.vtep)
    assert "10.1.2.12/32" in routes_of(lab, other, "blue")
    assert "10.1.2.12/32" not in routes_of(lab, other, "red")


def test_the_underlay_carries_each_tenant_in_its_own_vni(lab):
    """Capture VXLAN on every fabric port of host1?'s VTEP while both tenants talk across the fabric."""
    fabric = lab.fabric
    vtep = fabric.attachment_of("host1a")[1].vtep
    ex = lab.node(vtep)
    ports = [p.name for p in fabric.nodes[vtep].fabric_ports]
    caps = [Capture(ex, p, "udp port 4789") for p in ports]
    for c in caps:
        c.__enter__()
    try:
        with ThreadPoolExecutor(4) as pool:
            results = list(
                pool.map(
                    lambda args: ping(lab, *args),
                    [
                        ("host1a", "10.1.1.12", 5, 0x68),  # red web, stretched: red L2VNI
                        ("host1b", "10.1.1.12", 5, 0x68),  # blue web, stretched: blue L2VNI
                        ("host1a", "10.1.2.11", 1),  # warm-up within the VTEP
                        ("host2a", "10.1.2.11", 5),  # red routed across: red L3VNI
                        ("host1b", "10.1.2.12", 5),  # blue routed across: blue L3VNI
                    ],
                )
            )
    finally:
        for c in caps:
            c.__exit__(None, None, None)
    assert all(results)
    red, blue = fabric.tenants["red"], fabric.tenants["blue"]
    host = {n: fabric.attachment_of(n)[1] for n in ("host1a", "host2a", "host1b", "host2b", "host1c", "host2c")}
    seen: dict[int, set[tuple[str, str]]] = {}
    outer_tos: set[tuple[int, int]] = set()
    outer_df: set[bool] = set()
    for c in caps:
        for p in c.packets:
            if VXLAN in p and IP in p[VXLAN].payload:
                inner = p[VXLAN].payload[IP]
                seen.setdefault(p[VXLAN].vni, set()).add((inner.src, inner.dst))
                outer_tos.add((p[IP].tos, inner.tos))
                outer_df.add(bool(p[IP].flags.DF))
    ip = lambda n: host[n].address.split("/")[0]  # noqa: E731
    assert (ip("host1a"), ip("host2a")) in seen.get(red.segments["web"].l2vni, set()), seen
    assert (ip("host1b"), ip("host2b")) in seen.get(blue.segments["web"].l2vni, set()), seen
    assert (ip("host2a"), ip("host1c")) in seen.get(red.l3vni, set()) | seen.get(red.segments["db"].l2vni, set()), seen
    assert (ip("host1b"), ip("host2c")) in (
        seen.get(blue.l3vni, set()) | seen.get(blue.segments["web"].l2vni, set())
    ), seen
    # each VNI carries only its own tenant's hosts
    red_vnis = {red.l3vni, *(s.l2vni for s in red.segments.values())}
    blue_vnis = {blue.l3vni, *(s.l2vni for s in blue.segments.values())}
    assert set(seen) <= red_vnis | blue_vnis
    blue_only = {ip("host2c")}
    red_only = {ip("host1c")}
    assert not any(blue_only & {s, d} for v in red_vnis for s, d in seen.get(v, ())), "blue address in a red VNI"
    assert not any(red_only & {s, d} for v in blue_vnis for s, d in seen.get(v, ())), "red address in a blue VNI"
    assert (0x68, 0x68) in outer_tos, "tos inherit: the inner DSCP is copied to the outer header"
    assert outer_df == {True}, "every VXLAN packet leaves its VTEP with DF set, as a switch's does"


def test_status_shows_tenants_vnis_vteps_and_routes(lab):
    st = lab.status().to_dict()
    tenants = {t["tenant"]: t for t in st["tenants"]}
    assert set(tenants) == {"red", "blue"}
    red = tenants["red"]
    assert red["l3vni"] == 10100 and {s["l2vni"] for s in red["segments"]} == {10101, 10102}
    assert {h["host"] for h in red["hosts"]} == {"host1a", "host2a", "host1c"}
    t = lab.fabric.tenants["red"]
    for vtep, r in red["vteps"].items():
        assert r["vnis_missing"] == [] and 10100 in r["vnis_up"]
        # IMET per (VTEP, segment); type-5 per (VTEP, local subnet); type-2: MAC and MAC/IP per host
        # (plus MAC/IPv6 link-local routes once hosts have spoken IPv6)
        assert (r["type3"], r["type5"]) == (3, 3) and r["type2"] >= 6, (vtep, r)
        (doc,) = lab.node(vtep).vtysh_json(frr.ROUTES)
        macip = {
            tuple(k.split(":[")[i].strip("[]") for i in (3, 5))
            for rtype, k, vnis in frr.evpn_routes(doc)
            if rtype == 2 and vnis & vnis_of(t) and "[32]" in k
        }
        assert macip == {(a.mac, a.address.split("/")[0]) for a in t.attachments}, (vtep, macip)
