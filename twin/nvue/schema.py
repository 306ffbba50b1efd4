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

from twin.nvue.places import (
    ASN,
    DOMAIN,
    HOSTNAME,
    IFNAME,
    IPV4,
    ON_OFF,
    POLICY,
    PREFIX,
    VLAN,
    VNI,
    VRFNAME,
    Coll,
    Empty,
    Leaf,
    Obj,
    Opaque,
    S,
)
from twin.nvue.schema_kernel import ACL, ACL_BIND, LLDP, LLDP_PORT, MTU, QOS
from twin.nvue.schema_ospf import OSPF_PORT, OSPF_VRF, ROUTER_ID
from twin.nvue.schema_routing import BGP_VRF, LIST, LISTS, PREFIX_LIST, ROUTE_MAP, STATIC

VERSION = "Cumulus Linux 5.9"
API = "nvue_v1"

INTERFACE = Obj(
    {
        "type": Leaf("enum", choices=("swp", "eth", "bond", "loopback", "svi", "sub", "peerlink", "tunnel")),
        "vlan": VLAN,
        "ip": Obj(
            {
                "address": Coll(
                    Leaf("prefix", choices=("dhcp",), what="an IP prefix like 10.1.10.2/24, or dhcp"), Empty()
                ),
                "vrf": VRFNAME,
                "vrr": Obj(
                    {
                        "enable": ON_OFF,
                        "address": Coll(PREFIX, Empty()),
                        "mac-address": Leaf("mac", choices=("auto",), what="a MAC address or auto"),
                        "state": Leaf("enum", choices=("up", "down"), keyed=True),
                        "mac-id": S(),
                    }
                ),
                **{k: Opaque() for k in ("gateway", "ipv4", "ipv6", "igmp", "vrrp", "neighbor-discovery")},
            }
        ),
        "link": Obj(
            {
                "state": Leaf("enum", choices=("up", "down"), keyed=True),
                "mtu": MTU,
                **{k: S() for k in ("auto-negotiate", "breakout", "duplex", "speed", "fec")},
                "dot1x": Opaque(),
            }
        ),
        "bridge": Obj(
            {
                "domain": Coll(
                    DOMAIN, Obj({"access": VLAN, "vlan": Opaque(), "untagged": S(), "stp": Opaque(), "learning": S()})
                )
            }
        ),
        # a bond: a Linux bond where the lab makes them (twin.nvue.bonds), else stored; MLAG stored either way
        "bond": Obj(
            {
                "member": Coll(IFNAME, Empty(), ranges=True),
                "mode": Leaf("enum", choices=("lacp", "static")),
                "lacp-rate": Leaf("enum", choices=("fast", "slow")),
                "lacp-bypass": S(),
                "mlag": Opaque(),
                **{k: S() for k in ("down-delay", "up-delay", "min-links")},
            }
        ),
        "router": Obj(
            {"ospf": OSPF_PORT, **{k: Opaque() for k in ("ospf6", "pim", "igmp", "vrrp", "pbr", "adaptive-routing")}}
        ),
        "lldp": LLDP_PORT,
        **{k: Opaque() for k in ("evpn", "ptp", "tunnel", "qos", "synce", "dot1x", "neighbor", "port-security")},
        "acl": ACL_BIND,
        "description": S(),
        "base-interface": S(),
    }
)

TREE = Obj(
    {
        "system": Obj(
            {
                "hostname": HOSTNAME,
                "global": Obj(
                    {
                        "anycast-mac": Leaf("mac", choices=("none",), what="a MAC address or none"),
                        "fabric-mac": Leaf("mac", choices=("none",), what="a MAC address or none"),
                        "fabric-id": Leaf("int", lo=1, hi=255, what="1-255"),
                        "anycast-id": S(),
                        "system-mac": S(),
                        "reserved": Opaque(),
                    }
                ),
                # its ACLs run (twin.nvue.aclbind); the rest (CoPP's traps and policers) stored
                "control-plane": Obj({"acl": ACL_BIND}, open=True),
                **{
                    k: Opaque()
                    for k in (
                        "message",
                        "config",
                        "port-mirror",
                        "aaa",
                        "api",
                        "ssh-server",
                        "timezone",
                        "date-time",
                        "wjh",
                        "security",
                        "snmp-server",
                        "syslog",
                        "ztp",
                        "reboot",
                        "forwarding",
                        "counter",
                        "cpu",
                        "dns",
                        "acl",
                        "telemetry",
                        "sflow",
                        "nat",
                        "link",
                        "dhcp-client",
                        "maintenance",
                        "lldp",
                        "log",
                    )
                },
            },
            open=True,
        ),
        "interface": Coll(IFNAME, INTERFACE, ranges=True),
        "bridge": Obj(
            {
                "domain": Coll(
                    DOMAIN,
                    Obj(
                        {
                            "vlan": Coll(
                                VLAN,
                                Obj(
                                    {
                                        "vni": Coll(VNI, Obj({"flooding": Opaque(), "mac-learning": S()})),
                                        "ptp": Opaque(),
                                        "multicast": Opaque(),
                                    }
                                ),
                            ),
                            **{k: Opaque() for k in ("stp", "multicast")},
                            **{k: S() for k in ("type", "untagged", "encap", "mac-address", "vlan-vni-offset")},
                        }
                    ),
                )
            }
        ),
        "nve": Obj(
            {
                "vxlan": Obj(
                    {
                        "enable": ON_OFF,
                        "source": Obj({"address": Leaf("ipv4", choices=("auto",), what="an IPv4 address")}),
                        "arp-nd-suppress": ON_OFF,
                        **{k: Opaque() for k in ("mlag", "flooding", "encapsulation", "decapsulation")},
                        **{k: S() for k in ("mac-learning", "mtu", "port")},
                    }
                )
            }
        ),
        "evpn": Obj(
            {
                "enable": ON_OFF,
                **{k: Opaque() for k in ("route-advertise", "dad", "evi", "vni", "multihoming", "mac-vrf-soo")},
            }
        ),
        "router": Obj(
            {
                "bgp": Obj(
                    {
                        "enable": ON_OFF,
                        "autonomous-system": ASN,
                        "router-id": IPV4,
                        "graceful-shutdown": ON_OFF,
                        **{k: Opaque() for k in ("graceful-restart", "convergence-wait", "queue-limit")},
                        **{k: S() for k in ("policy-update-timer", "wait-for-install")},
                    }
                ),
                "vrr": Obj({"enable": ON_OFF}),
                "policy": Obj(
                    {
                        "prefix-list": Coll(POLICY, PREFIX_LIST),
                        "route-map": Coll(POLICY, ROUTE_MAP),
                        **{k: Coll(LIST, v) for k, v in LISTS.items()},
                        "ext-community-list": Opaque(),
                    }
                ),
                "ospf": Obj({"enable": ON_OFF, "router-id": ROUTER_ID, "timers": Opaque()}),
                **{
                    k: Opaque()
                    for k in (
                        "pim",
                        "igmp",
                        "vrrp",
                        "adaptive-routing",
                        "pbr",
                        "nexthop",
                        "nexthop-group",
                        "ptm",
                        "bfd",
                    )
                },
            }
        ),
        "vrf": Coll(
            VRFNAME,
            Obj(
                {
                    "evpn": Obj({"enable": ON_OFF, "vni": Coll(VNI, Obj({"prefix-routes-only": S()})), "vlan": S()}),
                    "router": Obj(
                        {"bgp": BGP_VRF, "static": STATIC, "ospf": OSPF_VRF, **{k: Opaque() for k in ("pim", "rib")}}
                    ),
                    "loopback": Opaque(),
                    "ptp": Opaque(),
                    "table": S(),
                    "dhcp-server-v4": Opaque(),
                }
            ),
        ),
        "acl": Coll(POLICY, ACL),
        "qos": QOS,
        # lldp's timers run by the node's lldpd (twin.nvue.lldp); the other services are the switch's own
        "service": Obj(
            {
                "lldp": LLDP,
                **{
                    k: Opaque()
                    for k in (
                        "dns",
                        "ntp",
                        "syslog",
                        "snmp-server",
                        "dhcp-relay",
                        "dhcp-relay6",
                        "dhcp-server",
                        "dhcp-server6",
                        "ptp",
                        "synce",
                    )
                },
            },
            open=True,
        ),
        **{k: Opaque() for k in ("mlag", "platform")},
    }
)
