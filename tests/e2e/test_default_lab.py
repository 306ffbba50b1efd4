"""The default AI-pod lab, brought up once for this module by a twin installed from a wheel built in
the run (into a fresh virtualenv, away from the checkout: what `pip install` gives a user), and
checked from the outside."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pyroute2 import IPRoute

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin.config.render import ZEBRA_DPLANE_LIMIT
from twin.lab import Lab
from twin.runtime import images
from twin.runtime.netns import netns_path, tenant_netns_path

pytestmark = pytest.mark.e2e
NAME = "t-aipod"


def run(*cmd: str | Path, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    p = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, cwd=cwd, timeout=timeout, env=os.environ.copy()
    )
    assert p.returncode == 0, f"{' '.join(map(str, cmd))} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
    return p


@pytest.fixture(scope="module")
def wheel_twin(tmp_path_factory) -> Path:
    """The `twin` command of a fresh virtualenv holding only the wheel built here from the package's
    sources (twin/, pyproject.toml, README.md) and its dependencies."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT / "twin", src / "twin", ignore=shutil.ignore_patterns("__pycache__"))
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / f, src / f)
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp / "dist", "./src", cwd=tmp)
    (wheel,) = (tmp / "dist").glob("twin-*.whl")
    run(sys.executable, "-m", "venv", tmp / "venv", cwd=tmp)
    run(tmp / "venv/bin/pip", "install", "-q", wheel, cwd=tmp)
    return tmp / "venv/bin/twin"


@pytest.fixture(scope="module")
def lab(wheel_twin, runtime, node_image):
    """The default lab, `twin up aipod` by the wheel's twin outside the checkout (its node image
    `twin image build` finds up to date: the wheel carries the checkout's recipe)."""
    away = wheel_twin.parents[2]
    built = run(wheel_twin, "image", "build", cwd=away)
    assert built.stdout.strip() == images.node_tag(), "the wheel's recipe is the checkout's (same hash)"
    assert f"{images.node_tag()} is up to date" in built.stderr
    try:
        run(wheel_twin, "up", "aipod", "--name", NAME, cwd=away)
        yield Lab.open(NAME)
    finally:
        Lab(NAME).down()


def test_every_expected_session_is_established(lab):
    fabric = lab.fabric
    routers = [n.name for n in fabric.routers()]
    assert routers == ["spine1", "spine2", "leaf1", "leaf2", "dpu1", "dpu2"]
    for node in routers:
        (summary,) = lab.node(node).vtysh_json("show bgp summary json")
        peers = summary["ipv4Unicast"]["peers"]
        expected = {s.port: s.peer for s in fabric.sessions(node)}
        assert set(peers) == set(expected), f"{node}: peers {sorted(peers)} != intent {sorted(expected)}"
        for port, peer in expected.items():
            assert peers[port]["state"] == "Established", f"{node}:{port} to {peer}: {peers[port]['state']}"
            assert peers[port]["hostname"] == peer, f"{node}:{port} talks to {peers[port]['hostname']}, not {peer}"
            assert peers[port]["remoteAs"] == fabric.nodes[peer].asn
    assert sum(len(fabric.sessions(n)) for n in routers) == 16


def test_every_dpu_and_leaf_pings_every_other_loopback(lab):
    fabric = lab.fabric
    loopbacks = {n.name: n.loopback for n in fabric.routers()}
    sources = [n for n in loopbacks if fabric.nodes[n].kind in ("dpu", "leaf")]

    def ping_all(src: str) -> list[str]:
        targets = [ip for n, ip in loopbacks.items() if n != src]
        script = "; ".join(
            f"ping -c1 -W2 -I {loopbacks[src]} {ip} >/dev/null && echo ok {ip} || echo FAIL {ip}" for ip in targets
        )
        out = lab.node(src).check(["sh", "-c", script]).stdout.split("\n")
        assert len([line for line in out if line.startswith("ok ")]) + len(
            [line for line in out if line.startswith("FAIL")]
        ) == len(targets)
        return [f"{src} -> {line.split()[1]}" for line in out if line.startswith("FAIL")]

    with ThreadPoolExecutor(4) as pool:
        failed = [f for fs in pool.map(ping_all, sources) for f in fs]
    assert failed == [], f"loopbacks not reachable: {failed}"
    assert len(sources) == 4


def test_barrier_agrees_nothing_is_missing(lab):
    assert lab.missing() == []


def test_rendered_config_in_lab_dir_is_what_the_node_runs(lab):
    for node in ("spine1", "leaf2", "dpu1"):
        on_disk = (lab.dir / node / "frr.conf").read_text()
        in_node = lab.node(node).check(["cat", "/etc/frr/frr.conf"]).stdout
        assert in_node == on_disk
        running = lab.node(node).vtysh("show running-config")
        assert f"router bgp {lab.fabric.nodes[node].asn}" in running
        assert "frr defaults datacenter" in running
        # zebra's queue to the shared kernel, as rendered (a full queue of 200 made FRR 10.3's zebra spin)
        assert f"zebra dplane limit {ZEBRA_DPLANE_LIMIT}" in running
        assert f"Route update queue limit: {ZEBRA_DPLANE_LIMIT}" in lab.node(node).vtysh("show zebra dplane")
        assert (lab.dir / node / "daemons").read_text().count("bgpd=yes") == 1


def test_links_carry_the_topology_mtu_and_are_labelled(lab):
    pid = lab.pids()["dpu1"]
    with IPRoute(netns=netns_path(pid), flags=0) as ipr:
        links = {link.get("ifname"): link for link in ipr.get_links()}
    # host ports live in their tenant's namespace (netns VRF backend) or the node's (VRF devices)
    tenant_ns = tenant_netns_path(pid, "red") if lab.backend == "netns" else netns_path(pid)
    with IPRoute(netns=tenant_ns, flags=0) as ipr:
        links |= {link.get("ifname"): link for link in ipr.get_links()}
    assert links["p0"].get("mtu") == 9000 and links["p1"].get("mtu") == 9000
    assert links["pf0vf0"].get("mtu") == 8950, "host links fit a VXLAN frame in the fabric MTU"
    assert links["vxlan10101"].get("mtu") == 8950
    assert all(links[p]["flags"] & 1 for p in ("p0", "p1", "pf0vf0", "vxlan10101", "br10101")), "ports are up"
    assert links["p0"].get("ifalias") == f"twin:{NAME}:dpu1:p0->leaf1:swp3"
    assert links["pf0vf0"].get("ifalias") == f"twin:{NAME}:dpu1:pf0vf0->host1a:eth1"


def test_containers_get_only_what_nodes_need(lab):
    for name, c in lab.runtime.containers(NAME).items():
        hc = c.attrs["HostConfig"]
        assert hc["NetworkMode"] == "none" and hc["Init"] is True and hc["Privileged"] is False
        assert c.attrs["Config"]["NetworkDisabled"] is True and c.attrs["NetworkSettings"]["Networks"] == {}
        hosts = {m["Destination"]: m for m in c.attrs["Mounts"]}["/etc/hosts"]  # twin's: Docker writes none
        assert hosts["Source"].endswith(f"/.hosts/{name}") and hosts["RW"] is True
        assert f"127.0.1.1\t{name}" in lab.node(name).check(["cat", "/etc/hosts"]).stdout
        assert lab.node(name).check(["getent", "hosts", "localhost"]).stdout.startswith(("127.0.0.1", "::1"))
        assert c.labels["twin.lab"] == NAME and c.labels["twin.node"] == name
        if lab.fabric.nodes[name].runs_bgp:
            assert sorted(hc["CapAdd"]) == ["NET_ADMIN", "NET_RAW", "SYS_ADMIN"]
            assert hc["Sysctls"]["net.ipv6.conf.all.disable_ipv6"] == "0"
        else:
            assert sorted(hc["CapAdd"]) == ["NET_ADMIN", "NET_RAW"]


def test_status_json_counts_sessions(lab):
    st = json.loads(twin_cli("status", NAME, "--json", check=True).stdout)
    assert st["status"] == "up" and st["lab"] == NAME
    rows = {r["node"]: r for r in st["nodes"]}
    assert len(rows) == 12 and all(r["state"] == "running" for r in rows.values())
    assert rows["leaf1"]["sessions_up"] == rows["leaf1"]["sessions_expected"] == 4
    assert rows["dpu2"]["sessions_up"] == 2 and "sessions_expected" not in rows["host1a"]
    table = twin_cli("status", NAME, check=True).stdout
    assert "4/4" in table and "dpu1" in table


def test_exec_and_list_from_the_cli(lab):
    p = twin_cli("exec", NAME, "leaf1", "--", "vtysh", "-c", "show bgp summary json", check=True)
    assert json.loads(p.stdout)["ipv4Unicast"]["as"] == lab.fabric.nodes["leaf1"].asn
    assert twin_cli("exec", NAME, "leaf1", "--", "sh", "-c", "exit 3").returncode == 3
    bad = twin_cli("exec", NAME, "leaf9", "--", "true")
    assert bad.returncode == 1 and "has no node 'leaf9'" in bad.stderr
    assert NAME in twin_cli("list", check=True).stdout


def test_traffic_says_in_words_what_arrived_and_where_a_blocked_flow_went(lab):
    """Issue 27: a flow between tenants reports where it went, not PSN gaps or a Python dict;
    hosts are typed as the user writes them."""
    ok = twin_cli("traffic", NAME, "HOST1A", "host2a")
    assert ok.returncode == 0, ok.stderr
    assert "host1a -> host2a (10.1.1.12), must arrive: sent 16, 16 arrived at host2a" in ok.stdout
    blocked = twin_cli("traffic", NAME, "host1a", "host2b")
    assert blocked.returncode == 0, blocked.stdout + blocked.stderr
    said = blocked.stdout
    assert "host1a -> host2b (10.1.1.12), must not arrive (host2b is tenant blue's, host1a tenant red's)" in said
    assert "none arrived at host2b (tenant blue)" in said and "it stayed in tenant red" in said
    assert "PSN" not in said and "{'" not in said


def test_up_on_a_lab_that_is_up_says_so_and_changes_nothing(lab):
    before = {n: c.id for n, c in lab.runtime.containers(NAME).items()}
    p = twin_cli("up", "topologies/aipod.yml", "--name", NAME)
    assert p.returncode == 0
    assert "already up" in p.stderr
    assert {n: c.id for n, c in lab.runtime.containers(NAME).items()} == before
    assert lab.missing() == []


def test_the_wheel_is_a_whole_twin(wheel_twin):
    """Installed from the wheel: its version and place, `python -m twin`, the recipe's scripts
    executable, the default lab `twin doctor` judges read from the package."""
    away, site = wheel_twin.parents[2], wheel_twin.parents[1]
    (package,) = site.glob("lib/python3*/site-packages/twin")
    assert run(wheel_twin, "--version", cwd=away).stdout == f"twin 0.1.0 ({package})\n"
    assert run(site / "bin/python", "-m", "twin", "--version", cwd=away).stdout == f"twin 0.1.0 ({package})\n"
    assert os.access(package / "images/node/twin-node", os.X_OK) and os.access(
        package / "lifecycle/host-setup.sh", os.X_OK
    )
    said = run(site / "bin/python", "-m", "twin", "doctor", cwd=away).stdout.splitlines()
    assert said[0] == f"twin 0.1.0 ({package})"
    assert f"lab aipod ({package}/topologies/aipod.yml): VRF backend" in "\n".join(said)


def test_zz_down_removes_everything_the_lab_owns(lab, runtime, wheel_twin):
    assert len(runtime.containers(NAME)) == 12
    p = run(wheel_twin, "down", NAME, cwd=wheel_twin.parents[2])
    assert "removed 12 containers" in p.stdout
    assert leftovers(runtime, NAME) == []
    assert "nothing left to remove" in twin_cli("down", NAME, check=True).stdout
