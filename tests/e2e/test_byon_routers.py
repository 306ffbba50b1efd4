"""Any FRR lab (issue 11): `router` nodes running the user's own configs (BGP and IS-IS here, a
static route, no daemons file: twin enables what each config configures) and hosts set up by
`exec` commands. Converged means what each config declares is up; the barrier and `twin status`
name what is not: an adjacency that never comes up, a daemon that is not running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import leftovers, twin_cli
from twin.lab import Lab

pytestmark = pytest.mark.e2e

NAME = "t-by-rt"
TOPOLOGY = """\
name: {name}
nodes:
  r1: {{kind: router}}
  r2: {{kind: router}}
  h1: {{kind: host, exec: ["ip addr add 172.16.1.10/24 dev eth1", "ip route add default via 172.16.1.1"]}}
  h2: {{kind: host, exec: ["ip addr add 172.16.2.10/24 dev eth1", "ip route add default via 172.16.2.1"]}}
links:
  - [r1, r2]
  - [h1, r1]
  - [h2, r2]
"""
CONFIG = """\
frr defaults traditional
hostname r{i}
!
interface eth1
 ip address 10.0.12.{i}/30
 ip router isis CORE
 isis network point-to-point
 isis hello-interval 1
!
interface eth2
 ip address 172.16.{i}.1/24
!
interface lo
 ip address 10.255.255.{i}/32
 ip router isis CORE
 isis passive
!
router bgp 6500{i}
 no bgp ebgp-requires-policy
 neighbor 10.0.12.{o} remote-as {remote}
 address-family ipv4 unicast
  network 172.16.{i}.0/24
 exit-address-family
!
router isis CORE
 net 49.0001.0000.0000.000{i}.00
 is-type level-2-only
 lsp-gen-interval 1
!
ip route 192.0.2.0/24 blackhole
!
"""


def write_lab(d: Path, name: str, wrong_as: bool = False) -> tuple[Path, Path]:
    (d / "configs").mkdir(parents=True)
    for i, o in ((1, 2), (2, 1)):
        remote = 65009 if wrong_as and i == 2 else 65000 + o
        (d / "configs" / f"r{i}.conf").write_text(CONFIG.format(i=i, o=o, remote=remote))
    topo = d / "rt.yml"
    topo.write_text(TOPOLOGY.format(name=name))
    return topo, d / "configs"


@pytest.fixture(scope="module")
def lab(tmp_path_factory, runtime, node_image):
    topo, configs = write_lab(tmp_path_factory.mktemp("rt"), NAME)
    p = twin_cli("up", str(topo), "--configs", str(configs), "--image", node_image)
    try:
        assert p.returncode == 0, p.stderr
        assert "4 adjacencies of 2 routers up" in p.stdout and "BGP sessions" not in p.stdout
        assert (
            f"{configs / 'r1.conf'}: no daemons file beside it; twin's enables what it configures: zebra, "
            "bgpd, isisd, staticd" in p.stderr
        )
        yield Lab.open(NAME)
    finally:
        twin_cli("down", NAME)
    assert leftovers(runtime, NAME) == []


def test_routers_of_the_users_configs_converge_and_the_hosts_reach_each_other(lab):
    res = lab.node("h1").run(["ping", "-c2", "-W2", "172.16.2.10"])
    assert res.ok and " 0% packet loss" in res.stdout, res.stdout
    assert "192.0.2.0/24" in lab.node("r1").vtysh("show ip route static")
    p = twin_cli("verify", NAME, "--json")
    assert p.returncode == 0, p.stdout[-2000:]
    checks = {c["name"]: c for c in json.loads(p.stdout)["checks"]}
    assert set(checks) == {
        "daemons r1",
        "daemons r2",
        "bgp r1 10.0.12.2",
        "bgp r2 10.0.12.1",
        "isis r1 eth1",
        "isis r2 eth1",
        "routes r1",
        "routes r2",
    }
    assert checks["routes r1"]["data"]["expected"] == [
        "r1: static route 192.0.2.0/24",
        "r1: route to 10.255.255.2/32 (IS-IS, r2:lo's)",
    ]
    assert checks["bgp r1 10.0.12.2"]["data"]["peer"] == "r2:eth1"
    assert checks["daemons r1"]["data"]["expected"] == ["bgpd", "isisd", "staticd", "zebra"]  # r1 has a static route
    st = json.loads(twin_cli("status", NAME, "--json", check=True).stdout)
    assert {r["node"]: (r["sessions_up"], r["sessions_expected"]) for r in st["nodes"] if r["kind"] == "router"} == {
        "r1": (2, 2),
        "r2": (2, 2),
    }


def test_an_adjacency_that_never_comes_up_is_named_on_the_deadline(tmp_path, runtime, node_image):
    topo, configs = write_lab(tmp_path, "t-by-rt-bad", wrong_as=True)
    p = twin_cli("-v", "up", str(topo), "--configs", str(configs), "--image", node_image, "--timeout", "30")
    assert p.returncode == 1
    assert "your routers' daemons, adjacencies and settled routes) not reached after" in p.stderr
    assert "  - r1: BGP neighbor 10.0.12.2 to r2:eth1: not up (" in p.stderr
    assert "  - r2: BGP neighbor 10.0.12.1 to r1:eth1: not up (" in p.stderr
    assert "IS-IS" not in p.stderr  # IS-IS came up: only what is missing is named
    assert leftovers(runtime, "t-by-rt-bad") == []


def test_a_router_a_fault_restarts_runs_its_own_config_again(lab):
    """Issue 34: r1 restarted by `twin fault node-restart` runs the user's frr.conf again (its addresses,
    IS-IS, BGP, the static route), its host peer gets its exec commands again on the new link, and the
    lab passes verify (the proof of a router's elements: tests/e2e/test_byon_scripts.py)."""
    p = twin_cli("fault", "node-restart", NAME, "r1")
    assert p.returncode == 0, p.stdout + p.stderr
    lab.wait()
    assert "10.255.255.1/32" in lab.node("r1").check(["ip", "-o", "addr", "show", "dev", "lo"]).stdout
    assert "192.0.2.0/24" in lab.node("r1").vtysh("show ip route static")
    res = lab.node("h1").run(["ping", "-c2", "-W2", "172.16.2.10"])
    assert res.ok and " 0% packet loss" in res.stdout, res.stdout
    assert twin_cli("verify", NAME).returncode == 0


def test_a_daemon_that_stopped_is_named(lab):
    ex = lab.node("r1")  # last: the lab stays broken; watchfrr first, so nothing restarts isisd
    ex.check(["sh", "-c", "kill $(cat /var/run/frr/watchfrr.pid) && sleep 0.5 && kill $(cat /var/run/frr/isisd.pid)"])
    p = twin_cli("status", NAME)
    assert p.returncode == 1
    assert "r1: FRR daemon isisd is not running (its daemons file enables it)" in p.stdout
