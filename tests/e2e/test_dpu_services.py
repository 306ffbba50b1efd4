"""DPU services on a real lab (topologies/dpu-services.yml): each DPU is its tenants'
internet gateway with NAT, workloads are held to rate limits (every limit by a flood of
its own, and against a noisy neighbour), and a congestion point marks ECN-capable RoCE
frames CE above its rate (and nothing else), answered with CNPs.

red and blue share addresses: host1a (red) and host1b (blue) are both 10.1.1.11 on
dpu1. red goes out as 192.0.2.17 (dpu1) / 192.0.2.18 (dpu2) of its pool, but not
from its db segment (host1c); blue's hosts have 192.0.2.33 and .34 of their own,
and host1b serves udp/8080 as its port 80. leaf1:swp2 (towards dpu1) marks ECN
above 5,000 frames/s.
"""

from __future__ import annotations

import json

import pytest
import yaml

from tests.e2e.conftest import ROOT, twin_cli
from twin import prove, verify
from twin.base import wait
from twin.config import services
from twin.runtime import kernel
from twin.runtime.kernel import probe_shaping
from twin.verify import performance
from twin.verify import traffic as traffic_group

pytestmark = pytest.mark.e2e
LAB = "t-dpsvc"
TOPOLOGY = "topologies/dpu-services.yml"


@pytest.fixture(scope="module")
def lab(make_lab):
    lab = make_lab(TOPOLOGY, LAB)
    yield lab
    lab.down()


def gateway(lab) -> dict:
    report = verify.run(lab, only=["gateway"])
    return {c.name: c for c in report.checks}


def failures(checks: dict) -> dict[str, str]:
    return {n: c.message for n, c in checks.items() if not c.passed}


# --- the gateway ------------------------------------------------------------------------------
def test_every_host_goes_out_as_its_tenants_public_address_and_only_that(lab):
    checks = gateway(lab)
    assert failures(checks) == {}
    seen = {n: c.data for n, c in checks.items() if c.data.get("kind") == "out"}
    # the same private address, the same ICMP id, two tenants: two public addresses, each reply home
    assert seen["red host1a -> internet 198.51.100.10"]["sources_at_internet"] == ["192.0.2.17"]
    assert seen["blue host1b -> internet 198.51.100.10"]["sources_at_internet"] == ["192.0.2.33"]
    assert seen["red host2a -> internet 203.0.113.10"]["sources_at_internet"] == ["192.0.2.18"]
    for name, data in seen.items():
        host = name.split()[1]
        assert data["seen_at"].get(host) == 1 and set(data["seen_at"]) == {host, "inet:eth1"}, name
    assert checks["red host1c -> internet 198.51.100.10 (its segment does not go out)"].data["seen_at"] == {}
    forward = checks["internet -> blue 192.0.2.33 udp/8080 (forward to host1b:80)"].data
    assert forward["seen_at"] == {"host1b": 1, "inet:eth1": 1}, "host1b, and its answer (nothing listens on port 80)"
    assert forward["answers_at_internet"] == ["destination unreachable from 192.0.2.33"], "from its public address"
    unsolicited = [c for c in checks.values() if c.data.get("kind") == "inbound"]
    assert len(unsolicited) == 8 and all(c.data["seen_at"] == {} for c in unsolicited)
    # and as a user sees it
    assert lab.node("host1a").run(["ping", "-c1", "-W2", "198.51.100.10"]).ok
    assert not lab.node("host1c").run(["ping", "-c1", "-W1", "198.51.100.10"]).ok
    assert not lab.node("host1a").run(["ping", "-c1", "-W1", "10.255.0.1"]).ok, "the fabric is not the internet"


def test_a_broken_nat_rule_fails_the_gateway_group_naming_it(lab):
    dpu1 = lab.node("dpu1")
    dpu1.check(["ip", "netns", "exec", "red", "nft", "flush", "chain", "ip", "twin_gw", "postrouting"])
    try:
        bad = failures(gateway(lab))
    finally:
        dpu1.check(["ip", "netns", "exec", "red", "nft", "-f", "/etc/twin/gateway-red.nft"])
    msg = bad.pop("red host1a -> internet 198.51.100.10")
    assert "the internet saw it from 10.1.1.11, the host's private address, not red's public 192.0.2.17" in msg
    assert "the NAT rule `snat to 192.0.2.17` is missing from table ip twin_gw on dpu1" in msg
    assert "no reply came back to host1a" in msg
    assert set(bad) == {
        "red host1a -> internet 203.0.113.10",
        "red host1a -> blue 192.0.2.33 udp/8080 (forward to host1b)",
    }, "blue and dpu2 unaffected"
    assert failures(gateway(lab)) == {}, "the rule is back"


def test_a_public_prefix_nobody_announces_fails_the_gateway_group_naming_it(lab):
    dpu2, asn = lab.node("dpu2"), lab.fabric.nodes["dpu2"].asn
    inet_has = lambda: "192.0.2.34" in lab.node("inet").check(["ip", "route"]).stdout  # noqa: E731
    bgp = ["vtysh", "-c", "conf t", "-c", f"router bgp {asn}", "-c", "address-family ipv4 unicast", "-c"]
    dpu2.check(bgp + ["no network 192.0.2.34/32"])
    try:
        wait.until(lambda: ["still routed"] if inet_has() else [], 20, "192.0.2.34 withdrawn")
        bad = failures(gateway(lab))
        assert any("stale" in m or "no route to 192.0.2.34/32" in m for m in lab.missing()), "the barrier sees it"
    finally:
        dpu2.check(bgp + ["network 192.0.2.34/32"])
    assert bad["192.0.2.34/32 (blue) announced by dpu2, learned by inet"] == (
        "inet has no route to blue's public address 192.0.2.34/32: dpu2 does not announce it: `network "
        "192.0.2.34/32` is missing from its BGP configuration (`vtysh -c 'show running-config'` on dpu2)"
    )
    assert bad["blue host2b -> internet 198.51.100.10"] == "no reply came back to host2b"
    wait.until(lab.missing, 30, "blue's address announced again")
    assert failures(gateway(lab)) == {}


def test_apply_takes_internet_access_away_and_gives_it_back(lab, tmp_path):
    doc = yaml.safe_load((ROOT / TOPOLOGY).read_text())
    del doc["tenants"]["blue"]["internet"]
    change = tmp_path / "no-blue-internet.yml"
    change.write_text(yaml.safe_dump(doc, sort_keys=False))
    plan = lab.plan(change)
    assert plan.changes == ["take internet access from tenant blue"]
    res = lab.apply(change)
    assert res.converged, res.missing
    routes = lab.node("inet").check(["ip", "route"]).stdout
    assert "192.0.2.33" not in routes and "192.0.2.17" in routes, "withdrawn from the internet, red's stays"
    checks = gateway(lab)
    assert failures(checks) == {}
    assert "blue host1b -> internet 198.51.100.10 (its tenant has no internet access)" in checks
    assert not (lab.dir / "dpu1" / "gateway-blue.nft").exists()
    res = lab.apply(ROOT / TOPOLOGY)
    assert res.converged and res.changes[0].startswith("give tenant blue internet access"), res.changes
    assert failures(gateway(lab)) == {}


# --- rate limits and a noisy neighbour ----------------------------------------------------------------
def test_the_lab_probed_how_to_enforce_rate_limits(lab):
    st = lab.status()
    assert st.shaping == probe_shaping("t-dpsvc-p") == "tc" and st.healthy
    p = twin_cli("status", LAB)
    assert "rate limits: tc shaping (TBF, IFB), nftables policing for packet rates" in p.stdout
    q = lab.node("dpu1").check(["ip", "netns", "exec", "red", "tc", "qdisc", "show", "dev", "twinifb1"]).stdout
    assert "tbf" in q and "rate 20Mbit" in q


@pytest.mark.alone  # a rate measured: the machine to itself
def test_a_noisy_neighbour_is_held_to_its_limit_while_the_other_tenant_keeps_its_rate(lab):
    p = twin_cli("verify", LAB, "--only", "performance", "--json")
    report = json.loads(p.stdout)
    assert p.returncode == 0, [c["message"] for c in report["checks"] if not c["passed"]]
    runs = {(r["noisy"]["tenant"], r["victim"]["tenant"]): r for r in report["performance"]["runs"]}
    assert set(runs) == {("red", "blue"), ("blue", "red")}
    for r in runs.values():
        noisy, victim = r["noisy"], r["victim"]
        assert noisy["delivered_fps"] <= 2277 * 1.05 and noisy["offered_fps"] >= 2277 * 0.95, noisy
        assert abs(noisy["delivered_mbps"] - 20.0) < 1.0, noisy
        assert victim["delivered_fps"] >= victim["offered_fps"] * 0.95, victim
        assert victim["offered_fps"] >= r["victim_target_fps"] * 0.95, victim
        assert {"offered_mbps", "delivered_mbps", "dropped"} <= set(noisy) & set(victim)
    held = {f["host"] + " " + f["direction"]: f for f in report["performance"]["limits"]}
    assert set(held) == {"host1a egress", "host1b egress", "host1c egress", "host2a egress", "host2b ingress"}
    for f in held.values():  # each limit by a flood of its own, the rate it let through named
        assert f["verdict"] == "held" and f["delivered_fps"] <= f["limit_fps"] * 1.05, f
    assert held["host2b ingress"]["frame_bytes"] == 108 and held["host2b ingress"]["offered_fps"] > 20000 * 1.05
    assert [r["vtep"] for r in report["performance"]["rounds"]] == ["dpu1", "dpu2"]
    assert report["not_exercised"] == [
        {"safeguard": "congestion point: leaf1:swp2 (above 5000pps)", "why": "the congestion group did not run"}
    ], "every limit was"
    assert report["seconds"]["performance"] < 60
    text = twin_cli("verify", LAB, "--only", "performance").stdout
    assert "performance: a noisy neighbour on the same VTEP (rate limits: tc)" in text and "victim" in text
    assert "performance: every rate limit, each by a flood of its own" in text


@pytest.mark.alone  # a rate measured: the machine to itself
def test_a_workload_without_its_limit_is_caught(lab):
    ctx = lab.context()
    (scenario,) = [s for s in performance.scenarios(ctx.fabric) if s.noisy[0].name == "red"]
    unit = next(u for u in services.units(ctx.fabric, "dpu1", ctx.backend, ctx.shaping) if u.key == "shaping pf0vf0")
    dpu1 = lab.node("dpu1")
    dpu1.check(["ip", "netns", "exec", "red", "tc", "qdisc", "del", "dev", "pf0vf0", "ingress"])
    try:
        checks, figures = performance.measure(ctx, scenario)
    finally:
        kernel.apply([s for s in unit.setup if s.op in ("ingress", "redirect")], ctx.pid("dpu1"), ctx.exec("dpu1"))
    held = checks[1]
    assert not held.passed and "the limit is not enforced" in held.message, held
    assert figures["noisy"]["delivered_mbps"] > 2 * 20, figures["noisy"]
    assert checks[0].passed, "blue kept its rate all the same"


@pytest.mark.alone  # a rate measured: the machine to itself
def test_a_limit_raised_tenfold_on_a_workload_no_noisy_neighbour_floods_fails_verify_naming_it(lab):
    """host2a (dpu2) is no noisy neighbour: before issue 29 nothing flooded it, and its limit raised
    tenfold passed verify. Now its own flood names it, with the rate it let through."""
    tbf = ["ip", "netns", "exec", "red", "tc", "qdisc", "change", "dev", "twinifb1", "root", "tbf", "rate"]
    dpu2 = lab.node("dpu2")
    dpu2.check(tbf + ["200mbit", "burst", "250000", "limit", "2750000"])
    try:
        report = verify.run(lab, only=["performance"])
    finally:
        dpu2.check(tbf + ["20mbit", "burst", "25000", "limit", "275000"])
    bad = {c.name: c for c in report.failures()}
    assert set(bad) == {"red host2a egress 20mbit held on dpu2:pf0vf0"}, {
        n: (c.message, c.data) for n, c in bad.items()
    }
    c = bad["red host2a egress 20mbit held on dpu2:pf0vf0"]
    assert (
        "over its limit of 2277 frames/s (20.0 Mbit/s): the limit is not enforced (flood host2a -> host1a)" in c.message
        and c.data["delivered_mbps"] > 2 * 20
    ), c.message
    assert c.message.startswith(f"delivered {c.data['delivered_fps']} frames/s ({c.data['delivered_mbps']} Mbit/s)")


@pytest.mark.alone  # a rate measured: the machine to itself
def test_rehearse_with_a_noisy_neighbour(lab):
    p = twin_cli("rehearse", LAB, str(ROOT / TOPOLOGY), "--noisy-neighbour", "host1b", "--json", timeout=240)
    rep = json.loads(p.stdout)
    assert p.returncode == 0, [v for v in rep["verdicts"] if not v["passed"]]
    assert rep["noisy"]["src"] == "host1b" and rep["noisy"]["delivered_fps"] <= 2277 * 1.05
    assert any(v["criterion"].startswith("noisy neighbour host1b held to its limit") for v in rep["verdicts"])
    mine = [f for f in rep["flows"] if f["src"] == "host1b"]
    assert mine and not any(f["judged"] for f in mine)
    assert all(f["lost"] == 0 for f in rep["flows"] if f["judged"])


# --- congestion signals -------------------------------------------------------------------------
@pytest.mark.alone  # a rate measured: the machine to itself
def test_congestion_marks_are_counted_and_answered_with_paced_cnps(lab):
    p = twin_cli("traffic", LAB, "host2b", "host1b", "--congest", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(p.stdout)
    point = r["congestion_points"]["leaf1:swp2"]
    assert r["received"] == r["sent"] == point["ect"] == 2000, "marked, never dropped"
    assert 0 < r["ce"] == point["ce"], "every mark the congestion point made arrived as CE"
    assert r["cnps_received"] == r["cnps_sent"] == r["cnps_allowed"], "one per QP per 50 us, all back at the sender"
    assert 0 < r["cnps_sent"] < r["ce"], "back-to-back marks are paced"
    assert r["tos_changed"] == 0 and r["icrc_bad"] == 0
    text = twin_cli("traffic", LAB, "host2b", "host1b", "--congest").stdout
    assert "congestion:" in text and "leaf1:swp2 marked" in text


@pytest.mark.alone  # a rate measured: the machine to itself
def test_the_traffic_group_reports_marks_and_cnps(lab):
    checks, extra = traffic_group.run(lab.context(), count=200)
    assert [c.message for c in checks if not c.passed] == []
    marked = {c["flow"]: c for c in extra["congestion"]}
    assert "blue host2b -> host1b" in marked, marked
    for c in marked.values():
        assert c["ce"] > 0 and c["cnps_received"] == c["cnps_sent"] == c["cnps_allowed"] > 0
    assert all("ce" in c.data and "cnps_received" in c.data for c in checks)


@pytest.mark.alone  # a rate measured: the machine to itself
def test_the_congestion_group_judges_the_point_by_what_comes_out_of_it(lab):
    p = twin_cli("verify", LAB, "--only", "congestion", "--json")
    report = json.loads(p.stdout)
    assert p.returncode == 0, [c["message"] for c in report["checks"] if not c["passed"]]
    assert [c["name"] for c in report["checks"]] == [
        "leaf1:swp2 marks ECN-capable RoCE above 5000pps (blue host2b -> host1b)",
        "leaf1:swp2 leaves RoCE that is not ECN-capable unmarked (blue host2b -> host1b)",
        "leaf1:swp2 marks nothing below 5000pps (blue host2b -> host1b)",
    ]
    (point,) = report["congestion"]["points"]
    ect, plain, below = point["ect"], point["plain"], point["below"]
    assert ect["received"] == ect["sent"] == 2000 and ect["arrived_fps"] >= 10000
    assert ect["ce"] >= 0.8 * ect["rule_marks"] > 0 and point["counted"] == {"ect": 2000, "ce": ect["ce"]}
    assert ect["cnps_sent"] == ect["cnps_received"] == ect["cnps_allowed"] > 0
    assert plain["received"] == 2000 and plain["ce"] == plain["tos_changed"] == 0
    assert below["received"] == below["sent"] == 500 and below["ce"] == 0
    assert report["seconds"]["congestion"] < 20


@pytest.mark.alone  # a rate measured: the machine to itself
def test_a_congestion_point_that_stops_marking_or_marks_what_it_must_not_fails_verify_naming_it(lab):
    leaf1 = lab.node("leaf1")
    ect = "leaf1:swp2 marks ECN-capable RoCE above 5000pps (blue host2b -> host1b)"
    plain = "leaf1:swp2 leaves RoCE that is not ECN-capable unmarked (blue host2b -> host1b)"

    def broken(*rule: str) -> dict[str, str]:
        doc = json.loads(leaf1.check(["nft", "-j", "list", "chain", "ip", "twin_ecn", "postrouting"]).stdout)
        (handle,) = [
            x["rule"]["handle"] for x in doc["nftables"] if x.get("rule", {}).get("comment") == "above 5000pps"
        ]
        verb = (
            ["replace", "rule", "ip", "twin_ecn", "postrouting", "handle", str(handle), *rule]
            if rule
            else ["delete", "rule", "ip", "twin_ecn", "postrouting", "handle", str(handle)]
        )
        leaf1.check(["nft", *verb])
        try:
            return {c.name: c.message for c in verify.run(lab, only=["congestion"]).failures()}
        finally:
            leaf1.check(["nft", "-f", "/etc/twin/congestion.nft"])

    bad = broken()  # the marking rule gone
    assert set(bad) == {ect} and "arrived marked CE" in bad[ect] and bad[ect].endswith("the point does not mark")
    bad = broken(
        'oifname "swp2" limit rate over 5000/second burst 50 packets ip ecn set ce counter name "ce_swp2" '
        'comment "above 5000pps"'
    )  # its ECT match gone: it marks frames that are not ECN-capable
    assert set(bad) == {plain} and " lost; leaf1:swp2 counted " in bad[plain], bad
    assert bad[plain].endswith("it marks frames that are not ECN-capable (a VTEP drops those, RFC 6040)")
    assert verify.run(lab, only=["congestion"]).passed, "whole again"


def test_a_run_without_the_rate_groups_says_what_it_did_not_exercise(lab):
    p = twin_cli("verify", LAB, "--only", "gateway", "--json")
    report = json.loads(p.stdout)
    assert p.returncode == 0 and len(report["not_exercised"]) == 6
    assert {
        "safeguard": "congestion point: leaf1:swp2 (above 5000pps)",
        "why": "the congestion group did not run",
    } in report["not_exercised"]
    text = twin_cli("verify", LAB, "--only", "gateway").stdout
    assert (
        "not exercised rate limit: host2b ingress 20000pps on dpu2:pf0vf1: the performance group did not run"
        in " ".join(text.split())
    )


def test_the_other_groups_hold_beside_the_services(lab):
    """A default route in every tenant VRF with a gateway, CE marks on the way: control, traffic,
    isolation, underlay and zero-trust still pass."""
    report = verify.run(lab, only=["control", "traffic", "isolation", "underlay", "zerotrust"])
    assert report.failures() == []
    vrf = next(c for c in report.checks if c.name == "vrf dpu1 red")
    assert vrf.data["actual"]["0.0.0.0/0"] == ["169.254.100.1"], "the gateway is part of the VRF's intent"


# one element of every kind of service (issue 16 on issue 14's lab; a frame-rate limit loosened and a
# congestion point's rate removed, issue 29), each caught by the check that should catch it; a minute
# of proof that measures rates: `make prove` runs it, beside the whole proof of the services (docs/verify.md)
SERVICES = [
    "gateway-rule dpu1 red a segment that does not go out",
    "gateway-rule dpu1 blue host1b: 1:1",
    "gateway-rule dpu1 blue forward to host1b",
    "gateway-rule dpu2 red unsolicited inbound",
    "gateway-default dpu2 red",
    "public-route dpu1 192.0.2.33",
    "public-network dpu2 192.0.2.34",
    "internet-default inet",
    "rate-limit-loose dpu2:pf0vf1 ingress",
    "congestion-rate leaf1:swp2",
]


@pytest.mark.prove
def test_prove_catches_every_kind_of_service_broken(lab):
    proof = prove.prove(lab, SERVICES)
    assert proof.passed, "\n".join(
        f"{o.element.id}: caught {o.caught}, restored {o.restored}: {o.detail}"
        for o in proof.outcomes
        if not (o.caught and o.restored)
    )
    assert proof.score == f"caught {len(SERVICES)} of {len(SERVICES)}"
    by = {o.element.id: o.check for o in proof.outcomes}
    assert by["gateway-rule dpu1 blue host1b: 1:1"].startswith("gateway: blue host1b -> internet ")
    assert by["internet-default inet"] in {
        "gateway: dpu1 has the internet's default route",
        "gateway: dpu2 has the internet's default route",
    }
    assert by["gateway-rule dpu2 red unsolicited inbound"] == "gateway: internet -> red 192.0.2.18 ping (no forward)"
    assert by["rate-limit-loose dpu2:pf0vf1 ingress"] == "performance: blue host2b ingress 20000pps held on dpu2:pf0vf1"
    assert (
        by["congestion-rate leaf1:swp2"] == "congestion: leaf1:swp2 marks nothing below 5000pps (blue host2b -> host1b)"
    )
    assert not [x for x in proof.exempt if x.kind.startswith(("gateway rule", "rate limit", "congestion point"))], (
        "none of the services' safeguards is exempt"
    )
    assert failures(gateway(lab)) == {}, "the lab is whole again"
