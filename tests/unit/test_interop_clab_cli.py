"""The containerlab CLI as twin drives it: exact command lines, and `inspect --format json` as documented."""

import json
from pathlib import Path

import pytest

from twin.base.errors import TwinError
from twin.interop.clab_cli import ClabContainer, Containerlab, container_name, find_binary, parse_inspect

FIXTURES = Path(__file__).resolve().parents[1] / "golden" / "interop" / "clab-inspect"
TOPO = Path("/root/.twin/labs/aipod/aipod.clab.yml")


def clab() -> Containerlab:
    return Containerlab.find(TOPO, which=lambda name: f"/usr/bin/{name}" if name == "containerlab" else None)


def test_command_lines():
    c = clab()
    assert c.deploy() == ["/usr/bin/containerlab", "deploy", "-t", str(TOPO)]
    assert c.deploy(reconfigure=True) == ["/usr/bin/containerlab", "deploy", "-t", str(TOPO), "--reconfigure"]
    assert c.inspect() == ["/usr/bin/containerlab", "inspect", "-t", str(TOPO), "--format", "json"]
    assert c.destroy() == ["/usr/bin/containerlab", "destroy", "-t", str(TOPO), "--cleanup"]


def test_the_clab_alias_is_found_too():
    assert find_binary(lambda name: "/usr/local/bin/clab" if name == "clab" else None) == "/usr/local/bin/clab"


def test_missing_containerlab_is_one_line():
    with pytest.raises(TwinError) as e:
        Containerlab.find(TOPO, which=lambda name: None)
    assert str(e.value) == "containerlab is not installed; twin's own runtime (--runtime docker) needs nothing"


def test_container_names_follow_the_prefix_rule():
    assert container_name("aipod", "leaf1") == "twin-aipod-leaf1", "twin's export: twin's own container names"
    assert container_name("aipod", "leaf1", "clab") == "clab-aipod-leaf1"
    assert container_name("aipod", "leaf1", "__lab-name") == "aipod-leaf1"
    assert container_name("aipod", "leaf1", "") == "leaf1"


@pytest.mark.parametrize(
    "fixture, lab, expected",
    [
        (
            "list.json",
            "srlceos01",
            {
                "srl": ("clab-srlceos01-srl", "82e9aa3c7e6b", "running"),
                "ceos": ("clab-srlceos01-ceos", "90bebb1e2c5f", "running"),
            },
        ),
        ("containers.json", "linux", {"l1": ("clab-linux-l1", "ca298d2f8f8e", "running")}),
        (
            "grouped.json",
            "vlan",
            {
                "client1": ("clab-vlan-client1", "2c70173f3f41", "running"),
                "client2": ("clab-vlan-client2", "9a12e9566d8c", "running"),
            },
        ),
    ],
)
def test_documented_outputs_parse(fixture, lab, expected):
    got = parse_inspect((FIXTURES / fixture).read_text(), lab, prefix="clab")
    assert {n: (c.name, c.container_id, c.state) for n, c in got.items()} == expected


def test_other_labs_are_left_out():
    grouped = json.loads((FIXTURES / "grouped.json").read_text())
    listed = json.loads((FIXTURES / "list.json").read_text())
    both = json.dumps({**grouped, "srlceos01": listed})  # `inspect --all` shape
    assert set(parse_inspect(both, "vlan", prefix="clab")) == {"client1", "client2"}
    assert parse_inspect(both, "other", prefix="clab") == {}


def test_twins_export_prefix():
    out = json.dumps(
        {
            "aipod": [
                {
                    "lab_name": "aipod",
                    "name": "twin-aipod-leaf1",
                    "container_id": "0123456789ab",
                    "image": "twin-node:x",
                    "kind": "linux",
                    "state": "running",
                },
                {
                    "lab_name": "aipod",
                    "name": "twin-aipod-host1a",
                    "container_id": "ba9876543210",
                    "image": "twin-node:x",
                    "kind": "linux",
                    "state": "exited",
                },
            ]
        }
    )
    assert parse_inspect(out, "aipod") == {
        "leaf1": ClabContainer("leaf1", "twin-aipod-leaf1", "0123456789ab", "running", "twin-node:x"),
        "host1a": ClabContainer("host1a", "twin-aipod-host1a", "ba9876543210", "exited", "twin-node:x"),
    }


@pytest.mark.parametrize("output", ["{}", "", "  \n"])
def test_nothing_running(output):
    assert parse_inspect(output, "aipod") == {}


@pytest.mark.parametrize(
    "output, message",
    [
        ("INFO no containers found\n{", "printed no JSON"),
        ('{"aipod": {"name": "x"}}', "unknown shape"),
        ('["twin-aipod-leaf1"]', "unknown shape"),
        ('{"aipod": [{"lab_name": "aipod", "name": "clab-aipod-leaf1"}]}', "is not named twin-aipod-NODE"),
        (
            '[{"lab_name": "aipod", "name": "twin-aipod-a"}, {"lab_name": "aipod", "name": "/twin-aipod-a"}]',
            "two containers for node a",
        ),
    ],
)
def test_what_cannot_be_read_is_an_error(output, message):
    with pytest.raises(TwinError, match=message):
        parse_inspect(output, "aipod")
