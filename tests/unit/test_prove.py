"""`twin verify --prove` without Docker: the tenant paths it derives, the EVPN routes intent
expects, the attack frames of the zero-trust group (each stopped by exactly one rule), and the
elements a lab's intent yields (issue 16)."""

from __future__ import annotations

import ipaddress
import re
import struct
import tempfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from twin.config import overlay
from twin.config.render import render_lab
from twin.intent import Intent, paths
from twin.intent.tenants import evpn_counts, evpn_routes
from twin.lifecycle import state
from twin.nvue import tree as nv_tree
from twin.prove import elements
from twin.prove.element import Kernel, NftDelete, NftRule, Reload, Vtysh
from twin.prove.ports import rules
from twin.prove.report import Outcome, Proof
from twin.topology import load
from twin.traffic import frames as X
from twin.traffic import roce
from twin.verify import zerotrust
from twin.verify.result import Check

ROOT = Path(__file__).resolve().parents[2]
RUN = 0x5EED


@pytest.fixture
def aipod(monkeypatch):
    monkeypatch.chdir(ROOT)
    return load("topologies/aipod.yml")


@pytest.fixture
def pod8(monkeypatch):
    monkeypatch.chdir(ROOT)
    return load("topologies/pod8.yml")


def ctx_of(fabric, backend="netns", shaping="tc"):
    """What element derivation reads of a running lab: its intent, VRF backend and rate-limit mechanism,
    the files its nodes run (twin's rendering, in a lab directory) and its NVUE nodes (none)."""
    d = tempfile.TemporaryDirectory(prefix="twin-prove-")
    state.write_files(Path(d.name), render_lab(fabric, backend, shaping))
    return SimpleNamespace(
        fabric=fabric,
        backend=backend,
        intent=Intent(fabric),
        name="t",
        shaping=shaping,
        dir=Path(d.name),
        planes=dict,
        kept=d,
    )


def test_tenant_paths_of_aipod(aipod):
    assert paths.next_hops(aipod, "dpu1", "dpu2") == {"dpu1": ("p0", "p1"), "leaf1": ("swp4",), "leaf2": ("swp4",)}
    assert paths.carried(aipod) == {
        ("dpu1", "p0"),
        ("dpu1", "p1"),
        ("dpu2", "p0"),
        ("dpu2", "p1"),
        ("leaf1", "swp3"),
        ("leaf1", "swp4"),
        ("leaf2", "swp3"),
        ("leaf2", "swp4"),
    }
    assert set(paths.branching(aipod)) == {"dpu1", "dpu2"}, "aipod's DPUs share their leafs: no spine on a path"
    assert paths.cover(aipod) == [("dpu2", "dpu1"), ("dpu1", "dpu2")]


def test_the_covering_pairs_cross_every_carried_port_and_choice_of_pod8(pod8):
    cover = paths.cover(pod8)
    assert 4 <= len(cover) <= 16
    crossed = {(n, p) for a, b in cover for n, ps in paths.next_hops(pod8, a, b).items() for p in ps}
    assert crossed == paths.carried(pod8)
    branches = {n for a, b in cover for n, ps in paths.next_hops(pod8, a, b).items() if len(ps) > 1}
    assert branches == set(paths.branching(pod8)) >= {"dpu1", "leaf1", "spine1"}


def test_evpn_routes_of_a_tenant_are_what_status_counts(aipod):
    for t in aipod.tenants.values():
        routes = evpn_routes(aipod, t)
        by_type = Counter(f"type{k[0]}" for k, _ in routes)
        assert dict(by_type) == evpn_counts(t)
    red = evpn_routes(aipod, aipod.tenants["red"])
    host1a = aipod.attachment_of("host1a")[1]
    assert red[((2, f"{host1a.mac} 10.1.1.11", "10.255.0.5"), frozenset({10101, 10100}))].startswith("type-2 MAC/IP")
    assert ((5, "10.1.2.0/24", "10.255.0.5"), frozenset({10100})) in red, "red's db subnet, from dpu1"


def test_arp_ipv6_and_vxlan_frames_read_as_scapy_reads_them():
    from scapy.layers.inet import UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import ARP, Ether

    f = X.arp(
        X.ARP_REPLY,
        "02:00:00:00:00:01",
        "02:00:00:00:00:02",
        "02:00:00:00:00:03",
        "10.1.1.11",
        "02:00:00:00:00:02",
        "10.1.1.12",
        X.tag(RUN, 7),
    )
    p = Ether(f)
    assert (p[ARP].op, p[ARP].hwsrc, p[ARP].psrc, p[ARP].pdst) == (2, "02:00:00:00:00:03", "10.1.1.11", "10.1.1.12")
    assert X.arp_of(f) == (2, "02:00:00:00:00:03", "10.1.1.11", "02:00:00:00:00:02", "10.1.1.12")
    assert X.ident(f, RUN) == 7 and X.ident(f, RUN + 1) is None and len(f) == 60
    v6 = X.ipv6_udp(
        "02:00:00:00:00:01", "02:00:00:00:00:02", "fe80::66", "::ffff:10.1.1.12", 41000, 4791, X.tag(RUN, 8)
    )
    q = Ether(v6)
    assert q[IPv6].dst == "::ffff:10.1.1.12" and q[UDP].dport == 4791 and X.ident(v6, RUN) == 8
    q[UDP].chksum = None
    assert bytes(q) == v6, "scapy computes the same UDP checksum"
    flow = roce.Flow(
        flow_id=9,
        src="a",
        dst="b",
        src_mac="02:00:00:00:00:01",
        dst_mac="02:00:00:00:00:02",
        src_ip="10.1.1.11",
        dst_ip="10.1.1.12",
        count=1,
        payload=64,
        vxlan=("02:00:00:00:00:01", "00:00:5e:00:01:01", "10.1.1.11", "10.255.0.6", 10201),
    )
    inner = roce.frame(roce.Flow(**{**flow.__dict__, "vxlan": None}), RUN, 0)
    assert [X.vxlan(inner, *flow.vxlan[:4], 10201, flow.sport)] == roce.scapy_frames(flow, RUN)


def rule_stops(rule: str, a, frame: bytes) -> bool:
    """The rendered nftables rule `rule` of attachment `a`, as a predicate over one frame."""
    ip = a.address.split("/")[0]
    ethertype = struct.unpack("!H", frame[12:14])[0]
    arp = X.arp_of(frame)
    udp_dport = struct.unpack("!H", frame[36:38])[0] if ethertype == X.ETH_IP and frame[23] == 17 else None
    return {
        "spoofed MAC": frame[6:12] != X.mac(a.mac),
        "not IPv4": ethertype not in (X.ETH_IP, X.ETH_ARP),
        "spoofed ARP MAC": bool(arp) and arp[1] != a.mac,
        "spoofed ARP IP": bool(arp) and arp[2] != ip,
        "spoofed IP": ethertype == X.ETH_IP and frame[26:30] != X.ip4(ip),
        "VXLAN from a workload": udp_dport == X.VXLAN_PORT,
    }[rule]


def test_every_attack_is_stopped_by_exactly_its_own_rule(aipod, pod8):
    for fabric in (aipod, pod8):
        attacks = zerotrust.attacks(fabric, RUN)
        for at in attacks:
            a = fabric.attachment_of(at.host)[1]
            for f in at.frames:
                stopped = [r for r in zerotrust.RULES if rule_stops(r, a, f)]
                assert stopped == [at.rule], (at.host, at.rule, at.target.what, stopped)
                assert X.ident(f, RUN) == at.ident
        # every host tries every rule, against every kind of place
        assert {(at.host, at.rule) for at in attacks} == {
            (h, r) for h in zerotrust.hosts(fabric) for r in zerotrust.RULES
        }
    whats = {at.target.what for at in zerotrust.attacks(aipod, RUN) if at.host == "host1a" and at.rule == "spoofed IP"}
    assert whats == {
        "host2a (its segment, behind dpu2)",
        "its gateway 10.1.1.1 on dpu1",
        "host1c (red db, routed)",
        "host1b (tenant blue)",
        "dpu1 loopback 10.255.0.5 (its VTEP)",
        "dpu2 loopback 10.255.0.6 (a remote VTEP)",
        "spine1 loopback 10.255.0.1 (underlay)",
    }
    arp = {
        at.target.what for at in zerotrust.attacks(aipod, RUN) if at.host == "host1a" and at.rule == "spoofed ARP IP"
    }
    assert arp == {"host2a (its segment, behind dpu2)", "its gateway 10.1.1.1 on dpu1", "everyone (gratuitous ARP)"}


def test_a_spoofer_claims_someone_elses_identity(pod8):
    for h in zerotrust.hosts(pod8):
        a = pod8.attachment_of(h)[1]
        by_mac, by_ip = zerotrust.victim(pod8, h)
        assert by_mac.mac != a.mac and by_ip.address.split("/")[0] != a.address.split("/")[0]
        same_segment = [t for t in zerotrust.targets(pod8, h) if t.arp and t.mac != X.BROADCAST]
        assert all(ipaddress.ip_address(t.ip) in ipaddress.ip_network(a.address, strict=False) for t in same_segment)


def test_the_elements_of_aipod(aipod):
    els, exempt = elements(ctx_of(aipod))
    assert len(els) == len({e.id for e in els}) == 176
    kinds = Counter(e.kind for e in els)
    assert kinds["port rule"] == 36 and kinds["underlay BGP session"] == 8 and kinds["loopback advertisement"] == 6
    assert kinds["L2VNI device"] == kinds["L2VNI VNI"] == kinds["anycast gateway MAC"] == 6
    assert kinds["route-target import"] == kinds["route-target export"] == 4 + 4, "web L2VNIs and the L3VNIs"
    assert kinds["ARP suppression"] == 4 and kinds["fabric MTU"] == 8 and kinds["ECMP maximum-paths"] == 2
    # every rule of every rendered ruleset is an element of its own
    rendered = {
        c for v in aipod.vteps() for text in overlay.nft_rulesets(aipod, v, "netns").values() for _, c in rules(text)
    }
    assert {e.breaks[0].comment for e in els if e.kind == "port rule"} == rendered and len(rendered) == 36
    assert all(isinstance(a, (Kernel, Vtysh, Reload, NftDelete)) for e in els for a in e.breaks)
    assert all(any(isinstance(a, Reload) for a in e.restores) for e in els if isinstance(e.breaks[0], Vtysh))
    assert {x.kind for x in exempt} >= {"fabric MTU", "ECMP", "route targets", "ARP suppression"}
    assert all(x.why for x in exempt)


def test_each_element_names_the_check_that_must_catch_it(aipod):
    els = {e.id: e for e in elements(ctx_of(aipod))[0]}
    line = lambda g, n, m: f"{g}: {n}: {m}"  # noqa: E731
    assert els["port-rule dpu1:pf0vf0 spoofed MAC"].names(line("zerotrust", "host1a: spoofed MAC", "7 of 7 ..."))
    assert not els["port-rule dpu1:pf0vf0 spoofed MAC"].names(line("zerotrust", "host1a: spoofed IP", "7 of 7"))
    assert els["session dpu1:p0"].names(line("control", "bgp dpu1", ".ipv4Unicast.peers.p0: missing"))
    assert not els["session dpu1:p0"].names(line("control", "bgp dpu1", ".ipv4Unicast.peers.p1: missing"))
    assert els["tos dpu2 vxlan10101"].names(
        line(
            "underlay",
            "red host2a -> host1a (bridged, VNI 10101)",
            "32 frames whose outer DSCP differs from the inner one",
        )
    )
    assert els["maximum-paths dpu1"].names(
        line(
            "underlay",
            "red host1a -> host2a (every path dpu1 -> dpu2, VNI 10101)",
            "64 flows never left dpu1 by p0 (to leaf1)",
        )
    )
    assert els["mtu dpu1 br10102"].names(
        line("traffic", "red host1a -> host1c (RoCE 16 x 4096 B)", "16/16 frames lost")
    )
    assert not els["mtu dpu1 br10102"].names(line("traffic", "red host1c -> host1a (RoCE 16 x 4096 B)", "16/16 lost"))


def test_pod8_and_the_vrf_backend_yield_elements_too(pod8, aipod):
    els, _ = elements(ctx_of(pod8))
    assert len(els) == len({e.id for e in els}) > 500
    assert {"multipath-relax spine1", "maximum-paths leaf1", "hash-policy leaf1"} <= {e.id for e in els}
    assert "multipath-relax leaf1" not in {e.id for e in els}, "a leaf's spines share one AS"
    vrf, _ = elements(ctx_of(aipod, "vrf"))
    assert len(vrf) == 176 and all(a.ns == "" for e in vrf for a in e.breaks if isinstance(a, NftDelete))


@pytest.mark.parametrize("backend,shaping", [("netns", "tc"), ("vrf", "nft")])
def test_the_services_of_a_vtep_are_elements(monkeypatch, backend, shaping):
    """Every commented rule of each gateway table, its routes and announcements, every rate limit
    removed and loosened, every congestion point's rule broken three ways; none of them exempt."""
    monkeypatch.chdir(ROOT)
    f = load("topologies/dpu-services.yml")
    els, exempt = elements(ctx_of(f, backend, shaping))
    by = {e.id: e for e in els}
    kinds = Counter(e.kind for e in els)
    assert kinds["gateway rule"] == 5 + 6 + 4 + 4 and kinds["gateway default route"] == 4
    assert kinds["internet default route"] == 1
    assert kinds["public address route"] == kinds["public address announcement"] == 4
    assert kinds["rate limit"] == kinds["rate limit, loosened"] == 5, "every workload's limits, both directions"
    assert (
        kinds["congestion point marking"] == kinds["congestion point ECT match"] == kinds["congestion point rate"] == 1
    )
    line = lambda g, n, m: f"{g}: {n}: {m}"  # noqa: E731
    snat = by["gateway-rule dpu1 blue host1b: 1:1"]
    assert snat.breaks[0].table.endswith("twin_gw" if backend == "netns" else "twin_gw_10200")
    assert snat.breaks[0].chain == "postrouting"
    assert snat.names(
        line(
            "gateway",
            "blue host1b -> internet 198.51.100.10",
            "the internet saw it from 10.1.1.11, the host's private address",
        )
    )
    assert not snat.names(line("gateway", "red host1a -> internet 198.51.100.10", "never reached the internet"))
    assert by["gateway-rule dpu1 red a segment that does not go out"].names(
        line(
            "gateway",
            "red host1c -> internet 198.51.100.10 (its segment does not go out)",
            "reached the internet (as x)",
        )
    )
    assert "gateway-rule dpu2 red a segment that does not go out" not in by, "not rendered: every host there goes out"
    assert "gateway-rule dpu1 red forwards" not in by and "gateway-rule dpu1 blue forwards" in by
    assert by["public-network dpu2 192.0.2.18"].names(
        line("gateway", "192.0.2.18/32 (red) announced by dpu2, learned by inet", "inet has no route")
    )
    for eid in ("rate-limit dpu2:pf0vf0 egress", "rate-limit-loose dpu2:pf0vf0 egress"):
        assert by[eid].names(
            line(
                "performance",
                "red host2a egress 20mbit held on dpu2:pf0vf0",
                "delivered 22640 frames/s (198.86 Mbit/s) of 1098 bytes, over its limit",
            )
        )
        assert not by[eid].names(line("performance", "red host1a egress 20mbit held on dpu1:pf0vf0", "over"))
    remove, loose = by["rate-limit dpu2:pf0vf0 egress"], by["rate-limit-loose dpu2:pf0vf0 egress"]
    assert isinstance(remove.breaks[0], Kernel if shaping == "tc" else NftDelete)
    if shaping == "tc":
        assert "tbf rate 200000000bit" in loose.how and loose.restored_by.endswith(
            "tbf rate 20000000bit burst 25000 limit 275000"
        )
    else:
        assert isinstance(loose.breaks[0], NftRule) and "limit rate over 25000000 bytes/second" in loose.how
    ingress = by["rate-limit-loose dpu2:pf0vf1 ingress"].breaks[0]
    assert isinstance(ingress, NftRule) and "limit rate over 200000/second burst 2000 packets" in ingress.rule
    ect = by["congestion-ect leaf1:swp2"].breaks[0]
    assert ect.rule.startswith('oifname "swp2" limit rate over 5000/second') and "ect0" not in ect.rule
    assert "limit" not in by["congestion-rate leaf1:swp2"].breaks[0].rule
    assert by["congestion-mark leaf1:swp2"].names(
        line("congestion", "leaf1:swp2 marks ECN-capable RoCE above 5000pps (blue host2b -> host1b)", "0 of 2000")
    )
    assert by["congestion-ect leaf1:swp2"].names(
        line("congestion", "leaf1:swp2 leaves RoCE that is not ECN-capable unmarked (blue host2b -> host1b)", "lost")
    )
    assert by["congestion-rate leaf1:swp2"].names(
        line("congestion", "leaf1:swp2 marks nothing below 5000pps (blue host2b -> host1b)", "500 of 500")
    )
    services = ("gateway rule", "rate limit", "congestion point")
    assert [x for x in exempt if x.kind.startswith(services)] == [], "none of the services' safeguards is exempt"


def test_a_proof_scores_and_reports(tmp_path, aipod):
    els = elements(ctx_of(aipod))[0][:3]
    hit = Check("zerotrust", "host1a: spoofed MAC", False, "7 of 7 attacks got through")
    proof = Proof(
        "t",
        [
            Outcome(els[0], [hit], restored=True),
            Outcome(els[1], [], restored=True),
            Outcome(els[2], [hit], restored=False, detail="still missing"),
        ],
        total=176,
    )
    assert proof.score == "caught 2 of 3" and not proof.passed and [o.element for o in proof.misses()] == [els[1]]
    assert proof.outcomes[0].check == "zerotrust: host1a: spoofed MAC"
    doc = proof.to_dict()
    assert doc["outcomes"][0]["named_by"] == ["zerotrust: host1a: spoofed MAC: 7 of 7 attacks got through"]
    proof.write_junit(tmp_path / "p.xml")
    text = (tmp_path / "p.xml").read_text()
    assert 'failures="2"' in text and "verify did not notice" in text and "not restored: still missing" in text
    assert re.search(r'name="port rule"', text)


def test_a_proof_refuses_unknown_groups_before_it_touches_a_lab():
    from twin import prove as proving
    from twin.base.errors import TwinError

    with pytest.raises(TwinError, match=r"unknown check group\(s\) nonsense; groups: checks, control"):
        proving.prove("no-such-lab", only=["nonsense"])


def test_a_static_mac_on_a_port_put_back_in_its_bridge_waits_for_zebra(monkeypatch):
    """zebra drops a MAC of a port it holds in no bridge yet: `apply_live` writes it after the wait."""
    from twin.config.steps import Step
    from twin.runtime import frr

    calls = []
    monkeypatch.setattr(
        frr.kernel, "apply", lambda steps, pid, ex, tolerant=False: calls.append(("apply", [s.op for s in steps])) or []
    )
    monkeypatch.setattr(frr, "await_bridge", lambda ex, port, bridge: calls.append(("wait", port, bridge)))
    port = [
        Step("move", "pf0vf0", "", {"to": "red"}),
        Step("master", "pf0vf0", "red", {"master": "br10101"}),
        Step("up", "pf0vf0", "red"),
        Step("unfdb", "pf0vf0", "red", {"mac": "02:00:00:00:00:01"}),
        Step("fdb", "pf0vf0", "red", {"mac": "02:00:00:00:00:01"}),
        Step("neigh", "br10101", "red", {"ip": "10.1.1.11", "mac": "02:00:00:00:00:01"}),
    ]
    frr.apply_live(port, 1, None)
    assert calls == [
        ("apply", ["move", "master", "up"]),
        ("wait", "pf0vf0", "br10101"),
        ("apply", ["unfdb", "fdb", "neigh"]),
    ]
    calls.clear()
    frr.apply_live([Step("fdb", "pf0vf1", "red", {"mac": "02:00:00:00:00:02"}), Step("up", "pf0vf1", "red")], 1, None)
    assert calls == [("apply", ["fdb", "up"])], "a MAC on a port already in its bridge: no wait"


def test_the_elements_of_a_node_running_nvue_are_what_it_runs(tmp_path):
    """Issue 34: on the NVUE samples' lab, the proof's elements on leaf01 and dpu1 are taken from the
    plane and frr.conf their NVUE makes (and put back to them), not from the topology's rendering."""
    from tests.unit.test_nvue_change import running_lab

    ctx = running_lab(tmp_path)
    f = ctx.dir / "leaf01" / "startup.yaml"
    f.write_text(
        f.read_text()
        .replace("arp-nd-suppress: on", "arp-nd-suppress: off")
        .replace(
            "mac-address: 00:00:5e:00:01:01\n            address:\n              10.1.10.1/24",
            "mac-address: 00:00:5e:00:01:99\n            address:\n              10.1.10.1/24",
        )
    )
    els, exempt = elements(ctx)
    ids = {e.id: e for e in els}
    lo = ids["loopback leaf01"]
    assert lo.what == "redistribute connected (10.10.10.1/32) on leaf01", "NVUE's frr.conf redistributes lo"
    assert lo.breaks == (
        Vtysh("leaf01", ("router bgp 65101", "address-family ipv4 unicast", "no redistribute connected")),
    )
    assert ids["loopback spine01"].what.startswith("network 10."), "twin's rendering: its network line"
    gw = ids["gateway-mac leaf01 br10"].restores[0].steps[0]
    assert (gw.op, gw.args) == ("mac", {"mac": "00:00:5e:00:01:99"}), "put back to the MAC leaf01's NVUE gives"
    assert ids["gateway-mac dpu1 br10"].restores[0].steps[0].args == {"mac": "00:00:5e:00:01:01"}
    back = [(x.op, x.args) for x in ids["gateway-address leaf01 br10"].restores[0].steps[:2]]
    assert back == [("addr", {"cidr": "10.1.10.1/24"}), ("addr", {"cidr": "10.1.10.2/24"})], (
        "the SVI's own address too: the kernel deletes an address's secondaries with it"
    )
    assert "arp-suppression leaf01 vxlan10" not in ids and "arp-suppression dpu1 vxlan10" in ids
    assert ("ARP suppression", "leaf01 vxlan10", "leaf01 runs vxlan10 without it") in {
        (x.kind, x.where, x.why) for x in exempt
    }


def test_the_frr_elements_of_a_node_running_nvue_are_those_of_its_applied_revision(tmp_path):
    """Issue 34b: leaf01's NVUE goes beyond twin's design (`nv set` as a user types it): route targets
    of its own on VRF RED, swp52 in a peer group of its own (EVPN activated there), a numbered neighbor
    and a static route. Its FRR elements are those of the frr.conf that NVUE renders (the file
    frr-reload restores), not twin's design: the set route targets are replaced, not added to;
    each peer group's EVPN activation is an element; what verify does not judge is exempt."""
    import copy

    from tests.unit.test_nvue_change import running_lab
    from twin import nvue
    from twin.lifecycle import state

    ctx = running_lab(tmp_path)
    nf = nvue.read(str(ctx.dir / "leaf01" / "startup.yaml"))
    tree = copy.deepcopy(nf.tree)
    for line in (
        "vrf RED router bgp route-import from-evpn route-target 65000:4001",
        "vrf RED router bgp route-export to-evpn route-target 65000:4001",
        "vrf default router bgp peer-group spine2 remote-as external",
        "vrf default router bgp peer-group spine2 address-family l2vpn-evpn enable on",
        "vrf default router bgp neighbor swp52 peer-group spine2",
        "vrf default router bgp neighbor 192.0.2.9 remote-as 65009",
        "vrf default router static 198.51.100.0/24 via blackhole",
    ):
        path, value = nv_tree.words(line.split())
        nv_tree.set_path(tree, path, value)
    mine = nvue.from_tree(tree, "leaf01 revision 2")
    built, _ = nvue.build({"leaf01": mine}, ctx.fabric, ctx.backend)
    state.write_files(ctx.dir, {"leaf01": built["leaf01"].files})  # what the revision's apply writes
    frr = built["leaf01"].files["frr.conf"]
    assert "route-target import 65000:4001" in frr and "neighbor swp52 interface peer-group spine2" in frr
    els, exempt = elements(ctx)
    ids = {e.id: e for e in els}
    imp = ids["rt-import leaf01 4001"]
    assert imp.breaks == (
        Vtysh(
            "leaf01",
            (
                "router bgp 65101 vrf red",
                "address-family l2vpn evpn",
                "no route-target import 65000:4001",
                "route-target import 65535:1",
            ),
        ),
    )
    assert imp.what == "route-target import (65000:4001) of VNI 4001 (red) on leaf01"
    assert ids["rt-import dpu1 4001"].breaks[0].lines[-1] == "route-target import 65535:1", "dpu1: auto-derived"
    assert ids["rt-export leaf01 4001"].breaks[0].lines[2:] == (
        "no route-target export 65000:4001",
        "route-target export 65535:1",
    )
    assert (
        ids["evpn-activate leaf01 spine2"].what == "neighbor spine2 activate (address-family l2vpn evpn) on "
        "leaf01 (swp52)"
    )
    assert ids["evpn-activate leaf01 underlay"].what.endswith("on leaf01 (swp51)"), "swp52 is in spine2 now"
    assert ids["evpn-activate leaf01 spine2"].names("control: bgp leaf01: .l2VpnEvpn.peers.swp52: missing (...)")
    assert not ids["evpn-activate leaf01 spine2"].names("control: bgp leaf01: .l2VpnEvpn.peers.swp51: missing")
    assert "evpn-activate spine01 fabric" not in ids, "twin's own rendering: its group is not the user's"
    session = ids["session leaf01:swp52"]
    assert session.breaks == (Vtysh("leaf01", ("router bgp 65101", "no neighbor swp52")),)
    assert session.restores[0] == Reload("leaf01") and {a.vni for a in session.restores if hasattr(a, "vni")} == {
        10,
        20,
        4001,
        4002,
    }, "put back: the file it runs, then zebra's VNIs and the bindings"
    why = {(x.kind, x.where): x.why for x in exempt}
    assert (
        why[("BGP neighbor", "leaf01 192.0.2.9")] == "a session the topology does not have (verify judges the "
        "topology's sessions)"
    )
    static = ids["static leaf01 198.51.100.0/24 blackhole"]  # issue 44: verify judges static routes now
    assert static.breaks == (Vtysh("leaf01", ("no ip route 198.51.100.0/24 blackhole",)),)
    assert static.names("protocols: static routes leaf01: 198.51.100.0/24 via blackhole: not in the RIB")
    assert (
        static.restores[0] == Reload("leaf01")
        and ("static route", "leaf01 ip route 198.51.100.0/24 blackhole") not in why
    )
    # a line twin's design implies that the file does not hold: exempt, not an element that breaks nothing
    tree2 = copy.deepcopy(tree)
    nv_tree.unset_path(tree2, ("vrf", "BLUE", "router", "bgp", "address-family", "ipv4-unicast", "route-export"))
    built, _ = nvue.build({"leaf01": nvue.from_tree(tree2, "leaf01 revision 3")}, ctx.fabric, ctx.backend)
    state.write_files(ctx.dir, {"leaf01": built["leaf01"].files})
    els, exempt = elements(ctx)
    assert "type5 leaf01 blue" not in {e.id for e in els} and "redistribute leaf01 blue" in {e.id for e in els}
    assert (
        "type-5 advertisement",
        "leaf01 blue",
        "the frr.conf it runs has no advertise ipv4 unicast in router bgp 65101 vrf blue",
    ) in {(x.kind, x.where, x.why) for x in exempt}
