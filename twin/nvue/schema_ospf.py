"""NVUE's OSPFv2 places (issue 44, `twin.nvue.ospf`), as `twin.nvue.schema` assembles them into the tree: a
VRF's instance (router id, area networks) and an interface's own settings (area, network type, passive, cost,
priority, MTU check, timers, MD5 authentication) run; the rest is checked by its NVUE type and stored."""

from __future__ import annotations

from typing import Any

from twin.nvue.places import ON_OFF, PREFIX, Coll, Empty, Leaf, Obj, Opaque, S

AREA = Leaf("area", what="an OSPF area: 0-4294967295 or dotted like 0.0.0.1")
ROUTER_ID = Leaf("ipv4", choices=("none", "auto"), what="an IPv4 address (a router id)")
OSPF_VRF = Obj(
    {
        "enable": ON_OFF,
        "router-id": ROUTER_ID,
        "area": Coll(
            AREA,
            Obj(
                {
                    "network": Coll(PREFIX, Empty()),
                    "default-lsa-cost": S(),
                    "type": S("enum", choices=("normal", "stub", "totally-stub", "nssa", "totally-nssa")),
                    "range": Opaque(),
                    "filter-list": Opaque(),
                }
            ),
        ),
        **{k: Opaque() for k in ("default-originate", "distance", "log", "max-metric", "redistribute", "timers")},
        "reference-bandwidth": S(),
        "rfc1583-compatible": S(),
    }
)
_SECONDS: dict[str, Any] = {"what": "1-65535 seconds", "lo": 1, "hi": 65535}
OSPF_PORT = Obj(
    {
        "enable": ON_OFF,
        "area": AREA,
        "passive": ON_OFF,
        "network-type": Leaf("enum", choices=("broadcast", "non-broadcast", "point-to-point", "point-to-multipoint")),
        "cost": Leaf("int", lo=1, hi=65535, choices=("auto",), what="1-65535 or auto"),
        "priority": Leaf("int", lo=0, hi=255, what="0-255"),
        "mtu-ignore": ON_OFF,
        "timers": Obj(
            {
                "hello-interval": Leaf("int", **_SECONDS),
                "dead-interval": Leaf("int", choices=("minimal",), **_SECONDS),
                "hello-multiplier": Leaf("int", lo=1, hi=10, what="1-10"),
                "retransmit-interval": Leaf("int", **_SECONDS),
                "transmit-delay": Leaf("int", **_SECONDS),
            }
        ),
        "authentication": Obj(
            {
                "enable": ON_OFF,
                "message-digest-key": Leaf("int", lo=1, hi=255, what="an MD5 key id (1-255)"),
                "md5-key": Leaf("md5", what="an MD5 key: 1-16 printable characters, no space"),
            }
        ),
        "bfd": Opaque(),
    }
)
