"""Shared behaviour of kinds that run FRRouting (spine, leaf, DPU)."""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from twin.kinds.base import ROUTER_SYSCTLS, Kind

if TYPE_CHECKING:
    from twin.topology.model import Fabric, Node


class FrrKind(Kind):
    runs_bgp: ClassVar[bool] = True
    sysctls: ClassVar[dict[str, str]] = ROUTER_SYSCTLS
    # FRR starts after the node's ports exist: a BGP-unnumbered peer on a port
    # that appears after bgpd started resets connections for seconds.
    start: ClassVar[list[str] | None] = ["/usr/local/bin/twin-node", "start-frr"]
    # FRR daemons this kind starts besides zebra/watchfrr.
    daemons: ClassVar[tuple[str, ...]] = ("bgpd",)
    # Feature templates rendered into frr.conf, in this order.
    frr_features: ClassVar[tuple[str, ...]] = ("base", "underlay")

    def render(self, node: "Node", fabric: "Fabric", backend: str = "netns") -> dict[str, str]:
        from twin import render

        return render.frr_files(self, node, fabric, backend)
