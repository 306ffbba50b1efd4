"""NVUE's routing places: BGP (neighbors, peer groups, BFD, address families, a VRF's instance),
route policy (prefix lists, route maps, community, large-community and AS-path lists) and static
routes, as `twin.nvue.schema` assembles them into the tree."""

from __future__ import annotations

from twin.nvue.places import (
    ACTION,
    ASN,
    GROUP,
    IFNAME,
    IPV4,
    NEIGHBOR,
    ON_OFF,
    POLICY,
    PREFIX,
    RT,
    RULE,
    U32,
    VIA,
    VRFNAME,
    Coll,
    Empty,
    Leaf,
    Obj,
    Opaque,
    S,
)

_STORED_AF: dict[str, Leaf | Opaque]  # stored keys of an address family: opaque subtrees, then leaves
_STORED_AF = {
    k: Opaque()
    for k in (
        "attribute-mod",
        "aspath",
        "prefix-limits",
        "default-route-origination",
        "policy",
        "community-advertise",
        "conditional-advertise",
    )
}
_BOUND = Obj({"route-map": POLICY, "prefix-list": POLICY, "aspath-list": S()})  # a neighbor's policy one way
_V4_AF = {**_STORED_AF, "policy": Obj({"inbound": _BOUND, "outbound": _BOUND})}
_STORED_AF.update(
    {
        k: S()
        for k in (
            "route-reflector-client",
            "route-server-client",
            "soft-reconfiguration",
            "nexthop-setting",
            "add-path-tx",
            "weight",
        )
    }
)


# BFD of a BGP neighbor or peer-group, run by FRR's bfdd (issue 44)
_BFD = Obj(
    {
        "enable": ON_OFF,
        "detect-multiplier": Leaf("int", lo=2, hi=255, what="2-255"),
        "min-rx-interval": Leaf("int", lo=50, hi=60000, what="50-60000 ms"),
        "min-tx-interval": Leaf("int", lo=50, hi=60000, what="50-60000 ms"),
    }
)


def _peer(*emulated: str) -> Obj:
    """A BGP peer-group or neighbor: its emulated keys, the rest of NVUE's stored."""
    keys = {
        "remote-as": Leaf("asn", choices=("internal", "external"), what="internal, external or an AS number"),
        "peer-group": Leaf("group", choices=("none",), what="a peer-group name"),
        "type": Leaf("enum", choices=("numbered", "unnumbered")),
        "address-family": Obj(
            {
                "ipv4-unicast": Obj({"enable": ON_OFF, **_V4_AF}),
                "l2vpn-evpn": Obj({"enable": ON_OFF, **_STORED_AF}),
                "ipv6-unicast": Opaque(),
            }
        ),
        "timers": Obj(
            {
                "connection-retry": Leaf("int", lo=1, hi=65535, choices=("auto",), what="1-65535 seconds"),
                "route-advertisement": Leaf(
                    "int", lo=1, hi=600, choices=("none", "auto"), what="1-600 seconds or none"
                ),
                "keepalive": Leaf("int", lo=0, hi=65535, choices=("auto", "none"), what="0-65535 seconds or auto"),
                "hold": Leaf("int", lo=0, hi=65535, choices=("auto", "none"), what="0-65535 seconds or auto"),
            }
        ),
        "bfd": _BFD,
    }
    out = {k: v for k, v in keys.items() if k in emulated}
    out.update({k: Opaque() for k in ("capabilities", "local-as", "graceful-restart", "ttl-security")})
    out.update(
        {
            k: S()
            for k in (
                "password",
                "enforce-first-as",
                "passive-mode",
                "nexthop-connected-check",
                "multihop-ttl",
                "description",
                "enable",
                "update-source",
            )
        }
    )
    return Obj(out)


BGP_VRF = Obj(
    {
        "enable": ON_OFF,
        "autonomous-system": ASN,
        "router-id": IPV4,
        "rd": S("rd", choices=("auto", "none"), what="a route distinguisher like 10.10.10.1:20, 65101:20 or auto"),
        "address-family": Obj(
            {
                "ipv4-unicast": Obj(
                    {
                        "enable": ON_OFF,
                        "redistribute": Obj(
                            {
                                "connected": Obj({"enable": ON_OFF, "metric": S(), "route-map": POLICY}),
                                "static": Obj({"enable": ON_OFF, "metric": S(), "route-map": POLICY}),
                                "kernel": Opaque(),
                                "ospf": Opaque(),
                            }
                        ),
                        "network": Coll(PREFIX, Empty(extra={"route-map": S()})),
                        "route-export": Obj(
                            {"to-evpn": Obj({"enable": ON_OFF, "route-map": S(), "default-route-origination": S()})}
                        ),
                        "route-import": Obj(
                            {"from-vrf": Obj({"enable": ON_OFF, "list": Coll(VRFNAME, Empty()), "route-map": S()})}
                        ),  # VRF route leaking (issue 44)
                        "aggregate-route": Opaque(),
                        "multipaths": Opaque(),
                        "admin-distance": Opaque(),
                        "rib-filter": S(),
                    }
                ),
                "l2vpn-evpn": Obj({"enable": ON_OFF}),
                "ipv6-unicast": Opaque(),
            }
        ),
        "peer-group": Coll(GROUP, _peer("remote-as", "address-family", "timers", "bfd")),
        "neighbor": Coll(NEIGHBOR, _peer("remote-as", "peer-group", "type", "address-family", "timers", "bfd")),
        "path-selection": Obj(
            {
                "multipath": Obj({"aspath-ignore": ON_OFF, "generate-asset": S(), "bandwidth": S()}),
                "aspath": Opaque(),
                "med": Opaque(),
                "routerid-compare": S(),
            }
        ),
        "route-import": Obj({"from-evpn": Obj({"route-target": Coll(RT, Empty())})}),
        "route-export": Obj({"to-evpn": Obj({"route-target": Coll(RT, Empty())})}),
        **{k: Opaque() for k in ("timers", "confederation", "route-reflection", "dynamic-neighbor")},
        "dynamic-peer-limit": S(),
    }
)

# router policy: prefix lists and route maps (a route-map rule's match and set keys twin does not emulate
# are kept, and refused on the node: a rule without them would match, or do, something else)
PREFIX_LIST = Obj(
    {
        "type": Leaf("enum", choices=("ipv4", "ipv6")),
        "description": S(),
        "rule": Coll(
            RULE,
            Obj(
                {
                    "action": ACTION,
                    "match": Coll(
                        PREFIX,
                        Obj(
                            {
                                "max-prefix-len": Leaf("int", lo=0, hi=128, what="a prefix length (0-128)"),
                                "min-prefix-len": Leaf("int", lo=0, hi=128, what="a prefix length (0-128)"),
                            }
                        ),
                    ),
                }
            ),
        ),
    }
)
_RM_MATCH = (
    "evpn-default-route",
    "evpn-route-type",
    "evpn-vni",
    "ip-nexthop",
    "ip-nexthop-len",
    "ip-nexthop-list",
    "ip-nexthop-type",
    "ip-prefix-len",
    "local-preference",
    "metric",
    "origin",
    "peer",
    "source-protocol",
    "source-vrf",
    "ipv6-prefix-list",
)
_RM_SET = (
    "aggregator-as",
    "as-path-exclude",
    "atomic-aggregate",
    "community-delete-list",
    "ext-community-bw",
    "ext-community-rt",
    "ext-community-soo",
    "forwarding-address",
    "ipv6-nexthop-global",
    "ipv6-nexthop-local",
    "ipv6-nexthop-prefer-global",
    "large-community-delete-list",
    "metric-type",
    "origin",
    "originator-id",
    "source-ip",
)
# community, large-community and AS-path lists and their use in route maps (issue 44: twin.nvue.policy)
LIST = Leaf("list", what="a list name (1-63 of letters, digits, _ and -, starting with a letter) or a number 1-99")
_WELL_KNOWN = (
    "internet",
    "local-AS",
    "no-advertise",
    "no-export",
    "graceful-shutdown",
    "blackhole",
    "no-peer",
    "accept-own",
)
COMMUNITY = Leaf(
    "community", choices=_WELL_KNOWN, what="a community AA:NN (each 0-65535) or one of " + ", ".join(_WELL_KNOWN)
)
LARGE = Leaf("large", what="a large community like 65101:1:100 (three numbers of 0-4294967295)")
_ADD = ("additive", "none")  # a set's words: add to the route's communities (FRR's additive), or clear them
LISTS = {
    "community-list": Obj(
        {"description": S(), "rule": Coll(RULE, Obj({"action": ACTION, "community": Coll(COMMUNITY, Empty())}))}
    ),
    "large-community-list": Obj(
        {"description": S(), "rule": Coll(RULE, Obj({"action": ACTION, "large-community": Coll(LARGE, Empty())}))}
    ),
    "as-path-list": Obj(
        {
            "description": S(),
            "rule": Coll(
                RULE,
                Obj(
                    {
                        "action": ACTION,
                        "aspath-exp": Leaf(
                            "aspath",
                            what="an AS-path regular expression: 1-255 of digits, "
                            "spaces and _ ^ $ . * + ? ( ) [ ] { } | , -",
                        ),
                    }
                ),
            ),
        }
    ),
}
ROUTE_MAP = Obj(
    {
        "description": S(),
        "rule": Coll(
            RULE,
            Obj(
                {
                    "action": ACTION,
                    "description": S(),
                    "match": Obj(
                        {
                            "ip-prefix-list": POLICY,
                            "type": Leaf("enum", choices=("ipv4", "ipv6")),
                            "interface": IFNAME,
                            "tag": Leaf("int", lo=1, hi=4294967295, what="1-4294967295"),
                            "community-list": LIST,
                            "large-community-list": LIST,
                            "as-path-list": LIST,
                            **{k: Opaque() for k in _RM_MATCH},
                        }
                    ),
                    "set": Obj(
                        {
                            "local-preference": U32,
                            "metric": U32,
                            "weight": U32,
                            "tag": Leaf("int", lo=1, hi=4294967295, what="1-4294967295"),
                            "community": Coll(
                                Leaf(
                                    "community", choices=_WELL_KNOWN + _ADD, what=COMMUNITY.what + ", additive or none"
                                ),
                                Empty(),
                            ),
                            "large-community": Coll(
                                Leaf("large", choices=_ADD, what=LARGE.what + ", additive or none"), Empty()
                            ),
                            "as-path-prepend": Obj({"as": ASN, "last-as": Leaf("int", lo=1, hi=10, what="1-10")}),
                            "ip-nexthop": Leaf(
                                "ipv4",
                                choices=("unchanged", "peer-addr"),
                                what="an IPv4 address, unchanged or peer-addr",
                            ),
                            **{k: Opaque() for k in _RM_SET},
                        }
                    ),
                    **{k: Opaque() for k in ("call", "exit-policy")},
                }
            ),
        ),
    }
)
# a static route: its next hops (`via`), and next hops at a distance (`distance.<n>.via`), as NVUE holds them
_TAG = Leaf("int", lo=1, hi=4294967295, choices=("none",), what="a tag (1-4294967295) or none")
_VIA = Coll(
    VIA,
    Obj(
        {
            "interface": IFNAME,
            "flag": Leaf("enum", choices=("onlink",)),
            "vrf": S(),
            "type": Leaf("enum", choices=("interface", "ipv4-address", "ipv6-address", "blackhole", "reject")),
        }
    ),
)
STATIC = Coll(
    PREFIX,
    Obj(
        {
            "via": _VIA,
            "tag": _TAG,
            "address-family": Leaf("enum", choices=("ipv4-unicast",)),
            "distance": Coll(
                Leaf("int", lo=1, hi=255, what="an administrative distance (1-255)"), Obj({"via": _VIA, "tag": _TAG})
            ),
        }
    ),
)
