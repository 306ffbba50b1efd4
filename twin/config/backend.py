"""The VRF backend of a lab's VTEPs, and where a tenant's devices live under it.

Two backends, one rendering each:
- `netns` (the default, on every kernel): each tenant a network namespace inside the VTEP
  container, FRR's netns VRF backend (zebra -n). The one the test suite runs.
- `device`: each tenant a Linux VRF device with a routing table of its own (internally
  "vrf"). Chosen with `vrf_backend: device` in the topology's defaults or `twin up
  --vrf-backend device`; it needs a kernel with VRF devices (CONFIG_NET_VRF), checked at `up`.
"""

from __future__ import annotations

import re
from typing import Literal

from twin.base.errors import Problem
from twin.intent import frrconf
from twin.topology.model import Fabric, Tenant

Backend = Literal["vrf", "netns"]
NETNS: Backend = "netns"
DEVICE: Backend = "vrf"
DEFAULT_BACKEND: Backend = NETNS  # the one default, on every kernel
BACKENDS: tuple[Backend, ...] = (DEVICE, NETNS)
CHOICES: dict[str, Backend] = {"netns": NETNS, "device": DEVICE}  # a topology's or --vrf-backend's word -> backend
NAMES: dict[Backend, str] = {b: w for w, b in CHOICES.items()}
VRF_TABLE_BASE = 1000
NO_VRF_DEVICES = "this kernel has no Linux VRF devices (CONFIG_NET_VRF is not set)"
INSTEAD = (
    "twin's netns backend (the default: each tenant a network namespace, FRR's netns VRF backend) runs on every kernel"
)
_VRF_DEVICE = re.compile(r"\blink\s+add\b.*\btype\s+vrf\b")
_ZEBRA_OPTIONS = re.compile(r'^\s*zebra_options="([^"]*)"', re.M)
_NETNS_FLAG = re.compile(r"(?:^|\s)(?:-n|--vrfwnetns|-w)(?=\s|$)")


def vrf_tables(fabric: Fabric) -> dict[str, int]:
    """Routing table of each tenant's VRF device (VRF backend), stable across VTEPs."""
    return {name: VRF_TABLE_BASE + i + 1 for i, name in enumerate(fabric.tenants)}


def tenant_ns(t: Tenant, backend: Backend) -> str:
    """The namespace a tenant's devices live in on a VTEP: its own (netns backend) or the node's."""
    return t.vrf if backend == NETNS else ""


def wanted(fabric: Fabric, override: str | None = None) -> tuple[Backend, str]:
    """The backend a lab asks for, and why (pure): `--vrf-backend`, else the topology's
    `defaults.vrf_backend`, else the default."""
    if override:
        if override not in CHOICES:
            raise ValueError(f"--vrf-backend {override!r}: one of {', '.join(CHOICES)}")
        return CHOICES[override], f"--vrf-backend {override}"
    if fabric.vrf_backend:
        return CHOICES[fabric.vrf_backend], f"the topology's defaults.vrf_backend: {fabric.vrf_backend}"
    return DEFAULT_BACKEND, (
        "the default on every kernel; `vrf_backend: device` in the topology's defaults or "
        "`twin up --vrf-backend device` chooses Linux VRF devices"
    )


def netns_vrfs(daemons: str) -> bool:
    """Does a daemons file start zebra with network namespaces as VRFs (`-n`, FRR 10's `-w`)? Then
    the VRFs of its node's frr.conf are namespaces (a user's script makes them), no VRF devices."""
    m = _ZEBRA_OPTIONS.search(daemons)
    return bool(m and _NETNS_FLAG.search(m.group(1)))


def device_needs(
    fabric: Fabric, user_files: dict[str, dict[str, str]], where: dict[str, str] | None = None
) -> list[Problem]:
    """What of the user's own input makes or needs Linux VRF devices, one Problem each (pure):
    a node's `exec` command that adds one (`ip link add red type vrf table 1100`), and a
    user's frr.conf with a VRF that is no tenant twin makes on that node (zebra finds such a
    VRF as a Linux VRF device, which nothing else makes), unless its daemons file runs zebra
    with namespaces as VRFs. `where`: node -> its frr.conf's path."""
    out = []
    for n, node in fabric.nodes.items():
        out += [
            Problem(fabric.source, f"nodes.{n}.exec[{i}]", f"`{cmd}` makes a Linux VRF device")
            for i, cmd in enumerate(node.exec)
            if _VRF_DEVICE.search(cmd)
        ]
        text = user_files.get(n, {}).get("frr.conf")
        if text and not netns_vrfs(user_files.get(n, {}).get("daemons", "")):
            cfg, mine = frrconf.parse(text), {t.vrf for t in fabric.tenants_on(n)} | {frrconf.DEFAULT_VRF}
            for v in sorted((set(cfg.vrfs) | {b.vrf for b in cfg.bgp} | {o.vrf for o in cfg.ospf}) - mine):
                out.append(
                    Problem(
                        (where or {}).get(n, f"{n}/frr.conf"),
                        "",
                        f"VRF {v} is no tenant of the topology on {n}: zebra needs a Linux VRF device {v} for it",
                    )
                )
    return out
