"""Router: any FRR router, running the user's own config and daemons file.

BGP, OSPF, IS-IS, static routes, whatever FRR runs: twin wires it and starts
FRR, and derives no intent for it from the topology. Converged means what its
config declares is up (`twin.intent.generic`): every daemon its daemons file
enables runs, every adjacency it declares is up, and its routes stopped changing.
Without a config of the user's it boots an empty one (FRR's defaults).
"""

from typing import ClassVar

from twin.kinds.base import NODE_COMMAND, ROUTER_SYSCTLS, Kind, PortNaming


class Router(Kind):
    name = "router"
    description = "any FRR router: your frr.conf and daemons, any protocol (BGP, OSPF, IS-IS, static)"
    tier = 3
    runs_bgp = False  # no BGP twin derives: its sessions are what its config says
    user_config = True
    mgmt = True  # as containerlab gives every node one
    fabric_ports = PortNaming("eth{}", 1)
    access_ports = PortNaming("eth{}", 1)
    accepts_hosts = True
    sysctls: ClassVar[dict[str, str]] = ROUTER_SYSCTLS
    start: ClassVar[list[str] | None] = [NODE_COMMAND, "start-frr"]
    frr_features: ClassVar[tuple[str, ...]] = ("router",)
