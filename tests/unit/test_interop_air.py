"""NVIDIA Air JSON and DOT: Air's samples import, and twin -> Air -> twin keeps the fabric."""

import json
from pathlib import Path

import pytest
import yaml

from twin.base.errors import TopologyError
from twin.interop import export_air_dot, export_air_json, import_air, parse_roles
from twin.interop.air_dot import parse_air_dot
from twin.kinds import KINDS
from twin.topology import load

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "golden" / "interop" / "air"  # Air's documented samples (README there)
TOPOLOGIES = sorted(p.name for p in (ROOT / "topologies").glob("*.yml"))
DEMO_KINDS = {"spine01": "spine", "leaf01": "leaf", "leaf02": "leaf", "server01": "host", "server02": "host"}
DEMO_LINKS = {
    frozenset(pair)
    for pair in (
        ("leaf01:eth1", "server01:eth1"),
        ("leaf02:eth1", "server02:eth1"),
        ("leaf01:eth2", "spine01:eth1"),
        ("spine01:eth2", "leaf02:eth2"),
    )
}


def loaded(doc: dict, tmp_path: Path):
    """The document as `twin import` writes it, loaded as `twin up` would."""
    path = tmp_path / f"{doc['name']}.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load(path)


def shape(fabric) -> tuple[dict, set]:
    """What Air carries: nodes with their kinds, links with their ports."""
    return (
        {n.name: n.kind for n in fabric.nodes.values()},
        {frozenset((str(link.a), str(link.b))) for link in fabric.links},
    )


@pytest.mark.parametrize("sample", ["demo.json", "demo.dot"])
def test_airs_samples_import_into_a_twin_topology(sample, tmp_path):
    fabric = loaded(import_air(SAMPLES / sample), tmp_path)
    assert fabric.name == "demo"
    assert shape(fabric) == (DEMO_KINDS, DEMO_LINKS)
    assert fabric.nodes["leaf01"].asn != fabric.nodes["leaf02"].asn, "twin derives what Air does not carry"


@pytest.mark.parametrize("fmt", ["json", "dot"])
@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_twin_to_air_to_twin_keeps_the_fabric(topology, fmt, tmp_path):
    fabric = load(ROOT / "topologies" / topology)
    text = export_air_json(fabric) if fmt == "json" else export_air_dot(fabric)
    path = tmp_path / f"{fabric.name}.{fmt}"
    path.write_text(text)
    back = loaded(import_air(path), tmp_path)
    assert back.name == fabric.name
    assert shape(back) == shape(fabric)


def test_json_export_is_airs_file_format():
    doc = json.loads(export_air_json(load(ROOT / "topologies" / "aipod.yml")))
    assert (doc["format"], doc["title"], doc["ztp"]) == ("JSON", "aipod", None)
    nodes = doc["content"]["nodes"]
    assert nodes["leaf1"] == {"cpu": 2, "memory": 4096, "storage": 10, "os": "cumulus-vx-5.16.1"}
    assert nodes["host1a"] == {"cpu": 2, "memory": 2048, "storage": 10, "os": "generic/ubuntu2404"}
    assert [{"interface": "swp1", "node": "spine1"}, {"interface": "swp1", "node": "leaf1"}] in doc["content"]["links"]


def test_dot_export_carries_function_and_os():
    text = export_air_dot(load(ROOT / "topologies" / "aipod.yml"))
    assert text.startswith('graph "aipod" {\n')
    assert '  "dpu1" [ function="dpu" os="cumulus-vx-5.16.1" cpu="2" memory="4096" storage="10" ]\n' in text
    assert '  "host1a" [ function="server" os="generic/ubuntu2404" cpu="2" memory="2048" storage="10" ]\n' in text
    assert '  "leaf1":"swp3" -- "dpu1":"p0"\n' in text


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_nodes_without_a_twin_kind_are_refused_all_at_once_with_the_way_out(tmp_path):
    path = write(
        tmp_path,
        "big.dot",
        """graph "big" {
  "super1" [ function="superspine" os="cumulus-vx-5.16.1" ]
  "fw1" [ function="firewall" ]
  "spine1" [ function="spine" ]
  "super1":"swp1" -- "spine1":"swp1"
  "fw1":"eth1" -- "spine1":"swp2"
}""",
    )
    with pytest.raises(TopologyError) as e:
        import_air(path)
    assert [(p.path, p.line) for p in e.value.problems] == [("nodes.super1", 2), ("nodes.fw1", 3)]  # in file order
    assert "function 'superspine' has no twin kind; give it one with --role super1=KIND" in str(e.value)
    assert f"(kinds: {', '.join(KINDS)})" in str(e.value)
    doc = import_air(path, roles=parse_roles(["super1=spine,fw1=leaf"]))
    assert {n: v["kind"] for n, v in doc["nodes"].items()} == {"super1": "spine", "fw1": "leaf", "spine1": "spine"}


def test_roles_must_name_nodes_and_kinds(tmp_path):
    path = write(tmp_path, "t.dot", 'graph "t" { "a" [function="spine"] "b" [function="leaf"] "a":"1" -- "b":"1" }')
    with pytest.raises(TopologyError) as e:
        import_air(path, roles={"c": "leaf", "b": "firewall"})
    assert [p.path for p in e.value.problems] == ["--role b", "--role c"]
    assert "unknown kind 'firewall'" in str(e.value) and "no node named 'c'; nodes: a, b" in str(e.value)
    with pytest.raises(TopologyError, match="expected NODE=KIND"):
        parse_roles(["leaf1"])


def test_json_role_comes_from_os_then_name(tmp_path):
    doc = {
        "nodes": {
            "h7": {"os": "generic/ubuntu2204"},
            "tor1": {"os": "sonic-vs-202305"},
            "dpu3": {"os": "cumulus-vx-5.16.1"},
            "x9": {"os": "sonic-vs-202305"},
        },
        "links": [[{"node": "tor1", "interface": "swp1"}, {"node": "h7", "interface": "eth1"}]],
    }
    with pytest.raises(TopologyError) as e:
        import_air(write(tmp_path, "api.json", json.dumps(doc)))
    assert [p.path for p in e.value.problems] == ["nodes.x9"] and "os 'sonic-vs-202305'" in str(e.value)
    got = import_air(write(tmp_path, "api.json", json.dumps(doc)), roles={"x9": "spine"}, name="lab1")
    assert got["name"] == "lab1"
    assert {n: v["kind"] for n, v in got["nodes"].items()} == {
        "h7": "host",
        "tor1": "leaf",
        "dpu3": "dpu",
        "x9": "spine",
    }


def test_json_problems_are_reported_with_their_place(tmp_path):
    doc = {
        "format": "JSON",
        "title": "t",
        "content": {
            "nodes": {"a": {"os": "generic/ubuntu2404"}, "b": []},
            "links": [[{"node": "a", "interface": "eth1"}, "outbound"], [{"node": "a"}], "x"],
        },
    }
    with pytest.raises(TopologyError) as e:
        import_air(write(tmp_path, "t.json", json.dumps(doc)))
    assert [p.path for p in e.value.problems] == [
        "content.links[0]",
        "content.links[1]",
        "content.links[2]",
        "content.nodes.b",
    ]
    assert "outbound link" in str(e.value)
    with pytest.raises(TopologyError, match=r"t.json:1:2: not JSON"):
        import_air(write(tmp_path, "t.json", "{"))


def test_links_to_undefined_nodes_are_refused(tmp_path):
    doc = {
        "nodes": {"s1": {"os": "cumulus-vx-5.16.1"}},
        "links": [[{"node": "s1", "interface": "swp1"}, {"node": "ghost", "interface": "eth1"}]],
    }
    with pytest.raises(TopologyError, match="link s1:swp1 -- ghost:eth1 names a node the file does not define"):
        import_air(write(tmp_path, "t.json", json.dumps(doc)), roles={"s1": "spine"})


def test_airs_oob_network_is_left_out(tmp_path):
    path = write(
        tmp_path,
        "oob.dot",
        """graph "oob" {
  "oob-mgmt-switch" [ function="oob-switch" ]
  "spine1" [ function="spine" ] "leaf1" [ function="leaf" ]
  "spine1":"swp1" -- "leaf1":"swp1"
  "oob-mgmt-switch":"swp1" -- "spine1":"eth0"
}""",
    )
    doc = import_air(path)
    assert list(doc["nodes"]) == ["spine1", "leaf1"] and doc["links"] == [{"endpoints": ["spine1:swp1", "leaf1:swp1"]}]


def test_dot_subset_air_uses(tmp_path):
    air = parse_air_dot(
        """/* a comment */ strict graph demo {
  // node defaults, an attribute of the graph, bare IDs, a compass point, a chain
  rankdir = LR;
  node [os="cumulus-vx-5.16.1" cpu=2];
  s1 [function=spine, memory="4096"]; l1 [function="leaf"] [storage=20]
  "s1":"swp1":n -- l1:swp1 -- "h1":"eth1"
# preprocessor-style line
  "h1" [function="server" os="generic/ubuntu2404"]
  "name with \\"quote\\"" [function="leaf"]
}""",
        "x.dot",
    )
    assert air.title == "demo"
    assert {n: (v.function, v.os, v.resources) for n, v in air.nodes.items()} == {
        "s1": ("spine", "cumulus-vx-5.16.1", {"cpu": 2, "memory": 4096}),
        "l1": ("leaf", "cumulus-vx-5.16.1", {"cpu": 2, "storage": 20}),
        "h1": ("server", "generic/ubuntu2404", {"cpu": 2}),
        'name with "quote"': ("leaf", "cumulus-vx-5.16.1", {"cpu": 2}),
    }
    assert [(a.node, a.interface, b.node, b.interface) for a, b in air.links] == [
        ("s1", "swp1", "l1", "swp1"),
        ("l1", "swp1", "h1", "eth1"),
    ]


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("digraph x {\n  a -- \n}", 3, "expected a name or a quoted string, found '}'"),
        ('graph x {\n a [function="spine"\n', 3, "found 'the end of the file'"),
        ("graph x {\n subgraph c { a }\n}", 2, "subgraphs are not part of Air's DOT"),
        ("graph x {\n a -- b\n} extra", 3, "unexpected 'extra' after the graph's closing brace"),
        ('graph x {\n a [label="unterminated]\n}', 2, "unexpected character '\"'"),
        ("{ a -- b }", 1, "an Air DOT file starts with: graph"),
    ],
)
def test_dot_errors_name_their_line(text, line, message):
    with pytest.raises(TopologyError) as e:
        parse_air_dot(text, "x.dot")
    (problem,) = e.value.problems
    assert (problem.line, problem.file) == (line, "x.dot") and message in problem.message


def test_unknown_suffix_is_refused(tmp_path):
    with pytest.raises(TopologyError, match="not an Air topology file: expected one of .json, .dot"):
        import_air(write(tmp_path, "t.yml", "x"))
