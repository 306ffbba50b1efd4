"""Host: a workload endpoint (a GPU server's tenant interface). No routing daemon."""

from typing import ClassVar

from twin.kinds.base import Kind, PortNaming


class Host(Kind):
    name = "host"
    description = "workload endpoint behind a DPU or leaf, no routing daemon"
    tier = 3
    runs_bgp = False
    endpoint = True
    # no management port: a host is a tenant's workload, and a network shared by the hosts of every
    # tenant would be a path between tenants beside the fabric (the isolation `twin verify` proves)
    mgmt = False
    fabric_ports = PortNaming("eth{}", 1)
    access_ports = PortNaming("eth{}", 1)
    capabilities: ClassVar[tuple[str, ...]] = ("NET_ADMIN", "NET_RAW")
    # tenant networks are IPv4: no IPv6 link-local chatter (and MAC/IPv6 routes) from hosts
    sysctls: ClassVar[dict[str, str]] = {
        "net.ipv6.conf.all.disable_ipv6": "1",
        "net.ipv6.conf.default.disable_ipv6": "1",
    }
    command: ClassVar[list[str] | None] = ["sleep", "infinity"]
    memory_limit: ClassVar[str] = "128m"  # a sleep and whatever a user runs in it (ping, ip)
    pids_limit: ClassVar[int] = 128
