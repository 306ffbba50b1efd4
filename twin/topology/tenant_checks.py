"""Rules between tenants and the underlay: loopback addresses and host link MTUs.

A loopback may fall inside a tenant subnet: the tenant lives in its own VRF,
so the two never meet in a routing table. It may not *be* a tenant gateway or
host address: the same address would then name two things in traceroutes,
captures and twin's own checks.

A tenant host's frame crosses the fabric inside VXLAN (50 bytes more), so a
host link carries at most its VTEP's smallest fabric MTU minus 50.
"""

from __future__ import annotations

from twin.topology.model import Link, Node, Tenant
from twin.topology.problems import Path_, Problems
from twin.topology.schema import TopologySpec

VXLAN_OVERHEAD = 50  # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8


def check_loopbacks(spec: TopologySpec, nodes: dict[str, Node], tenants: dict[str, Tenant], problems: Problems) -> None:
    """No loopback equals a tenant's gateway or host address."""
    owners = {n.loopback: n.name for n in nodes.values() if n.loopback}
    if not owners:
        return
    for tname, t in tenants.items():
        at = ("tenants", tname)
        for s in t.segments.values():
            if s.gateway in owners:
                _collision(
                    spec,
                    owners[s.gateway],
                    s.gateway,
                    f"the gateway of segment {s.name} in tenant {tname}",
                    at + ("segments", s.name, "gateway"),
                    problems,
                )
        index: dict[str, int] = {}  # host -> the first attachment of it in the file
        for i, given in enumerate(spec.tenants[tname].attachments):
            index.setdefault(given.host, i)
        for a in t.attachments:
            ip = a.address.partition("/")[0]
            if ip in owners:
                _collision(
                    spec,
                    owners[ip],
                    ip,
                    f"the address of {a.host} in tenant {tname}",
                    at + ("attachments", index[a.host], "address"),
                    problems,
                )


def _collision(spec: TopologySpec, node: str, ip: str, what: str, tenant_place: Path_, problems: Problems) -> None:
    if spec.nodes[node].loopback is not None:
        problems.add(
            ("nodes", node, "loopback"),
            f"{ip} is also {what}: a loopback needs an address of its "
            "own (it may lie inside a tenant subnet, but not be a gateway "
            "or host address there)",
        )
    else:
        problems.add(
            tenant_place,
            f"{ip} is also the loopback of {node} (from defaults.loopback_pool): "
            "choose another address here or another loopback pool",
        )


def check_host_mtus(
    spec: TopologySpec,
    nodes: dict[str, Node],
    links: dict[int, Link],
    tenants: dict[str, Tenant],
    problems: Problems,
    report_defaults: bool,
) -> None:
    """Every attached host's link fits in VXLAN over its VTEP's smallest fabric MTU.

    Links that take defaults.host_mtu are not reported again when that default
    itself was (report_defaults false): one problem says it for all of them.
    """
    place: dict[tuple[str, str], int] = {}
    for index, link in links.items():
        place[(link.a.node, link.a.port)] = place[(link.b.node, link.b.port)] = index
    smallest: dict[str, int | None] = {}  # per VTEP: its smallest fabric MTU (None: no uplink)
    for t in tenants.values():
        for a in t.attachments:
            if a.vtep not in smallest:
                smallest[a.vtep] = min((p.mtu for p in nodes[a.vtep].fabric_ports), default=None)
            fabric, i = smallest[a.vtep], place.get((a.vtep, a.port))
            if fabric is None or i is None:
                continue  # a VTEP without uplinks is reported as such
            given = spec.links[i]
            limit, explicit, mtu = fabric - VXLAN_OVERHEAD, given is not None and given.mtu is not None, links[i].mtu
            if mtu <= limit or not (explicit or report_defaults):
                continue
            fix = f"set mtu: {limit} on this link" + ("" if explicit else " (or defaults.host_mtu)")
            problems.add(
                ("links", i, "mtu") if explicit else ("links", i),
                f"the host link {a.vtep}:{a.port} - {a.host}:{a.host_port} has MTU {mtu}, but {a.vtep} "
                f"carries at most {limit} for its hosts: its smallest fabric MTU is {fabric} and "
                f"VXLAN adds {VXLAN_OVERHEAD} bytes; {fix}",
            )
