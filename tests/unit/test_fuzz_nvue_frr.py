"""No value becomes a foreign line (issue 44): whatever text reaches a place of NVUE's tree that twin
renders into FRR (route maps: names, matches, sets; community, large-community, AS-path and prefix
lists: names and values; BFD profiles; BGP timers; an interface's OSPF settings, in ospfd's own file),
the node's frr.conf and ospfd-interfaces.conf are either refused with that key named, or written with
exactly the lines they have with a plain value there, each changed line the same command as before (the
value stays inside its own line, never a new command). Deterministic (derandomize) so CI is stable."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin import nvue, topology
from twin.base.errors import TopologyError
from twin.nvue import tree as nv_tree

ROOT = Path(__file__).resolve().parents[2]
FABRIC = topology.load(ROOT / "tests/e2e/nvue/samples.yml")
LEAF = nvue.read(ROOT / "tests/golden/interop/nvue/samples/leaf01/startup.yaml").tree
FUZZ = settings(
    derandomize=True, database=None, deadline=None, max_examples=400, suppress_health_check=[HealthCheck.too_slow]
)
NASTY = [
    "x\nip route 0.0.0.0/0 blackhole",
    "1\r\nend",
    "65000:1 additive\n!",
    "a b",
    "!",
    "#",
    "end",
    "exit",
    "1 2",
    "^$\nrouter bgp 1",
    "10.0.0.1\nline vty",
    "\u2028",
    "\x00",
    "x" * 300,
    "65000:1",
    "1:2:3",
    "^100_",
    "LIST",
    "1",
    "300",
    "no-export",
    "additive",
    "none",
    "peer-addr",
    "10.0.0.1",
    "10.1.0.0/16",
    "-1",
    "",
]
UNDERLAY = ("vrf", "default", "router", "bgp")
PORT_OSPF = ("interface", "swp51", "router", "ospf")  # ospfd's lines, in ospfd-interfaces.conf


def at(path: tuple, value: Any) -> dict:
    out: Any = value
    for k in reversed(path):
        out = {k: out}
    return out


def bound(name: str) -> dict:
    """Route map `name` applied outbound on swp51 (so its name reaches a neighbor's line too)."""
    return at(
        UNDERLAY + ("neighbor", "swp51", "address-family", "ipv4-unicast", "policy", "outbound", "route-map"), name
    )


def rm(rule: dict, name: str = "RM") -> dict:
    return {"router": {"policy": {"route-map": {name: {"rule": {"10": {"action": "permit", **rule}}}}}}}


def lst(kind: str, key: str, value: Any, name: str = "L", ref: bool = True) -> list[dict]:
    out = [{"router": {"policy": {kind: {name: {"rule": {"10": {"action": "permit", key: value}}}}}}}]
    return out + ([rm({"match": {kind: name}}), bound("RM")] if ref else [])


def pl(name: Any = "PL", prefix: Any = "10.1.0.0/16", match: dict | None = None) -> dict:
    rule = {"action": "permit", "match": {prefix: match or {}}}
    return {"router": {"policy": {"prefix-list": {name: {"rule": {"10": rule}}}}}}


@dataclass(frozen=True)
class Place:
    key: str  # what a refusal's path names
    plain: str  # a value NVUE takes there
    make: Callable[[Any], list[dict]]  # the edits putting a value there
    absent: tuple[str, ...] = ()  # values that leave the line out (bfdd's own default, a timer's none)


PLACES = [
    Place("route-map", "RM", lambda v: [rm({"set": {"weight": 1}}, name=v), bound(v)]),
    Place("local-preference", "100", lambda v: [rm({"set": {"local-preference": v}}), bound("RM")]),
    Place("metric", "5", lambda v: [rm({"set": {"metric": v}}), bound("RM")]),
    Place("weight", "5", lambda v: [rm({"set": {"weight": v}}), bound("RM")]),
    Place("tag", "5", lambda v: [rm({"set": {"tag": v}, "match": {"tag": v}}), bound("RM")]),
    Place("interface", "swp1", lambda v: [rm({"match": {"interface": v}}), bound("RM")]),
    Place("ip-nexthop", "10.0.0.1", lambda v: [rm({"set": {"ip-nexthop": v}}), bound("RM")]),
    Place("as-path-prepend", "65101", lambda v: [rm({"set": {"as-path-prepend": {"as": v}}}), bound("RM")]),
    Place("last-as", "2", lambda v: [rm({"set": {"as-path-prepend": {"last-as": v}}}), bound("RM")]),
    Place("community", "65000:1", lambda v: [rm({"set": {"community": {v: {}}}}), bound("RM")]),
    Place("large-community", "1:2:3", lambda v: [rm({"set": {"large-community": {v: {}}}}), bound("RM")]),
    Place("community-list", "CL", lambda v: lst("community-list", "community", {"65000:1": {}}, name=v)),
    Place("community", "65000:1", lambda v: lst("community-list", "community", {v: {}})),
    Place(
        "large-community-list", "LL", lambda v: lst("large-community-list", "large-community", {"1:2:3": {}}, name=v)
    ),
    Place("large-community", "1:2:3", lambda v: lst("large-community-list", "large-community", {v: {}})),
    Place("as-path-list", "AL", lambda v: lst("as-path-list", "aspath-exp", "^$", name=v)),
    Place("aspath-exp", "^100_", lambda v: lst("as-path-list", "aspath-exp", v)),
    Place("prefix-list", "PL", lambda v: [pl(v), rm({"match": {"ip-prefix-list": v}}), bound("RM")]),
    Place("match", "10.1.0.0/16", lambda v: [pl(prefix=v)]),
    Place("max-prefix-len", "24", lambda v: [pl(match={"max-prefix-len": v})]),
    Place(
        "detect-multiplier",
        "4",
        lambda v: [at(UNDERLAY + ("neighbor", "swp51", "bfd"), {"enable": "on", "detect-multiplier": v})],
        ("3",),
    ),
    Place(
        "min-rx-interval",
        "200",
        lambda v: [at(UNDERLAY + ("peer-group", "underlay", "bfd"), {"enable": "on", "min-rx-interval": v})],
        ("300",),
    ),
    Place(
        "min-tx-interval",
        "200",
        lambda v: [at(UNDERLAY + ("neighbor", "swp52", "bfd"), {"min-tx-interval": v})],
        ("300",),
    ),
    Place("keepalive", "1", lambda v: [at(UNDERLAY + ("neighbor", "swp51", "timers"), {"keepalive": v})], ("none",)),
    Place("hold", "30", lambda v: [at(UNDERLAY + ("peer-group", "underlay", "timers"), {"hold": v})], ("none",)),
    Place("area", "1", lambda v: [at(PORT_OSPF, {"area": v})]),
    Place("network-type", "point-to-point", lambda v: [at(PORT_OSPF, {"area": 0, "network-type": v})]),
    Place("cost", "20", lambda v: [at(PORT_OSPF, {"area": 0, "cost": v})], ("auto",)),
    Place("priority", "5", lambda v: [at(PORT_OSPF, {"area": 0, "priority": v})], ("1",)),
    Place("hello-interval", "5", lambda v: [at(PORT_OSPF, {"area": 0, "timers": {"hello-interval": v}})], ("10",)),
    Place("dead-interval", "20", lambda v: [at(PORT_OSPF, {"area": 0, "timers": {"dead-interval": v}})]),
    Place("transmit-delay", "2", lambda v: [at(PORT_OSPF, {"area": 0, "timers": {"transmit-delay": v}})], ("1",)),
    Place(
        "md5-key",
        "k3y",
        lambda v: [at(PORT_OSPF, {"authentication": {"enable": "on", "message-digest-key": 1, "md5-key": v}})],
    ),
    Place(
        "message-digest-key",
        "7",
        lambda v: [at(PORT_OSPF, {"authentication": {"enable": "on", "message-digest-key": v, "md5-key": "k"}})],
    ),
]


def frr(edits: list[dict]) -> str:
    t = copy.deepcopy(LEAF)
    for e in edits:
        nv_tree.patch(t, e)
    nf = nvue.from_tree(t, "leaf01/startup.yaml")
    files = nvue.build({"leaf01": nf}, FABRIC, "netns")[0]["leaf01"].files
    return files["frr.conf"] + files["ospfd-interfaces.conf"]  # FRR reads both: ospfd alone the second


BASE = {id(p): frr(p.make(p.plain)).splitlines() for p in PLACES}


def test_every_place_renders_with_a_plain_value():
    for p in PLACES:
        assert p.plain in "\n".join(BASE[id(p)]), p.key


@FUZZ
@given(st.sampled_from(PLACES), st.sampled_from(NASTY) | st.text(max_size=40) | st.integers(-5, 2**33))
def test_no_value_becomes_a_foreign_line(place: Place, value: Any):
    try:
        lines = frr(place.make(value)).splitlines()
    except TopologyError as e:
        assert any(place.key in p.path for p in e.problems), (place.key, value, [str(p) for p in e.problems])
        return
    if any(lines == frr(place.make(a)).splitlines() for a in place.absent):
        return  # a value that leaves the line out, as NVUE does
    base = BASE[id(place)]
    assert len(lines) == len(base), (place.key, value)
    for old, new in zip(base, lines):
        if old != new:  # the same command, its value changed
            assert new.split()[:1] == old.split()[:1] and not new.startswith(("!", "#")) or old.startswith("!"), (
                place.key,
                value,
                old,
                new,
            )
