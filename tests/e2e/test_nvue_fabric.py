"""A blank NVUE fabric configured by automation, as on a real fabric (issue 33): `twin up` of
tests/e2e/nvue/blank.yml returns without waiting for a fabric nobody configured; an Ansible playbook
(forks 4, the persistent ansible.netcommon.httpapi connection through the tests' own httpapi plugin,
port 8765 pinned in the play) configures every switch's day 0 at once, each at its own management
address; each revision is applied in seconds, two nodes' at once; then `twin wait` and `twin verify`
pass. The day 0 holds the cases NVUE's model goes beyond twin's tenants with: an SVI routed in the
default VRF (VRR), VRF mgmt with eth0, ports no cable reaches, BGP neighbors named by interface alone.
One lab for the module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest
import requests
import yaml

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin.base import wait
from twin.lab import Lab
from twin.nvue import service as nvue_service

pytestmark = pytest.mark.e2e

NAME = "t-nvue-fab"
TOPOLOGY = ROOT / "tests/e2e/nvue/blank.yml"
ANSIBLE = ROOT / "tests/e2e/ansible"


@pytest.fixture(scope="module")
def lab(runtime, node_image):
    t0 = time.monotonic()
    p = twin_cli("up", str(TOPOLOGY), "--name", NAME, "--image", node_image)
    try:
        assert p.returncode == 0, p.stdout + p.stderr
        assert "NVUE nodes are blank" in " ".join(p.stdout.split()), p.stdout
        print(f"twin up of the blank fabric: {time.monotonic() - t0:.1f}s")
        yield Lab.open(NAME)
    finally:
        twin_cli("down", NAME)
    assert leftovers(runtime, NAME) == []


@pytest.fixture(scope="module")
def inventory(lab, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("inv")
    p = twin_cli("inventory", NAME, "--format", "nvue", "-o", str(d))
    assert p.returncode == 0, p.stderr
    return d / "nvue.yml"


def hosts(inventory: Path) -> dict[str, dict]:
    return yaml.safe_load(inventory.read_text())["all"]["children"]["nvue"]["hosts"]


def session(lab: Lab) -> requests.Session:
    s = requests.Session()
    s.auth = (nvue_service.USER, nvue_service.password(lab.dir))
    s.verify, s.trust_env = False, False
    return s


def playbook(inventory: Path, tmp: Path, forks: int = 4) -> dict[str, dict]:
    """The day-0 playbook's result per host (the nvue_revision module's)."""
    env = {
        **os.environ,
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_HOME": str(tmp / "ah"),
        "ANSIBLE_LOCAL_TEMP": str(tmp / "at"),
        "ANSIBLE_HTTPAPI_PLUGINS": str(ANSIBLE / "httpapi_plugins"),
        "ANSIBLE_LIBRARY": str(ANSIBLE / "library"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_PERSISTENT_COMMAND_TIMEOUT": "120",
        "ANSIBLE_HOST_KEY_CHECKING": "0",
    }
    p = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(inventory),
            "-f",
            str(forks),
            str(ANSIBLE / "nvue_day0.yml"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
        timeout=600,
    )
    doc = json.loads(p.stdout[p.stdout.index("{") :])
    results = doc["plays"][0]["tasks"][0]["hosts"]
    assert p.returncode == 0, json.dumps({h: r.get("msg", r.get("state")) for h, r in results.items()}, indent=1)
    return results


def test_blank_switches_answer_at_their_management_address(lab, inventory):
    hs = hosts(inventory)
    assert sorted(hs) == ["leaf01", "leaf02", "spine01", "spine02"]
    s = session(lab)
    for node, h in hs.items():
        assert h["ansible_httpapi_port"] == 8765 and h["ansible_host"] != "127.0.0.1", h
        base = f"https://{h['ansible_host']}:8765/nvue_v1"
        applied = s.get(f"{base}/", params={"rev": "applied"}, timeout=10).json()
        assert applied["system"] == {"hostname": node}, applied
        assert applied["interface"]["eth0"]["ip"]["vrf"] == "mgmt"
        assert "router bgp" not in lab.node(node).vtysh("show running-config")


def test_a_playbook_configures_day0_and_the_fabric_converges_and_passes(lab, inventory, tmp_path):
    t0 = time.time()
    results = playbook(inventory, tmp_path)
    last = max(r["ended"] for r in results.values())
    took = {h: round(r["ended"] - r["started"], 1) for h, r in results.items()}
    print(
        f"day 0 of 4 switches: playbook {last - t0:.1f}s; revisions applied in {took}; "
        f"service side: {[r['progress'] for r in results.values()]}"
    )
    assert all(r["state"] == "applied" and r["progress"].startswith("applied in ") for r in results.values())
    # how long each took is printed, not asserted: a speed is a benchmark's (make bench), not a test's
    spans = sorted((r["started"], r["ended"]) for r in results.values())
    assert any(b[0] < a[1] for a, b in zip(spans, spans[1:])), f"no two revisions applied at once: {spans}"
    w = twin_cli("wait", NAME)
    assert w.returncode == 0, w.stdout + w.stderr
    print(f"converged {time.time() - last:.1f}s after the last apply")
    v = twin_cli("verify", NAME)
    assert v.returncode == 0, v.stdout[-3000:] + v.stderr


def test_an_svi_in_the_default_vrf_is_routed_in_the_underlay(lab):
    addrs = lab.node("leaf01").check(["ip", "-o", "addr", "show", "dev", "vlan100"]).stdout
    assert "10.100.1.2/24" in addrs and "10.100.1.1/24" in addrs
    mac = lab.node("leaf01").check(["cat", "/sys/class/net/vlan100/address"]).stdout.strip()
    assert mac == "00:00:5e:00:01:64", "the VRR's MAC"

    def learnt() -> list[str]:
        routes = json.loads(lab.node("leaf02").vtysh("show ip route 10.100.1.0/24 json"))
        return [] if routes.get("10.100.1.0/24", [{}])[0].get("protocol") == "bgp" else ["leaf02: no BGP route"]

    wait.until(learnt, 30, "leaf01's VLAN 100 in leaf02's default VRF")


def test_a_port_no_cable_reaches_exists_without_carrier(lab):
    link = lab.node("leaf01").check(["ip", "-o", "link", "show", "swp3"]).stdout
    assert "NO-CARRIER" in link and ",UP" in link and "state DOWN" in link, link
    shown = json.loads(lab.node("leaf01").check(["nv", "show", "interface", "swp3", "-o", "json"]).stdout)
    assert shown["link"]["oper-status"] == "down", shown


def test_unnumbered_neighbors_by_name_and_eth0_in_vrf_mgmt(lab, inventory):
    bgp = json.loads(lab.node("spine01").vtysh("show bgp summary json"))
    peers = bgp["ipv4Unicast"]["peers"]
    assert sorted(peers) == ["swp1", "swp2"] and all(p["state"] == "Established" for p in peers.values()), peers
    h = hosts(inventory)["spine01"]
    s = session(lab)
    got = s.get(f"https://{h['ansible_host']}:8765/nvue_v1/interface/eth0", params={"rev": "applied"}, timeout=10)
    assert got.status_code == 200 and got.json()["ip"]["vrf"] == "mgmt", "reached at its address, in VRF mgmt"


def test_nodes_revisions_apply_at_once(lab, inventory):
    s, hs, out = session(lab), hosts(inventory), {}

    def one(node: str) -> None:
        base = f"https://{hs[node]['ansible_host']}:8765/nvue_v1"
        rid = next(iter(s.post(f"{base}/revision", timeout=10).json()))
        n = int(node[-2:])  # a static route: FRR reloads (seconds), as most revisions make it
        r = s.patch(
            f"{base}/vrf/default/router/static",
            params={"rev": rid},
            json={f"192.0.2.{n}/32": {"via": {"blackhole": {}}}},
            timeout=10,
        )
        assert r.status_code == 200, r.text
        at = f"{base}/revision/{quote(rid, safe='')}"
        t0 = time.monotonic()
        s.patch(at, json={"state": "apply", "auto-prompt": {"ays": "ays_yes"}}, timeout=10)
        doc: dict = {}

        def done() -> list[str]:
            doc.update(s.get(at, timeout=10).json())
            return [] if doc["state"] not in ("apply", "pending") else [f"{node}: {doc['state']}"]

        wait.until(done, 60, f"{node}'s revision applied", first=0.1, cap=0.2)
        out[node] = (doc, time.monotonic() - t0)

    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(n,)) for n in sorted(hs)]  # every switch: 4 revisions
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    each = {n: float(doc["transition"]["progress"].split()[2].rstrip("s")) for n, (doc, _) in out.items()}
    print(f"{len(each)} revisions of {len(each)} nodes: {each} each, {wall:.1f}s for all")
    assert all(doc["state"] == "applied" for doc, _ in out.values()), out
    assert wall < sum(each.values()), f"applied one after the other: {each}, {wall:.1f}s for all"
    assert "ip route 192.0.2.2/32 blackhole" in lab.node("leaf02").vtysh("show running-config")
