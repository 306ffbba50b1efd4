"""The management network (issue 33): the topology's fields, the subnet and addresses chosen at
`twin up`, the node's kernel steps, the lab's block of /etc/hosts, the inventories and the NVUE
API's certificate. Validation messages are golden (tests/golden/invalid/mgmt-*.yml)."""

from __future__ import annotations

from ipaddress import IPv4Network
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from twin.base.errors import TwinError
from twin.change.diff import FabricDiff
from twin.config import overlay
from twin.config.render import render_lab
from twin.interop.clab_import import import_clab
from twin.interop.clabernetes import build_clabernetes
from twin.interop.inventory import inventory
from twin.nvue import service as nvue_service
from twin.runtime import etchosts
from twin.topology import load, load_document, mgmt

ROOT = Path(__file__).resolve().parents[2]


def topo(tmp_path: Path, text: str, name: str = "m.yml") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


PINNED = """
name: pinned
mgmt: {subnet: 192.168.200.0/24, password: "Cumulus Linux!"}
nodes:
  spine1: {kind: spine, mgmt_ipv4: 192.168.200.11}
  leaf1: {kind: leaf}
  leaf2: {kind: leaf, mgmt_ipv4: 192.168.200.1}
  host1: {kind: host}
links:
  - [spine1, leaf1]
  - [spine1, leaf2]
  - [leaf1, host1]
"""


def test_pinned_addresses_stay_and_the_rest_take_the_next_free_ones_with_the_host_first(tmp_path):
    f = load(topo(tmp_path, PINNED))
    assert (f.mgmt.subnet, f.mgmt.gateway) == ("192.168.200.0/24", None)
    assert {n: x.mgmt for n, x in f.nodes.items()} == {
        "spine1": "192.168.200.11",
        "leaf1": None,
        "leaf2": "192.168.200.1",
        "host1": None,
    }
    r = mgmt.resolve(f)
    assert r.mgmt.gateway == "192.168.200.2", "this host takes the first address no node pins"
    assert {n: x.mgmt for n, x in r.nodes.items()} == {
        "spine1": "192.168.200.11",
        "leaf1": "192.168.200.3",
        "leaf2": "192.168.200.1",
        "host1": None,
    }
    assert [n.name for n in r.managed()] == ["spine1", "leaf1", "leaf2"], "a host has no management port"
    dumped = r.model_dump_json()
    assert "Cumulus Linux!" not in dumped and r.mgmt.password == "Cumulus Linux!", "the password is never written"
    assert '"mgmt":{"subnet":"192.168.200.0/24","gateway":"192.168.200.2"}' in dumped


def test_the_default_subnet_is_the_labs_own_whenever_it_is_free_and_keeps_clear_of_what_is_taken(monkeypatch):
    monkeypatch.chdir(ROOT)
    f = load("topologies/aipod.yml")
    first = mgmt.resolve(f).mgmt.subnet
    assert first == mgmt.resolve(f).mgmt.subnet and IPv4Network(first).subnet_of(mgmt.POOLS[0])
    assert mgmt.resolve(f.model_copy(update={"name": "other"})).mgmt.subnet != first, "another name, another subnet"
    taken = [IPv4Network(first).supernet(new_prefix=22)]  # a route of this host over it, say
    second = mgmt.resolve(f, taken).mgmt.subnet
    assert not IPv4Network(second).overlaps(taken[0])
    r = mgmt.resolve(f)
    assert r.mgmt.gateway.endswith(".1") and [n.mgmt for n in r.managed()] == [
        str(IPv4Network(first)[i]) for i in range(2, 8)
    ], "spines, leafs, DPUs in the file's order"
    assert all(x.mgmt is None for x in r.nodes.values() if x.kind == "host")


def test_the_default_subnet_avoids_the_fabrics_own_prefixes():
    own = [IPv4Network("10.250.0.0/16")]  # as if a tenant's segment covered the first pool
    f = load(ROOT / "topologies/aipod.yml")
    assert IPv4Network(mgmt.choose(f.name, 6, own)).subnet_of(mgmt.POOLS[1])
    assert IPv4Network("10.255.0.1/32") in mgmt.own_prefixes(f), "the loopbacks"


def test_a_big_lab_gets_a_subnet_that_holds_it_and_a_full_host_says_what_to_do():
    assert [mgmt.prefixlen_for(n) for n in (6, 253, 254, 256, 600, 65533)] == [24, 24, 23, 23, 22, 16]
    with pytest.raises(TwinError, match="do not fit a /16"):
        mgmt.prefixlen_for(65534)
    with pytest.raises(TwinError, match=r"no free /24 .* give the topology mgmt.subnet, or mgmt.enabled: false"):
        mgmt.choose("lab", 6, [IPv4Network("0.0.0.0/1"), IPv4Network("128.0.0.0/1")])


def test_a_lab_without_a_management_network(tmp_path):
    f = mgmt.resolve(
        load(
            topo(
                tmp_path,
                "name: dark\nmgmt: {enabled: false}\nnodes:\n  s: {kind: spine}\n"
                "  l: {kind: leaf}\nlinks:\n  - [s, l]\n",
            )
        )
    )
    assert f.mgmt is None and f.managed() == [] and "mgmt" not in f.model_dump()
    assert overlay.plan(f, "s", "netns") == []


def test_the_management_port_is_eth0_in_a_namespace_of_its_own_made_with_the_nodes_others(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    f = mgmt.resolve(load("topologies/aipod.yml"))
    addr = f"{f.nodes['spine1'].mgmt}/{IPv4Network(f.mgmt.subnet).prefixlen}"
    assert [s.command() for s in overlay.plan(f, "spine1", "netns")] == [
        "mountpoint -q /run/twin/mgmt || { mkdir -p /run/twin && touch /run/twin/mgmt && unshare --net=/run/twin/mgmt "
        "true; }",
        "ip link set eth0 netns /run/twin/mgmt",
        "nsenter --net=/run/twin/mgmt ip link set lo up",
        f"nsenter --net=/run/twin/mgmt ip addr add {addr} dev eth0",
        "nsenter --net=/run/twin/mgmt ip link set eth0 up",
    ]
    ops = [s.op for s in overlay.plan(f, "dpu1", "netns")]
    assert ops[:4] == ["addr", "mgmt-netns", "netns", "netns"], "one exec makes every namespace of a VTEP"
    assert ops[4:8] == ["move", "up", "addr", "up"]
    assert "unshare --net=/run/twin/mgmt" in overlay.script(f, "dpu1", "netns"), "interfaces.sh shows it"
    assert overlay.plan(f, "host1a", "netns")[0].dev != "eth0"


def test_a_running_labs_management_network_stays_on_apply_and_a_changed_one_is_named(tmp_path):
    running = mgmt.resolve(load(topo(tmp_path, PINNED)))
    again = mgmt.carry(running, load(topo(tmp_path, PINNED)))
    assert again.mgmt == running.mgmt and {n: x.mgmt for n, x in again.nodes.items()} == {
        n: x.mgmt for n, x in running.nodes.items()
    }
    assert FabricDiff(running, again).lines() == [] and FabricDiff(running, again).fixed() == []
    moved = mgmt.carry(running, load(topo(tmp_path, PINNED.replace("192.168.200.", "192.168.201."))))
    assert FabricDiff(running, moved).fixed() == [
        "change mgmt (192.168.200.0/24 via 192.168.200.2 -> 192.168.201.0/24 via its first address)"
    ]
    repinned = mgmt.carry(running, load(topo(tmp_path, PINNED.replace(".11}", ".12}"))))
    assert FabricDiff(running, repinned).fixed() == ["change mgmt_ipv4 of spine1 (192.168.200.11 -> 192.168.200.12)"]
    off = mgmt.carry(
        running,
        load(
            topo(
                tmp_path,
                "name: pinned\nmgmt: {enabled: false}\n"
                + PINNED.split("\n", 3)[3]
                .replace(", mgmt_ipv4: 192.168.200.11", "")
                .replace(", mgmt_ipv4: 192.168.200.1", ""),
            )
        ),
    )
    assert "change mgmt (192.168.200.0/24 via 192.168.200.2 -> none)" in FabricDiff(running, off).fixed()


def test_the_labs_block_of_etc_hosts_is_its_own(tmp_path):
    hosts = tmp_path / "hosts"
    theirs = "127.0.0.1\tlocalhost\n###### CLAB-x-START ######\n172.20.20.2\tclab-x-a\n###### CLAB-x-END ######\n"
    hosts.write_text(theirs + "10.0.0.9 mine # no newline")
    etchosts.write("a", {"twin-a-s1": "10.250.1.2", "twin-a-l1": "10.250.1.3"}, hosts)
    etchosts.write("b", {"twin-b-s1": "10.250.2.2"}, hosts)
    etchosts.write("a", {"twin-a-s1": "10.250.1.2"}, hosts)  # written again: replaced, not added
    assert etchosts.read("a", hosts) == {"twin-a-s1": "10.250.1.2"} and etchosts.read("b", hosts) == {
        "twin-b-s1": "10.250.2.2"
    }
    assert etchosts.remove("a", hosts) and not etchosts.remove("a", hosts)
    assert hosts.read_text() == (
        theirs + "10.0.0.9 mine # no newline\n###### TWIN-b-START ######\n"
        "10.250.2.2\ttwin-b-s1\n###### TWIN-b-END ######\n"
    )
    etchosts.remove("b", hosts)
    assert hosts.read_text() == theirs + "10.0.0.9 mine # no newline\n", "nothing of another's is touched"
    hosts.write_text(theirs + "###### TWIN-c-START ######\n1.2.3.4\tx\n")  # no END: whose it is, and where
    assert not etchosts.remove("c", hosts) and "1.2.3.4" in hosts.read_text()


def test_inventories_reach_the_nodes_on_their_management_address(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    f = mgmt.resolve(load("topologies/aipod.yml"))
    doc = yaml.safe_load(inventory(f, "ansible", password="pw")["inventory.yml"])["all"]["children"]
    leaf1, host1a = doc["leaf"]["hosts"]["leaf1"], doc["host"]["hosts"]["host1a"]
    assert {
        k: leaf1[k]
        for k in (
            "ansible_connection",
            "ansible_host",
            "ansible_port",
            "ansible_user",
            "ansible_password",
            "ansible_become_password",
            "mgmt",
        )
    } == {
        "ansible_connection": "ssh",
        "ansible_host": f.nodes["leaf1"].mgmt,
        "ansible_port": 22,
        "ansible_user": "cumulus",
        "ansible_password": "pw",
        "ansible_become_password": "pw",
        "mgmt": f.nodes["leaf1"].mgmt,
    }
    assert (host1a["ansible_connection"], host1a["ansible_host"]) == ("community.docker.docker", "twin-aipod-host1a")
    docker = yaml.safe_load(inventory(f, "ansible", password="pw", connection="docker")["inventory.yml"])
    assert docker["all"]["children"]["leaf"]["hosts"]["leaf1"]["ansible_host"] == "twin-aipod-leaf1"
    hosts = yaml.safe_load(inventory(f, "nornir", password="pw")["hosts.yaml"])
    assert {k: hosts["spine1"][k] for k in ("hostname", "port", "username", "password")} == {
        "hostname": f.nodes["spine1"].mgmt,
        "port": 22,
        "username": "cumulus",
        "password": "pw",
    }
    assert hosts["host1a"]["hostname"] == "twin-aipod-host1a" and "port" not in hosts["host1a"]
    api = {"leaf1": {"port": 40001, "user": "cumulus", "password": "pw"}}
    nv = yaml.safe_load(inventory(f, "nvue", api)["nvue.yml"])["all"]["children"]["nvue"]["hosts"]["leaf1"]
    assert (nv["ansible_host"], nv["ansible_httpapi_port"]) == (f.nodes["leaf1"].mgmt, 8765)
    plain = yaml.safe_load(inventory(load("topologies/aipod.yml"), "nvue", api)["nvue.yml"])
    assert plain["all"]["children"]["nvue"]["hosts"]["leaf1"]["ansible_host"] == "127.0.0.1", "none chosen yet"
    with pytest.raises(TwinError, match="unknown connection 'telnet'; connections: ssh, docker"):
        inventory(f, "ansible", connection="telnet")


def test_the_nvue_apis_certificate_names_every_nodes_address_and_names(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    f = mgmt.resolve(load("topologies/aipod.yml"))
    d = tmp_path / "lab"
    d.mkdir()
    cert, _ = nvue_service.certificate(d, "aipod")
    first = cert.read_bytes()
    assert nvue_service.certificate(d, "aipod", f) and cert.read_bytes() != first, "made again to name the nodes"
    san = (
        x509.load_pem_x509_certificate(cert.read_bytes())
        .extensions.get_extension_for_class(x509.SubjectAlternativeName)
        .value
    )
    assert {"localhost", "twin-aipod-leaf1", "leaf1"} <= set(san.get_values_for_type(x509.DNSName))
    assert {"127.0.0.1", f.nodes["leaf1"].mgmt} <= {str(a) for a in san.get_values_for_type(x509.IPAddress)}
    again = cert.read_bytes()
    nvue_service.certificate(d, "aipod", f)
    assert cert.read_bytes() == again, "kept while it names them all"


def test_a_containerlab_labs_management_network_comes_in(tmp_path):
    f = tmp_path / "lab.clab.yml"
    f.write_text(
        yaml.safe_dump(
            {
                "name": "lab",
                "mgmt": {"ipv6-subnet": "3fff::/64", "bridge": "br-x"},
                "topology": {
                    "nodes": {
                        "r1": {
                            "kind": "linux",
                            "image": "frrouting/frr",
                            "mgmt-ipv4": "172.20.20.11",
                            "mgmt-ipv6": "3fff::11",
                        },
                        "r2": {"kind": "linux", "image": "frrouting/frr"},
                        "pc": {"kind": "linux", "image": "alpine", "mgmt-ipv4": "172.20.20.50"},
                    },
                    "links": [{"endpoints": ["r1:eth1", "r2:eth1"]}, {"endpoints": ["r2:eth2", "pc:eth1"]}],
                },
            }
        )
    )
    imp = import_clab(f)
    assert imp.doc["mgmt"] == {"subnet": "172.20.20.0/24"}, "containerlab's default subnet, for the pinned address"
    assert imp.doc["nodes"]["r1"]["mgmt_ipv4"] == "172.20.20.11" and "mgmt_ipv4" not in imp.doc["nodes"]["pc"]
    notes = "\n".join(imp.notes)
    for said in (
        "containerlab's default 172.20.20.0/24",
        "mgmt: bridge, ipv6-subnet left out",
        "mgmt-ipv6 of r1 is left out",
        "mgmt-ipv4 of pc is left out: a twin host has no management port",
    ):
        assert said in notes, notes
    fabric = mgmt.resolve(load_document(imp.doc, imp.source))
    assert (fabric.mgmt.gateway, fabric.nodes["r1"].mgmt, fabric.nodes["r2"].mgmt) == (
        "172.20.20.1",
        "172.20.20.11",
        "172.20.20.2",
    )


def test_clabernetes_exposes_ssh_and_the_nvue_api_of_each_managed_node(monkeypatch):
    monkeypatch.chdir(ROOT)
    f = mgmt.resolve(load("tests/e2e/small.yml"))
    docs = build_clabernetes(f, render_lab(f, "netns"), image="twin-node:x")
    topo = docs[-1]
    assert topo["spec"]["expose"] == {"exposeType": "ClusterIP", "disableAutoExpose": True}
    nodes = yaml.safe_load(topo["spec"]["definition"]["containerlab"])["topology"]["nodes"]
    assert nodes["leaf1"]["ports"] == ["22:22", "8765:8765"] and nodes["leaf1"]["mgmt-ipv4"] == f.nodes["leaf1"].mgmt
    assert "ports" not in nodes["host1"] and nodes["host1"]["network-mode"] == "none"
    plain = load("tests/e2e/small.yml")
    assert build_clabernetes(plain, render_lab(plain, "netns"), image="x")[-1]["spec"]["expose"] == {
        "disableExpose": True
    }


def test_a_node_on_an_image_of_its_own_has_no_management_port(tmp_path):
    text = PINNED.replace(
        "leaf2: {kind: leaf, mgmt_ipv4: 192.168.200.1}",
        "leaf2: {kind: leaf, image: frrouting/frr, mgmt_ipv4: 192.168.200.1}",
    )
    running = mgmt.resolve(load(topo(tmp_path, text)), own={"leaf2"})  # as `twin up` chose its image
    assert running.nodes["leaf2"].mgmt is None and running.mgmt.gateway == "192.168.200.1", "its pin is free again"
    assert running.nodes["leaf1"].mgmt == "192.168.200.2"
    again = mgmt.carry(running, load(topo(tmp_path, text)))
    assert again.nodes["leaf2"].mgmt is None and FabricDiff(running, again).fixed() == []
    assert (
        yaml.safe_load(inventory(running, "nornir", password="pw")["hosts.yaml"])["leaf2"]["hostname"]
        == "twin-pinned-leaf2"
    ), "reached through its container"


def test_a_subnet_another_lab_took_meanwhile_is_chosen_again_from_a_new_look(tmp_path, monkeypatch):
    """Two bring-ups at once on one host (make test's workers, a server's users) choose without waiting
    for each other: when both chose one subnet, Docker refuses the second's network ("Pool overlaps",
    `SubnetTaken`), which looks again and chooses another. A subnet the topology gives is not changed:
    the refusal is the error; neither is a host where every look finds its choice taken meanwhile."""
    from twin.runtime import mgmt as runtime_mgmt

    fabric = load(ROOT / "tests/e2e/small.yml").model_copy(update={"name": "race"})
    theirs = mgmt.choose("race", 4, [])  # another lab's network, made after our first look
    looks: list[list[IPv4Network]] = [[], [theirs]]
    made: list[str] = []

    def make(f):
        made.append(f.mgmt.subnet)
        if IPv4Network(f.mgmt.subnet).overlaps(theirs):
            raise runtime_mgmt.SubnetTaken(f"lab race: Docker refused its management network: {f.mgmt.subnet} overlaps")

    monkeypatch.setattr(runtime_mgmt, "taken", lambda client, lab: looks.pop(0))
    got = runtime_mgmt.claim(None, fabric, (), make)
    assert made == [str(theirs), got.mgmt.subnet] and not IPv4Network(got.mgmt.subnet).overlaps(theirs)
    assert {n.mgmt for n in got.managed()} <= {str(a) for a in IPv4Network(got.mgmt.subnet).hosts()}

    monkeypatch.setattr(runtime_mgmt, "taken", lambda client, lab: [])
    with pytest.raises(TwinError) as e:
        runtime_mgmt.claim(None, fabric, (), make)  # every look misses it: TRIES refusals
    assert str(e.value) == (
        f"lab race: Docker refused its management network: {theirs} overlaps (5 subnets chosen, each taken "
        "meanwhile); give the topology another mgmt.subnet, or mgmt.enabled: false"
    )
    assert len(made) == 2 + runtime_mgmt.TRIES
    given = fabric.model_copy(update={"mgmt": fabric.mgmt.model_copy(update={"subnet": str(theirs)})})
    with pytest.raises(TwinError) as e:
        runtime_mgmt.claim(None, given, (), make)
    assert str(e.value).endswith(f"{theirs} overlaps; give the topology another mgmt.subnet, or mgmt.enabled: false")
    assert len(made) == 3 + runtime_mgmt.TRIES, "the topology's subnet is tried once"
