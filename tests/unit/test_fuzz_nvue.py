"""Fuzzing NVUE in (issue 24): whatever a startup.yaml holds, reading it and building it on its node
gives a node's files or TopologyError, never another exception; every message names the file.
Whatever words `nv set` gets, the edit API answers or raises ValueError. Documents are NVUE-shaped
(the tree's own keys with plausible, odd or wrong values), the samples mutated, and raw text.
Deterministic (derandomize) so CI is stable."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin import nvue, topology
from twin.base.errors import TopologyError
from twin.nvue import tree as nv_tree

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests/golden/interop/nvue/samples"
FABRIC = topology.load(ROOT / "tests/e2e/nvue/samples.yml")
SEEDS = {n: (SAMPLES / n / "startup.yaml").read_text() for n in ("leaf01", "dpu1")}
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

KEYS = [
    "interface",
    "bridge",
    "domain",
    "br_default",
    "vlan",
    "vni",
    "access",
    "ip",
    "address",
    "vrr",
    "vrf",
    "enable",
    "mac-address",
    "state",
    "type",
    "link",
    "nve",
    "vxlan",
    "source",
    "arp-nd-suppress",
    "evpn",
    "router",
    "bgp",
    "autonomous-system",
    "router-id",
    "neighbor",
    "peer-group",
    "remote-as",
    "address-family",
    "ipv4-unicast",
    "l2vpn-evpn",
    "redistribute",
    "connected",
    "route-export",
    "to-evpn",
    "route-import",
    "from-evpn",
    "route-target",
    "system",
    "hostname",
    "global",
    "fabric-mac",
    "mlag",
    "qos",
    "swp1",
    "swp2",
    "swp9",
    "p0_if",
    "vlan10",
    "RED",
    "default",
    "lo",
    "10",
    "4001",
    "set",
    "unset",
    "header",
]
SCALARS = [
    True,
    False,
    None,
    0,
    1,
    10,
    4094,
    4095,
    65101,
    23456,
    2**40,
    -1,
    1.5,
    "on",
    "off",
    "up",
    "down",
    "svi",
    "swp",
    "unnumbered",
    "external",
    "10.1.10.1/24",
    "10.1.10.1",
    "00:00:5e:00:01:01",
    "x",
    "",
    "ANY:4001",
    "65101:4001",
    "10.10.10.1",
    "::1/128",
    "a" * 300,
    "swp1-4",
    "vlan10",
    "RED",
]

scalars = st.sampled_from(SCALARS) | st.text(max_size=10) | st.integers()
keys = st.sampled_from(KEYS) | st.text(max_size=8)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4), max_leaves=16
)
documents = st.lists(
    st.dictionaries(st.sampled_from(["set", "unset", "header", "sett"]), values, min_size=1, max_size=2), max_size=4
)


def outcome(text: str, node: str = "leaf01") -> None:
    """Read and build: a node's files, or TopologyError whose every problem names the file."""
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / node / "startup.yaml"
        f.parent.mkdir()
        f.write_text(text)
        try:
            nodes, _ = nvue.build({node: nvue.read(f)}, FABRIC, "netns")
            assert "frr.conf" in nodes[node].files
        except TopologyError as e:
            assert e.problems and all(p.file == str(f) for p in e.problems)
            assert all(len(str(p)) < 2000 for p in e.problems)


@FUZZ
@given(documents)
def test_any_nvue_shaped_document_gives_files_or_a_clear_error(docs):
    outcome(yaml.safe_dump(docs))


@FUZZ
@given(
    st.sampled_from(sorted(SEEDS)),
    st.lists(
        st.tuples(
            st.integers(0, 200),
            st.sampled_from(
                ["", "x", ": ", "- ", "  ", "'", "{", "]", "\t", "on", "10", "&a ", "*a", "!!int ", "\x00", "vlan"]
            ),
        ),
        max_size=4,
    ),
)
def test_the_samples_mutated_give_files_or_a_clear_error(node, edits):
    lines = SEEDS[node].splitlines()
    for at, text in edits:
        i = at % (len(lines) + 1)
        lines.insert(i, text) if at % 2 else lines.__setitem__(
            min(i, len(lines) - 1), lines[min(i, len(lines) - 1)] + text
        )
    outcome("\n".join(lines) + "\n", node)


@FUZZ
@given(st.text(max_size=300))
def test_raw_text_gives_a_clear_error(text):
    outcome(text)


@FUZZ
@given(
    st.lists(
        st.sampled_from(KEYS + ["swp1-4", "swp1,3", "1", "30", "10.1.30.2/24", "9" * 30]) | st.text(max_size=6),
        min_size=1,
        max_size=9,
    ),
    scalars,
)
def test_nv_set_words_answer_or_say_why(ws, value):
    tree = copy.deepcopy(nvue.read(SAMPLES / "leaf01/startup.yaml").tree)
    try:
        path, v = nv_tree.words(ws)
        nv_tree.set_path(tree, path, v if v is not None else value)
    except ValueError as e:
        assert str(e)
        return
    try:
        nvue.from_tree(tree, "nv set")
    except TopologyError as e:
        assert all(p.file == "nv set" for p in e.problems)
