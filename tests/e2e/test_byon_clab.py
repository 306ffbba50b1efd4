"""containerlab labs in (issues 11, 25): containerlab's own examples, run by `twin up FILE`.
frr01 (3 FRR routers on OSPF with their own frr.conf/daemons bound in, 3 Linux PCs set up by
`exec`), here as `frr01.yaml` (known by its content), comes up converged and the PCs reach each
other; its routers are everywhere twin's own nodes are: a baseline records their OSPF adjacencies
and shows an OSPF interface removed, `verify --prove` breaks the elements of their own configs,
an export carries the files they run. clos01 (SR Linux leafs and spine) is refused with the way
out, and with that role mapping comes up as a converged twin fabric."""

from __future__ import annotations

import json
import shutil

import jsonschema
import pytest
import yaml

from tests.clabschema import CLAB_SCHEMA
from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin import prove
from twin.lab import Lab
from twin.runtime import frr

pytestmark = pytest.mark.e2e

CLAB = ROOT / "tests/golden/interop/containerlab"
PCS = {"pc1": "192.168.11.2", "pc2": "192.168.12.2", "pc3": "192.168.13.2"}
NAME = "t-by-frr01"


@pytest.fixture(scope="module")
def frr01(tmp_path_factory, runtime, node_image):
    d = tmp_path_factory.mktemp("frr01") / "frr01"
    shutil.copytree(CLAB / "frr01", d)
    (d / "frr01.clab.yml").rename(d / "frr01.yaml")  # containerlab takes any name with -t; so does twin
    p = twin_cli("up", str(d / "frr01.yaml"), "--name", NAME, "--image", node_image)
    try:
        yield d, p
    finally:
        twin_cli("down", NAME)
    assert leftovers(runtime, NAME) == []


def test_frr01_comes_up_converged_and_its_pcs_reach_each_other(frr01):
    _, p = frr01
    assert p.returncode == 0, p.stderr
    assert "6 adjacencies of 3 routers up" in p.stdout and "(3 nodes run yours)" in p.stdout
    assert "note: node names as twin writes them (lowercase): PC1 is pc1, PC2 is pc2, PC3 is pc3" in p.stderr
    assert "instead of quay.io/frrouting/frr:10.5.1 (router1, router2, router3)" in p.stderr
    lab = Lab.open(NAME)
    assert lab.node("router1").vtysh("show running-config").count("network 192.168.") == 3  # its own file
    assert lab.node("router1").run(["cat", "/proc/sys/net/ipv6/conf/all/forwarding"]).stdout.strip() == "0"
    for src in PCS:
        for dst, addr in PCS.items():
            if src != dst:
                res = lab.node(src).run(["ping", "-c1", "-W2", addr])
                assert res.ok, f"{src} -> {dst} ({addr}): {res.stdout}{res.stderr}"
    e = twin_cli("exec", NAME, "PC1", "--", "true")  # the name as the user's file writes it (issue 27)
    assert e.returncode == 0, e.stderr
    assert lab.node("PC1").run(["ping", "-c1", "-W2", PCS["pc2"]]).ok
    v = twin_cli("verify", NAME, "--json")
    assert v.returncode == 0, v.stdout[-2000:]
    checks = {c["name"]: c for c in json.loads(v.stdout)["checks"]}
    assert checks["ospf router1 eth1"]["data"] == {
        "state": checks["ospf router1 eth1"]["data"]["state"],
        "peer": "router2:eth1",
        "vrf": "default",
    }
    assert "ospf router1 eth3" not in checks  # passive, towards PC1
    assert checks["daemons router1"]["data"]["expected"] == ["ldpd", "ospfd", "zebra"]  # its daemons file
    assert "router2: route to 192.168.11.0/24 (OSPF, router1:eth3's)" in checks["routes router2"]["data"]["expected"]


def test_an_export_is_schema_valid_and_carries_the_files_the_routers_run(frr01, tmp_path):
    d, _ = frr01
    twin_cli("export", NAME, "--format", "containerlab", "-o", str(tmp_path), check=True)
    doc = yaml.safe_load((tmp_path / f"{NAME}.clab.yml").read_text())
    errors = [f"{list(e.path)}: {e.message}" for e in jsonschema.Draft7Validator(CLAB_SCHEMA).iter_errors(doc)]
    assert not errors, errors
    for r in ("router1", "router2", "router3"):
        for f in ("frr.conf", "daemons"):
            assert (tmp_path / r / f).read_text() == (d / r / f).read_text(), f"{r}/{f}"
    assert doc["topology"]["nodes"]["pc1"]["exec"][1:] == [
        "ip link set eth1 up",
        "ip addr add 192.168.11.2/24 dev eth1",
        "ip route add 192.168.0.0/16 via 192.168.11.1 dev eth1",
        "ip route add 10.10.10.0/24 via 192.168.11.1 dev eth1",
    ]


@pytest.mark.prove  # a slow proof: `make prove` runs it, `make test` does not
def test_a_proof_breaks_the_routers_own_ospf_interfaces(frr01):
    ctx = Lab.open(NAME).context()
    els, _ = prove.elements(ctx)
    ospf = sorted(e.id for e in els if e.kind == "OSPF interface")
    assert ospf == [f"ospf-interface router{i} eth{j}" for i in (1, 2, 3) for j in (1, 2, 3)]
    proof = prove.prove(ctx, ["ospf-interface * eth3"])  # the passive ones: no DR election to wait for
    assert proof.passed and len(proof.outcomes) == 3, [(o.element.id, o.detail) for o in proof.outcomes]
    by = {o.element.id: o.check for o in proof.outcomes}
    assert by["ospf-interface router1 eth3"] in ("control: routes router2", "control: routes router3")


def test_a_baseline_records_the_routers_and_shows_an_ospf_interface_removed(frr01, tmp_path):
    base = tmp_path / "base.json"
    p = twin_cli("baseline", "record", NAME, "-o", str(base), check=True)
    assert "3 nodes, 0 sessions" in p.stdout and "6 OSPF/IS-IS adjacencies" in p.stdout
    doc = json.loads(base.read_text())
    assert doc["nodes"]["router1"]["adjacencies"] == {"default": {"ospf eth1": "Full", "ospf eth2": "Full"}}
    assert doc["nodes"]["router2"]["routes"]["default"]["192.168.11.0/24"]["protocol"] == "ospf"
    lab = Lab.open(NAME)
    lab.node("router1").vtysh("configure terminal", "router ospf", "no network 192.168.1.0/24 area 0.0.0.0")
    try:
        p = twin_cli("baseline", "compare", NAME, str(base), "--settle", "5", "--json")
        assert p.returncode == 1
        diffs = {(d["node"], d["what"], d["key"]): d for d in json.loads(p.stdout)["differences"]}
        assert diffs[("router1", "adjacency", "ospf eth1")]["change"] == "disappeared"
        assert diffs[("router1", "adjacency", "ospf eth1")]["before"] == "Full"
        assert diffs[("router1", "route", "192.168.12.0/24")]["after"] == "ospf via 192.168.2.2"  # round router3
    finally:  # last of the lab's tests: its file again, without waiting the ~40 s of OSPF's election on eth1
        frr.take(lab.node("router1"), removes=False)
    assert "network 192.168.1.0/24 area 0.0.0.0" in lab.node("router1").vtysh("show running-config")


def test_clos01_is_refused_with_the_way_out_then_comes_up_with_the_role_mapping(runtime, node_image):
    name = "t-by-clos01"
    clos = str(CLAB / "clos01.clab.yml")
    p = twin_cli("up", clos, "--name", name, "--image", node_image)
    assert p.returncode == 1 and leftovers(runtime, name) == []
    assert (
        "3 node(s) of kinds twin cannot run: leaf1 (nokia_srlinux), leaf2 (nokia_srlinux), spine "
        "(nokia_srlinux); map them to twin's kinds, and twin renders their day-0 config: "
        "--role leaf1=leaf,leaf2=leaf,spine=spine" in p.stderr
    )
    p = twin_cli(
        "up", clos, "--name", name, "--image", node_image, "--role", "leaf1=leaf,leaf2=leaf", "--role", "spine=spine"
    )
    try:
        assert p.returncode == 0, p.stderr
        assert "5 nodes, 4 BGP sessions Established" in p.stdout
        st = json.loads(twin_cli("status", name, "--json", check=True).stdout)
        assert st["healthy"] and {r["node"]: r["kind"] for r in st["nodes"]} == {
            "leaf1": "leaf",
            "leaf2": "leaf",
            "spine": "spine",
            "client1": "host",
            "client2": "host",
        }
        lab = Lab.open(name)
        assert {p.name for p in lab.fabric.nodes["spine"].ports} == {"e1-1", "e1-2"}  # names as given
        assert twin_cli("verify", name).returncode == 0
    finally:
        twin_cli("down", name)
    assert leftovers(runtime, name) == []
