"""Fuzzing the loader: whatever the file holds, `load` returns a Fabric or raises TopologyError.

Never another exception, within a time and a memory bound per file, and every
message is readable (bounded, no raw control characters). Documents come from
three sources: topology-shaped documents built from the topology's own keys and
values, the topologies in topologies/ mutated, and raw bytes. Deterministic
(derandomize) so CI is stable; about 20 s in all.
"""

import tempfile
import time
import tracemalloc
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin.base.errors import TopologyError
from twin.topology import Fabric, load

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [p.read_text() for p in sorted((ROOT / "topologies").glob("*.yml"))]
SECONDS = 2.0
PEAK_BYTES = 200 * 1024 * 1024
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

NAMES = [
    "spine1",
    "spine2",
    "leaf1",
    "leaf2",
    "dpu1",
    "h1",
    "h2",
    "red",
    "blue",
    "web",
    "db",
    "Leaf1",
    "leaf1\n",
    "",
    "lo",
    "br100",
    "vxlan5",
    "twin0",
    "default",
    "..",
    "x" * 70,
    "a b",
    "é",
]
NUMBERS = [
    0,
    1,
    -1,
    23456,
    65000,
    65101,
    4294967295,
    4294967296,
    2**64,
    1279,
    1280,
    1500,
    8950,
    9000,
    9216,
    9217,
    16777215,
    16777216,
    True,
    False,
    None,
    1.5,
    float("inf"),
    float("nan"),
]
ADDRESSES = [
    "10.255.0.0/24",
    "10.255.0.1",
    "10.1.1.0/24",
    "10.1.1.1",
    "10.1.1.11",
    "10.1.0.0/16",
    "0.0.0.0/0",
    "127.0.0.1",
    "224.0.0.1",
    "255.255.255.255",
    "169.254.0.1",
    "10.0.0.0/31",
    "10.0.0.0/33",
    "::1",
    "1.2.3",
    "10.1.1.300",
    "00:00:5e:00:01:01",
    "01:00:5e:00:00:01",
]
KEYS = [
    "name",
    "description",
    "defaults",
    "nodes",
    "links",
    "vtep",
    "tenants",
    "kind",
    "asn",
    "loopback",
    "image",
    "drain",
    "endpoints",
    "mtu",
    "loopback_pool",
    "host_mtu",
    "spine",
    "leaf",
    "dpu",
    "vrf",
    "l3vni",
    "segments",
    "attachments",
    "subnet",
    "l2vni",
    "gateway",
    "mac",
    "host",
    "segment",
    "port",
    "address",
    "colour",
]
SNIPPETS = [
    "&a ",
    "*a",
    "!!python/object:os.system ",
    "!!binary ",
    "!!int ",
    "!!bool ",
    "!!timestamp ",
    "!foo ",
    "<<: ",
    "? ",
    "[" * 80,
    "{" * 80,
    "]",
    "}",
    "---\n",
    "\t",
    "\x00",
    "\x1b",
    "\ufeff",
    "\u2028",
    "\x85",
    "9" * 5000,
    "1:" * 40 + "1",
    "0b_",
    "._",
    "2024-13-45",
    "%YAML 1.1\n",
    "'",
    '"',
    "#",
    "|\n  ",
    "- ",
    ": ",
    "\r",
    "~",
    ".nan",
    "1e999",
    "é",
]

scalars = st.sampled_from(NAMES + NUMBERS + ADDRESSES + ["spine", "leaf", "dpu", "host", "router"]) | st.text(
    max_size=12
)
names = st.sampled_from(NAMES[:11]) | st.text(max_size=10)
endpoints = st.tuples(names, st.sampled_from(["", ":swp1", ":p0", ":pf0vf0", ":eth1", ":lo", ":br1", ":"]))
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS) | names, inner, max_size=4),
    max_leaves=12,
)


def maybe(strategy):
    return st.none() | strategy


@st.composite
def topologies(draw):
    """Topology-shaped documents: the right keys with plausible, odd or wrong values."""
    node_names = draw(st.lists(names, min_size=1, max_size=8, unique=True))
    nodes = {
        n: draw(
            st.fixed_dictionaries(
                {"kind": st.sampled_from(["spine", "leaf", "dpu", "host"]) | scalars},
                optional={
                    "asn": scalars,
                    "loopback": st.sampled_from(ADDRESSES),
                    "drain": scalars,
                    "image": scalars,
                    "x": values,
                },
            )
        )
        for n in node_names
    }
    ends = endpoints.map(lambda e: e[0] + e[1]) | st.sampled_from(node_names)
    links = draw(
        st.lists(
            st.lists(ends, min_size=1, max_size=3)
            | st.fixed_dictionaries({"endpoints": st.lists(ends, max_size=3)}, optional={"mtu": scalars}),
            max_size=10,
        )
    )
    segment = st.fixed_dictionaries(
        {"subnet": st.sampled_from(ADDRESSES), "l2vni": st.sampled_from(NUMBERS)},
        optional={"gateway": st.sampled_from(ADDRESSES), "mac": st.sampled_from(ADDRESSES)},
    )
    attachment = st.fixed_dictionaries(
        {"host": st.sampled_from(node_names), "segment": names},
        optional={"address": st.sampled_from(ADDRESSES), "port": ends},
    )
    tenant = st.fixed_dictionaries(
        {"l3vni": st.sampled_from(NUMBERS), "segments": st.dictionaries(names, segment, max_size=3)},
        optional={"vrf": names, "attachments": st.lists(attachment, max_size=4)},
    )
    doc = {
        "name": draw(st.sampled_from(["fuzz", "Fuzz", "fuzz\n", "", "x" * 20]) | scalars),
        "nodes": nodes,
        "links": links,
        "vtep": draw(st.sampled_from(["dpu", "leaf", "spine"]) | scalars),
        "tenants": draw(st.dictionaries(names, tenant, max_size=3)),
        "defaults": draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "mtu": scalars,
                    "host_mtu": scalars,
                    "loopback_pool": st.sampled_from(ADDRESSES),
                    "asn": values,
                },
            )
        ),
    }
    return yaml.safe_dump(
        {k: v for k, v in doc.items() if draw(st.booleans()) or k in ("name", "nodes")},
        allow_unicode=True,
        default_flow_style=draw(st.booleans()),
    ).encode()


@st.composite
def mutated(draw):
    """A ready-made topology with a few entries replaced, removed or added."""
    data = yaml.safe_load(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        parent, key = _pick(draw, data)
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace" or (action == "delete" and isinstance(parent, list) and not parent):
            parent[key] = draw(values)
        elif action == "delete":
            del parent[key]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(KEYS) | names)] = draw(values)
        else:
            parent.append(draw(values))
    return yaml.safe_dump(data, allow_unicode=True).encode()


def _pick(draw, data):
    """A (container, key) somewhere in `data`, walking down a random path."""
    parent, key = data, draw(st.sampled_from(list(data)))
    while isinstance(parent[key], (dict, list)) and parent[key] and draw(st.booleans()):
        parent = parent[key]
        key = draw(st.sampled_from(list(parent) if isinstance(parent, dict) else list(range(len(parent)))))
    return parent, key


@st.composite
def spliced(draw):
    """A ready-made topology's text with YAML trouble spliced in, cut short, or re-encoded."""
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(SNIPPETS) | st.text(max_size=5)) + text[at:]
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-16", "utf-16-le", "latin-1"]))
    return text.encode(encoding, "surrogatepass" if encoding.startswith("utf") else "replace")


def check_loads_cleanly(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.yml"
        path.write_bytes(data)
        tracemalloc.start()
        start = time.monotonic()
        try:
            outcome = load(path)
        except TopologyError as e:
            outcome = e
        finally:
            elapsed = time.monotonic() - start
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    assert elapsed < SECONDS, f"load took {elapsed:.1f}s"
    assert peak < PEAK_BYTES, f"load took {peak / 1e6:.0f} MB"
    if isinstance(outcome, TopologyError):
        assert outcome.problems, "a TopologyError names its problems"
        for p in outcome.problems:
            assert p.file == str(path) and p.message
            assert len(p.message) <= 1000 and len(p.path) <= 200, "values in messages are cut"
            assert p.message.isprintable() and p.path.isprintable(), "control characters are escaped"
    else:
        assert isinstance(outcome, Fabric)


@FUZZ
@given(topologies())
def test_topology_shaped_documents_load_or_fail_cleanly(data):
    check_loads_cleanly(data)


@FUZZ
@given(mutated())
def test_mutated_topologies_load_or_fail_cleanly(data):
    check_loads_cleanly(data)


@FUZZ
@given(spliced())
def test_spliced_yaml_loads_or_fails_cleanly(data):
    check_loads_cleanly(data)


@FUZZ
@given(st.binary(max_size=2048))
def test_random_bytes_fail_cleanly(data):
    check_loads_cleanly(data)
