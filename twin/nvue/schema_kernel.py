"""NVUE's places the node's kernel runs beside FRR: MTUs, ACLs and their bindings, RoCE QoS
(`twin.nvue.mtu`, `twin.nvue.acl`, `twin.nvue.qos`), as `twin.nvue.schema` assembles them into the tree."""

from __future__ import annotations

from twin.nvue.places import ON_OFF, POLICY, RULE, Coll, Empty, Leaf, Obj, Opaque, S

# --- issue 44, kernel half: MTUs and ACLs the node runs (twin.nvue.mtu, twin.nvue.acl) ---------------
MTU = Leaf("int", lo=552, hi=9216, what="an MTU of 552-9216 bytes")
_PORT = Leaf("int", lo=0, hi=65535, choices=("ANY",), what="a port number (0-65535) or ANY")
_ACL_IP = Obj(
    {
        "source-ip": Leaf("prefix", choices=("ANY",), what="an IPv4 prefix like 10.1.10.0/24, or ANY"),
        "dest-ip": Leaf("prefix", choices=("ANY",), what="an IPv4 prefix like 10.1.10.0/24, or ANY"),
        "protocol": Leaf("int", lo=0, hi=255, choices=("tcp", "udp", "icmp"), what="tcp, udp, icmp or 0-255"),
        "source-port": Coll(_PORT, Empty()),
        "dest-port": Coll(_PORT, Empty()),
        "dscp": Leaf("int", lo=0, hi=63, what="a DSCP (0-63)"),
        # kept, and refused on the node (a rule without them would match more): twin.nvue.acl
        **{k: Opaque() for k in ("tcp", "ecn", "fragment", "icmp-type", "icmpv6-type", "state", "ttl")},
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
                    "match": Obj({"ip": _ACL_IP, "mac": Opaque()}),
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
