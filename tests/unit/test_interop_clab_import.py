"""containerlab labs in (issue 11): containerlab's semantics kept (defaults/kinds/groups
inheritance, binds merged by destination relative to the file, exec of every level in order,
interface names as given), what twin leaves out said once, kinds twin cannot run refused together
with the way out, and containerlab's own examples as twin topologies."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from twin import topology
from twin.base.errors import TopologyError
from twin.interop.clab_import import import_clab, is_clab

ROOT = Path(__file__).resolve().parents[2]
CLAB = ROOT / "tests/golden/interop/containerlab"


def write(d: Path, doc: dict, files: dict[str, str] | None = None) -> Path:
    for name, text in (files or {}).items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text)
    p = d / "lab.clab.yml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def test_frr01_becomes_three_routers_with_their_files_and_three_hosts_with_their_exec():
    imp = import_clab(CLAB / "frr01/frr01.clab.yml")
    fabric = topology.load_document(imp.doc, imp.source)
    assert {n: x.kind for n, x in fabric.nodes.items()} == {
        "router1": "router",
        "router2": "router",
        "router3": "router",
        "pc1": "host",
        "pc2": "host",
        "pc3": "host",
    }
    assert fabric.nodes["pc1"].exec[1] == "ip addr add 192.168.11.2/24 dev eth1"
    assert {p.name: (p.peer_node, p.peer_port, p.role) for p in fabric.nodes["router1"].ports} == {
        "eth1": ("router2", "eth1", "plain"),
        "eth2": ("router3", "eth1", "plain"),
        "eth3": ("pc1", "eth1", "access"),
    }
    assert imp.configs.files["router2"]["frr.conf"] == (CLAB / "frr01/router2/frr.conf").read_text()
    assert imp.configs.path("router2", "daemons") == str(CLAB / "frr01/router2/daemons")
    assert imp.notes == [
        "node names as twin writes them (lowercase): PC1 is pc1, PC2 is pc2, PC3 is pc3; "
        "commands take your spelling too (`twin exec LAB PC1`)"
    ]
    # each node's image is carried: `twin up` runs it where the engine has it (issue 36)
    assert {n: x.image for n, x in fabric.nodes.items()} == {
        **{r: "quay.io/frrouting/frr:10.5.1" for r in ("router1", "router2", "router3")},
        **{p: "wbitt/network-multitool:3.22.2" for p in ("pc1", "pc2", "pc3")},
    }
    assert is_clab("x/frr01.clab.yml") and is_clab("A.CLAB.YAML") and not is_clab("aipod.yml")


def test_kinds_twin_cannot_run_are_refused_together_with_the_way_out_and_roles_map_them():
    with pytest.raises(TopologyError) as e:
        import_clab(CLAB / "clos01.clab.yml")
    text = str(e.value)
    assert (
        "3 node(s) of kinds twin cannot run: leaf1 (nokia_srlinux), leaf2 (nokia_srlinux), spine (nokia_srlinux); "
        "map them to twin's kinds, and twin renders their day-0 config: --role leaf1=leaf,leaf2=leaf,spine=spine "
        "(kinds: spine, leaf, dpu, host, router, internet)" in text
    )
    assert "clos01.clab.yml:12: topology.nodes.leaf1.kind: nokia_srlinux: twin cannot run it" in text
    imp = import_clab(CLAB / "clos01.clab.yml", roles={"leaf1": "leaf", "leaf2": "leaf", "spine": "spine"})
    fabric = topology.load_document(imp.doc, imp.source)
    assert [str(s) for s in fabric.sessions("spine")] == ["spine:e1-1 -> leaf1", "spine:e1-2 -> leaf2"]
    assert fabric.nodes["client1"].kind == "host" and not imp.configs.files
    with pytest.raises(TopologyError) as e:
        import_clab(
            CLAB / "clos01.clab.yml", roles={"leaf1": "leaf", "leaf2": "switch", "spine": "spine", "nope": "leaf"}
        )
    assert "--role leaf2=switch: unknown kind" in str(e.value) and "--role nope: no node named 'nope'" in str(e.value)


def test_inheritance_binds_and_exec_as_containerlab_resolves_them(tmp_path):
    doc = {
        "name": "My_Lab",
        "mgmt": {"network": "m", "ipv4-subnet": "172.20.20.0/24"},
        "topology": {
            "defaults": {"kind": "linux", "exec": ["echo defaults"], "env": {"A": "1"}},
            "kinds": {
                "linux": {"image": "alpine", "exec": ["echo kind"], "binds": ["cfg/base.conf:/etc/frr/frr.conf"]}
            },
            "groups": {"rtr": {"image": "frrouting/frr", "exec": ["echo group"]}},
            "nodes": {
                "R_1": {
                    "group": "rtr",
                    "binds": [
                        "__clabNodeDir__/frr.conf:/etc/frr/frr.conf",
                        "cfg/d:/etc/frr/daemons",
                        "cfg/x:/opt/x:ro",
                    ],
                    "exec": ["echo node"],
                },
                "h1": {"binds": ["cfg/other:/data"], "mgmt-ipv4": "172.20.20.9"},
                "r2": {"binds": ["cfg/r2:/etc/frr"]},
            },
            "links": [
                {"endpoints": ["R_1:eth1", "h1:eth1"]},
                {
                    "type": "veth",
                    "mtu": 9000,
                    "endpoints": [{"node": "R_1", "interface": "e1-2"}, {"node": "r2", "interface": "eth9"}],
                },
            ],
        },
    }
    path = write(
        tmp_path,
        doc,
        {
            "cfg/base.conf": "base\n",
            "cfg/d": "bgpd=yes\n",
            "clab-My_Lab/R_1/frr.conf": "mine\n",
            "cfg/r2/frr.conf": "r2\n",
            "cfg/r2/daemons": "ospfd=yes\n",
            "cfg/r2/vtysh.conf": "service integrated-vtysh-config\n",
            "cfg/x": "x\n",
            "cfg/other/a": "a\n",
        },
    )
    imp = import_clab(path)
    assert imp.doc["name"] == "my-lab"
    assert imp.doc["nodes"]["r-1"] == {
        "kind": "router",
        "image": "frrouting/frr",
        "exec": ["echo defaults", "echo kind", "echo group", "echo node"],
        "binds": [f"{tmp_path}/cfg/x:/opt/x:ro"],
        "env": {"A": "1"},
    }
    assert imp.doc["nodes"]["h1"]["kind"] == "router"  # the kind's bind of frr.conf reaches it too
    # r2 binds /etc/frr as a whole, and its kind binds frr.conf: Docker mounts the file over the directory
    assert imp.configs.files == {
        "r-1": {"frr.conf": "mine\n", "daemons": "bgpd=yes\n"},
        "h1": {"frr.conf": "base\n"},
        "r2": {"frr.conf": "base\n", "daemons": "ospfd=yes\n"},
    }
    assert imp.doc["links"] == [
        {"endpoints": ["r-1:eth1", "h1:eth1"]},
        {"endpoints": ["r-1:e1-2", "r2:eth9"], "mtu": 9000},
    ]
    notes = "\n".join(imp.notes)
    assert "lab 'My_Lab' is 'my-lab' in twin" in notes and "R_1 is r-1" in notes
    # the management network: its subnet, a router's address; containerlab's own network settings are said
    assert imp.doc["mgmt"] == {"subnet": "172.20.20.0/24"} and imp.doc["nodes"]["h1"]["mgmt_ipv4"] == "172.20.20.9"
    assert "mgmt: network left out: the management network is twin's own" in notes
    fabric = topology.load_document(imp.doc, imp.source)
    assert (fabric.mgmt.subnet, fabric.nodes["h1"].mgmt) == ("172.20.20.0/24", "172.20.20.9")
    assert imp.doc["nodes"]["h1"]["binds"] == [f"{tmp_path}/cfg/other:/data"]
    # r2's directory on /etc/frr: its config read, its other files bound beside it
    assert imp.doc["nodes"]["r2"]["binds"] == [f"{tmp_path}/cfg/r2/vtysh.conf:/etc/frr/vtysh.conf"]
    fabric = topology.load_document(imp.doc, imp.source)
    assert [str(b) for b in fabric.nodes["r-1"].binds] == [f"{tmp_path}/cfg/x:/opt/x:ro"]
    assert fabric.nodes["h1"].env == {"A": "1"}


def test_links_that_leave_the_lab_and_names_twin_cannot_take_are_named_with_their_line(tmp_path):
    doc = {
        "name": "_._",
        "topology": {
            "nodes": {"a": {"kind": "linux"}, "A": {"kind": "linux"}},
            "links": [
                {"endpoints": ["a:eth1", "host:veth-a"]},
                {"type": "macvlan", "endpoint": {"node": "a", "interface": "e"}},
                {"endpoints": ["a:eth2", "zz:eth1"]},
            ],
        },
    }
    with pytest.raises(TopologyError) as e:
        import_clab(write(tmp_path, doc))
    text = str(e.value)
    assert "topology.nodes.A: is 'a' in twin, as 'a' is; rename one" in text
    assert "topology.links[0]: endpoint 'host' is not a node of the lab (the host, a management network" in text
    assert "topology.links[1]: a link of type 'macvlan' leaves the lab or is not a veth pair" in text
    assert "topology.links[2]: endpoint 'zz' is not a node of the lab (no such node)" in text
    assert "cannot be a twin lab name" in text and "give --name" in text
    with pytest.raises(TopologyError, match="not a containerlab topology"):
        import_clab(write(tmp_path, {"name": "x", "nodes": {}}))
