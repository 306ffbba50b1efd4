"""Leaf: top-of-rack switch, own ASN; uplinks to spines, downlinks to DPUs or hosts."""

from twin.kinds.base import PortNaming
from twin.kinds.frr import FrrKind


class Leaf(FrrKind):
    name = "leaf"
    description = "top-of-rack switch, own ASN, DPUs or hosts below it"
    tier = 1
    asn_base = 65101
    fabric_ports = PortNaming("swp{}", 1)
    access_ports = PortNaming("swp{}", 1)  # shares the swp counter with fabric ports
    accepts_hosts = True
    can_be_vtep = True
    platform_ports = "swp1-64"  # a Spectrum switch's front panel
