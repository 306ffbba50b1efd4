"""What a failed command lacked of this kernel, and what twin offers instead.

A lab written for a kernel with VRF devices (`ip link add red type vrf table 1100`), dummy
interfaces or 802.1Q VLANs fails on one without them with `ip`'s one line, "Error: Unknown
device type."; `hint` turns that into the kernel option it lacks and the way twin works without
it. A command whose words name the device type (`type vrf`) is answered for that type; one that
does not (a script) for the types this kernel lacks, probed once (`twin.runtime.kernel.lacks`).
"""

from __future__ import annotations

import re
from typing import Callable

# device type -> (what it is, the kernel option, what twin offers instead)
DEVICES: dict[str, tuple[str, str, str]] = {
    "vrf": (
        "VRF devices",
        "CONFIG_NET_VRF",
        "network namespaces as VRFs, as twin's own tenants are on such a kernel: `ip netns add red`, the VRF's "
        "interfaces moved into it (`ip link set eth2 netns red`), and zebra started with -n (zebra_options in "
        "the daemons file: FRR's netns VRF backend), so `vrf red` of frr.conf is that namespace",
    ),
    "dummy": (
        "dummy interfaces",
        "CONFIG_DUMMY",
        "the address on lo (`ip addr add 10.0.0.1/32 dev lo`), or a bridge without ports "
        "(`ip link add NAME type bridge`), which holds addresses as a dummy does",
    ),
    "vlan": (
        "802.1Q VLAN interfaces",
        "CONFIG_VLAN_8021Q",
        "a link per VLAN in the topology (each its own veth pair), or a port of a bridge per VLAN",
    ),
}
SIGNS = ("Unknown device type", "Operation not supported")
_TYPE = re.compile(r"\btype\s+([a-z0-9_]+)")


def hint(command: str, output: str, lacking: Callable[[], list[str]] = lambda: []) -> str:
    """ "" unless `command` failed making a device this kernel lacks (by `output`); then what the kernel
    lacks and the way out. `lacking()` names the types this kernel lacks when the command does not say."""
    if not any(s in output for s in SIGNS):
        return ""
    named = [t for t in _TYPE.findall(command) if t in DEVICES]
    types = named or [t for t in lacking() if t in DEVICES]
    if not types:
        return ""
    out = []
    for t in dict.fromkeys(types):
        what, option, instead = DEVICES[t]
        out.append(f"this kernel has no {what} ({option}); instead: {instead}")
    lead = "" if named else "a device type this kernel lacks: "
    return lead + "; and ".join(out)
