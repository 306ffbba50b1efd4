"""containerlab export: schema-valid for every shipped topology, the same lab as `twin up` makes it."""

import os
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.clabschema import CLAB_SCHEMA
from twin.base.errors import TwinError
from twin.config.naming import LABEL_KIND, LABEL_LAB, LABEL_NODE
from twin.config.render import render_lab
from twin.interop import export_containerlab
from twin.interop.containerlab import build_containerlab
from twin.interop.startscript import start_script
from twin.kinds import KINDS
from twin.topology import load, mgmt

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "interop"

TOPOLOGIES = sorted(p.name for p in (ROOT / "topologies").glob("*.yml"))
IMAGE = "twin-node:test"


def exported(topology: str, tmp_path: Path, backend: str = "netns", managed: bool = False) -> tuple[dict, Path]:
    fabric = load(ROOT / "topologies" / topology)
    fabric = mgmt.resolve(fabric) if managed else fabric  # its management network chosen (a lab's, `twin export`)
    path = export_containerlab(fabric, render_lab(fabric, backend), tmp_path, image=IMAGE, backend=backend)
    return yaml.safe_load(path.read_text()), path


@pytest.mark.parametrize("backend", ["netns", "vrf"])
@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_every_topology_exports_schema_valid(topology, backend, tmp_path):
    doc, _ = exported(topology, tmp_path, backend)
    errors = sorted(jsonschema.Draft7Validator(CLAB_SCHEMA).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_every_topology_exports_schema_valid_with_its_management_network(topology, tmp_path):
    doc, _ = exported(topology, tmp_path, managed=True)
    errors = sorted(jsonschema.Draft7Validator(CLAB_SCHEMA).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    assert doc["mgmt"]["network"] == f"twin-{doc['name']}-mgmt" and any(
        "mgmt-ipv4" in n for n in doc["topology"]["nodes"].values()
    )


def test_schema_check_can_fail(tmp_path):
    """The schema really constrains what the export writes (a wrong field is caught)."""
    doc, _ = exported("aipod.yml", tmp_path)
    doc["topology"]["nodes"]["spine1"]["network-mode"] = "bridged"
    doc["topology"]["nodes"]["leaf1"]["bind"] = []
    assert len(list(jsonschema.Draft7Validator(CLAB_SCHEMA).iter_errors(doc))) == 2


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_nodes_and_links_are_twins(topology, tmp_path):
    doc, path = exported(topology, tmp_path)
    fabric = load(ROOT / "topologies" / topology)
    nodes = doc["topology"]["nodes"]
    assert doc["name"] == fabric.name and set(nodes) == set(fabric.nodes)
    for n in fabric.nodes.values():
        node, kind = nodes[n.name], KINDS[n.kind]
        assert (node["kind"], node["image"], node["network-mode"]) == ("linux", IMAGE, "none")
        assert {node["labels"][k] for k in (LABEL_LAB, LABEL_NODE, LABEL_KIND)} == {fabric.name, n.name, n.kind}
        assert node["labels"].get("twin.asn") == (str(n.asn) if n.asn else None)
        assert node["labels"].get("twin.loopback") == n.loopback
        assert node.get("sysctls", {}) == kind.sysctls_of(n.name) and node["cap-add"] == list(kind.capabilities)
        assert node["exec"] == ["sh /etc/twin/twin-start.sh"]
        assert f"{n.name}:/etc/twin:ro" in node["binds"]
        for bind in node["binds"]:  # every bound file is in the output directory
            assert (path.parent / bind.split(":")[0]).exists(), bind
    links = {frozenset(link["endpoints"]): link["mtu"] for link in doc["topology"]["links"]}
    assert links == {frozenset((str(link.a), str(link.b))): link.mtu for link in fabric.links}


def test_mounts_are_twins_and_files_written_as_rendered(tmp_path):
    doc, path = exported("aipod.yml", tmp_path)
    assert doc["topology"]["nodes"]["leaf1"]["binds"] == ["leaf1:/etc/frr", "leaf1:/etc/twin:ro"], (
        "the node's directory, as twin mounts it: a file twin apply replaces is the one FRR sees"
    )
    assert doc["topology"]["nodes"]["host1a"]["binds"] == ["host1a:/etc/twin:ro"]
    assert doc["topology"]["nodes"]["host1a"]["cmd"] == "sleep infinity"
    assert "cmd" not in doc["topology"]["nodes"]["leaf1"], "FRR nodes run the image's twin-node"
    fabric = load(ROOT / "topologies" / "aipod.yml")
    for node, files in render_lab(fabric).items():
        for name, text in files.items():
            assert (path.parent / node / name).read_text() == text
        assert os.access(path.parent / node / "twin-start.sh", os.X_OK)


def test_aipod_export_matches_golden(tmp_path, golden):
    _, path = exported("aipod.yml", tmp_path)
    golden(GOLDEN / "aipod" / "aipod.clab.yml", path.read_text())
    for node in ("spine1", "dpu1", "host1a"):
        golden(GOLDEN / "aipod" / node / "twin-start.sh", (path.parent / node / "twin-start.sh").read_text())


def test_files_of_another_backend_are_refused():
    fabric = load(ROOT / "topologies" / "aipod.yml")
    with pytest.raises(TwinError, match="dpu1, dpu2 are not lab aipod's on the netns VRF backend"):
        build_containerlab(fabric, render_lab(fabric, "vrf"), image=IMAGE, backend="netns")
    files = render_lab(fabric)
    del files["host2c"]
    with pytest.raises(TwinError, match="no rendered files for node.s. host2c"):
        build_containerlab(fabric, files, image=IMAGE)


STUBS = {  # commands the start script calls, recorded instead of run
    "ip": 'echo "ip $*" >> "$LOG"',
    "bridge": 'echo "bridge $*" >> "$LOG"',
    "nft": 'echo "nft $*" >> "$LOG"',
    "sleep": 'echo "sleep $*" >> "$LOG"',
    "twin-node": 'echo "twin-node $*" >> "$LOG"; touch "$LOG.frr"',
    # zebra knows nothing until FRR started, then every VNI of the lab
    "vtysh": '[ -e "$LOG.frr" ] || exit 1; echo "vtysh" >> "$LOG"; '
    'echo \'[{"vni": 10100}, {"vni": 10101}, {"vni": 10102}, {"vni": 10200}, {"vni": 10201}]\'',
}


def run_start_script(tmp_path: Path, node: str, writable_sysctls: bool = True) -> list[str]:
    """Run the node's twin-start.sh with its commands stubbed; the commands it ran, in order."""
    if shutil.which("sh") is None or shutil.which("python3") is None:
        pytest.skip("needs sh and python3")
    fabric = load(ROOT / "topologies" / "aipod.yml")
    bin_dir, log = tmp_path / "bin", tmp_path / "log"
    bin_dir.mkdir()
    for name, body in STUBS.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    script = start_script(fabric, node, "netns").replace("/usr/local/bin/twin-node", "twin-node")
    script = script.replace("/proc/sys/", f"{tmp_path}/")  # the host's sysctl fix writes here instead
    if writable_sysctls:
        (tmp_path / "net/ipv6/conf/all").mkdir(parents=True)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "LOG": str(log)}
    subprocess.run(["sh", "-c", script], env=env, check=True, timeout=30, capture_output=True, text=True)
    return log.read_text().splitlines()


def test_vtep_start_script_runs_twins_bring_up_in_order(tmp_path):
    ran = run_start_script(tmp_path, "dpu1")
    ports = [line for line in ran if line.startswith("ip link set dev ")]
    assert ports[0] == "ip link set dev p0 up alias twin:aipod:dpu1:p0->leaf1:swp3" and len(ports) == 5
    start = ran.index("twin-node start-frr")
    assert ran.index("ip netns add red") < start, "kernel steps before FRR starts"
    assert "vtysh" in ran[start:], "waited for zebra's VNIs"
    bindings = [i for i, line in enumerate(ran) if " neigh replace " in line]
    assert len(bindings) == 3 and min(bindings) > ran.index("vtysh"), "bindings once zebra knows the VNIs"


def test_host_start_script_sets_its_port_and_ipv6_off(tmp_path):
    ran = run_start_script(tmp_path, "host1a")
    assert ran == [
        "ip link show dev eth1",
        "ip link set dev eth1 up alias twin:aipod:host1a:eth1->dpu1:pf0vf0",
        "ip link set eth1 address 02:38:c8:47:57:04",
        "ip addr add 10.1.1.11/24 dev eth1",
        "ip link set eth1 up",
        "ip route add default via 10.1.1.1 dev eth1",
    ]
    assert (tmp_path / "net/ipv6/conf/all/disable_ipv6").read_text().strip() == "1"


def test_a_sysctl_the_runtime_keeps_read_only_does_not_stop_the_bring_up(tmp_path):
    ran = run_start_script(tmp_path, "host1a", writable_sysctls=False)
    assert ran[-1] == "ip route add default via 10.1.1.1 dev eth1"
