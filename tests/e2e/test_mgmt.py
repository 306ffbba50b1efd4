"""The management network (issue 33): two labs at once, each on a Docker network of its own. Lab A is
NVIDIA's samples fabric (tests/e2e/nvue/samples.yml, leaf01 and dpu1 configured by NVUE) on a subnet
and password its topology gives, two nodes at the addresses it pins, the rest at the next free ones;
its subnet is lab B's own default one, so B (tests/e2e/small.yml, nothing given) must choose another.
From this host, as automation written for the real fabric reaches it: every switch and DPU answers
SSH on its address as cumulus (`nv`, `vtysh`, `sudo`), its NVUE API at https://ADDRESS:8765 (two
nodes at once, each answering for itself), and its name twin-<lab>-<node>. FRR never sees eth0 (it
lives in the node's own namespace mgmt), so the fabric converges and verifies as before; a node
started again gets its management port back; after `twin down` nothing is left (the networks, the
blocks of /etc/hosts).
"""

from __future__ import annotations

import json
import socket
from concurrent.futures import ThreadPoolExecutor
from ipaddress import IPv4Network

import paramiko
import pytest
import requests
import yaml
from docker.types import IPAMConfig, IPAMPool

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin import verify
from twin.lab import Lab
from twin.nvue import service as nvue_service
from twin.runtime import etchosts
from twin.topology import load, mgmt

pytestmark = pytest.mark.e2e

A, B = "t-mgmt-a", "t-mgmt-b"
PASSWORD = "Cumulus-Twin-1"
SAMPLES = ROOT / "tests/golden/interop/nvue/samples"
MANAGED_A = ["spine01", "spine02", "leaf01", "dpu1"]


@pytest.fixture(scope="module")
def subnet() -> IPv4Network:
    """Lab B's own default subnet (its name's, nothing taken): lab A takes it first."""
    return mgmt.choose(B, 4, [])


@pytest.fixture(scope="module")
def labs(runtime, node_image, subnet, tmp_path_factory):
    doc = yaml.safe_load((ROOT / "tests/e2e/nvue/samples.yml").read_text())
    doc["mgmt"] = {"subnet": str(subnet), "password": PASSWORD}
    doc["nodes"]["leaf01"]["mgmt_ipv4"] = str(subnet[11])
    doc["nodes"]["spine02"]["mgmt_ipv4"] = str(subnet[1])  # the first address: this host takes the next
    f = tmp_path_factory.mktemp("mgmt") / "samples.yml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    try:
        for args in (
            ["up", str(f), "--name", A, "--configs", str(SAMPLES)],
            ["up", str(ROOT / "tests/e2e/small.yml"), "--name", B],
        ):
            p = twin_cli(*args, "--image", node_image)
            assert p.returncode == 0, p.stdout + p.stderr
        yield Lab.open(A), Lab.open(B)
    finally:
        for lab in (A, B):
            twin_cli("down", lab)
    for lab in (A, B):
        assert leftovers(runtime, lab) == []


def addresses(lab: Lab) -> dict[str, str]:
    return {n.name: n.mgmt for n in lab.fabric.managed()}


def ssh(address: str, password: str = PASSWORD) -> paramiko.SSHClient:
    c = paramiko.SSHClient()
    c.set_missing_host_key_policy(paramiko.AutoAddPolicy())  # a lab's host keys are new at every `up`
    c.connect(
        address, port=22, username="cumulus", password=password, timeout=20, allow_agent=False, look_for_keys=False
    )
    return c


def run(c: paramiko.SSHClient, command: str, stdin: str = "") -> tuple[int, str, str]:
    i, o, e = c.exec_command(command, timeout=60)
    if stdin:
        i.write(stdin)
        i.channel.shutdown_write()
    return o.channel.recv_exit_status(), o.read().decode(), e.read().decode()


def test_every_switch_and_dpu_has_eth0_on_its_labs_network_at_its_address(labs, subnet, runtime):
    a, b = labs
    got = addresses(a)
    assert sorted(got) == sorted(MANAGED_A), "a host has no management port"
    assert (got["leaf01"], got["spine02"], a.fabric.mgmt.gateway) == (str(subnet[11]), str(subnet[1]), str(subnet[2]))
    assert got["spine01"] == str(subnet[3]) and got["dpu1"] == str(subnet[4]), "the next free ones, in file order"
    other = IPv4Network(b.fabric.mgmt.subnet)
    assert not other.overlaps(subnet), "lab B's own subnet was lab A's: it chose another"
    assert sorted(addresses(b)) == ["dpu1", "leaf1", "leaf2", "spine1"] and all(
        IPv4Network(f"{x}/32").subnet_of(other) for x in addresses(b).values()
    )
    for lab, net in ((a, subnet), (b, other)):
        (docker_net,) = runtime.client.networks.list(filters={"label": f"twin.lab={lab.name}"})
        assert (docker_net.name, docker_net.attrs["Internal"], docker_net.attrs["IPAM"]["Config"][0]["Subnet"]) == (
            f"twin-{lab.name}-mgmt",
            True,
            str(net),
        )
    for node, address in got.items():
        ex = a.node(node)
        assert not ex.run(["ip", "link", "show", "eth0"]).ok, f"{node}: eth0 is not in its own namespace"
        shown = json.loads(
            ex.check(["nsenter", "--net=/run/twin/mgmt", "ip", "-j", "-4", "addr", "show", "eth0"]).stdout
        )
        assert [x["local"] for x in shown[0]["addr_info"]] == [address]
        routes = json.loads(ex.check(["nsenter", "--net=/run/twin/mgmt", "ip", "-j", "-4", "route"]).stdout)
        assert [r["dst"] for r in routes] == [str(subnet)], f"{node}: a route beyond the management network"


def test_each_node_has_a_name_this_host_resolves_and_each_lab_its_block(labs):
    for lab in labs:
        got = addresses(lab)
        assert {f"twin-{lab.name}-{n}": socket.gethostbyname(f"twin-{lab.name}-{n}") for n in got} == {
            f"twin-{lab.name}-{n}": x for n, x in got.items()
        }
        assert etchosts.read(lab.name) == {f"twin-{lab.name}-{n}": x for n, x in got.items()}


def test_ssh_as_cumulus_runs_nv_vtysh_and_sudo_as_on_cumulus_linux(labs):
    a, _ = labs
    for node, address in addresses(a).items():
        with ssh(address) as c:
            rc, out, err = run(c, "vtysh -c 'show bgp summary json'")
            assert rc == 0, err
            peers = json.loads(out)["ipv4Unicast"]["peers"]
            assert peers and {p["state"] for p in peers.values()} == {"Established"}, (node, peers)
            assert run(c, "command -v nv")[1].strip() == "/usr/bin/nv"
            assert run(c, "sudo -S -p '' id -u", PASSWORD + "\n")[1].strip() == "0"
            assert run(c, "hostname")[1].strip() == node
    with ssh(addresses(a)["leaf01"]) as c:  # a node NVUE configures: `nv` answers for it
        rc, out, err = run(c, "nv show system -o json")
        assert rc == 0 and json.loads(out)["hostname"] == "leaf01", out + err
    with pytest.raises(paramiko.AuthenticationException):
        ssh(addresses(a)["leaf01"], password="wrong")


def test_the_nvue_api_answers_on_each_nodes_address_for_that_node(labs):
    a, _ = labs
    cert = str(nvue_service.root(a.dir) / "cert.pem")

    def system(node: str, where: str) -> tuple[int, dict]:
        r = requests.get(f"https://{where}:8765/nvue_v1/system", auth=("cumulus", PASSWORD), verify=cert, timeout=30)
        return r.status_code, r.json()

    targets = [("leaf01", f"twin-{A}-leaf01"), ("dpu1", addresses(a)["dpu1"])] * 3  # by name and by address
    with ThreadPoolExecutor(len(targets)) as pool:
        answers = list(pool.map(lambda t: (t[0], *system(*t)), targets))
    assert {(node, status, doc.get("hostname")) for node, status, doc in answers} == {
        ("leaf01", 200, "leaf01"),
        ("dpu1", 200, "dpu1"),
    }, "each address answers for its own node"
    r = requests.get(
        f"https://{addresses(a)['leaf01']}:8765/nvue_v1/system", auth=("cumulus", "wrong"), verify=cert, timeout=30
    )
    assert r.status_code == 401


def test_frr_never_sees_the_management_network_and_the_fabric_verifies(labs, subnet):
    a, b = labs
    for lab in labs:
        net = IPv4Network(lab.fabric.mgmt.subnet)
        for node in addresses(lab):
            routes = a.node(node) if lab is a else b.node(node)
            table = routes.vtysh_json("show ip route vrf all json")[0]
            leaked = [
                p
                for vrf in (table.values() if "default" not in table else [table])
                for p in vrf
                if "/" in p and IPv4Network(p).overlaps(net)
            ]
            assert leaked == [], f"{lab.name}/{node}: FRR knows the management subnet: {leaked}"
    for lab in labs:
        report = verify.run(lab, only=["control", "underlay", "isolation"])
        assert report.passed, [f"{c.group}: {c.name}: {c.message}" for c in report.failures()]


def test_a_node_started_again_gets_its_management_port_back(labs):
    a, _ = labs
    p = twin_cli("fault", "node-restart", A, "spine01")
    assert p.returncode == 0, p.stdout + p.stderr
    with ssh(addresses(a)["spine01"]) as c:
        assert run(c, "hostname")[1].strip() == "spine01"
    p = twin_cli("wait", A)
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_subnet_another_lab_took_between_the_look_and_the_make_is_chosen_again(runtime, monkeypatch):
    """Labs brought up at once do not wait for each other's network: Docker refuses the second network
    on one subnet ("Pool overlaps"), and the lab that lost looks again and chooses another. Lab "race"'s
    first look is made blind to the network lab "race-other" holds on the subnet its name points to."""
    from twin.runtime import mgmt as runtime_mgmt

    lab, other = "t-mgmt-race", "t-mgmt-race-other"
    fabric = load(ROOT / "tests/e2e/small.yml").model_copy(update={"name": lab})
    theirs = mgmt.choose(lab, 4, [])
    real, looks = runtime_mgmt.taken, []

    def first_look_blind(client, name):
        looks.append(name)
        return [] if len(looks) == 1 else real(client, name)

    runtime.client.networks.create(
        f"twin-{other}-mgmt",
        internal=True,
        ipam=IPAMConfig(pool_configs=[IPAMPool(subnet=str(theirs))]),
        labels={"twin.lab": other},
    )
    try:
        monkeypatch.setattr(runtime_mgmt, "taken", first_look_blind)
        got = runtime.claim_mgmt(fabric)
        assert looks == [lab, lab], "looked again after Docker's refusal"
        assert not IPv4Network(got.mgmt.subnet).overlaps(theirs)
        (net,) = runtime.client.networks.list(filters={"label": f"twin.lab={lab}"})
        assert net.attrs["IPAM"]["Config"][0]["Subnet"] == got.mgmt.subnet
    finally:
        runtime.remove_mgmt(lab)
        runtime.remove_mgmt(other)
    assert leftovers(runtime, lab) == [] and leftovers(runtime, other) == []
