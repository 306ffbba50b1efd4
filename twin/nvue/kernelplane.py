"""How a lab's NVUE nodes build their kernel planes, decided once at `twin up` and kept: the
layout (twin's per-VNI one, or Cumulus's VLAN-aware one) and whether they make Linux bonds.
`twin up` chooses (`choose`: the environment's opt-ins, where this kernel has what they need)
and records it in the lab's NVUE directory (`record`); whatever builds a node's plane again
(day 2, a node started again, the proof, `nv show`) reads it back (`recorded`): the default,
for a lab that recorded none, is this module's alone (`KernelPlane()`).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from twin.config.backend import DEVICE, Backend
from twin.config.naming import NVUE_DIR
from twin.lifecycle.state import read_text, write_text
from twin.nvue import bonds as nvue_bonds
from twin.nvue import qos as nvue_qos
from twin.nvue.plane import PER_VNI, VLAN_AWARE, Layout
from twin.runtime import probe_bonds, probe_red, probe_vlans

LAYOUT_ENV = "TWIN_NVUE_LAYOUT"  # vlan-aware: Cumulus's layout, where the lab and the kernel allow it
RECORD = "kernel.json"  # in the lab's NVUE directory


@dataclass(frozen=True)
class KernelPlane:
    layout: Layout = PER_VNI
    bonds: bool = False
    red: bool = False  # RoCE QoS's ECN classes on RED (twin.nvue.qos: opt-in, probed)


def choose(lab: str, backend: Backend, say: Callable[[str], None]) -> KernelPlane:
    """How `twin up` builds lab `lab`'s NVUE nodes' kernel planes (saying why an opt-in is not taken)."""
    return KernelPlane(layout(lab, backend, say), bonds(lab, say), red(lab, say))


def record(d: Path, k: KernelPlane) -> None:
    """`k` kept in lab directory `d` (its NVUE directory, made for its owner only)."""
    (d / NVUE_DIR).mkdir(mode=0o700, exist_ok=True)
    write_text(d / NVUE_DIR / RECORD, json.dumps(asdict(k)))


def recorded(d: Path) -> KernelPlane:
    """How the NVUE nodes of the lab in directory `d` were built (the default: none recorded)."""
    try:
        doc = json.loads(read_text(d / NVUE_DIR / RECORD))
    except (OSError, ValueError):
        return KernelPlane()
    return KernelPlane(
        VLAN_AWARE if doc.get("layout") == VLAN_AWARE else PER_VNI, doc.get("bonds") is True, doc.get("red") is True
    )


def bonds(lab: str, say: Callable[[str], None]) -> bool:
    """Whether the lab's NVUE nodes make Linux bonds (`twin.nvue.bonds`): with TWIN_NVUE_BONDS=on, on a
    kernel with bonding; else their bonds are stored with the notice, as without it."""
    if os.environ.get(nvue_bonds.ENV, "") != "on":
        return False
    if not probe_bonds(lab):
        say(
            f"{nvue_bonds.ENV}=on: this kernel has no bonding (CONFIG_BONDING); the NVUE nodes' bonds are "
            "stored, not made"
        )
        return False
    return True


def red(lab: str, say: Callable[[str], None]) -> bool:
    """Whether RoCE QoS's ECN classes get a RED qdisc (`twin.nvue.qos`): with TWIN_NVUE_RED=on, on a
    kernel with RED; else their thresholds are kept, not run (said)."""
    if os.environ.get(nvue_qos.ENV, "") != "on":
        return False
    if not probe_red(lab):
        say(
            f"{nvue_qos.ENV}=on: this kernel has no RED qdisc (CONFIG_NET_SCH_RED); qos ECN thresholds are kept, "
            "not run"
        )
        return False
    return True


def layout(lab: str, backend: Backend, say: Callable[[str], None]) -> Layout:
    """The kernel layout of the lab's NVUE nodes: twin's per-VNI one (a bridge and a VXLAN device per
    VNI), or with TWIN_NVUE_LAYOUT=vlan-aware, on a lab of VRF devices (--vrf-backend device) and a
    kernel with 802.1Q VLANs, Cumulus's own (a VLAN-aware br_default, one VXLAN device, SVIs with VRR)."""
    if os.environ.get(LAYOUT_ENV, "") != VLAN_AWARE:
        return PER_VNI
    why = (
        "the lab's tenant VRFs are namespaces (--vrf-backend device for VRF devices)"
        if backend != DEVICE
        else "this kernel has no 802.1Q VLANs"
        if not probe_vlans(lab)
        else ""
    )
    if why:
        say(f"{LAYOUT_ENV}=vlan-aware: {why}; the NVUE nodes get the per-VNI layout")
        return PER_VNI
    return VLAN_AWARE
