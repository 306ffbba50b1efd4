"""twin.observe without Docker: drop-rule prefixes, packet headers, NFLOG messages, reasons in
words, the drop-event rate limit, the bounded store and its tail, the RoCE table's JSON, the
timeline, and the exporter's text (parsed by Prometheus' own parser)."""

from __future__ import annotations

import re
import socket
import struct
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.layers.vxlan import VXLAN

from twin.config import droplog
from twin.config.render import render_lab
from twin.observe import nflog, nftnl, packets, roce, store, timeline
from twin.observe.drops import Limiter
from twin.observe.metrics import registry
from twin.observe.reasons import Place, drop_event
from twin.observe.sample import Snapshot
from twin.runtime import nlattr
from twin.topology import load

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def aipod():
    return load(ROOT / "topologies" / "aipod.yml")


def test_every_drop_rule_logs_a_reason_twin_knows(aipod):
    files = render_lab(aipod, "netns")
    rules = [
        line
        for node in files.values()
        for name, text in node.items()
        if name.endswith(".nft")
        for line in text.splitlines()
        if " drop " in line
    ]
    assert rules and all("log prefix" in r for r in rules)
    codes = {re.search(r'log prefix "twin (\S+) ', r).group(1) for r in rules}
    assert codes == set(droplog.REASONS) - {"loss", "acl"}  # a fault's, an NVUE ACL's (tests/unit/test_nvue_acl.py)
    assert all(f"group {droplog.LOG_GROUP} drop" in r for r in rules)
    assert droplog.parse("twin spoof-ip host1a") == ("spoof-ip", "host1a")
    assert droplog.parse("twin loss 30%") == ("loss", "30%")
    assert droplog.parse("someone else's prefix") is None
    with pytest.raises(ValueError):
        droplog.log("nope", "x")


def test_headers_of_vxlan_roce_and_arp():
    inner = (
        Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        / IP(src="10.1.1.11", dst="10.1.1.12", tos=26 << 2 | 3)
        / UDP(sport=1234, dport=4791)
        / BTH(opcode=0x81, dqpn=77, psn=5)
    )
    outer = (
        Ether()
        / IP(src="10.255.0.5", dst="10.255.0.6", tos=26 << 2 | 2)
        / UDP(sport=999, dport=4789)
        / VXLAN(vni=10101)
        / inner
    )
    h = packets.ethernet(bytes(outer))
    assert (h["src"], h["dscp"], h["ecn"], h["vni"]) == ("10.255.0.5", 26, "ect0", 10101)
    assert h["inner"]["ecn"] == "ce" and h["inner"]["bth"] == {"opcode": "0x81", "qp": 77, "psn": 5}
    assert "vni 10101" in packets.summary(h) and "BTH op 0x81" in packets.summary(h)
    arp = bytes(ARP(op=1, hwsrc="02:00:00:00:00:09", psrc="10.1.1.99", pdst="10.1.1.1"))
    a = packets.headers(0x0806, arp)
    assert (a["arp"], a["arp_ip"], a["arp_mac"]) == ("request", "10.1.1.99", "02:00:00:00:00:09")


def nflog_message(prefix: str, payload: bytes, indev: int, physindev: int, family: int = 7) -> bytes:
    attrs = (
        nlattr.attr(nflog.PACKET_HDR, struct.pack("!HBB", 0x0800, 0, 0))
        + nlattr.attr(nflog.TIMESTAMP, struct.pack("!QQ", 1700000000, 250000))
        + nlattr.attr(nflog.INDEV, struct.pack("!I", indev))
        + nlattr.attr(nflog.PHYSINDEV, struct.pack("!I", physindev))
        + nlattr.attr(nflog.HWHEADER, bytes.fromhex("00005e000101023800000004") + b"\x08\x00")
        + nlattr.attr(nflog.PAYLOAD, payload)
        + nlattr.attr(nflog.PREFIX, prefix.encode() + b"\0")
    )
    body = struct.pack("!BBH", family, 0, droplog.LOG_GROUP) + attrs
    return (
        struct.pack("=IHHII", 16 + len(body), (nflog.NFNL_SUBSYS_ULOG << 8) | nflog.NFULNL_MSG_PACKET, 0, 0, 0) + body
    )


def test_an_nflog_message_becomes_a_drop_event_with_its_reason(aipod):
    payload = bytes(IP(src="10.1.1.99", dst="10.1.1.12") / UDP(sport=4791, dport=4791) / (b"\0" * 12))
    data = nflog_message("twin spoof-ip host1a", payload, indev=20, physindev=7) * 2  # two in one datagram
    logged = nflog.parse(data)
    assert len(logged) == 2 and logged[0].time == 1700000000.25 and logged[0].physindev == 7
    e = drop_event(aipod, Place("dpu1", "red", {7: "pf0vf0", 20: "br10101"}), logged[0])
    assert (e["node"], e["port"], e["tenant"], e["code"], e["direction"]) == ("dpu1", "pf0vf0", "red", "spoof-ip", "in")
    assert e["reason"] == "IPv4 source 10.1.1.99 is not host1a's address (10.1.1.11)"
    assert e["headers"]["src_mac"] == "02:38:00:00:00:04"
    vx = drop_event(
        aipod, Place("dpu1", "red", {7: "pf0vf0"}), nflog.parse(nflog_message("twin vxlan host1a", payload, 20, 7))[0]
    )
    assert vx["reason"] == "VXLAN from a host port (host1a)"
    assert drop_event(aipod, Place("dpu1"), nflog.parse(nflog_message("not ours", payload, 1, 1))[0]) is None


def test_an_nflog_socket_binds_its_group_in_this_namespace():
    s = nflog.NflogSocket("", droplog.LOG_GROUP + 1)
    try:
        assert s.read() == []
    finally:
        s.close()


def test_drop_events_are_limited_per_port_and_reason_and_the_rest_is_one_burst():
    lim = Limiter(per_second=10)

    def ev(i):
        return {
            "node": "dpu1",
            "port": "pf0vf0",
            "code": "loss",
            "reason": "r",
            "time": 100 + i / 100,
            "kind": "drop",
            "count": 1,
        }

    out = lim.admit([ev(i) for i in range(25)], now=100.2)
    assert len(out) == 10 and all(e["kind"] == "drop" for e in out)
    later = lim.admit([], now=101.3)
    assert len(later) == 1 and later[0]["kind"] == "drop-burst" and later[0]["count"] == 15
    other = lim.admit([{**ev(0), "port": "pf0vf1"}], now=101.4)
    assert len(other) == 1


def test_the_store_is_bounded_and_its_tail_follows_rotation(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "MAX_BYTES", 2000)
    tail = store.Tail(tmp_path)
    seen = []
    for i in range(100):
        store.append(tmp_path, [{"time": 1000 + i, "kind": "drop", "node": "n1" if i % 2 else "n2", "text": "x" * 40}])
        if i % 7 == 0:
            seen += tail.read()
    seen += tail.read()
    assert [e["time"] for e in seen] == [1000 + i for i in range(100)], "every event once, in order, across rotations"
    size = sum(p.stat().st_size for p in store.where(tmp_path).glob("events*.jsonl"))
    assert size <= 2 * 2000
    kept = store.read(tmp_path)
    assert kept[-1]["time"] == 1099 and len(kept) < 100
    assert {e["node"] for e in store.read(tmp_path, since=1090, node="n1")} == {"n1"}
    store.note(tmp_path, "action", "fault link-down dpu1:p0", node="dpu1")
    assert store.read(tmp_path, kinds={"action"})[0]["text"] == "fault link-down dpu1:p0"
    store.note(tmp_path / "gone", "action", "lost quietly")
    store.append(tmp_path / "gone", [{"time": 1, "kind": "node", "text": "a lab that is down"}])
    assert not (tmp_path / "gone").exists(), "a lab directory is never made again by a late event"


def test_appends_from_threads_never_interleave(tmp_path):
    def writer(k: int) -> None:
        for i in range(50):
            store.append(tmp_path, [{"time": i, "kind": "node", "text": f"{k}-{i}" * 20}])

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert len(store.read(tmp_path)) == 200


def _elem(key: bytes, packets: int, octets: int) -> bytes:
    A = nlattr.attr
    counter = A(nftnl.EXPR_NAME, b"counter\0") + A(
        nftnl.EXPR_DATA,
        A(nftnl.COUNTER_BYTES, struct.pack("!Q", octets)) + A(nftnl.COUNTER_PACKETS, struct.pack("!Q", packets)),
    )
    return A(nftnl.LIST_ELEM, A(nftnl.ELEM_KEY, A(nftnl.DATA_VALUE, key)) + A(nftnl.ELEM_EXPR, counter))


def _key(port: str, dscp: int | None = None, ecn: int | None = None) -> bytes:
    k = port.encode().ljust(16, b"\0")
    return k if dscp is None else k + bytes([dscp, 0, 0, 0, ecn, 0, 0, 0])


class FakeNft:
    """What the kernel's nf_tables dumps answer, made by hand in its wire format."""

    sets = {
        "roce_tx": [_elem(_key("p0", 26, 1), 10, 11480), _elem(_key("p0", 0, 3), 2, 200)],
        "cnp_rx": [_elem(_key("p1"), 3, 300)],
        "roce_rx": [],
        "cnp_tx": [],
    }

    def elements(self, table, name):
        body = b"\5\0\0\0" + nlattr.attr(nftnl.LIST_ELEMENTS, b"".join(self.sets[name]))
        return nftnl.elements([body])

    def hooked(self, table):
        devs = b"".join(nlattr.attr(nftnl.DEVICE_NAME, d + b"\0") for d in (b"p0", b"p1"))
        return nftnl.hooked([b"\5\0\0\0" + nlattr.attr(nftnl.CHAIN_HOOK, nlattr.attr(nftnl.HOOK_DEVS, devs))])


def test_the_roce_table_and_its_counters_over_netlink():
    text = roce.ruleset("lab1", ["p1", "p0"])
    assert 'devices = { "p0", "p1" } priority -600' in text and "hook egress" in text
    assert f"@th,{(8 + 8 + 14 + 20 + 2) * 8},16 4791" in text and "0x81" in text
    ports, hooked = roce.read(FakeNft(), "lab1")
    assert hooked == {"p0", "p1"}
    p0 = ports["p0"].to_dict()
    assert (p0["tx_packets"], p0["tx_ce"], p0["rx_packets"]) == (12, 2, 0)
    assert {(c["dscp"], c["ecn"], c["packets"]) for c in p0["classes"]} == {(26, "ect1", 10), (0, "ce", 2)}
    assert ports["p1"].to_dict()["cnp_rx"] == 3


def test_an_nf_tables_dump_of_a_table_that_is_not_there_is_none():
    s = nftnl.NftSocket("")
    try:
        assert s.hooked("twin_watch_no-such-lab") == set()  # a dump filtered down to nothing
        assert s.elements("twin_watch_no-such-lab", "roce_rx") is None
    finally:
        s.close()


def snap(t: float, oper: str = "up", state: str = "Established", routes=("10.1.1.12/32",), control: float = 1.0):
    return Snapshot(
        time=t,
        nodes={"dpu1": "running"},
        ports={"dpu1": {"p0": {"oper": oper, "admin": oper}}},
        routes={"dpu1": {"red": list(routes)}},
        sessions={
            "dpu1": {
                "ipv4Unicast p0": {
                    "vrf": "default",
                    "afi": "ipv4Unicast",
                    "port": "p0",
                    "peer": "leaf1",
                    "state": state,
                    "up": state == "Established",
                    "prefixes": 5,
                }
            }
        },
        control_time=control,
    )


def test_the_timeline_says_what_changed():
    assert timeline.changes(None, snap(1)) == []
    assert timeline.changes(snap(1), snap(2)) == []
    ev = timeline.changes(snap(1), snap(2, oper="down", state="Idle", routes=(), control=2.0))
    kinds = {e["kind"]: e for e in ev}
    assert kinds["carrier"]["text"] == "dpu1 p0: link down (admin down)"
    assert kinds["session"]["text"] == "dpu1 ipv4Unicast p0 (leaf1): Established -> Idle"
    assert kinds["routes"]["withdrawn"] == ["10.1.1.12/32"] and "-1 routes" in kinds["routes"]["text"]


def test_the_exporters_text_parses_with_prometheus_parser():
    s = snap(1)
    s.ports["dpu1"]["p0"].update(
        {
            k: 7
            for k in (
                "rx_packets",
                "tx_packets",
                "rx_bytes",
                "tx_bytes",
                "rx_dropped",
                "tx_dropped",
                "rx_errors",
                "tx_errors",
            )
        }
    )
    s.roce = {"dpu1": {"p0": roce.read(FakeNft(), "lab1")[0]["p0"].to_dict()}}
    s.vnis = {"dpu1": {"10101": {"type": "L2", "tenant": "red", "macs": 2, "type2": 4, "type3": 2, "type5": 0}}}
    c = SimpleNamespace(
        lock=threading.Lock(),
        latest=s,
        drops={("dpu1", "pf0vf0", "red", "spoof-ip"): 3},
        ctx=SimpleNamespace(name="lab1"),
    )
    fams = {f.name: f for f in text_string_to_metric_families(generate_latest(registry(c)).decode())}

    def value(fam, **labels):
        return next(x.value for x in fams[fam].samples if all(x.labels.get(k) == v for k, v in labels.items()))

    assert fams["twin_port_rx_packets"].type == "counter" and value("twin_port_rx_packets", port="p0") == 7
    assert value("twin_roce_packets", direction="tx", dscp="26", ecn="ect1") == 10
    assert value("twin_bgp_session_up", peer="leaf1") == 1
    assert value("twin_drop_events", reason="spoofed_ip", node="dpu1", tenant="red") == 3
    assert value("twin_evpn_routes", vni="10101", type="2") == 4
    assert all(x.labels["lab"] == "lab1" for f in fams.values() for x in f.samples)


def test_the_grafana_dashboard_asks_only_for_metrics_the_exporter_serves():
    s = snap(1)
    s.ports = {}
    c = SimpleNamespace(lock=threading.Lock(), latest=s, drops={}, ctx=SimpleNamespace(name="lab1"))
    text = generate_latest(registry(c)).decode()
    served = set(re.findall(r"^# TYPE (\S+) (\S+)", text, re.M))
    names = {n + "_total" if kind == "counter" and not n.endswith("_total") else n for n, kind in served}
    asked = set(re.findall(r"twin_[a-z_]+", (ROOT / "docs" / "grafana-twin.json").read_text())) - {"twin-fabric"}
    assert asked and asked <= names, asked - names


def test_a_netlink_read_the_kernel_never_answers_is_an_error_not_a_hang(monkeypatch):

    from twin.base import timeouts
    from twin.runtime import netns

    monkeypatch.setattr(timeouts, "NETLINK", 0.2)
    s = netns.netlink("", socket.NETLINK_ROUTE)
    try:
        with pytest.raises(TimeoutError):
            s.recv(1 << 16)  # nothing was asked: nothing comes
    finally:
        s.close()


def test_a_link_dump_skips_the_rest_of_an_earlier_dump_given_up_at_its_deadline():
    from twin.observe import linkstats

    def link(seq: int, index: int, name: str) -> bytes:
        body = struct.pack("=BxHiII", 0, 0, index, 1, 0) + nlattr.attr(linkstats.IFLA_IFNAME, name.encode() + b"\0")
        return struct.pack("=IHHII", 16 + len(body), linkstats.RTM_NEWLINK, 2, seq, 0) + body

    done = struct.pack("=IHHII", 20, linkstats.NLMSG_DONE, 2, 1, 0) + b"\0" * 4
    stale = link(1, 7, "swp9") + done  # the tail of dump 1, read by dump 2
    assert linkstats.parse(stale, seq=2) == ([], False)
    links, finished = linkstats.parse(stale + link(2, 2, "p0"), seq=2)
    assert [(x["index"], x["name"]) for x in links] == [(2, "p0")] and not finished


def test_collector_rounds_take_turns_on_their_shared_sockets():
    from twin.observe.collector import Collector

    c = Collector.__new__(Collector)
    c._reading = threading.Lock()
    inside, overlaps = [], []

    def one(control):
        if inside:
            overlaps.append(control)
        inside.append(control)
        threading.Event().wait(0.05)
        inside.pop()
        return control

    c._round = one
    done = []
    threads = [threading.Thread(target=lambda i=i: done.append(c.round(i % 2 == 0))) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == [] and inside == [] and sorted(done) == [False] * 3 + [True] * 3
