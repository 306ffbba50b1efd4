"""Fuzzing the front doors `twin up` and `twin validate` take besides a twin topology (its own
is test_fuzz_topology): a containerlab file with the files it binds, an NVIDIA Air JSON and DOT
file. Whatever the bytes, `Lab.load` returns a Lab or raises TopologyError in twin's style,
within a time and a memory bound (tests/unit/fuzzing). About 6 s in all."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.fuzzing import NAMES, check_cleanly, fuzz, json_values, scalars, spliced
from twin.lab import Lab

ROOT = Path(__file__).resolve().parents[2]
AIR = ROOT / "tests/golden/interop/air"
CLAB = [p.read_text() for p in sorted((ROOT / "tests/golden/interop").rglob("*.clab.yml"))]
AIR_JSON = [(AIR / "demo.json").read_text()]
AIR_DOT = [(AIR / "demo.dot").read_text()]
KINDS = ["spine", "leaf", "dpu", "host", "router", "server", "tor", "superspine", "oob-switch", "linux", "srl", ""]
PORTS = ["swp1", "eth1", "p0", "e1-1", "", "eth0", "lo", ":", "swp1:x"]
ROLES = {"leaf01": "leaf", "leaf02": "leaf", "spine01": "spine"}


def load(data: bytes, name: str, extra=None, roles=None):
    """Lab.load of `data` saved as `name` in a fresh directory (with `extra(dir)` made beside it)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(data)
        if extra:
            extra(Path(d))
        return check_cleanly(lambda: Lab.load(path, roles=roles), Lab, files=(d, str(path)))


# --- containerlab --------------------------------------------------------------------------------
BIND_SOURCES = [
    "r1/frr.conf",
    "r1/daemons",
    "r1",
    "missing.conf",
    "/etc/hostname",
    "~/x",
    "~nosuchuser/x",
    "../outside.conf",
    "link-out.conf",
    "link-in.conf",
    "fifo.conf",
    "bad.conf",
    "r1/../r1/frr.conf",
    "__clabNodeDir__/frr.conf",
    "__clabDir__/x",
    "",
    "r1/frr.conf\0../../etc/hostname",
    "r1/\udcff",
]
BIND_TARGETS = ["/etc/frr/frr.conf", "/etc/frr/daemons", "/etc/frr", "/data", "", "/etc/frr/"]


def bind_tree(d: Path) -> None:
    """What the binds may point at: files, a link out and one in, a FIFO, a file that is no text."""
    (d / "r1").mkdir()
    (d / "r1" / "frr.conf").write_text("frr defaults datacenter\nrouter bgp 65001\n")
    (d / "r1" / "daemons").write_text("bgpd=yes\n")
    (d / "bad.conf").write_bytes(b"router bgp 1\n\xff\xfe\x00")
    os.symlink("/etc/hostname", d / "link-out.conf")
    os.symlink("r1/frr.conf", d / "link-in.conf")
    os.mkfifo(d / "fifo.conf")


@st.composite
def clab_docs(draw):
    names = draw(st.lists(st.sampled_from(NAMES) | st.text(max_size=6), min_size=1, max_size=5, unique=True))
    binds = st.lists(
        st.builds(lambda s, t: f"{s}:{t}", st.sampled_from(BIND_SOURCES), st.sampled_from(BIND_TARGETS)) | scalars(),
        max_size=3,
    )
    node = st.fixed_dictionaries(
        {},
        optional={
            "kind": st.sampled_from(KINDS) | scalars(),
            "binds": binds | scalars(),
            "group": st.sampled_from(["g", "x"]) | scalars(),
            "exec": st.lists(scalars(), max_size=2) | scalars(),
            "image": st.sampled_from(["frr", "alpine"]) | scalars(),
            "mgmt-ipv4": scalars(),
            "other": json_values(),
        },
    )
    end = st.builds(lambda n, p: f"{n}:{p}", st.sampled_from(names + ["host", "mgmt-net"]), st.sampled_from(PORTS))
    link = (
        st.fixed_dictionaries(
            {"endpoints": st.lists(end | scalars(), max_size=3)},
            optional={"type": st.sampled_from(["veth", "host", None]), "mtu": scalars()},
        )
        | json_values()
    )
    topo = {
        "nodes": {n: draw(node | scalars()) for n in names},
        "links": draw(st.lists(link, max_size=5)),
        "kinds": draw(st.dictionaries(st.sampled_from(KINDS), node, max_size=2) | scalars()),
        "groups": draw(st.dictionaries(st.sampled_from(["g", "x"]), node, max_size=2) | scalars()),
        "defaults": draw(node | scalars()),
    }
    doc = {
        "name": draw(st.sampled_from(["lab", "Lab_1", "", "x" * 40]) | scalars()),
        "topology": {k: v for k, v in topo.items() if k == "nodes" or draw(st.booleans())},
    }
    return yaml.safe_dump(doc, allow_unicode=True).encode()


@fuzz(100)
@given(clab_docs())
def test_containerlab_files_and_their_binds_load_or_fail_cleanly(data):
    load(data, "lab.clab.yml", bind_tree, roles=None)


@fuzz(100)
@given(spliced(CLAB) | st.binary(max_size=1024))
def test_spliced_containerlab_files_load_or_fail_cleanly(data):
    load(data, "lab.clab.yml", bind_tree)


# --- NVIDIA Air ----------------------------------------------------------------------------------
@st.composite
def air_docs(draw):
    names = draw(
        st.lists(
            st.sampled_from(NAMES + ["spine01", "leaf01", "server01"]) | st.text(max_size=6),
            min_size=1,
            max_size=5,
            unique=True,
        )
    )
    node = st.fixed_dictionaries(
        {},
        optional={
            "os": st.sampled_from(["cumulus-vx-5.16.1", "generic/ubuntu2404", "sonic-vs-202305"]) | scalars(),
            "function": st.sampled_from(KINDS) | scalars(),
            "cpu": scalars(),
            "memory": scalars(),
            "features": json_values(),
        },
    )
    end = st.fixed_dictionaries(
        {"node": st.sampled_from(names) | scalars()}, optional={"interface": st.sampled_from(PORTS) | scalars()}
    )
    links = st.lists(st.lists(end | scalars(), min_size=1, max_size=3) | json_values(), max_size=6)
    body = {
        "nodes": draw(st.dictionaries(st.sampled_from(names), node | scalars(), max_size=5) | scalars()),
        "links": draw(links | scalars()),
    }
    doc = {"format": "JSON", "title": draw(scalars()), "content": body} if draw(st.booleans()) else body
    return json.dumps(doc, ensure_ascii=draw(st.booleans())).encode()


@fuzz(100)
@given(air_docs())
def test_air_json_files_load_or_fail_cleanly(data):
    load(data, "air.json", roles=ROLES)


@fuzz(100)
@given(spliced(AIR_JSON) | st.binary(max_size=1024))
def test_spliced_air_json_loads_or_fails_cleanly(data):
    load(data, "air.json", roles=ROLES)


@fuzz(100)
@given(spliced(AIR_DOT) | st.binary(max_size=1024))
def test_spliced_air_dot_loads_or_fails_cleanly(data):
    load(data, "air.dot", roles=ROLES)
