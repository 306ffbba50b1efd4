"""A node's management port as kernel steps, as a Cumulus switch has it in its VRF mgmt.

The runtime gives every managed node (`Node.mgmt`: its address on the lab's management network)
an `eth0` on that network. These steps move it into a network namespace of the node's own, at
`MGMT_NETNS` (not in /run/netns: FRR's zebra -n would take it for a VRF, on either VRF backend
FRR never sees it), with its address and no route beyond the management subnet: nothing the
fabric's routing does (`redistribute connected` in any config) can reach it, and the node's sshd
and NVUE API relay listen there (`twin-node start-frr`, in the node image). `overlay.plan` puts
the namespace with the node's others (one exec makes them all), then the port.
"""

from __future__ import annotations

from twin.config.steps import Step
from twin.kinds import MGMT_NS, MGMT_PORT
from twin.topology.model import Fabric


def namespace(fabric: Fabric, node: str) -> list[Step]:
    """The node's management namespace (made in the node: it is a mount of the node's)."""
    return [Step("mgmt-netns", MGMT_NS)] if _address(fabric, node) else []


def port(fabric: Fabric, node: str) -> list[Step]:
    """eth0 into the management namespace, its address, up (and that namespace's lo)."""
    cidr = _address(fabric, node)
    if not cidr:
        return []
    return [
        Step("move", MGMT_PORT, args={"to": MGMT_NS}),
        Step("up", "lo", MGMT_NS),
        Step("addr", MGMT_PORT, MGMT_NS, {"cidr": cidr}),
        Step("up", MGMT_PORT, MGMT_NS),
    ]


def steps(fabric: Fabric, node: str) -> list[Step]:
    return namespace(fabric, node) + port(fabric, node)


def _address(fabric: Fabric, node: str) -> str:
    n = fabric.nodes[node]
    return f"{n.mgmt}/{fabric.mgmt.prefixlen}" if fabric.mgmt is not None and n.mgmt else ""
