"""Spine: pure-L3 tier-1 switch. All spines share one ASN (RFC 7938)."""

from twin.kinds.base import PortNaming
from twin.kinds.frr import FrrKind


class Spine(FrrKind):
    name = "spine"
    description = "tier-1 switch, eBGP unnumbered to every leaf"
    tier = 0
    transit = True
    asn_base = 65000
    asn_shared = True
    fabric_ports = PortNaming("swp{}", 1)
    platform_ports = "swp1-64"
