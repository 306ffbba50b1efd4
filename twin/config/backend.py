"""The VRF backend of a lab's VTEPs, and where a tenant's devices live under it.

Linux VRF devices where the kernel has them (each tenant a VRF device with a
routing table of its own), else FRR's network-namespace VRF backend (each
tenant a namespace inside the VTEP container); probed at `twin up`.
"""
from __future__ import annotations

from typing import Literal

from twin.topology.model import Fabric, Tenant

Backend = Literal["vrf", "netns"]
BACKENDS: tuple[Backend, ...] = ("vrf", "netns")
VRF_TABLE_BASE = 1000


def vrf_tables(fabric: Fabric) -> dict[str, int]:
    """Routing table of each tenant's VRF device (VRF backend), stable across VTEPs."""
    return {name: VRF_TABLE_BASE + i + 1 for i, name in enumerate(fabric.tenants)}


def tenant_ns(t: Tenant, backend: Backend) -> str:
    """The namespace a tenant's devices live in on a VTEP: its own (netns backend) or the node's."""
    return t.vrf if backend == "netns" else ""
