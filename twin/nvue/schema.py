"""NVUE's object tree as twin knows it: Cumulus Linux 5.9, API nvue_v1 (also DOCA HBN's NVUE).

Every place of a startup.yaml is one of three things:

- **emulated**: twin reads it and the node runs it (FRR and the kernel plane);
- **stored, not emulated**: a real place of NVUE's tree that twin keeps, shows and lists
  as "not emulated" (mlag, qos, acl, service, system.message, a BGP timer...);
- **refused**: no place of NVUE's tree (a typo, a key of another version), named with the
  keys that are allowed there.

The tree is data: `Obj` (an object with named keys), `Coll` (a collection keyed by names,
VLAN ids, prefixes...), `Leaf` (a value) and `Opaque` (an object twin stores without
knowing what lies below it). Below an Opaque every key is kept, nothing is checked but
the file's own limits. The keys of each emulated object are those of `nv list-commands`
on Cumulus Linux 5.9; keys twin does not emulate are `S`tored leaves or Opaque objects.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

VERSION = "Cumulus Linux 5.9"
API = "nvue_v1"
EMULATED, STORED = "emulated", "stored"


@dataclass(frozen=True)
class Leaf:
    kind: str                   # bool int str enum ipv4 prefix mac asn rt rd name vrf group host neighbor
    status: str = EMULATED
    lo: int = 0                 # int: the range
    hi: int = 0
    choices: tuple[str, ...] = ()   # enum (also words an int or ipv4 leaf takes: none, auto)
    what: str = ""              # in a message: "'x' is not a VLAN id"
    keyed: bool = False         # NVUE also writes it as a one-key mapping: `state: {up: {}}`


@dataclass(frozen=True)
class Obj:
    children: dict
    status: str = EMULATED
    open: bool = False          # keys twin does not list are kept as not emulated (system.*), not refused


@dataclass(frozen=True)
class Coll:
    key: Leaf                   # what a key is
    item: object                # Obj, Opaque, or Empty: what each entry holds
    status: str = EMULATED
    ranges: bool = False        # `nv set interface swp1-4,swp7 ...` names several at once


@dataclass(frozen=True)
class Opaque:
    why: str = ""


@dataclass(frozen=True)
class Empty:
    """An entry that holds nothing but its key (`address: {10.1.10.2/24: {}}`)."""

    status: str = EMULATED
    extra: dict = field(default_factory=dict)   # stored keys an entry may hold (route-map...)


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
HOSTNAME = Leaf("host", what="a host name (RFC 1123): labels of letters, digits and '-', 1-63 characters each, "
                             "not starting or ending with '-', joined by '.', 253 characters at most")
NEIGHBOR = Leaf("neighbor", what="an interface name or an IP address")
POLICY = Leaf("policy", what="a policy name: 1-63 of letters, digits, _ and -, starting with a letter")
RULE = Leaf("int", lo=1, hi=65535, what="a rule number (1-65535)")
ACTION = Leaf("enum", choices=("permit", "deny"), keyed=True)
U32 = Leaf("int", lo=0, hi=4294967295, what="0-4294967295")
VIA = Leaf("via", choices=("blackhole", "reject"), what="an IP address, blackhole or reject")
DOMAIN = Leaf("name", what="a bridge domain name")

_STORED_AF: dict[str, Leaf | Opaque]     # stored keys of an address family: opaque subtrees, then leaves
_STORED_AF = {k: Opaque() for k in ("attribute-mod", "aspath", "prefix-limits", "default-route-origination",
                                    "policy", "community-advertise", "conditional-advertise")}
_BOUND = Obj({"route-map": POLICY, "prefix-list": POLICY, "aspath-list": S()})   # a neighbor's policy one way
_V4_AF = {**_STORED_AF, "policy": Obj({"inbound": _BOUND, "outbound": _BOUND})}
_STORED_AF.update({k: S() for k in ("route-reflector-client", "route-server-client", "soft-reconfiguration",
                                    "nexthop-setting", "add-path-tx", "weight")})


# BFD of a BGP neighbor or peer-group, run by FRR's bfdd (issue 44)
_BFD = Obj({"enable": ON_OFF, "detect-multiplier": Leaf("int", lo=2, hi=255, what="2-255"),
            "min-rx-interval": Leaf("int", lo=50, hi=60000, what="50-60000 ms"),
            "min-tx-interval": Leaf("int", lo=50, hi=60000, what="50-60000 ms")})


def _peer(*emulated: str) -> Obj:
    """A BGP peer-group or neighbor: its emulated keys, the rest of NVUE's stored."""
    keys = {
        "remote-as": Leaf("asn", choices=("internal", "external"), what="internal, external or an AS number"),
        "peer-group": Leaf("group", choices=("none",), what="a peer-group name"),
        "type": Leaf("enum", choices=("numbered", "unnumbered")),
        "address-family": Obj({
            "ipv4-unicast": Obj({"enable": ON_OFF, **_V4_AF}),
            "l2vpn-evpn": Obj({"enable": ON_OFF, **_STORED_AF}),
            "ipv6-unicast": Opaque()}),
        "timers": Obj({"connection-retry": Leaf("int", lo=1, hi=65535, choices=("auto",), what="1-65535 seconds"),
                       "route-advertisement": Leaf("int", lo=1, hi=600, choices=("none", "auto"),
                                                   what="1-600 seconds or none"),
                       "keepalive": Leaf("int", lo=0, hi=65535, choices=("auto", "none"),
                                         what="0-65535 seconds or auto"),
                       "hold": Leaf("int", lo=0, hi=65535, choices=("auto", "none"), what="0-65535 seconds or auto")}),
        "bfd": _BFD,
    }
    out = {k: v for k, v in keys.items() if k in emulated}
    out.update({k: Opaque() for k in ("capabilities", "local-as", "graceful-restart", "ttl-security")})
    out.update({k: S() for k in ("password", "enforce-first-as", "passive-mode", "nexthop-connected-check",
                                 "multihop-ttl", "description", "enable", "update-source")})
    return Obj(out)


_BGP_VRF = Obj({
    "enable": ON_OFF, "autonomous-system": ASN, "router-id": IPV4,
    "rd": S("rd", choices=("auto", "none"), what="a route distinguisher like 10.10.10.1:20, 65101:20 or auto"),
    "address-family": Obj({
        "ipv4-unicast": Obj({
            "enable": ON_OFF,
            "redistribute": Obj({"connected": Obj({"enable": ON_OFF, "metric": S(), "route-map": POLICY}),
                                 "static": Obj({"enable": ON_OFF, "metric": S(), "route-map": POLICY}),
                                 "kernel": Opaque(), "ospf": Opaque()}),
            "network": Coll(PREFIX, Empty(extra={"route-map": S()})),
            "route-export": Obj({"to-evpn": Obj({"enable": ON_OFF, "route-map": S(),
                                                 "default-route-origination": S()})}),
            "route-import": Obj({"from-vrf": Obj({"enable": ON_OFF, "list": Coll(VRFNAME, Empty()),
                                                  "route-map": S()})}),   # VRF route leaking (issue 44)
            "aggregate-route": Opaque(), "multipaths": Opaque(),
            "admin-distance": Opaque(), "rib-filter": S()}),
        "l2vpn-evpn": Obj({"enable": ON_OFF}),
        "ipv6-unicast": Opaque()}),
    "peer-group": Coll(GROUP, _peer("remote-as", "address-family", "timers", "bfd")),
    "neighbor": Coll(NEIGHBOR, _peer("remote-as", "peer-group", "type", "address-family", "timers", "bfd")),
    "path-selection": Obj({"multipath": Obj({"aspath-ignore": ON_OFF, "generate-asset": S(), "bandwidth": S()}),
                           "aspath": Opaque(), "med": Opaque(), "routerid-compare": S()}),
    "route-import": Obj({"from-evpn": Obj({"route-target": Coll(RT, Empty())})}),
    "route-export": Obj({"to-evpn": Obj({"route-target": Coll(RT, Empty())})}),
    **{k: Opaque() for k in ("timers", "confederation", "route-reflection", "dynamic-neighbor")},
    "dynamic-peer-limit": S(),
})

# router policy: prefix lists and route maps (a route-map rule's match and set keys twin does not emulate
# are kept, and refused on the node: a rule without them would match, or do, something else)
_PREFIX_LIST = Obj({"type": Leaf("enum", choices=("ipv4", "ipv6")), "description": S(),
                    "rule": Coll(RULE, Obj({"action": ACTION, "match": Coll(PREFIX, Obj({
                        "max-prefix-len": Leaf("int", lo=0, hi=128, what="a prefix length (0-128)"),
                        "min-prefix-len": Leaf("int", lo=0, hi=128, what="a prefix length (0-128)")}))}))})
_RM_MATCH = ("evpn-default-route", "evpn-route-type", "evpn-vni", "ip-nexthop",
             "ip-nexthop-len", "ip-nexthop-list", "ip-nexthop-type", "ip-prefix-len",
             "local-preference", "metric", "origin", "peer", "source-protocol", "source-vrf", "ipv6-prefix-list")
_RM_SET = ("aggregator-as", "as-path-exclude", "atomic-aggregate",
           "community-delete-list", "ext-community-bw", "ext-community-rt", "ext-community-soo", "forwarding-address",
           "ipv6-nexthop-global", "ipv6-nexthop-local", "ipv6-nexthop-prefer-global",
           "large-community-delete-list", "metric-type", "origin", "originator-id", "source-ip")
# community, large-community and AS-path lists and their use in route maps (issue 44: twin.nvue.policy)
LIST = Leaf("list", what="a list name (1-63 of letters, digits, _ and -, starting with a letter) or a number 1-99")
_WELL_KNOWN = ("internet", "local-AS", "no-advertise", "no-export", "graceful-shutdown", "blackhole", "no-peer",
               "accept-own")
COMMUNITY = Leaf("community", choices=_WELL_KNOWN, what="a community AA:NN (each 0-65535) or one of "
                                                        + ", ".join(_WELL_KNOWN))
LARGE = Leaf("large", what="a large community like 65101:1:100 (three numbers of 0-4294967295)")
_ADD = ("additive", "none")      # a set's words: add to the route's communities (FRR's additive), or clear them
_LISTS = {
    "community-list": Obj({"description": S(), "rule": Coll(RULE, Obj({
        "action": ACTION, "community": Coll(COMMUNITY, Empty())}))}),
    "large-community-list": Obj({"description": S(), "rule": Coll(RULE, Obj({
        "action": ACTION, "large-community": Coll(LARGE, Empty())}))}),
    "as-path-list": Obj({"description": S(), "rule": Coll(RULE, Obj({
        "action": ACTION, "aspath-exp": Leaf("aspath", what="an AS-path regular expression: 1-255 of digits, "
                                                            "spaces and _ ^ $ . * + ? ( ) [ ] { } | , -")}))})}
_ROUTE_MAP = Obj({"description": S(), "rule": Coll(RULE, Obj({
    "action": ACTION, "description": S(),
    "match": Obj({"ip-prefix-list": POLICY, "type": Leaf("enum", choices=("ipv4", "ipv6")), "interface": IFNAME,
                  "tag": Leaf("int", lo=1, hi=4294967295, what="1-4294967295"),
                  "community-list": LIST, "large-community-list": LIST, "as-path-list": LIST,
                  **{k: Opaque() for k in _RM_MATCH}}),
    "set": Obj({"local-preference": U32, "metric": U32, "weight": U32,
                "tag": Leaf("int", lo=1, hi=4294967295, what="1-4294967295"),
                "community": Coll(Leaf("community", choices=_WELL_KNOWN + _ADD, what=COMMUNITY.what +
                                       ", additive or none"), Empty()),
                "large-community": Coll(Leaf("large", choices=_ADD, what=LARGE.what + ", additive or none"), Empty()),
                "as-path-prepend": Obj({"as": ASN, "last-as": Leaf("int", lo=1, hi=10, what="1-10")}),
                "ip-nexthop": Leaf("ipv4", choices=("unchanged", "peer-addr"),
                                   what="an IPv4 address, unchanged or peer-addr"),
                **{k: Opaque() for k in _RM_SET}}),
    **{k: Opaque() for k in ("call", "exit-policy")}}))})
# a static route: its next hops (`via`), and next hops at a distance (`distance.<n>.via`), as NVUE holds them
_TAG = Leaf("int", lo=1, hi=4294967295, choices=("none",), what="a tag (1-4294967295) or none")
_VIA = Coll(VIA, Obj({"interface": IFNAME, "flag": Leaf("enum", choices=("onlink",)), "vrf": S(),
                      "type": Leaf("enum", choices=("interface", "ipv4-address", "ipv6-address", "blackhole",
                                                    "reject"))}))
_STATIC = Coll(PREFIX, Obj({"via": _VIA, "tag": _TAG, "address-family": Leaf("enum", choices=("ipv4-unicast",)),
                            "distance": Coll(Leaf("int", lo=1, hi=255, what="an administrative distance (1-255)"),
                                             Obj({"via": _VIA, "tag": _TAG}))}))
# OSPFv2 (twin.nvue.ospf): a VRF's instance runs; an interface's own settings are checked and stored
AREA = Leaf("area", what="an OSPF area: 0-4294967295 or dotted like 0.0.0.1")
_RID = Leaf("ipv4", choices=("none", "auto"), what="an IPv4 address (a router id)")
_OSPF_VRF = Obj({"enable": ON_OFF, "router-id": _RID,
                 "area": Coll(AREA, Obj({"network": Coll(PREFIX, Empty()), "default-lsa-cost": S(),
                                         "type": S("enum", choices=("normal", "stub", "totally-stub", "nssa",
                                                                    "totally-nssa")),
                                         "range": Opaque(), "filter-list": Opaque()})),
                 **{k: Opaque() for k in ("default-originate", "distance", "log", "max-metric", "redistribute",
                                          "timers")},
                 "reference-bandwidth": S(), "rfc1583-compatible": S()})
_SECONDS = {"what": "1-65535 seconds", "lo": 1, "hi": 65535}
_OSPF_PORT = Obj({"enable": S("bool"), "area": S("area", what=AREA.what), "passive": S("bool"),
                  "network-type": S("enum", choices=("broadcast", "non-broadcast", "point-to-point",
                                                     "point-to-multipoint")),
                  "cost": S("int", lo=1, hi=65535, choices=("auto",), what="1-65535 or auto"),
                  "priority": S("int", lo=0, hi=255, what="0-255"), "mtu-ignore": S("bool"),
                  "timers": Obj({"hello-interval": S("int", **_SECONDS),
                                 "dead-interval": S("int", choices=("minimal",), **_SECONDS),
                                 "hello-multiplier": S("int", lo=1, hi=10, what="1-10"),
                                 "retransmit-interval": S("int", **_SECONDS), "transmit-delay": S("int", **_SECONDS)}),
                  "authentication": Opaque(), "bfd": Opaque()})

# --- issue 44, kernel half: MTUs and ACLs the node runs (twin.nvue.mtu, twin.nvue.acl) ---------------
MTU = Leaf("int", lo=552, hi=9216, what="an MTU of 552-9216 bytes")
_PORT = Leaf("int", lo=0, hi=65535, choices=("ANY",), what="a port number (0-65535) or ANY")
_ACL_IP = Obj({
    "source-ip": Leaf("prefix", choices=("ANY",), what="an IPv4 prefix like 10.1.10.0/24, or ANY"),
    "dest-ip": Leaf("prefix", choices=("ANY",), what="an IPv4 prefix like 10.1.10.0/24, or ANY"),
    "protocol": Leaf("int", lo=0, hi=255, choices=("tcp", "udp", "icmp"), what="tcp, udp, icmp or 0-255"),
    "source-port": Coll(_PORT, Empty()), "dest-port": Coll(_PORT, Empty()),
    "dscp": Leaf("int", lo=0, hi=63, what="a DSCP (0-63)"),
    # kept, and refused on the node (a rule without them would match more): twin.nvue.acl
    **{k: Opaque() for k in ("tcp", "ecn", "fragment", "icmp-type", "icmpv6-type", "state", "ttl")}})
_ACL = Obj({"type": Leaf("enum", choices=("ipv4", "ipv6", "mac")), "description": S(),
            "rule": Coll(RULE, Obj({
                "match": Obj({"ip": _ACL_IP, "mac": Opaque()}),
                "action": Obj({"permit": Obj({}), "deny": Obj({}), "log": Obj({}),
                               "set": Obj({"dscp": Leaf("int", lo=0, hi=63, what="a DSCP (0-63)"),
                                           **{k: Opaque() for k in ("class", "cos")}}),
                               **{k: Opaque() for k in ("police", "erspan", "span")}}),
                "remark": S()}))})
_ACL_WAY = Obj({"control-plane": Obj({})})
# RoCE QoS (twin.nvue.qos): roce, the default-global profile's DSCP map, PFC priorities and ECN; the rest stored
_PROFILE = Leaf("enum", choices=("default-global",), what="default-global (the one profile twin runs)")
_SP = Leaf("int", lo=0, hi=7, what="a switch priority (0-7)")
_QOS = Obj({
    "roce": Obj({"enable": ON_OFF, "mode": Leaf("enum", choices=("lossless", "lossy")), "cable-length": S()}),
    "mapping": Coll(_PROFILE, Obj({"dscp": Coll(Leaf("int", lo=0, hi=63, what="a DSCP (0-63)"),
                                                Obj({"switch-priority": _SP})),
                                   "trust": S(), "pcp": Opaque(), "port-default-sp": S()})),
    "pfc": Coll(_PROFILE, Obj({"switch-priority": Coll(_SP, Empty()),
                               **{k: S() for k in ("cable-length", "port-buffer", "xoff-threshold", "xon-threshold",
                                                   "rx", "tx")}})),
    "congestion-control": Coll(_PROFILE, Obj({"traffic-class": Coll(Leaf("int", lo=0, hi=7, what="a traffic class "
                                                                                               "(0-7)"), Obj({
        "ecn": Leaf("enum", choices=("enable", "disable")),
        "min-threshold": Leaf("int", lo=1, hi=1 << 30, what="bytes"),
        "max-threshold": Leaf("int", lo=1, hi=1 << 30, what="bytes"),
        "probability": Leaf("int", lo=1, hi=100, what="a probability (1-100 %)"),
        "red": S()}))})),
    **{k: Opaque() for k in ("egress-scheduler", "egress-queue-mapping", "traffic-pool", "buffer-pool", "link-pause",
                             "egress-shaper", "remark", "advance-buffer-config", "pfc-watchdog", "ingress-buffer-pool",
                             "egress-buffer-pool")}}, open=True)
_ACL_BIND = Coll(POLICY, Obj({"inbound": _ACL_WAY, "outbound": _ACL_WAY}))

_INTERFACE = Obj({
    "type": Leaf("enum", choices=("swp", "eth", "bond", "loopback", "svi", "sub", "peerlink", "tunnel")),
    "vlan": VLAN,
    "ip": Obj({
        "address": Coll(Leaf("prefix", choices=("dhcp",), what="an IP prefix like 10.1.10.2/24, or dhcp"), Empty()),
        "vrf": VRFNAME,
        "vrr": Obj({"enable": ON_OFF, "address": Coll(PREFIX, Empty()),
                    "mac-address": Leaf("mac", choices=("auto",), what="a MAC address or auto"),
                    "state": Leaf("enum", choices=("up", "down"), keyed=True), "mac-id": S()}),
        **{k: Opaque() for k in ("gateway", "ipv4", "ipv6", "igmp", "vrrp", "neighbor-discovery")}}),
    "link": Obj({"state": Leaf("enum", choices=("up", "down"), keyed=True),
                 "mtu": MTU,
                 **{k: S() for k in ("auto-negotiate", "breakout", "duplex", "speed", "fec")},
                 "dot1x": Opaque()}),
    "bridge": Obj({"domain": Coll(DOMAIN, Obj({
        "access": VLAN,
        "vlan": Opaque(), "untagged": S(), "stp": Opaque(), "learning": S()}))}),
    # a bond: a Linux bond where the lab makes them (twin.nvue.bonds), else stored; MLAG stored either way
    "bond": Obj({"member": Coll(IFNAME, Empty(), ranges=True), "mode": Leaf("enum", choices=("lacp", "static")),
                 "lacp-rate": Leaf("enum", choices=("fast", "slow")), "lacp-bypass": S(),
                 "mlag": Opaque(), **{k: S() for k in ("down-delay", "up-delay", "min-links")}}),
    "router": Obj({"ospf": _OSPF_PORT, **{k: Opaque() for k in ("ospf6", "pim", "igmp", "vrrp", "pbr",
                                                                 "adaptive-routing")}}),
    **{k: Opaque() for k in ("lldp", "evpn", "ptp", "tunnel", "qos", "synce",
                             "dot1x", "neighbor", "port-security")},
    "acl": _ACL_BIND,
    "description": S(), "base-interface": S(),
})

TREE = Obj({
    "system": Obj({
        "hostname": HOSTNAME,
        "global": Obj({"anycast-mac": Leaf("mac", choices=("none",), what="a MAC address or none"),
                       "fabric-mac": Leaf("mac", choices=("none",), what="a MAC address or none"),
                       "fabric-id": Leaf("int", lo=1, hi=255, what="1-255"),
                       "anycast-id": S(), "system-mac": S(), "reserved": Opaque()}),
        **{k: Opaque() for k in ("message", "config", "control-plane", "port-mirror", "aaa", "api", "ssh-server",
                                 "timezone", "date-time", "wjh", "security", "snmp-server", "syslog", "ztp",
                                 "reboot", "forwarding", "counter", "cpu", "dns", "acl", "telemetry", "sflow",
                                 "nat", "link", "dhcp-client", "maintenance", "lldp", "log")}},
        open=True),
    "interface": Coll(IFNAME, _INTERFACE, ranges=True),
    "bridge": Obj({"domain": Coll(DOMAIN, Obj({
        "vlan": Coll(VLAN, Obj({"vni": Coll(VNI, Obj({"flooding": Opaque(), "mac-learning": S()})),
                                "ptp": Opaque(), "multicast": Opaque()})),
        **{k: Opaque() for k in ("stp", "multicast")},
        **{k: S() for k in ("type", "untagged", "encap", "mac-address", "vlan-vni-offset")}}))}),
    "nve": Obj({"vxlan": Obj({
        "enable": ON_OFF, "source": Obj({"address": Leaf("ipv4", choices=("auto",), what="an IPv4 address")}),
        "arp-nd-suppress": ON_OFF,
        **{k: Opaque() for k in ("mlag", "flooding", "encapsulation", "decapsulation")},
        **{k: S() for k in ("mac-learning", "mtu", "port")}})}),
    "evpn": Obj({"enable": ON_OFF,
                 **{k: Opaque() for k in ("route-advertise", "dad", "evi", "vni", "multihoming", "mac-vrf-soo")}}),
    "router": Obj({
        "bgp": Obj({"enable": ON_OFF, "autonomous-system": ASN, "router-id": IPV4, "graceful-shutdown": ON_OFF,
                    **{k: Opaque() for k in ("graceful-restart", "convergence-wait", "queue-limit")},
                    **{k: S() for k in ("policy-update-timer", "wait-for-install")}}),
        "vrr": Obj({"enable": ON_OFF}),
        "policy": Obj({"prefix-list": Coll(POLICY, _PREFIX_LIST), "route-map": Coll(POLICY, _ROUTE_MAP),
                       **{k: Coll(LIST, v) for k, v in _LISTS.items()}, "ext-community-list": Opaque()}),
        "ospf": Obj({"enable": ON_OFF, "router-id": _RID, "timers": Opaque()}),
        **{k: Opaque() for k in ("pim", "igmp", "vrrp", "adaptive-routing", "pbr", "nexthop",
                                 "nexthop-group", "ptm", "bfd")}}),
    "vrf": Coll(VRFNAME, Obj({
        "evpn": Obj({"enable": ON_OFF, "vni": Coll(VNI, Obj({"prefix-routes-only": S()})), "vlan": S()}),
        "router": Obj({"bgp": _BGP_VRF, "static": _STATIC, "ospf": _OSPF_VRF,
                        **{k: Opaque() for k in ("pim", "rib")}}),
        "loopback": Opaque(), "ptp": Opaque(), "table": S(), "dhcp-server-v4": Opaque()})),
    "acl": Coll(POLICY, _ACL),
    "qos": _QOS,
    **{k: Opaque() for k in ("mlag", "service", "platform")},
})
