"""NVUE's places the node runs beside FRR: MTUs, ACLs and their bindings, RoCE QoS (the kernel's:
`twin.nvue.mtu`, `twin.nvue.acl` and `twin.nvue.aclbind`, `twin.nvue.qos`) and LLDP (its lldpd's: `twin.nvue.lldp`), as
`twin.nvue.schema` assembles them into the tree."""

from __future__ import annotations

from twin.nvue.places import ON_OFF, POLICY, RULE, STORED, Coll, Empty, Leaf, Obj, Opaque, S

# --- issue 44, kernel half: MTUs and ACLs the node runs (twin.nvue.mtu, twin.nvue.acl, twin.nvue.aclbind) -----
MTU = Leaf("int", lo=552, hi=9216, what="an MTU of 552-9216 bytes")
_PORT = Leaf("int", lo=0, hi=65535, choices=("ANY",), what="a port number (0-65535) or ANY")
_TCP_FLAG = Leaf("enum", choices=("ack", "fin", "psh", "rst", "syn", "urg", "all", "none"))
_ACL_IP = Obj(
    {
        "source-ip": Leaf("prefix", choices=("ANY",), what="an IP prefix like 10.1.10.0/24 or 2001:db8::/32, or ANY"),
        "dest-ip": Leaf("prefix", choices=("ANY",), what="an IP prefix like 10.1.10.0/24 or 2001:db8::/32, or ANY"),
        "protocol": Leaf(
            "int", lo=0, hi=255, choices=("tcp", "udp", "icmp", "icmpv6"), what="tcp, udp, icmp, icmpv6 or 0-255"
        ),
        "source-port": Coll(_PORT, Empty()),
        "dest-port": Coll(_PORT, Empty()),
        "dscp": Leaf("int", lo=0, hi=63, what="a DSCP (0-63)"),
        "tcp": Obj({"flags": Coll(_TCP_FLAG, Empty()), "mask": Coll(_TCP_FLAG, Empty())}),
        "ecn": Obj(
            {
                "flags": Coll(Leaf("enum", choices=("tcp-cwr", "tcp-ece")), Empty()),
                "ip-ect": Leaf("int", lo=0, hi=3, what="an ECN codepoint (0-3)"),
            }
        ),
        # kept, and refused on the node (a rule without them would match more): twin.nvue.acl
        **{k: Opaque() for k in ("fragment", "icmp-type", "icmpv6-type", "state", "ttl")},
    }
)
_ANY_MAC = Leaf("mac", choices=("ANY",), what="a MAC address like 00:00:5e:00:01:01, or ANY")
_ACL_MAC = Obj(
    {
        "source-mac": _ANY_MAC,
        "source-mac-mask": Leaf("mac", what="a MAC mask like ff:ff:ff:00:00:00"),
        "dest-mac": _ANY_MAC,
        "dest-mac-mask": Leaf("mac", what="a MAC mask like ff:ff:ff:00:00:00"),
        "protocol": Leaf(
            "int", lo=0, hi=65535, choices=("ANY", "arp", "ipv4", "ipv6"), what="arp, ipv4, ipv6, ANY or an EtherType"
        ),
        "vlan": Leaf("int", lo=1, hi=4094, what="a VLAN (1-4094)"),  # refused on the node (twin.nvue.acl)
    }
)
ACL = Obj(
    {
        "type": Leaf("enum", choices=("ipv4", "ipv6", "mac")),
        "description": S(),
        "rule": Coll(
            RULE,
            Obj(
                {
                    "match": Obj({"ip": _ACL_IP, "mac": _ACL_MAC}),
                    "action": Obj(
                        {
                            "permit": Obj({}),
                            "deny": Obj({}),
                            "log": Obj({}),
                            "set": Obj(
                                {
                                    "dscp": Leaf("int", lo=0, hi=63, what="a DSCP (0-63)"),
                                    **{k: Opaque() for k in ("class", "cos")},
                                }
                            ),
                            **{k: Opaque() for k in ("police", "erspan", "span")},
                        }
                    ),
                    "remark": S(),
                }
            ),
        ),
    }
)
_ACL_WAY = Obj({"control-plane": Obj({})})
# RoCE QoS (twin.nvue.qos): roce, the default-global profile's DSCP map, PFC priorities and ECN; the rest stored
_PROFILE = Leaf("enum", choices=("default-global",), what="default-global (the one profile twin runs)")
_SP = Leaf("int", lo=0, hi=7, what="a switch priority (0-7)")
QOS = Obj(
    {
        "roce": Obj({"enable": ON_OFF, "mode": Leaf("enum", choices=("lossless", "lossy")), "cable-length": S()}),
        "mapping": Coll(
            _PROFILE,
            Obj(
                {
                    "dscp": Coll(Leaf("int", lo=0, hi=63, what="a DSCP (0-63)"), Obj({"switch-priority": _SP})),
                    "trust": S(),
                    "pcp": Opaque(),
                    "port-default-sp": S(),
                }
            ),
        ),
        "pfc": Coll(
            _PROFILE,
            Obj(
                {
                    "switch-priority": Coll(_SP, Empty()),
                    **{k: S() for k in ("cable-length", "port-buffer", "xoff-threshold", "xon-threshold", "rx", "tx")},
                }
            ),
        ),
        "congestion-control": Coll(
            _PROFILE,
            Obj(
                {
                    "traffic-class": Coll(
                        Leaf("int", lo=0, hi=7, what="a traffic class (0-7)"),
                        Obj(
                            {
                                "ecn": Leaf("enum", choices=("enable", "disable")),
                                "min-threshold": Leaf("int", lo=1, hi=1 << 30, what="bytes"),
                                "max-threshold": Leaf("int", lo=1, hi=1 << 30, what="bytes"),
                                "probability": Leaf("int", lo=1, hi=100, what="a probability (1-100 %)"),
                                "red": S(),
                            }
                        ),
                    )
                }
            ),
        ),
        **{
            k: Opaque()
            for k in (
                "egress-scheduler",
                "egress-queue-mapping",
                "traffic-pool",
                "buffer-pool",
                "link-pause",
                "egress-shaper",
                "remark",
                "advance-buffer-config",
                "pfc-watchdog",
                "ingress-buffer-pool",
                "egress-buffer-pool",
            )
        },
    },
    open=True,
)
ACL_BIND = Coll(POLICY, Obj({"inbound": _ACL_WAY, "outbound": _ACL_WAY}))

# LLDP (twin.nvue.lldp): the node's lldpd runs the timers; the TLVs Cumulus's own lldpd adds (802.1, DCBX,
# application priority, LLDP-MED inventory) and CDP's mode are stored, checked by their NVUE type. Cumulus
# Linux 5.9 has no `state` here (5.11 adds `interface X lldp state` and `service lldp state`)
_APP = Leaf("policy", what="an application name (iSCSI, NVME_4420...)")
_TCP_UDP = Leaf("int", lo=1, hi=65535, what="a port number (1-65535)")
_PRIORITY = Obj({"priority": S("int", lo=0, hi=7, what="an application priority (0-7)")})
LLDP = Obj(
    {
        "tx-interval": Leaf("int", lo=10, hi=300, what="an LLDP transmit interval of 10-300 seconds"),
        "tx-hold-multiplier": Leaf("int", lo=1, hi=10, what="an LLDP hold multiplier of 1-10"),
        "dot1-tlv": S("bool", what="on or off"),
        "lldp-med-inventory-tlv": S("bool", what="on or off"),
        "mode": S("enum", choices=("default", "force-send-cdpv1", "force-send-cdpv2", "force-send-lldp")),
        "application-tlv": Obj(
            {
                "app": Coll(_APP, _PRIORITY),
                "tcp-port": Coll(_TCP_UDP, _PRIORITY),
                "udp-port": Coll(_TCP_UDP, _PRIORITY),
            },
            STORED,
        ),
    }
)
LLDP_PORT = Obj(
    {
        **{k: S("bool", what="on or off") for k in ("dcbx-ets-config-tlv", "dcbx-ets-recomm-tlv", "dcbx-pfc-tlv")},
        "application-tlv": Obj(
            {
                "app": Coll(_APP, Empty(STORED)),
                "tcp-port": Coll(_TCP_UDP, Empty(STORED)),
                "udp-port": Coll(_TCP_UDP, Empty(STORED)),
            },
            STORED,
        ),
    }
)
