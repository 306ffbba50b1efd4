"""Fuzzing every other file a user hands twin: a clone's directory (its LLDP JSON and cable CSV),
a checks file, an allow file, a baseline, a directory of the user's FRR configs and NVUE startup
files. Whatever the bytes (and whatever the directory holds: links out of it, FIFOs, odd names),
the reader returns its result or raises a TwinError in twin's style, within a time and a memory
bound (tests/unit/fuzzing). About 9 s in all."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.fuzzing import NAMES, check_cleanly, fuzz, json_values, scalars, spliced
from twin import topology
from twin.config import userconf
from twin.config.render import render_lab
from twin.interop.clone import Cloned, clone
from twin.lab import Lab
from twin.topology.allow import load_allow
from twin.topology.checks import CheckSet, load_checks
from twin.topology.schema import CHECK_TYPES
from twin.verify import baseline as B
from twin.verify.baseline_file import load_baseline
from twin.verify.compare import differences

ROOT = Path(__file__).resolve().parents[2]
AIPOD = topology.load(ROOT / "topologies/aipod.yml")
RENDERED = render_lab(AIPOD, "netns")
LLDP = [p.read_text() for p in sorted((ROOT / "tests/golden/clone").glob("*.json"))]
CHECKS = [p.read_text() for p in sorted((ROOT / "tests/e2e/checks").glob("*.yml"))]
AIPOD_NODES = sorted(AIPOD.nodes)
FRR_LINES = [
    "frr defaults datacenter",
    "hostname leaf1",
    "router bgp 65101",
    " bgp router-id 10.255.0.3",
    " neighbor swp1 interface remote-as external",
    " address-family l2vpn evpn",
    "  advertise-all-vni",
    "vrf red",
    " vni 10100",
    "exit-vrf",
    "interface lo",
    " ip address 10.255.0.3/32",
    "!",
    "",
    'zebra_options="  -A 127.0.0.1 -s 90000000 -n"',
    "bgpd=yes",
    "router bgp 99999999999 vrf x",
    "vni -1",
    "route-target import 65000:*",
    "\t",
    "#",
]
CSV_CELLS = [
    "r1",
    "r2",
    "swp1",
    "eth1",
    "device",
    "port",
    "peer",
    "peer_port",
    "",
    " ",
    "#x",
    '"',
    '""',
    "a,b",
    "r1\nr2",
    "x" * 300,
]


def in_dir(build, call, ok):
    """`call(d)` on a fresh directory `build(d)` filled, held to twin's style."""
    with tempfile.TemporaryDirectory() as d:
        build(Path(d))
        return check_cleanly(lambda: call(Path(d)), ok, files=(d, "--"))


def write(d: Path, name: str, data: bytes) -> Path:
    (d / name).parent.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)
    return d / name


# --- a clone's directory ---------------------------------------------------------------------------
def cloned(d: Path) -> Cloned:
    c = clone(d, roles={"r1": "spine", "r2": "leaf"})
    topology.load_document(c.doc, str(d))  # what `twin clone` does before writing anything
    return c


def devices(d: Path) -> None:
    write(d, "r1/frr.conf", b"router bgp 65001\n neighbor eth1 interface remote-as external\n")
    write(d, "r2.conf", b"router bgp 65002\n neighbor eth1 interface remote-as external\n")


@st.composite
def lldp_docs(draw):
    end = st.fixed_dictionaries(
        {},
        optional={
            "chassis": st.dictionaries(st.sampled_from(NAMES + ["id", "name"]), json_values(), max_size=2)
            | json_values(),
            "port": st.fixed_dictionaries(
                {},
                optional={
                    "id": st.fixed_dictionaries(
                        {"type": st.sampled_from(["ifname", "mac", "local"]) | scalars(), "value": scalars()}
                    )
                    | scalars(),
                    "descr": scalars(),
                },
            )
            | scalars(),
        },
    )
    ports = st.dictionaries(
        st.sampled_from(["eth1", "swp1", "eth2"]) | st.text(max_size=5), end | scalars(), max_size=3
    )
    interface = st.lists(ports, max_size=3) | ports | scalars()
    return json.dumps({"lldp": {"interface": draw(interface)}} if draw(st.booleans()) else draw(json_values())).encode()


@fuzz(100)
@given(lldp_docs() | spliced(LLDP) | st.binary(max_size=512))
def test_a_clones_lldp_json_clones_or_fails_cleanly(data):
    in_dir(lambda d: (devices(d), write(d, "r1/lldp.json", data), write(d, "r2.lldp.json", data)), cloned, Cloned)


@fuzz(100)
@given(
    st.lists(st.lists(st.sampled_from(CSV_CELLS) | st.text(max_size=4), max_size=5), max_size=6).map(
        lambda rows: "\n".join(",".join(r) for r in rows).encode()
    )
    | st.binary(max_size=512)
)
def test_a_clones_cable_csv_clones_or_fails_cleanly(data):
    in_dir(lambda d: (devices(d), write(d, "cables.csv", data)), cloned, Cloned)


# --- checks and allow files --------------------------------------------------------------------------
@st.composite
def checks_docs(draw):
    field = st.sampled_from(
        [
            "node",
            "peer",
            "port",
            "vrf",
            "afi",
            "state",
            "min",
            "max",
            "prefix",
            "expect",
            "from",
            "to",
            "count",
            "tenant",
            "command",
            "match",
            "regex",
            "exit_code",
            "nexthops",
        ]
    )
    value = st.sampled_from(AIPOD_NODES + ["swp1", "p0", "red", "10.1.1.12", "10.1.1.12/32", "evpn", "(", "[a-"])
    check = st.fixed_dictionaries({"name": scalars(), "type": st.sampled_from(list(CHECK_TYPES)) | scalars()})
    checks = draw(
        st.lists(
            st.tuples(check, st.dictionaries(field, value | json_values(), max_size=4)).map(lambda t: {**t[0], **t[1]})
            | json_values(),
            max_size=5,
        )
    )
    return yaml.safe_dump(
        {"checks": checks} if draw(st.booleans()) else draw(json_values()), allow_unicode=True
    ).encode()


@fuzz(100)
@given(checks_docs() | spliced(CHECKS) | st.binary(max_size=512))
def test_checks_files_load_or_fail_cleanly(data):
    in_dir(lambda d: write(d, "c.yml", data), lambda d: load_checks(d / "c.yml", AIPOD), CheckSet)


@fuzz(80)
@given(
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                k: st.sampled_from(["*", "leaf*", "[", "session", "appeared"]) | scalars()
                for k in ("node", "vrf", "what", "key", "change", "reason", "x")
            },
        )
        | json_values(),
        max_size=4,
    ).map(lambda rules: yaml.safe_dump({"allow": rules}).encode())
    | spliced(["allow:\n  - {what: route, vrf: green, change: appeared, reason: new}\n"])
    | st.binary(max_size=256)
)
def test_allow_files_load_or_fail_cleanly(data):
    in_dir(lambda d: write(d, "a.yml", data), lambda d: load_allow(d / "a.yml"), tuple)


# --- baselines ---------------------------------------------------------------------------------------------
GOOD = {
    "format": B.FORMAT,
    "lab": "x",
    "recorded": "now",
    "nodes": {
        "dpu1": {
            "sessions": {"default": {"ipv4 swp1": {"state": "Established", "accepted": 2, "sent": 6}}},
            "routes": {"red": {"10.1.1.12/32": {"protocol": "bgp", "nexthops": ["10.255.0.6"]}}},
            "vnis": {"10101": {"type": "L2", "vrf": "red", "remote_vteps": ["10.255.0.6"], "macs": 2}},
        }
    },
}


@st.composite
def baselines(draw):
    doc = json.loads(json.dumps(GOOD))
    for _ in range(draw(st.integers(1, 3))):
        parent = doc
        for key in draw(
            st.lists(
                st.sampled_from(
                    [
                        "nodes",
                        "dpu1",
                        "sessions",
                        "routes",
                        "vnis",
                        "default",
                        "red",
                        "ipv4 swp1",
                        "10.1.1.12/32",
                        "10101",
                        "nexthops",
                        "vrf",
                    ]
                ),
                max_size=6,
            )
        ):
            if isinstance(parent, dict) and isinstance(parent.get(key), (dict, list)):
                parent = parent[key]
        if isinstance(parent, dict):
            parent[draw(st.sampled_from(list(parent) + ["x"]))] = draw(json_values())
    return json.dumps(doc).encode()


def compared(d: Path):
    base = load_baseline(d / "b.json")
    return [x.line() for x in differences(base, GOOD) + differences(GOOD, base)]


@fuzz(100)
@given(baselines() | spliced([json.dumps(GOOD, indent=2)]) | st.binary(max_size=512))
def test_baselines_load_and_compare_or_fail_cleanly(data):
    in_dir(lambda d: write(d, "b.json", data), compared, list)


# --- the user's FRR configs ---------------------------------------------------------------------------------
ENTRY_NAMES = [
    "leaf1/frr.conf",
    "leaf1/daemons",
    "spine1.conf",
    "dpu1/frr.conf",
    "host1a.conf",
    "nosuch.conf",
    "leaf\n2.conf",
    "x" * 200 + ".conf",
    "README.md",
    ".conf",
    "leaf2/frr.conf/x",
]


@st.composite
def config_dirs(draw):
    entries = draw(st.lists(st.sampled_from(ENTRY_NAMES), max_size=4, unique=True))
    text = st.lists(st.sampled_from(FRR_LINES) | st.text(max_size=10), max_size=8).map(
        lambda ls: "\n".join(ls).encode()
    )
    files = {e: draw(text | st.binary(max_size=64)) for e in entries}
    odd = draw(st.lists(st.sampled_from(["link-out", "link-dir", "fifo", "dir-named-conf"]), max_size=2, unique=True))

    def build(d: Path) -> None:
        for name, data in files.items():
            try:
                write(d, name, data)
            except OSError:  # leaf2/frr.conf/x after leaf2/frr.conf: one of them is what it is
                pass
        if "link-out" in odd:
            os.symlink("/etc/hostname", d / "spine2.conf")
        if "link-dir" in odd and not (d / "leaf2").exists():
            os.symlink("/etc", d / "leaf2")
        if "fifo" in odd:
            os.mkfifo(d / "dpu2.conf")
        if "dir-named-conf" in odd and not (d / "spine1.conf").exists():
            (d / "spine1.conf").mkdir()

    return build


def merged(d: Path):
    configs = userconf.load(d, AIPOD)
    return userconf.merge(RENDERED, configs, AIPOD, "netns")


@fuzz(100)
@given(config_dirs())
def test_config_directories_load_and_merge_or_fail_cleanly(build):
    in_dir(build, merged, tuple)


# --- NVUE startup.yaml in a config directory (the NVUE front end's own checks are test_nvue) ---------------
NVUE = [p.read_text() for p in sorted((ROOT / "tests/golden/interop/nvue/samples").glob("*/startup.yaml"))]


@fuzz(60)
@given(spliced(NVUE) | st.binary(max_size=512))
def test_nvue_startup_files_load_or_fail_cleanly(data):
    in_dir(
        lambda d: write(d, "dpu1/startup.yaml", data), lambda d: Lab.load(ROOT / "topologies/aipod.yml", configs=d), Lab
    )
