"""Golden tests of the derived fabric and the rendered day-0 configs, one case per topology."""

import json
from pathlib import Path

import pytest

from twin.config.render import render_lab
from twin.topology import load

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "render"
CASES = {  # case: (topology, VRF backend of the VTEPs[, how rate limits are enforced])
    "aipod": ("topologies/aipod.yml", "netns"),
    "dpu-services": ("topologies/dpu-services.yml", "netns"),
    "dpu-services-vrf": ("topologies/dpu-services.yml", "vrf"),
    "dpu-services-nft": ("topologies/dpu-services.yml", "netns", "nft"),
    "aipod-vrf": ("topologies/aipod.yml", "vrf"),
    "leaf-vtep": ("topologies/leaf-vtep.yml", "netns"),
    "leaf-vtep-vrf": ("topologies/leaf-vtep.yml", "vrf"),
    "fabric-4x8": ("topologies/fabric-4x8.yml", "netns"),
    "overrides": ("tests/golden/render/overrides.yml", "netns"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_configs_match_golden(case, golden, monkeypatch):
    monkeypatch.chdir(ROOT)
    topology, backend, *shaping = CASES[case]
    fabric = load(topology)
    golden(GOLDEN / case / "fabric.json", json.dumps(fabric.model_dump(), indent=2) + "\n")
    rendered = render_lab(fabric, backend, *shaping)
    for node, files in rendered.items():
        for name, text in files.items():
            golden(GOLDEN / case / node / name, text)
    # no stale golden files for nodes/files that are no longer rendered
    on_disk = {p.relative_to(GOLDEN / case).as_posix() for p in (GOLDEN / case).rglob("*") if p.is_file()}
    assert on_disk - {"fabric.json"} == {f"{n}/{f}" for n, fs in rendered.items() for f in fs}


def test_defaults_are_derived(monkeypatch):
    monkeypatch.chdir(ROOT)
    f = load("tests/golden/render/overrides.yml")
    n = f.nodes
    assert n["s1"].asn == n["s2"].asn == 64600, "spines share their tier's ASN"
    assert (n["l1"].asn, n["l2"].asn, n["d1"].asn) == (64701, 64700, 64800)
    assert n["d1"].loopback == "192.168.100.1"
    assert [n[x].loopback for x in ("s1", "s2", "l1", "l2")] == [
        "192.168.100.2",
        "192.168.100.3",
        "192.168.100.4",
        "192.168.100.5",
    ], "pool skips explicit addresses"
    assert [p.name for p in n["l2"].ports] == ["swp1", "swp7", "swp2", "swp3"], "auto ports skip explicit ones"
    assert [p.name for p in n["d1"].ports] == ["p0", "p1", "pf0vf0"], "DPU: uplinks p0.., host side pf0vfN"
    mtus = {(link.a.node, link.b.node): link.mtu for link in f.links}
    assert mtus[("s1", "l1")] == 9100 and mtus[("s2", "l2")] == 1500 and mtus[("d1", "h1")] == 9000
    assert n["h1"].asn is None and n["h1"].loopback is None and n["h1"].ports[0].role == "access"


def test_sessions_and_reachability_follow_from_the_topology(monkeypatch):
    monkeypatch.chdir(ROOT)
    f = load("topologies/aipod.yml")
    assert len(f.sessions()) == 16, "one per side of each of the 8 fabric links"
    assert {str(s) for s in f.sessions("dpu1")} == {"dpu1:p0 -> leaf1", "dpu1:p1 -> leaf2"}
    # spines share an ASN, so eBGP loop prevention keeps their loopbacks from each other
    assert "spine2" not in f.expected_loopbacks("spine1")
    assert set(f.expected_loopbacks("dpu1")) == {"spine1", "spine2", "leaf1", "leaf2", "dpu2"}


def test_overlay_plan_per_backend(monkeypatch):
    """What the VTEP kernel steps are, on either VRF backend (the commands twin would run)."""
    from twin.config import overlay

    monkeypatch.chdir(ROOT)
    f = load("topologies/aipod.yml")
    netns = overlay.plan(f, "dpu1", "netns")
    vrf = overlay.plan(f, "dpu1", "vrf")
    ns_cmds = [s.command() for s in netns]
    # netns backend: a namespace per tenant; VXLAN asked for in the node (underlay socket), made in the tenant's
    assert ns_cmds[:4] == [
        "ip addr add 10.255.0.5/32 dev lo",
        "ip netns add red",
        "ip netns add blue",
        "ip -n red link set lo up",
    ], "zebra -n takes no interface config: lo from the kernel side"
    assert ns_cmds[-2:] == [
        "ip netns exec red nft -f /etc/twin/nftables-red.nft",
        "ip netns exec blue nft -f /etc/twin/nftables-blue.nft",
    ]
    assert any(c.startswith("ip link add vxlan10100 netns red index 16787316 ") for c in ns_cmds)
    # every tenant device has an index of its own in the node (zebra -n mixes up equal ones)
    indexes = [s.args["index"] for s in netns if "index" in s.args]
    assert len(indexes) == len(set(indexes)) == 2 * 5  # L3VNI + segments, VXLAN and bridge each
    assert "ip link set pf0vf0 netns red" in ns_cmds and "ip link set pf0vf1 netns blue" in ns_cmds
    assert all(s.ns in ("", "red", "blue") for s in netns)
    tenant_devs = [s for s in netns if s.op in ("bridge", "addr") and s.dev != "lo"]
    assert tenant_devs and all(s.ns for s in tenant_devs)
    # vrf backend: VRF devices, bridges enslaved to them, nothing moves between namespaces
    vrf_cmds = [s.command() for s in vrf]
    assert "ip link add red type vrf table 1001" in vrf_cmds and "ip link add blue type vrf table 1002" in vrf_cmds
    assert "ip link set br10101 master red" in vrf_cmds and not [s for s in vrf if s.op in ("netns", "move")]
    for cmds in (ns_cmds, vrf_cmds):
        vx = [c for c in cmds if "type vxlan" in c]
        assert len(vx) == 5, "L3VNI + 2 L2VNIs of red, L3VNI + 1 L2VNI of blue on dpu1"
        assert all("tos inherit" in c and "nolearning" in c and "mtu 8950" in c and "local 10.255.0.5" in c for c in vx)
        assert sum("neigh_suppress on" in c for c in cmds) == 3, "the L2VNIs, not the L3VNIs"
        assert "ip -n red addr add 10.1.1.1/24 dev br10101" in cmds or "ip addr add 10.1.1.1/24 dev br10101" in cmds
    # leafs and spines are no VTEPs here; hosts get their address and gateway
    assert overlay.plan(f, "leaf1", "netns") == [] and overlay.plan(f, "spine1", "vrf") == []
    assert [s.command() for s in overlay.plan(f, "host2c", "netns")][1:] == [
        "ip addr add 10.1.2.12/24 dev eth1",
        "ip link set eth1 up",
        "ip route add default via 10.1.2.1 dev eth1",
    ]


def test_vtep_daemons_follow_the_backend(monkeypatch):
    monkeypatch.chdir(ROOT)
    f = load("topologies/aipod.yml")
    assert '-s 90000000 -n"' in render_lab(f, "netns")["dpu1"]["daemons"]
    assert '-s 90000000"' in render_lab(f, "vrf")["dpu1"]["daemons"]
    assert '-n"' not in render_lab(f, "netns")["leaf1"]["daemons"], "only VTEPs run zebra -n"
    leaf = render_lab(f)["leaf1"]["frr.conf"]
    assert "address-family l2vpn evpn\n  neighbor fabric activate" in leaf and "advertise-all-vni" not in leaf


def test_drain_changes_only_the_drained_nodes_bgp(monkeypatch):
    """Draining adds `bgp graceful-shutdown` to that node's router bgp and changes nothing else."""
    monkeypatch.chdir(ROOT)
    plain = load("topologies/aipod.yml")
    drained = load("tests/golden/render/aipod-drain.yml")
    assert drained.nodes["spine1"].drain and not any(n.drain for n in plain.nodes.values())
    assert "drain" not in plain.nodes["spine1"].model_dump(), "an undrained node's recorded intent is unchanged"
    before, after = render_lab(plain), render_lab(drained)
    changed = {(n, f) for n in before for f in before[n] if before[n][f] != after[n][f]}
    assert changed == {("spine1", "frr.conf")}
    gained = set(after["spine1"]["frr.conf"].splitlines()) - set(before["spine1"]["frr.conf"].splitlines())
    assert " bgp graceful-shutdown" in gained
    assert all(line.startswith(" !") for line in gained - {" bgp graceful-shutdown"})
    router_bgp = after["spine1"]["frr.conf"].split("router bgp 65000\n", 1)[1].split("\nexit\n", 1)[0]
    assert "\n bgp graceful-shutdown\n" in router_bgp, "in the default router bgp block"
    # any BGP kind can be drained, a leaf or a DPU too
    for name in ("leaf1", "dpu1"):
        node = plain.nodes[name].model_copy(update={"drain": True})
        f = plain.model_copy(update={"nodes": {**plain.nodes, name: node}})
        assert " bgp graceful-shutdown\n" in render_lab(f)[name]["frr.conf"]


def test_drain_shapes_what_verify_expects(monkeypatch):
    """A drained VTEP's type-5 paths lose to undrained owners'; a drained spine is avoided by flows
    that have a way around it (none in the leaf-VTEP fabric if both spines are drained)."""
    from twin.intent import paths
    from twin.intent.tenants import vrf_routes

    monkeypatch.chdir(ROOT)

    def drain(f, *names):
        return f.model_copy(
            update={"nodes": {**f.nodes, **{n: f.nodes[n].model_copy(update={"drain": True}) for n in names}}}
        )

    pod = load("topologies/pod8.yml")
    t = pod.tenants[sorted(pod.tenants)[0]]
    lo = {n: pod.nodes[n].loopback for n in pod.nodes if pod.nodes[n].loopback}
    assert vrf_routes(pod, "dpu2", t)["10.1.1.0/24"] == {lo["dpu1"], lo["dpu3"]}, "the nearest owners"
    drained = drain(pod, "dpu1")
    assert vrf_routes(drained, "dpu2", t)["10.1.1.0/24"] == {lo["dpu3"]}
    assert vrf_routes(drained, "dpu6", t) == vrf_routes(pod, "dpu6", t), "dpu1 was not nearest"
    assert vrf_routes(drained, "dpu1", t) == vrf_routes(pod, "dpu1", t), "drained itself"
    only = drain(pod, "dpu1", "dpu3")  # the nearest owners all drained: the farther, undrained ones win
    assert vrf_routes(only, "dpu2", t)["10.1.1.0/24"] == {lo["dpu5"], lo["dpu7"]}

    aipod = load("topologies/aipod.yml")
    assert paths.avoidable(drain(aipod, "spine1"), "dpu1", "dpu2") == ["spine1"]
    assert paths.avoidable(drain(aipod, "leaf1", "dpu1"), "dpu1", "dpu2") == ["leaf1"], "a VTEP is no transit"
    assert paths.avoidable(drain(aipod, "leaf1", "leaf2"), "dpu1", "dpu2") == [], "no way around"
    lv = load("topologies/leaf-vtep.yml")
    assert paths.avoidable(drain(lv, "spine1"), "leaf1", "leaf2") == ["spine1"]
    assert paths.avoidable(drain(lv, "spine1", "spine2"), "leaf1", "leaf2") == []
    # and the paths go around what can be avoided
    assert paths.next_hops(drain(aipod, "leaf1"), "dpu1", "dpu2") == {"dpu1": ("p1",), "leaf2": ("swp4",)}
    assert paths.next_hops(drain(lv, "spine1"), "leaf1", "leaf2") == {"leaf1": ("swp2",), "spine2": ("swp2",)}


def test_new_sessions_send_their_routes_soon_but_on_a_busy_host(monkeypatch):
    """FRR holds a new session's first routes 1 s + 50 ms per peer (2 s on a spine of 20 leafs), each
    bring-up's wait after its last session (issue 46); twin's rendering holds them COALESCE_MS, where the
    host is not too busy for the lab (BGP timers scaled by admission: there FRR's heuristic saves CPU)."""
    from twin.config.render import COALESCE_MS
    from twin.topology.model import BgpTimers

    monkeypatch.chdir(ROOT)
    f = load("topologies/aipod.yml")
    plain = render_lab(f, "netns")
    busy = render_lab(f.model_copy(update={"timers": BgpTimers(keepalive=6, hold=18)}), "netns")
    for node in ("spine1", "leaf1", "dpu1"):
        bgp = plain[node]["frr.conf"].split("router bgp ", 1)[1].split("\nexit\n", 1)[0]
        assert f" coalesce-time {COALESCE_MS}\n" in bgp, node
        assert "coalesce-time" not in busy[node]["frr.conf"], node
    assert "coalesce-time" not in plain["host1a"].get("frr.conf", ""), "a host runs no BGP of twin's"
