"""Shared data of kinds that run FRRouting (spine, leaf, DPU)."""

from __future__ import annotations

from typing import ClassVar

from twin.kinds.base import NODE_COMMAND, ROUTER_SYSCTLS, Kind


class FrrKind(Kind):
    runs_bgp: ClassVar[bool] = True
    mgmt: ClassVar[bool] = True  # a switch or DPU: eth0 on the management network
    sysctls: ClassVar[dict[str, str]] = ROUTER_SYSCTLS
    # FRR starts after the node's ports exist: a BGP-unnumbered peer on a port
    # that appears after bgpd started resets connections for seconds.
    start: ClassVar[list[str] | None] = [NODE_COMMAND, "start-frr"]
    daemons: ClassVar[tuple[str, ...]] = ("bgpd",)
    # Feature templates rendered into frr.conf, in this order (a VTEP adds "evpn").
    frr_features: ClassVar[tuple[str, ...]] = ("base", "underlay")
