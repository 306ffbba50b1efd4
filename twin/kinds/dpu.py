"""DPU: a server's SmartNIC running FRR; BGP to its leafs, tenant ports to the host.

Ports are named like a BlueField: uplinks p0, p1; host-side functions pf0vf0...
With `vtep: dpu` it is the EVPN VTEP of its host's tenants (host-based networking).
"""

from twin.kinds.base import PortNaming
from twin.kinds.frr import FrrKind


class Dpu(FrrKind):
    name = "dpu"
    description = "SmartNIC running FRR, eBGP to its leafs, host endpoints on pf0vfN"
    tier = 2
    asn_base = 4200000001
    fabric_ports = PortNaming("p{}", 0)
    access_ports = PortNaming("pf0vf{}", 0)
    accepts_hosts = True
    can_be_vtep = True
    nvue_port_suffix = "_if"  # DOCA HBN's names of the BlueField's ports: p0_if, pf0vf0_if
    platform_ports = "p0-1,pf0hpf,pf0vf0-15"  # a BlueField's uplinks, host PF and VFs
