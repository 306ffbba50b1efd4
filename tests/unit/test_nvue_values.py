"""NVUE values checked as NVUE checks them (issue 38): a host name as NVUE takes one, addresses
without a scope, stored numbers in NVUE's ranges, every problem at once with its NVUE path (and
its file and line in a startup.yaml; a 400 from the REST API; `nv` exits 1). Behind them, the
renderers refuse any value holding a line break or another control character, whatever its
source (NVUE, a topology), naming its place; stored-not-emulated values are kept as data and
never rendered. A property test: no NVUE document, through a startup.yaml, the REST API or `nv`,
adds a line to a rendered frr.conf or interfaces.sh."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.test_nvue_api import nv, served  # noqa: F401  (the served app: one per module)
from twin import nvue, topology
from twin.base.errors import TopologyError
from twin.config import render, safetext
from twin.config.overlay import script_of
from twin.config.steps import Step
from twin.nvue import api, cli
from twin.nvue.load import NvueFile
from twin.nvue.tree import leaves

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests/golden/interop/nvue/samples"
FABRIC = topology.load(ROOT / "tests/e2e/nvue/samples.yml")
LEAF = nvue.read(SAMPLES / "leaf01" / "startup.yaml").tree
INJECTION = "leaf01\nip route 192.0.2.0/24 blackhole"
HOST_RULE = "is not a host name (RFC 1123): labels of letters, digits and '-'"


def refused(tree: dict) -> list[str]:
    with pytest.raises(TopologyError) as e:
        nvue.from_tree(tree, "t")
    return [f"{p.path}: {p.message}" for p in e.value.problems]


def with_(path: tuple, value, tree: dict | None = None) -> dict:
    out = copy.deepcopy(LEAF if tree is None else tree)
    node = out
    for k in path[:-1]:
        node = node.setdefault(k, {})
    node[path[-1]] = value
    return out


# --- NVUE's types -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name", ["leaf01", "leaf-01.dc1.example.com", "7", "a" * 63, ".".join(["a" * 63] * 3 + ["b" * 61])]
)
def test_a_host_name_as_nvue_takes_one_is_kept(name):
    assert nvue.from_tree(with_(("system", "hostname"), name), "t").tree["system"]["hostname"] == name


@pytest.mark.parametrize(
    "name",
    [
        INJECTION,
        "leaf01\r",
        "x\x00",
        "leaf\u2028x",
        "leaf_01",
        "-leaf",
        "leaf-",
        "a" * 64,
        "lëaf",
        "",
        "a..b",
        "leaf01.",
        "leaf 01",
        ".".join(["a" * 63] * 4),
        5,
    ],
)
def test_a_host_name_nvue_refuses_is_refused_with_what_is_allowed(name):
    (said,) = refused(with_(("system", "hostname"), name))
    assert said.startswith("system.hostname: ") and HOST_RULE in said


def test_every_value_nvue_refuses_is_named_at_once_with_its_path():
    tree = with_(("system", "hostname"), INJECTION)
    tree = with_(("interface", "swp1", "link", "mtu"), 70000, tree)
    tree = with_(("vrf", "RED", "router", "bgp", "rd"), "x\nrouter bgp 1", tree)
    tree = with_(
        ("vrf", "RED", "router", "bgp", "address-family", "ipv4-unicast", "network"),
        {"fe80::1%x\nrouter bgp 1/64": {}},
        tree,
    )
    tree = with_(("vrf", "default", "router", "bgp", "neighbor"), {"fe80::1%x\nip route": {}}, tree)
    said = refused(tree)
    assert len(said) == 5, said
    assert any(s.startswith("system.hostname: ") and HOST_RULE in s for s in said)
    assert "interface.swp1.link.mtu: 70000 is not an MTU of 552-9216 bytes" in said
    assert (
        "vrf.RED.router.bgp.rd: 'x\\nrouter bgp 1' is not a route distinguisher like 10.10.10.1:20, "
        "65101:20 or auto" in said
    )
    assert any("network['fe80::1%x\\nrouter bgp 1/64']: " in s and "is not an IP prefix" in s for s in said)
    assert any("neighbor['fe80::1%x\\nip route']: " in s and "is not an interface name or an IP" in s for s in said)


def test_a_startup_yaml_with_it_is_refused_with_file_line_and_path(tmp_path):
    f = tmp_path / "leaf01" / "startup.yaml"
    f.parent.mkdir()
    f.write_text(
        (SAMPLES / "leaf01" / "startup.yaml")
        .read_text()
        .replace("hostname: leaf01", 'hostname: "leaf01\\nip route 192.0.2.0/24 blackhole"', 1)
    )
    line = next(i for i, t in enumerate(f.read_text().splitlines(), 1) if "hostname:" in t)
    with pytest.raises(TopologyError) as e:
        nvue.read(f)
    (p,) = e.value.problems
    assert (p.file, p.line, p.path) == (str(f), line, "system.hostname") and HOST_RULE in p.message


# --- the doors of a running lab's service -------------------------------------------------------------------
def test_the_api_answers_400_with_every_problem_at_patch_time(served):  # noqa: F811
    base, http, _, _ = served
    rid = next(iter(http.post(base["leaf01"] + "/revision").json()))
    before = http.get(base["leaf01"] + "/", params={"rev": rid}).json()
    r = http.patch(
        base["leaf01"] + "/",
        params={"rev": rid},
        json={"system": {"hostname": INJECTION}, "interface": {"swp1": {"link": {"mtu": 70000}}}},
    )
    assert r.status_code == 400, r.text
    detail = r.json()["detail"]
    assert "system.hostname: 'leaf01\\nip route 192.0.2.0/24 blackhole' " + HOST_RULE in detail
    assert "interface.swp1.link.mtu: 70000 is not an MTU of 552-9216 bytes" in detail
    assert http.get(base["leaf01"] + "/", params={"rev": rid}).json() == before
    assert http.get(f"{base['leaf01']}/revision/{quote(rid, safe='')}").json()["state"] == "pending"


def test_nv_set_and_nv_config_patch_exit_1_and_change_nothing(served, tmp_path):  # noqa: F811
    _, _, sock, _ = served
    p = nv(sock, "set", "system", "hostname", INJECTION)
    assert (
        p.returncode == 1
        and p.stderr
        == f"Error: system.hostname: {INJECTION!r} {HOST_RULE}"
        ", 1-63 characters each, not starting or ending with '-', joined by '.', 253 characters at most\n"
    ), p.stderr
    assert nv(sock, "set", "system\nx", "hostname", "x").returncode == 2
    p = nv(sock, "set", "system", "hostname", "leaf_01")
    assert p.returncode == 1 and "system.hostname: 'leaf_01' " + HOST_RULE in p.stderr
    f = tmp_path / "patch.yaml"
    f.write_text(yaml.safe_dump([{"set": {"system": {"hostname": INJECTION}}}]))
    p = nv(sock, "config", "patch", str(f))
    assert p.returncode == 1 and "system.hostname: " in p.stderr and HOST_RULE in p.stderr, p.stderr
    assert nv(sock, "config", "diff").stdout == ""


# --- the renderers, whatever the source --------------------------------------------------------------------
def test_twins_renderer_refuses_a_topology_value_with_a_line_break_naming_its_place():
    """Defence in depth: a Fabric that was never validated (as if a check let the value through)."""
    spine = FABRIC.nodes["spine01"]
    port = spine.ports[0].model_copy(update={"name": "swp1\nip route 192.0.2.0/24 blackhole"})
    bad = FABRIC.model_copy(
        update={"nodes": {**FABRIC.nodes, "spine01": spine.model_copy(update={"ports": (port,) + spine.ports[1:]})}}
    )
    with pytest.raises(TopologyError) as e:
        render.render_lab(bad, "netns")
    (p,) = e.value.problems
    assert (p.file, p.path) == (FABRIC.source, "nodes.spine01.ports[0].name")
    assert p.message.startswith(
        "'swp1\\nip route 192.0.2.0/24 blackhole' holds a line break or another control "
        "character: refused, nothing of spine01 is written (it would make a line of its "
        "own in frr.conf (frr/underlay.j2 line "
    ), p.message


def test_the_nvue_renderer_refuses_a_value_that_slipped_past_the_types_at_its_nvue_path():
    """Defence in depth: a tree that was never checked (as if a type let the value through)."""
    nf = NvueFile("leaf01/startup.yaml", with_(("system", "hostname"), INJECTION), lines={("system", "hostname"): 7})
    with pytest.raises(TopologyError) as e:
        nvue.build({"leaf01": nf}, FABRIC, "netns")
    (p,) = e.value.problems
    assert (p.file, p.line, p.path) == ("leaf01/startup.yaml", 7, "system.hostname")
    assert (
        "holds a line break or another control character: refused, nothing of leaf01 is written (it would "
        "make a line of its own in frr.conf (frr.conf.j2 line " in p.message
    )


def test_interfaces_sh_refuses_a_step_with_a_line_break():
    steps = [Step("addr", "lo", args={"cidr": "10.0.0.1/32\nip route add 192.0.2.0/24 dev lo"})]
    with pytest.raises(safetext.UnsafeText) as e:
        script_of("leaf01", "lab", "test", steps, [])
    assert e.value.where == "interfaces.sh line 6"


def test_stored_values_are_kept_as_data_and_never_rendered():
    tree = with_(("system", "message", "pre-login"), "STORED1 welcome\nsecond line")
    tree = with_(("interface", "swp1", "description"), "STORED2\x1b[31m", tree)
    tree = with_(("system", "timezone"), "STORED3", tree)
    tree = with_(("service", "dns", "mgmt", "server", "10.0.0.53"), {"note": "STORED4\n"}, tree)
    nf = nvue.from_tree(tree, "t")
    nodes, _ = nvue.build({"leaf01": nf}, FABRIC, "netns")
    files = nodes["leaf01"].files
    assert not any("STORED" in files[f] for f in files if f != "startup.yaml")
    assert nvue.load.read_bytes(files["startup.yaml"].encode(), "again").tree == nf.tree


# --- the property: no document adds a line -----------------------------------------------------------------
MARK = "INJECTED"
CONTROLS = ["\n", "\r", "\r\n", "\x00", "\x0b", "\x0c", "\x1b", "\x7f", "\x85", "\u2028", "\u2029"]
HEADS = ["", "leaf01", "10.1.10.2/24", "fe80::1%x", "swp1", "65101", "RED", "vlan10", "65101:4001", "up", "10"]
PLACES = sorted(leaves(LEAF)) + [
    ("system", "message", "pre-login"),
    ("interface", "swp1", "description"),
    ("system", "timezone"),
]
hostile = st.builds(
    lambda a, c, b: a + c + MARK + b,
    st.sampled_from(HEADS),
    st.sampled_from(CONTROLS),
    st.sampled_from(["", " 192.0.2.0/24 blackhole", " bgp 1", "\n"]),
)
values = hostile | st.builds(lambda a: a + " " + MARK, st.sampled_from(HEADS)) | st.sampled_from(HEADS)
PROPERTY = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=12,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def through(door: str, path: tuple, value, tmp: Path) -> dict | None:
    """The tree a door makes of LEAF with `value` at `path` (None: the door refused it, as it must say)."""
    try:
        if door == "startup.yaml":
            f = tmp / "leaf01" / "startup.yaml"
            f.parent.mkdir(exist_ok=True)
            f.write_text(nvue.dump(LEAF) + yaml.safe_dump([{"set": with_(path, value, {})}], allow_unicode=True))
            return nvue.read(f).tree
        if door == "api":
            body = api.parse_json(json.dumps({path[-1]: value}).encode())
            return nvue.from_tree(api.merge_patch(copy.deepcopy(LEAF), path[:-1], body), "api").tree
        word = [] if value == {} else ["on" if value is True else "off" if value is False else str(value)]
        return cli.edit(copy.deepcopy(LEAF), cli.parse(["set", *path, *word]))
    except (TopologyError, ValueError) as e:
        assert str(e)
        return None


@pytest.mark.parametrize("place", PLACES, ids=".".join)
@PROPERTY
@given(door=st.sampled_from(["startup.yaml", "api", "nv"]), key=st.integers(0, 8), value=values)
def test_no_nvue_document_adds_a_line_to_frr_conf_or_interfaces_sh(tmp_path_factory, place, door, key, value):
    """At every place of the sample the value is put, or as one of the keys on its path: refused, or
    rendered on no line of its own."""
    path = place if key >= len(place) or key == 0 else place[:key] + (value,) + place[key + 1 :]
    leaf = value if path == place else leaves(LEAF).get(place, "up")
    tree = through(door, path, leaf, tmp_path_factory.mktemp("p"))
    if tree is None:
        return
    try:
        nodes, _ = nvue.build({"leaf01": nvue.from_tree(tree, door)}, FABRIC, "netns")
    except TopologyError:
        return
    for name in ("frr.conf", "interfaces.sh"):
        text = nodes["leaf01"].files[name]
        assert not safetext.CONTROL.search(text.replace("\n", "")), name
        assert not any(line.lstrip().startswith(MARK) for line in text.split("\n")), (name, door, path)


def test_waiting_for_convergence_on_apply_is_asked_for(served):  # noqa: F811
    """Issue 33: a revision is applied once its node runs it; `nv config apply --wait` and `?wait=true`
    ask for the lab's convergence too (anything else is refused)."""
    assert cli.parse(["config", "apply", "-y", "--wait"]) == cli.Command("apply", yes=True, wait=True)
    assert not cli.parse(["config", "apply"]).wait
    with pytest.raises(ValueError, match="no such option"):
        cli.parse(["config", "diff", "--wait"])
    base, http, _, _ = served
    rid = next(iter(http.post(base["leaf01"] + "/revision").json()))
    r = http.patch(
        f"{base['leaf01']}/revision/{quote(rid, safe='')}", params={"wait": "maybe"}, json={"state": "apply"}
    )
    assert r.status_code == 400 and r.json()["detail"] == (
        "wait is true or false (true: a revision's apply waits for the lab to converge too)"
    )
