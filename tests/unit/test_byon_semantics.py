"""Other people's labs as they wrote them (issue 25), without Docker: containerlab files known by
their content, every node field carried or named with its reason, binds/cmd/env checked as a twin
topology's fields, the kernel's missing device types named with the way out, a failing exec reported
and the lab going on, the routers' own intent (static and IGP routes, L3VNIs) and their elements for
--prove, checks on routers, baselines of their adjacencies, and an export that carries their files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
import yaml

from twin import topology
from twin.base.errors import CommandError, TopologyError, TwinError
from twin.config.render import render_lab
from twin.config.userconf import forwarding_sysctls
from twin.intent import Intent
from twin.interop import export_containerlab
from twin.interop.clab_import import import_clab, is_clab
from twin.lifecycle.bringup import ExecLog, run_exec
from twin.prove import router_side
from twin.runtime import frr, kernelhint
from twin.runtime.docker import commands
from twin.runtime.exec import Result
from twin.topology.checks import load_checks
from twin.verify import baseline

ROOT = Path(__file__).resolve().parents[2]
CLAB = ROOT / "tests/golden/interop/containerlab"
EVPN = ROOT / "tests/e2e/labs/evpn-scripts"
SCHEMA = json.loads((CLAB / "clab.schema.json").read_text())


def write(d: Path, name: str, doc: dict, files: dict[str, str] | None = None) -> Path:
    for f, text in (files or {}).items():
        (d / f).parent.mkdir(parents=True, exist_ok=True)
        (d / f).write_text(text)
    p = d / name
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def frr01():
    imp = import_clab(CLAB / "frr01/frr01.clab.yml")
    fabric = topology.load_document(imp.doc, imp.source)
    return fabric, imp.configs.files


# --- containerlab files in ---------------------------------------------------------------------------


def test_a_containerlab_file_is_known_by_its_content_whatever_its_name(tmp_path):
    lab = write(tmp_path, "frrlab-bgp.yaml", {"name": "x", "topology": {"nodes": {"a": {"kind": "linux"}}}})
    mine = write(tmp_path, "mine.yml", {"name": "x", "nodes": {"a": {"kind": "host"}}, "links": []})
    (tmp_path / "broken.yml").write_text("name: [\n")
    assert is_clab(lab) and not is_clab(mine) and not is_clab(tmp_path / "broken.yml")
    assert not is_clab(tmp_path / "air.json") and is_clab(EVPN / "evpn-lab.yml")


def test_every_node_field_is_carried_or_named_with_its_reason(tmp_path):
    doc = {
        "name": "f",
        "topology": {
            "defaults": {"kind": "linux", "env": {"A": 1, "B": "x"}, "env-files": ["d.env"]},
            "nodes": {
                "r1": {
                    "image": "frrouting/frr",
                    "startup-config": "r1.conf",
                    "cmd": "bash /x.sh",
                    "sysctls": {"a": 1},
                    "binds": ["scripts/:/opt/scripts:ro"],
                },
                "r2": {"image": "frrouting/frr", "startup-config": "hostname r2\n!\n", "env": {"B": "y"}},
                "h1": {
                    "cmd": "bash /setup.sh",
                    "entrypoint": "/bin/sh -c",
                    "ports": ["80:80"],
                    "startup-config": "h1.cfg",
                    "binds": ["h1.sh:/setup.sh"],
                },
            },
            "links": [{"endpoints": ["r1:eth1", "r2:eth1"]}, {"endpoints": ["h1:eth1", "r1:eth2"]}],
        },
    }
    path = write(
        tmp_path,
        "lab.yml",
        doc,
        {
            "d.env": "# defaults\nC=3\nA=0\n",
            "r1.conf": "hostname r1\n",
            "scripts/a.sh": "echo a\n",
            "h1.sh": "sleep INF\n",
        },
    )
    imp = import_clab(path)
    nodes = imp.doc["nodes"]
    assert nodes["r1"] == {
        "kind": "router",
        "image": "frrouting/frr",
        "binds": [f"{tmp_path}/scripts:/opt/scripts:ro"],
        "env": {"C": "3", "A": "1", "B": "x"},
    }
    assert nodes["r2"]["env"]["B"] == "y" and imp.configs.files["r2"]["frr.conf"] == "hostname r2\n!\n"
    assert imp.configs.files["r1"]["frr.conf"] == "hostname r1\n"  # startup-config of an FRR node
    assert nodes["h1"]["cmd"] == "bash /setup.sh" and nodes["h1"]["entrypoint"] == "/bin/sh -c"
    notes = "\n".join(imp.notes)
    assert "cmd of r1 is left out: an FRR node runs twin's command, which starts FRR once it is wired" in notes
    assert "startup-config of h1 is left out: a Linux host has none" in notes
    assert "ports of h1 is left out: publishes container ports on this host" in notes
    assert "sysctls of r1 is left out: twin sets each kind's sysctls" in notes
    fabric = topology.load_document(imp.doc, imp.source)
    h1 = fabric.nodes["h1"]
    assert (h1.cmd, h1.entrypoint, [str(b) for b in h1.binds]) == (
        ("bash", "/setup.sh"),
        ("/bin/sh", "-c"),
        [f"{tmp_path}/h1.sh:/setup.sh"],
    )
    assert fabric.model_dump()["nodes"]["r1"]["binds"][0]["read_only"] is True


def test_a_network_os_startup_config_is_not_read_as_frrs(tmp_path):
    doc = yaml.safe_load((CLAB / "clos01.clab.yml").read_text())
    doc["topology"]["nodes"]["leaf1"]["startup-config"] = "leaf1.cfg"
    (tmp_path / "leaf1.cfg").write_text('{"srl": "json"}\n')
    imp = import_clab(write(tmp_path, "clos.clab.yml", doc), roles={"leaf1": "leaf", "leaf2": "leaf", "spine": "spine"})
    assert not imp.configs.files
    assert (
        "startup-config of leaf1 is left out: a config of nokia_srlinux, not FRR's: twin renders the node's day-0 "
        "config" in imp.notes
    )


def test_a_missing_bind_source_is_named_with_its_line_as_containerlab_refuses_it(tmp_path):
    doc = {"name": "f", "topology": {"nodes": {"h1": {"kind": "linux", "binds": ["gone.sh:/setup.sh"]}}}}
    with pytest.raises(TopologyError) as e:
        import_clab(write(tmp_path, "lab.clab.yml", doc))
    assert (
        f"lab.clab.yml:6: topology.nodes.h1.binds: gone.sh:/setup.sh: {tmp_path}/gone.sh does not exist "
        "(containerlab refuses a missing source too)" in str(e.value).replace(str(tmp_path) + "/lab", "lab")
    )


def test_the_evpn_lab_binds_its_scripts_and_its_frr_directories(tmp_path):
    imp = import_clab(EVPN / "evpn-lab.yml", name="t-e")
    leaf1, h1 = imp.doc["nodes"]["leaf1"], imp.doc["nodes"]["h1"]
    assert f"{EVPN}/leaf1/setup.sh:/setup.sh:ro" in leaf1["binds"]
    assert f"{EVPN}/leaf1/setup.sh:/etc/frr/setup.sh" in leaf1["binds"]  # the rest of its /etc/frr
    assert sorted(imp.configs.files["leaf1"]) == ["daemons", "frr.conf"] and leaf1["env"] == {"LAB_ROLE": "leaf"}
    assert h1 == {
        "kind": "host",
        "image": "ghcr.io/srl-labs/network-multitool",
        "binds": [f"{EVPN}/hosts/h1.sh:/setup.sh"],
        "cmd": "bash /setup.sh",
    }
    assert imp.doc["nodes"]["spine1"]["exec"] == ["ip addr add 10.0.0.1/32 dev lo"]


# --- the same fields in a twin topology ----------------------------------------------------------


@pytest.mark.parametrize(
    "node, message",
    [
        ({"kind": "leaf", "binds": ["x.conf:/etc/frr/frr.conf"]}, "is the FRR configuration of this leaf: give its"),
        ({"kind": "host", "binds": ["x.conf:/etc/twin/a"]}, "/etc/twin/a is twin's (the node's lab directory)"),
        ({"kind": "host", "binds": ["nope:/a"]}, "/nope: no such file or directory (containerlab refuses a missing"),
        ({"kind": "host", "binds": ["x.conf:/a:rox"]}, "unknown bind option(s) rox; options: ro, rw"),
        ({"kind": "host", "binds": ["x.conf:a"]}, "is not an absolute path in the node"),
        ({"kind": "host", "binds": ["x.conf:/a", "x.conf:/a/"]}, "/a is bound twice in h1"),
        ({"kind": "leaf", "cmd": "sleep 1"}, "a leaf runs twin's command, which starts FRR once the node is wired"),
        ({"kind": "host", "cmd": "bash 'x"}, "cannot be split into words"),
        ({"kind": "host", "env": {"1A": "x"}}, "'1A' is not an environment variable name"),
    ],
)
def test_binds_commands_and_env_of_a_twin_topology_are_checked(tmp_path, node, message):
    (tmp_path / "x.conf").write_text("x\n")
    spec = {
        "name": "t",
        "nodes": {"spine1": {"kind": "spine"}, "leaf1": {"kind": "leaf"}, "h1": {"kind": "host"}},
        "links": [["spine1", "leaf1"], ["h1", "leaf1"]],
    }
    spec["nodes"]["h1" if node["kind"] == "host" else "leaf1"] = node
    with pytest.raises(TopologyError) as e:
        topology.load(write(tmp_path, "t.yml", spec))
    assert message in str(e.value)


def test_a_hosts_own_command_starts_once_its_ports_are_up(tmp_path):
    (tmp_path / "s.sh").write_text("ip addr add 10.0.0.2/24 dev eth1\nsleep INF\n")
    spec = {
        "name": "t",
        "nodes": {
            "r1": {"kind": "router"},
            "h1": {"kind": "host", "cmd": "bash /s.sh", "binds": ["s.sh:/s.sh:ro"], "env": {"X": "1"}},
        },
        "links": [["h1", "r1"]],
    }
    h1 = topology.load(write(tmp_path, "t.yml", spec)).nodes["h1"]
    entrypoint, cmd = commands(h1, ["sleep", "infinity"])
    assert entrypoint[:2] == ["/bin/sh", "-c"] and "for p in eth1; do" in entrypoint[2] and cmd == ["bash", "/s.sh"]
    assert commands(
        topology.load(
            write(tmp_path, "u.yml", {**spec, "nodes": {"r1": {"kind": "router"}, "h1": {"kind": "host"}}})
        ).nodes["h1"],
        ["sleep", "infinity"],
    ) == (None, ["sleep", "infinity"])
    fake = tmp_path / "sys/class/net/eth1"  # the wait itself: a port that is up lets the command run
    fake.mkdir(parents=True)
    (fake / "flags").write_text("0x1003\n")
    script = entrypoint[2].replace("/sys/class/net", str(tmp_path / "sys/class/net"))
    p = subprocess.run(["sh", "-c", script, "twin-wait", "echo", "ran"], capture_output=True, text=True, timeout=10)
    assert p.stdout == "ran\n"


# --- exec, and what the kernel lacks ------------------------------------------------------------------


class FakeExec:
    where = "lab/r1"

    def __init__(self, answers: dict[str, tuple[int, str]]):
        self.answers, self.ran = answers, []

    def run(self, cmd, timeout=0):
        self.ran.append(" ".join(cmd))
        rc, err = self.answers.get(" ".join(cmd), (0, ""))
        return Result(self.where, cmd, rc, "", err)


def test_a_failing_exec_is_reported_with_what_the_kernel_lacks_and_the_next_one_runs():
    ex = FakeExec(
        {
            "ip addr add 10.0.0.1/32 dev lo": (2, "Error: ipv4: Address already assigned.\n"),
            "ip link add lo0 type dummy": (2, "Error: Unknown device type.\n"),
        }
    )
    cmds = ("ip addr add 10.0.0.1/32 dev lo", "ip link add lo0 type dummy", "ip link set eth1 up")
    log = ExecLog("lab")
    run_exec(cmds, ex, log)
    assert ex.ran == list(cmds)
    assert [str(f) for f in log.failures] == [
        "r1: exec `ip addr add 10.0.0.1/32 dev lo` exited 2: Error: ipv4: Address already assigned.",
        "r1: exec `ip link add lo0 type dummy` exited 2: Error: Unknown device type. (this kernel has no dummy "
        "interfaces (CONFIG_DUMMY); instead: the address on lo (`ip addr add 10.0.0.1/32 dev lo`), or a bridge "
        "without ports (`ip link add NAME type bridge`), which holds addresses as a dummy does)",
    ]
    with pytest.raises(TwinError, match=r"^lab/r1: exec `ip addr add 10.0.0.1/32 dev lo` exited 2"):
        run_exec(cmds, FakeExec(ex.answers), ExecLog("lab", strict=True))


def test_a_script_that_made_a_device_this_kernel_lacks_is_answered_for_the_types_it_lacks():
    assert kernelhint.hint("ip link add red type vrf table 1100", "Error: Unknown device type.").startswith(
        "this kernel has no VRF devices (CONFIG_NET_VRF); instead: network namespaces as VRFs"
    )
    assert kernelhint.hint("bash /setup.sh", "Error: Unknown device type.", lambda: ["dummy"]).startswith(
        "a device type this kernel lacks: this kernel has no dummy interfaces (CONFIG_DUMMY)"
    )
    assert kernelhint.hint("ip link add x type vlan id 5", "RTNETLINK answers: Operation not supported").startswith(
        "this kernel has no 802.1Q VLAN interfaces (CONFIG_VLAN_8021Q)"
    )
    assert kernelhint.hint("ip link add red type vrf", "Error: File exists") == ""
    assert kernelhint.hint("bash /setup.sh", "Error: Unknown device type.", lambda: []) == ""


# --- the routers' own intent, proof, checks, baselines ---------------------------------------------


def test_the_routers_of_frr01_must_learn_each_others_ospf_prefixes():
    fabric, files = frr01()
    g = Intent(fabric, files).generic
    assert sorted(str(r) for r in g["router2"].routes) == [
        "router2: route to 192.168.11.0/24 (OSPF, router1:eth3's)",
        "router2: route to 192.168.13.0/24 (OSPF, router3:eth3's)",
        "router2: route to 192.168.2.0/24 (OSPF, router1:eth2's)",
    ]
    assert g["router2"].routes[0].origins in (("router1:eth2", "router3:eth1"), ("router1:eth3",), ("router3:eth3",))
    assert not g["router1"].vnis


def frr01_elements():
    fabric, files = frr01()
    return router_side.router_elements(SimpleNamespace(fabric=fabric, intent=Intent(fabric, files)))


def test_every_ospf_interface_of_frr01_is_an_element_caught_by_its_adjacency_or_the_others_routes():
    els, exempt = frr01_elements()
    by = {e.id: e for e in els}
    assert len(by) == 9 and not exempt
    assert by["ospf-interface router1 eth1"].how == "vtysh: router ospf / no network 192.168.1.0/24 area 0.0.0.0"
    assert by["ospf-interface router1 eth1"].names(
        "control: ospf router1 eth1: router1: OSPF on eth1 to router2:eth1: no Full neighbour"
    )
    passive = by["ospf-interface router1 eth3"]
    assert passive.names(
        "control: routes router3: router3: route to 192.168.11.0/24 (OSPF, router1:eth3's): not in its RIB"
    ) and not passive.names("control: ospf router1 eth3: x")
    assert passive.restores[0].removes is False


def test_bgp_neighbors_static_routes_and_isis_interfaces_are_elements(tmp_path):
    from tests.e2e.test_byon_routers import CONFIG, TOPOLOGY

    fabric = topology.load(write(tmp_path, "rt.yml", yaml.safe_load(TOPOLOGY.format(name="rt"))))
    files = {
        f"r{i}": {
            "frr.conf": CONFIG.format(i=i, o=3 - i, remote=65000 + 3 - i)
            + ("ip route 198.51.100.0/24 blackhole\nip route 198.51.100.0/24 Null0 200\n" if i == 1 else "")
        }
        for i in (1, 2)
    }
    els, exempt = router_side.router_elements(SimpleNamespace(fabric=fabric, intent=Intent(fabric, files)))
    by = {e.id: e for e in els}
    assert by["bgp-neighbor r1 10.0.12.2"].how == "vtysh: router bgp 65001 / no neighbor 10.0.12.2"
    assert by["static r2 192.0.2.0/24"].how == "vtysh: no ip route 192.0.2.0/24 blackhole"
    assert by["isis-interface r1 eth1"].how == "vtysh: interface eth1 / no ip router isis CORE"
    assert by["isis-interface r1 lo"].names("control: routes r2: r2: route to 10.255.255.1/32 (IS-IS, r1:lo's): x")
    assert [(x.kind, x.why) for x in exempt] == [
        ("static route", "another static route to the same prefix stands in for it")
    ] * 2


def test_every_check_type_is_allowed_on_routers(tmp_path):
    fabric = topology.load_document(import_clab(EVPN / "evpn-lab.yml", name="t-e").doc, str(EVPN / "evpn-lab.yml"))
    checks = load_checks(EVPN / "checks.yml", fabric)
    assert len(checks.checks) == 10
    bad = write(
        tmp_path,
        "bad.yml",
        {
            "checks": [
                {"name": "a", "type": "bgp_session", "node": "leaf1", "peer": "leaf2"},
                {"name": "b", "type": "frr_json", "node": "h1", "command": "show bgp summary json", "match": {}},
            ]
        },
    )
    with pytest.raises(TopologyError) as e:
        load_checks(bad, fabric)
    assert "leaf1 has no session with leaf2; its peers: h1, h3, spine1" in str(e.value)
    assert "h1 runs no FRR; FRR nodes: spine1, leaf1, leaf2" in str(e.value)


def test_a_baseline_keeps_an_igps_neighbours_without_the_dr_election():
    doc = {"default": {"neighbors": {"10.10.10.2": [{"ifaceName": "eth1:192.168.1.1", "nbrState": "Full/DR"}]}}}
    adj = baseline.adjacencies({"ospf": doc})
    assert adj == {"default": {"ospf eth1": "Full"}}
    items = baseline.items({"nodes": {"r1": {"adjacencies": adj}}})
    assert items == {("r1", "default", "adjacency", "ospf eth1"): "Full"}


def test_forwarding_a_routers_config_asks_for_and_a_reload_only_the_container_refuses():
    assert forwarding_sysctls("frr version 10\nno ipv6 forwarding\nip forwarding\n") == {
        "net.ipv6.conf.all.forwarding": "0",
        "net.ipv4.ip_forward": "1",
    }
    refused = "line 11: Failure to communicate[13] to zebra, line: no ipv6 forwarding\n"
    ex = SimpleNamespace(run=lambda cmd, t: Result("lab/r1", cmd, 1, refused, ""))
    frr.reload(ex)  # taken: only a line the container's read-only sysctls refuse
    worse = refused + "line 12: Failure to communicate[13] to ospfd, line: router ospf 7\n"
    with pytest.raises(CommandError):
        frr.reload(SimpleNamespace(run=lambda cmd, t: Result("lab/r1", cmd, 1, worse, "")))


# --- export -------------------------------------------------------------------------------------------


def test_an_export_carries_the_routers_files_the_hosts_scripts_and_is_schema_valid(tmp_path):
    imp = import_clab(EVPN / "evpn-lab.yml", name="t-e")
    fabric = topology.load_document(imp.doc, imp.source)
    from twin.config import userconf

    files = userconf.merge(render_lab(fabric, "netns"), imp.configs, fabric, "netns")[0]
    path = export_containerlab(fabric, files, tmp_path / "out", image="twin-node:test")
    doc = yaml.safe_load(path.read_text())
    errors = [f"{list(e.path)}: {e.message}" for e in jsonschema.Draft7Validator(SCHEMA).iter_errors(doc)]
    assert not errors, errors
    out = tmp_path / "out"
    assert (out / "leaf1/frr.conf").read_text() == (EVPN / "leaf1/frr.conf").read_text()
    leaf1, h1 = doc["topology"]["nodes"]["leaf1"], doc["topology"]["nodes"]["h1"]
    assert "leaf1/setup.sh:/setup.sh:ro" in leaf1["binds"] and os.access(out / "leaf1/setup.sh", os.X_OK)
    assert (out / "leaf1/setup.sh").read_text() == (EVPN / "leaf1/setup.sh").read_text()
    assert leaf1["env"] == {"LAB_ROLE": "leaf"}
    assert (h1["entrypoint"], h1["cmd"]) == ("sh /etc/twin/twin-wait.sh", "bash /setup.sh")
    assert "h1/setup.sh:/setup.sh" in h1["binds"] and "for p in eth1; do" in (out / "h1/twin-wait.sh").read_text()
    assert doc["topology"]["nodes"]["spine1"]["exec"] == [
        "sh /etc/twin/twin-start.sh",
        "ip addr add 10.0.0.1/32 dev lo",
    ]
