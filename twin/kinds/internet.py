"""Internet: the world outside the fabric, at its edge (a border of a leaf or spine).

It runs FRR, announces a default route to the fabric and learns the tenants'
public prefixes from their gateways (the VTEPs, which do the NAT). Its test
addresses lie in documentation ranges (RFC 5737) and live on its own loopback,
inside the lab: nothing a tenant sends "to the internet" ever leaves the lab.
It takes no part in EVPN and carries no workloads.
"""

from typing import ClassVar

from twin.kinds.base import PortNaming
from twin.kinds.frr import FrrKind


class Internet(FrrKind):
    name = "internet"
    description = "the internet at the fabric's edge: a default route, tenants' public prefixes, test addresses"
    tier = 4  # after every other kind: its loopback and ASN shift no one's
    asn_base = 64496  # documentation ASNs (RFC 5398)
    fabric_ports = PortNaming("eth{}", 1)
    edge = True
    mgmt = False  # not a switch of the fabric: nobody manages it
    attaches_to = ("spine", "leaf")
    frr_features = ("base", "underlay", "internet")
    test_addresses: ClassVar[tuple[str, ...]] = ("198.51.100.10", "203.0.113.10")  # TEST-NET-2 and -3
