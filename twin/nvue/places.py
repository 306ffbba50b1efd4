"""The kinds of place in NVUE's tree (`twin.nvue.schema`) and the values its leaves take.

`Obj` (an object with named keys), `Coll` (a collection keyed by names, VLAN ids, prefixes...),
`Leaf` (a value), `Opaque` (an object twin stores without knowing what lies below it) and
`Empty` (an entry that holds nothing but its key). A place is emulated (the node runs it) or
`S`tored (kept, shown and listed as not emulated).
"""

from dataclasses import dataclass, field
from typing import Any

EMULATED, STORED = "emulated", "stored"


@dataclass(frozen=True)
class Leaf:
    kind: str  # bool int str enum ipv4 prefix mac asn rt rd name vrf group host neighbor
    status: str = EMULATED
    lo: int = 0  # int: the range
    hi: int = 0
    choices: tuple[str, ...] = ()  # enum (also words an int or ipv4 leaf takes: none, auto)
    what: str = ""  # in a message: "'x' is not a VLAN id"
    keyed: bool = False  # NVUE also writes it as a one-key mapping: `state: {up: {}}`


@dataclass(frozen=True)
class Obj:
    children: dict
    status: str = EMULATED
    open: bool = False  # keys twin does not list are kept as not emulated (system.*), not refused


@dataclass(frozen=True)
class Coll:
    key: Leaf  # what a key is
    item: object  # Obj, Opaque, or Empty: what each entry holds
    status: str = EMULATED
    ranges: bool = False  # `nv set interface swp1-4,swp7 ...` names several at once


@dataclass(frozen=True)
class Opaque:
    why: str = ""


@dataclass(frozen=True)
class Empty:
    """An entry that holds nothing but its key (`address: {10.1.10.2/24: {}}`)."""

    status: str = EMULATED
    extra: dict = field(default_factory=dict)  # stored keys an entry may hold (route-map...)


def S(kind: str = "str", **kw: Any) -> Leaf:
    return Leaf(kind, STORED, **kw)


ON_OFF = Leaf("bool", what="on or off")
VLAN = Leaf("int", lo=1, hi=4094, what="a VLAN id")
VNI = Leaf("int", lo=1, hi=16777214, what="a VNI (1-16777214)")
ASN = Leaf("asn", what="an AS number (1-4294967295)")
IPV4 = Leaf("ipv4", what="an IPv4 address")
PREFIX = Leaf("prefix", what="an IP prefix like 10.1.10.2/24")
MAC = Leaf("mac", what="a MAC address like 00:00:5e:00:01:01")
IFNAME = Leaf("name", what="an interface name (1-15 of letters, digits, _ . -)")
VRFNAME = Leaf("vrf", what="a VRF name (1-15 of letters, digits, _ -, starting with a letter)")
GROUP = Leaf("group", what="a peer-group name (1-63 of letters, digits, _ . -)")
RT = Leaf("rt", what="a route target like 65101:4001, 10.10.10.1:5, ANY:4001 or auto")
HOSTNAME = Leaf(
    "host",
    what="a host name (RFC 1123): labels of letters, digits and '-', 1-63 characters each, "
    "not starting or ending with '-', joined by '.', 253 characters at most",
)
NEIGHBOR = Leaf("neighbor", what="an interface name or an IP address")
POLICY = Leaf("policy", what="a policy name: 1-63 of letters, digits, _ and -, starting with a letter")
RULE = Leaf("int", lo=1, hi=65535, what="a rule number (1-65535)")
ACTION = Leaf("enum", choices=("permit", "deny"), keyed=True)
U32 = Leaf("int", lo=0, hi=4294967295, what="0-4294967295")
VIA = Leaf("via", choices=("blackhole", "reject"), what="an IP address, blackhole or reject")
DOMAIN = Leaf("name", what="a bridge domain name")
