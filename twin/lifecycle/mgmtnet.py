"""The lab's management network at `twin up` (`twin.topology.mgmt`, `twin.runtime.mgmt`): its subnet
and addresses chosen clear of what this host holds, and user cumulus's password on the nodes."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from twin.kinds import NVUE_PORT, USER
from twin.nvue import service as nvue_service
from twin.runtime.base import Runtime
from twin.topology import mgmt
from twin.topology.model import Fabric


def resolve(fabric: Fabric, runtime: Runtime, own: set[str] | None = None) -> Fabric:
    """`fabric` with its management subnet (the topology's, else one no Docker network, route of this
    host or address of the fabric overlaps) and every managed node's address, but those of the nodes
    that run an image of their own (`own`)."""
    return fabric if fabric.mgmt is None else mgmt.resolve(fabric, runtime.mgmt_taken(fabric.name), own or set())


def password(d: Path, fabric: Fabric, say: Callable[[str], None] = lambda _: None) -> str:
    """User cumulus's password on the nodes (SSH, the NVUE API): the topology's, else the lab's own
    (`nvue_service.password`); "" for a lab without a management network."""
    if fabric.mgmt is None:
        return ""
    if fabric.mgmt.password:
        nvue_service.set_password(d, fabric.mgmt.password)
    say(f"management network {fabric.mgmt.subnet} ({len(fabric.managed())} nodes, this host {fabric.mgmt.gateway}): "
        f"ssh {USER}@twin-{fabric.name}-NODE, the NVUE API on port {NVUE_PORT}; `twin inventory {fabric.name}` "
        "lists them")
    return nvue_service.password(d)
