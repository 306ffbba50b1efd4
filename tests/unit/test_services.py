"""DPU services without Docker: topology keys, intent, kernel units and their deltas, probe
frames against scapy, the CNP pacing rule."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from twin.base.errors import TopologyError
from twin.config import services
from twin.config.reconcile import node_delta
from twin.intent import Intent
from twin.topology import load
from twin.topology.rates import parse_rate
from twin.traffic import dcqcn, packets, roce

ROOT = Path(__file__).resolve().parents[2]
SVC = ROOT / "topologies" / "dpu-services.yml"


def variant(tmp_path, edit) -> object:
    """dpu-services.yml with `edit(doc)` applied, loaded."""
    doc = yaml.safe_load(SVC.read_text())
    edit(doc)
    f = tmp_path / "svc.yml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load(f)


# --- topology -----------------------------------------------------------------------------------
def test_public_addresses_are_resolved_per_gateway_vtep_and_per_host():
    f = load(SVC)
    red, blue = f.tenants["red"], f.tenants["blue"]
    assert red.internet.vteps == {"dpu1": "192.0.2.17", "dpu2": "192.0.2.18"}, "the pool, in node order"
    assert red.internet.segments == ("web",) and blue.internet.segments == ("web",)
    assert blue.internet.hosts == {"host1b": "192.0.2.33", "host2b": "192.0.2.34"}
    host1c = next(a for a in red.attachments if a.host == "host1c")
    assert red.public_of(host1c) is None, "db does not go out"
    assert red.gateway("dpu1") == {"192.0.2.17": "pool"} and blue.gateway("dpu1") == {"192.0.2.33": "host1b"}
    assert f.public() == {
        "192.0.2.17/32": ("red", "dpu1"),
        "192.0.2.18/32": ("red", "dpu2"),
        "192.0.2.33/32": ("blue", "dpu1"),
        "192.0.2.34/32": ("blue", "dpu2"),
    }


def test_rate_limits_merge_per_direction_and_congestion_points_resolve():
    f = load(SVC)
    limits = {a.host: a.rate_limit for t in f.tenants.values() for a in t.attachments}
    assert str(limits["host1a"].egress) == "20mbit" and limits["host1a"].ingress is None, "the tenant's"
    assert limits["host2b"].egress is None and str(limits["host2b"].ingress) == "20000pps", "its own"
    (p,) = f.congestion
    assert (p.node, p.port, p.above.value, p.above.unit) == ("leaf1", "swp2", 5000, "pps")


@pytest.mark.parametrize(
    "text,value,unit",
    [
        ("100mbit", 100_000_000, "bit"),
        ("1.5gbit", 1_500_000_000, "bit"),
        ("25Mbit/s", 25_000_000, "bit"),
        ("20kpps", 20_000, "pps"),
        ("500kbit", 500_000, "bit"),
    ],
)
def test_rates_parse(text, value, unit):
    rate, why = parse_rate(text)
    assert (rate.value, rate.unit, why) == (value, unit, "")


@pytest.mark.parametrize("text", ["fast", "0pps", "1kbit", "100", True, "10 Mbps and more"])
def test_bad_rates_say_what_a_rate_is(text):
    rate, why = parse_rate(text)
    assert rate is None and "rate" in why


def test_internet_access_needs_an_internet_node(tmp_path):
    def drop_inet(doc):
        del doc["nodes"]["inet"]
        doc["links"] = [link for link in doc["links"] if "inet:eth1" not in link["endpoints"]]

    with pytest.raises(TopologyError) as e:
        variant(tmp_path, drop_inet)
    assert [p.message.split(":")[0] for p in e.value.problems] == ["the topology has no internet node to reach"] * 2
    assert {p.path for p in e.value.problems} == {"tenants.red.internet", "tenants.blue.internet"}


def test_fabrics_without_services_record_what_they_did():
    """New optional keys are written only when used: a recorded fabric.json of an older lab loads, and
    an aipod's JSON has no trace of them."""
    f = load(ROOT / "topologies" / "aipod.yml")
    text = f.model_dump_json()
    assert "internet" not in text and "rate_limit" not in text and "congestion" not in text
    assert type(f).model_validate_json(text) == f


# --- intent -------------------------------------------------------------------------------------
def test_gateway_intent_default_route_and_edge_sessions():
    i = Intent(load(SVC))
    dpu1 = i.nodes["dpu1"]
    red = dpu1.tenant("red")
    assert red.routes["0.0.0.0/0"] == frozenset({"169.254.100.1"}) and "0.0.0.0/0" in red.allowed
    (g_red, g_blue) = dpu1.gateways
    assert g_red.nat == {"host1a": "192.0.2.17"} and g_blue.nat == {"host1b": "192.0.2.33"}
    assert [(f.public, f.port, f.ip, f.to) for f in g_blue.forwards] == [("192.0.2.33", 8080, "10.1.1.11", 80)]
    assert dpu1.default_route == "inet" and i.nodes["inet"].default_route == ""
    assert set(dpu1.public_routes) == {"192.0.2.17/32", "192.0.2.18/32", "192.0.2.33/32", "192.0.2.34/32"}
    spine = i.nodes["spine1"].bgp_summary()
    assert "swp3" in spine["ipv4Unicast"]["peers"] and "swp3" not in spine["l2VpnEvpn"]["peers"], (
        "no EVPN towards the internet"
    )
    assert "l2VpnEvpn" not in i.nodes["inet"].bgp_summary()


# --- kernel units and what apply does with them -------------------------------------------------
def ops(steps) -> list[str]:
    return [s.command() for s in steps]


def test_units_of_a_gateway_vtep_and_of_a_congestion_point():
    f = load(SVC)
    keys = [u.key for u in services.units(f, "dpu1", "netns")]
    assert keys == [
        "gateway red",
        "nat red",
        "gateway blue",
        "nat blue",
        "shaping pf0vf0",
        "shaping pf0vf2",
        "shaping pf0vf1",
    ]
    nft = [u.key for u in services.units(f, "dpu1", "netns", "nft")]
    assert nft == ["gateway red", "nat red", "gateway blue", "nat blue", "policing red", "policing blue"], (
        "without tc every limit is policed"
    )
    (leaf,) = services.units(f, "leaf1", "netns")
    assert ops(leaf.setup) == ["nft -f /etc/twin/congestion.nft"]
    gw = services.units(f, "dpu1", "netns")[0]
    assert ops(gw.setup)[0] == (
        "ip link add twinpub10100 index 67118964 address 02:74:70:00:27:74 type veth peer "
        "name twingw10100 index 50341748 address 02:74:67:00:27:74 netns red"
    )
    assert "ip -n red route add default via 169.254.100.1 dev twingw10100 onlink" in ops(gw.setup)
    assert ops(gw.teardown) == ["ip link del twinpub10100"]


def test_taking_internet_access_away_tears_the_gateway_down_after_frr(tmp_path):
    old = load(SVC)
    new = variant(tmp_path, lambda d: d["tenants"]["blue"].pop("internet"))
    d = node_delta(old, new, "dpu1", "netns")
    assert ops(d.add) == [] and ops(d.bind) == []
    assert ops(d.remove) == [
        "ip netns exec blue nft 'add table ip twin_gw; delete table ip twin_gw'",
        "ip link del twinpub10200",
    ]


def test_a_new_pool_remakes_only_that_tenants_gateway(tmp_path):
    old = load(SVC)
    new = variant(tmp_path, lambda d: d["tenants"]["red"]["internet"].update(pool="192.0.2.40/29"))
    d = node_delta(old, new, "dpu1", "netns")
    assert ops(d.add)[:2] == [
        "ip netns exec red nft 'add table ip twin_gw; delete table ip twin_gw'",
        "ip link del twinpub10100",
    ], "taken down first, in reverse order of its setup"
    assert "ip route add 192.0.2.41/32 via 169.254.100.2 dev twinpub10100 onlink" in ops(d.add)
    assert not any("10200" in c for c in ops(d.add)), "blue's gateway is left alone"
    assert d.remove == []


def test_a_rate_limit_change_leaves_the_port_in_its_bridge(tmp_path):
    old = load(SVC)
    new = variant(tmp_path, lambda d: d["tenants"]["red"].update(rate_limit={"egress": "50mbit"}))
    d = node_delta(old, new, "dpu1", "netns")
    assert not any(s.op in ("move", "release", "nomaster", "master") for s in d.add + d.remove)
    assert "tc -n red qdisc replace dev twinifb1 root tbf rate 50000000bit burst 62500 limit 687500" in ops(d.add)


def test_a_congestion_point_moves(tmp_path):
    old = load(SVC)
    new = variant(tmp_path, lambda d: d.update(congestion=[{"port": "leaf2:swp2", "above": "5000pps"}]))
    assert ops(node_delta(old, new, "leaf1", "netns").remove) == [
        "nft 'add table ip twin_ecn; delete table ip twin_ecn'"
    ]
    assert ops(node_delta(old, new, "leaf2", "netns").add) == ["nft -f /etc/twin/congestion.nft"]


# --- probes and CNPs ----------------------------------------------------------------------------
def test_probe_frames_are_what_scapy_builds():
    from scapy.layers.inet import ICMP, IP, TCP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    body = packets.tag(7, 3)
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    ip = dict(src="10.1.1.11", dst="198.51.100.10", ttl=64, flags="DF", id=1)
    assert packets.echo("02:00:00:00:00:01", "02:00:00:00:00:02", "10.1.1.11", "198.51.100.10", 9, 1, body) == bytes(
        eth / IP(**ip) / ICMP(type=8, id=9, seq=1) / Raw(body)
    )
    assert packets.datagram(
        "02:00:00:00:00:01", "02:00:00:00:00:02", "10.1.1.11", "198.51.100.10", 5, 80, body
    ) == bytes(eth / IP(**ip) / UDP(sport=5, dport=80) / Raw(body))
    assert packets.syn("02:00:00:00:00:01", "02:00:00:00:00:02", "10.1.1.11", "198.51.100.10", 5, 80, body) == bytes(
        eth / IP(**ip) / TCP(sport=5, dport=80, seq=1, flags="S", window=65535) / Raw(body)
    )
    seen = packets.read(packets.syn("02:00:00:00:00:01", "02:00:00:00:00:02", "10.1.1.11", "1.2.3.4", 5, 80, body), 7)
    assert (seen.probe, seen.src, seen.dst, seen.sport, seen.dport, seen.reply) == (
        3,
        "10.1.1.11",
        "1.2.3.4",
        5,
        80,
        False,
    )
    assert packets.read(bytes(eth / IP(**ip) / UDP() / Raw(body)), 8) is None, "another run's"
    # an ICMP error quotes the probe it answers: a gateway that loops unsolicited inbound answers it
    probe = IP(src="198.51.100.10", dst="192.0.2.17") / ICMP(type=8, id=9, seq=1) / Raw(body)
    error = bytes(eth / IP(src="10.1.1.1", dst="198.51.100.10") / ICMP(type=11, code=0) / bytes(probe)[: len(probe)])
    seen = packets.read(error, 7)
    assert (seen.probe, seen.src, seen.error, seen.reply) == (3, "10.1.1.1", "time exceeded", False)
    assert packets.keep(7)(error)
    short = bytes(eth / IP(src="10.1.1.1", dst="198.51.100.10") / ICMP(type=3, code=3) / bytes(probe)[:28])
    assert packets.read(short, 7) is None, "quoted without its payload: not known as a probe"


def test_cnp_pacing_rule():
    assert dcqcn.expected_cnps([]) == 0
    assert dcqcn.expected_cnps([0, 10_000, 49_999, 50_000, 99_999, 100_000]) == 3
    assert dcqcn.expected_cnps([0, 60_000, 120_000]) == 3
    assert dcqcn.expected_cnps([0, 100_000, 60_000, 120_000]) == 2, "in the order read: 60,000 came after 100,000"


def test_the_notification_point_answers_marks_with_paced_cnps_to_the_senders_qp():
    f = roce.Flow(
        flow_id=1,
        src="a",
        dst="b",
        src_mac="02:00:00:00:00:0a",
        dst_mac="02:00:00:00:00:0b",
        src_ip="10.0.0.1",
        dst_ip="10.0.0.2",
        sqp=0x33,
        dqp=0x44,
        count=1,
    )
    cnp = replace(
        f,
        flow_id=1 | dcqcn.CNP_BIT,
        src="b",
        dst="a",
        src_mac=f.dst_mac,
        dst_mac=f.src_mac,
        src_ip=f.dst_ip,
        dst_ip=f.src_ip,
        cnp=True,
        dqp=f.sqp,
        dscp=dcqcn.CNP_DSCP,
        ecn=roce.NOT_ECT,
    )
    np = dcqcn.NotificationPoint({1: cnp}, [f], run=5)
    marked = roce.frame(replace(f, ecn=roce.CE), 5, 0)
    plain = roce.frame(f, 5, 1)
    assert np("b", plain, 0) is None, "no mark, no CNP"
    answers = [np("b", marked, t) for t in (1_000, 20_000, 60_000, 70_000)]
    assert [a is not None for a in answers] == [True, False, True, False]
    back = roce.read(answers[0], 5)
    assert back.flow_id == 1 | dcqcn.CNP_BIT and answers[0][42] == roce.CNP_OPCODE
    assert int.from_bytes(answers[0][47:50], "big") == 0x33, "to the sender's QP"
    assert roce.icrc_ok(answers[0]) and answers[0][15] >> 2 == dcqcn.CNP_DSCP and answers[0][15] & 3 == 0
    assert np.sent == {1: 2} and len(np.marked[1]) == 4 and np("a", marked, 90_000) is None, "only at its receiver"


def test_two_flows_marked_at_once_each_get_their_own_paced_cnps():
    """Flows of a run share the QP number, not the QP: one flow's CNP must not silence another's."""

    def flow(i: int, src: str) -> roce.Flow:
        return roce.Flow(
            flow_id=i,
            src=src,
            dst="b",
            src_mac=f"02:00:00:00:00:0{i}",
            dst_mac="02:00:00:00:00:0b",
            src_ip=f"10.0.0.{i}",
            dst_ip="10.0.0.2",
            count=1,
        )

    flows = [flow(1, "a"), flow(2, "c")]
    cnps = {
        f.flow_id: replace(f, flow_id=f.flow_id | dcqcn.CNP_BIT, src="b", dst=f.src, cnp=True, dqp=f.sqp) for f in flows
    }
    np = dcqcn.NotificationPoint(cnps, flows, run=5)
    for t in (1_000, 2_000, 60_000):
        for f in flows:
            np("b", roce.frame(replace(f, ecn=roce.CE), 5, t), t)
    assert np.sent == {1: 2, 2: 2} == {f.flow_id: dcqcn.expected_cnps(np.marked[f.flow_id]) for f in flows}
