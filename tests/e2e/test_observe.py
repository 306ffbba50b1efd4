"""Eyes on the twin (issue 15), against a real lab: RoCE counters move by exactly the frames
the traffic engine sent on the ports they crossed; a spoofed frame is one drop event with
its reason, node and port; the exporter's text parses with Prometheus' own parser and
carries those figures; and the web page, in Debian's chromium, draws every node and link
and shows a link going down within seconds."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import ROOT, chromium, twin_cli
from twin.base import wait
from twin.observe import store
from twin.observe.collector import Collector

pytestmark = pytest.mark.e2e
SPOOF = (
    "from scapy.all import Ether, IP, UDP, sendp\n"
    "sendp(Ether(dst='00:00:5e:00:01:01')/IP(src='10.1.1.99', dst='10.1.1.12')/UDP(sport=4791, dport=4791)"
    "/(b'\\x00' * 20), iface='eth1', verbose=0)\n"
)


@pytest.fixture(scope="module")
def lab(aipod):
    return aipod  # the default lab this module shares with others: the link it takes down comes back up


def roce(ctx) -> dict[tuple[str, str], dict]:
    """(node, port) -> RoCE counters, read now."""
    snap = Collector(ctx, record=False).round()
    return {(n, p): r for n, ports in snap.roce.items() for p, r in ports.items()}


def moved(before: dict, after: dict) -> dict[tuple[str, str], dict[tuple[str, int, str], int]]:
    """(node, port) -> (direction, dscp, ecn) -> packets more than before, where anything moved."""
    out = {}
    for key, r in after.items():
        old = {(c["direction"], c["dscp"], c["ecn"]): c["packets"] for c in before.get(key, {}).get("classes", [])}
        d = {
            (c["direction"], c["dscp"], c["ecn"]): c["packets"] - old.get((c["direction"], c["dscp"], c["ecn"]), 0)
            for c in r["classes"]
        }
        d = {k: v for k, v in d.items() if v}
        if d:
            out[key] = d
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "twin.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
        cwd=ROOT,
    )


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def test_counters_move_by_exactly_the_roce_frames_sent_on_the_ports_they_crossed(lab):
    ctx = lab.context()
    before = roce(ctx)
    res = json.loads(
        twin_cli(
            "traffic", lab.name, "host1a", "host2a", "--count", "25", "--dscp", "26", "--ecn", "1", "--json", check=True
        ).stdout
    )
    cnp = json.loads(
        twin_cli("traffic", lab.name, "host1a", "host2a", "--count", "3", "--cnp", "--json", check=True).stdout
    )
    assert res["sent"] == res["received"] == 25 and cnp["sent"] == 3
    after = roce(ctx)
    d = moved(before, after)
    sent = res["sent"] + cnp["sent"]
    # the hosts' ports and the VTEPs' host ports carry the tenant frames as sent (DSCP 26, ECT(1));
    # the CNPs go as the traffic engine marks them
    assert sum(d[("host1a", "eth1")].values()) == sent and d[("host1a", "eth1")][("tx", 26, "ect1")] == 25
    assert sum(d[("host2a", "eth1")].values()) == sent and d[("host2a", "eth1")][("rx", 26, "ect1")] == 25
    assert sum(d[("dpu1", "pf0vf0")].values()) == sent and all(k[0] == "rx" for k in d[("dpu1", "pf0vf0")])
    assert sum(d[("dpu2", "pf0vf0")].values()) == sent and all(k[0] == "tx" for k in d[("dpu2", "pf0vf0")])
    # across the fabric (VXLAN, the outer header inherits DSCP 26): every node it crossed passed on
    # exactly what it took in, and no port it did not cross moved
    for node in {n for n, _ in d}:
        rx = sum(v for (n, _), c in d.items() if n == node for (direction, _, _), v in c.items() if direction == "rx")
        tx = sum(v for (n, _), c in d.items() if n == node for (direction, _, _), v in c.items() if direction == "tx")
        if node not in ("host1a", "host2a"):
            assert rx == tx == sent, f"{node}: rx {rx}, tx {tx}, sent {sent}"
    assert {n for n, _ in d} <= {"host1a", "host2a", "dpu1", "dpu2", "leaf1", "leaf2", "spine1", "spine2"}
    assert all(dscp == 26 for c in d.values() for (_, dscp, _) in c if True) or cnp["sent"]
    assert after[("host1a", "eth1")]["cnp_tx"] - before.get(("host1a", "eth1"), {}).get("cnp_tx", 0) == 3
    assert after[("host2a", "eth1")]["cnp_rx"] - before.get(("host2a", "eth1"), {}).get("cnp_rx", 0) == 3
    # `twin counters --json` reads the same kernel counters
    doc = json.loads(twin_cli("counters", lab.name, "HOST2A", "--json", check=True).stdout)
    assert doc["snapshot"]["roce"]["host2a"]["eth1"]["rx_packets"] == after[("host2a", "eth1")]["rx_packets"]


def spoof(lab) -> None:
    out = lab.context().exec("host1a").run(["python3", "-c", SPOOF])
    assert out.ok, out.stderr


def test_a_spoofing_attempt_is_one_drop_event_with_its_reason_node_and_port(lab):
    ctx = lab.context()
    with Collector(ctx) as c:
        assert c.leader
        t0 = time.time()
        spoof(lab)
        wait.until(
            lambda: [] if store.read(ctx.dir, since=t0, kinds={"drop"}) else ["no drop event yet"], 10, "the drop event"
        )
        time.sleep(1.5)  # nothing else comes of it
    events = [
        json.loads(line)
        for line in twin_cli(
            "events", lab.name, "--since", "1m", "--kind", "drop", "--json", check=True
        ).stdout.splitlines()
    ]
    events = [e for e in events if e["time"] >= t0]
    assert len(events) == 1, events
    e = events[0]
    assert (e["node"], e["port"], e["tenant"], e["code"]) == ("dpu1", "pf0vf0", "red", "spoof-ip")
    assert e["reason"] == "IPv4 source 10.1.1.99 is not host1a's address (10.1.1.11)"
    assert e["headers"]["src"] == "10.1.1.99" and e["headers"]["dport"] == 4791
    text = twin_cli("events", lab.name, "--since", "1m", "--node", "DPU1", check=True).stdout
    assert "dpu1 pf0vf0: dropped (IPv4 source 10.1.1.99 is not host1a's address (10.1.1.11))" in text


def test_the_exporters_text_parses_with_prometheus_parser_and_carries_the_figures(lab):
    port = free_port()
    p = serve("exporter", lab.name, "--listen", f"127.0.0.1:{port}")
    try:
        url = f"http://127.0.0.1:{port}/metrics"

        def scrape() -> dict:
            out = {}
            for fam in text_string_to_metric_families(get(url)):
                for s in fam.samples:
                    out.setdefault(s.name, []).append(s)
            return out

        wait.until(lambda: [] if _up(url) else ["exporter not answering"], 30, "the exporter")
        first = scrape()
        drops = _drop_count(first)
        spoof(lab)
        wait.until(
            lambda: [] if _drop_count(scrape()) == drops + 1 else ["drop not counted yet"],
            10,
            "the spoofed frame counted by the exporter",
        )
        counters = json.loads(twin_cli("counters", lab.name, "--json", check=True).stdout)["snapshot"]

        def differ() -> list[str]:  # the exporter reads the RoCE tables every WATCH_ROCE seconds
            nonlocal m, roce
            m = scrape()
            roce = {
                (s.labels["node"], s.labels["port"], s.labels["direction"], s.labels["dscp"], s.labels["ecn"]): s.value
                for s in m["twin_roce_packets_total"]
            }
            return [
                f"{c}: exporter {roce.get(k)}"
                for c in counters["roce"]["host1a"]["eth1"]["classes"]
                if roce.get(k := ("host1a", "eth1", c["direction"], str(c["dscp"]), c["ecn"])) != c["packets"]
            ]

        m, roce = {}, {}
        wait.until(differ, 10, "the exporter's RoCE figures equal to `twin counters`")
        assert roce[("host2a", "eth1", "rx", "26", "ect1")] >= 25
        rx = {(s.labels["node"], s.labels["port"]): s.value for s in m["twin_port_rx_packets_total"]}
        assert set(rx) == {(n, p) for n, ports in counters["ports"].items() for p in ports}
        sessions = m["twin_bgp_session_up"]
        assert len(sessions) == 2 * 16 and all(s.value == 1 for s in sessions), "16 sessions, IPv4 and EVPN each"
        assert all(s.labels["lab"] == lab.name for fam in m.values() for s in fam)
        assert status_of(f"http://127.0.0.1:{port}/nope") == (404, "404: Not Found\n")
    finally:
        p.terminate()
        p.wait(10)
    assert p.stderr.read().splitlines()[1:] == ["twin exporter: GET /nope: 404"], "one line, no traceback"


def status_of(url: str, body: bytes | None = None) -> tuple[int, str]:
    """The status and text of a request that fails (HTTPError carries them)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _up(url: str) -> bool:
    try:
        return "twin_port_up" in get(url)
    except OSError:
        return False


def _drop_count(samples: dict) -> float:
    return sum(
        s.value
        for s in samples.get("twin_drop_events_total", [])
        if (s.labels["node"], s.labels["port"], s.labels["reason"]) == ("dpu1", "pf0vf0", "spoofed_ip")
    )


def test_the_web_page_in_chromium_draws_the_fabric_and_shows_a_link_going_down(lab, tmp_path):
    twin_cli("verify", lab.name, "--only", "isolation", check=True)  # the page shows the last result
    port = free_port()
    p = serve("web", lab.name, "--listen", f"127.0.0.1:{port}")
    fabric = lab.context().fabric
    try:
        with chromium(1400, 1000) as browser:
            wait.until(lambda: [] if _answers(f"http://127.0.0.1:{port}/") else ["page not served"], 30, "twin web")
            browser.get(f"http://127.0.0.1:{port}/")
            js = "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.dataset[arguments[1]]);"

            def drawn() -> list[str]:
                nodes = browser.execute_script(js, "g.node", "node")
                states = browser.execute_script(js, "line.link", "state")
                if sorted(nodes) != sorted(fabric.nodes) or len(states) != len(fabric.links):
                    return [f"{len(nodes)} nodes and {len(states)} links drawn"]
                return [f"{states.count('up')} of {len(states)} links up"] if states.count("up") != len(states) else []

            wait.until(drawn, 30, "every node and link of the lab drawn, every link up")
            assert "isolation matrix" in browser.find_element("id", "verify").text
            link = 'line.link[data-a="dpu1:p0"], line.link[data-b="dpu1:p0"]'
            state = f"return document.querySelector('{link}').dataset.state;"
            twin_cli("fault", "link-down", lab.name, "dpu1:p0", check=True)
            t0 = time.monotonic()
            wait.until(lambda: [] if browser.execute_script(state) == "down" else ["still up"], 5, "dpu1:p0 drawn down")
            shown = time.monotonic() - t0
            assert shown < 5
            wait.until(
                lambda: [] if "link down" in browser.find_element("id", "timeline").text else ["no event"],
                5,
                "the carrier event on the timeline",
            )
            browser.find_element("id", "node-dpu1").click()
            wait.until(
                lambda: [] if "BGP sessions" in browser.find_element("id", "detail").text else ["no detail"],
                5,
                "dpu1's detail",
            )
            # docs/web.png (the README's picture) only when asked: a test leaves the tree clean
            asked = os.environ.get("TWIN_UPDATE_SCREENSHOT") == "1"
            shot = ROOT / "docs" / "web.png" if asked else tmp_path / "web.png"
            browser.save_screenshot(str(shot))
            assert shot.stat().st_size > 10_000, "a real page, not a blank one"
            carrier = twin_cli("events", lab.name, "--since", "1m", "--kind", "carrier", check=True).stdout
            assert "dpu1 p0: link down" in carrier
            assert status_of(f"http://127.0.0.1:{port}/nope") == (404, "404: Not Found\n")
            assert status_of(f"http://127.0.0.1:{port}/api/state", b"x" * 100_000) == (
                413,
                "413: a request body is at most 65536 bytes\n",
            )
    finally:
        twin_cli("fault", "link-up", lab.name, "dpu1:p0")
        p.terminate()
        p.wait(10)
    assert [line for line in p.stderr.read().splitlines()[1:] if "favicon" not in line] == [
        "twin web: GET /nope: 404",
        "twin web: POST /api/state: 413: a request body is at most 65536 bytes",
    ]


def _answers(url: str) -> bool:
    try:
        return "<svg" in get(url)
    except OSError:
        return False
