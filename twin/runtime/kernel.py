"""Applies kernel steps (`twin.config.steps`) inside a node, over netlink (`twin.runtime.steps_apply`).

Steps run from the host with pyroute2 in the node's namespace, or in a tenant
namespace inside it (`/proc/<pid>/root/run/netns/<vrf>`). Steps without a
netlink application (`ip netns add`, `nft -f`) are run by the node itself, in
one exec per run of consecutive ones: a tenant namespace must land in the
node's /run/netns, where FRR's zebra (-n) finds it.
"""

from __future__ import annotations

import errno
from typing import Callable, TypeVar

from pyroute2 import IPRoute, NetlinkError

from twin.base.errors import TwinError
from twin.config.overlay import Shaping
from twin.config.steps import ALREADY, Step
from twin.runtime import netns, steps_apply
from twin.runtime.exec import NodeExec
from twin.runtime.netns import Handles

T = TypeVar("T")


def apply(steps: list[Step], pid: int, ex: NodeExec, tolerant: bool = False) -> list[str]:
    """Apply every step in order; a failure names the step as its command.

    `tolerant` (rollback): a step whose object already exists or is already
    gone (by errno) is skipped and the run goes on; returns what was skipped."""
    skipped: list[str] = []
    with Handles(pid) as ns:
        i = 0
        while i < len(steps):
            if steps[i].in_node:
                j = i
                while j < len(steps) and steps[j].in_node:
                    j += 1
                script = "\n".join(s.command() + (" || true" if tolerant else "") for s in steps[i:j])
                ex.check(["sh", "-ec", script])
                i = j
                continue
            try:
                steps_apply.apply(steps[i], ns)
            except (NetlinkError, OSError) as e:
                code = e.code if isinstance(e, NetlinkError) else e.errno
                if not (tolerant and code in ALREADY):
                    raise TwinError(f"{ex.where}: `{steps[i].command()}` failed: {e}") from None
                skipped.append(f"{steps[i].command()}: {e}")
            i += 1
    return skipped


def vrf_devices(lab: str) -> bool:
    """Whether this kernel makes Linux VRF devices (CONFIG_NET_VRF): what the `device` VRF
    backend needs (the default, netns, needs none).

    The probe runs in a throwaway namespace of its own."""

    def vrf(ipr: IPRoute) -> bool:
        ipr.link("add", ifname="probe", kind="vrf", vrf_table=4242)
        return True

    return _probe(lab, vrf, False)


def probe_shaping(lab: str) -> Shaping:
    """How this kernel can hold workloads to their rates (`twin.config.services`): "tc" when it
    has the TBF qdisc, IFB devices, the ingress qdisc and u32 filters with mirred redirects
    (shaping, both directions), else "nft" (nftables `limit`: policing)."""

    def tc(ipr: IPRoute) -> Shaping:
        ipr.link("add", ifname="probe", kind="ifb")
        ix = ipr.link("get", ifname="probe")[0]["index"]
        ipr.tc("replace", "tbf", ix, 0x10000, rate="1mbit", burst=4096, limit=8192)
        ipr.tc("replace", "ingress", ix, 0xFFFF0000)
        ipr.tc(
            "add-filter",
            "u32",
            ix,
            parent=0xFFFF0000,
            protocol=0x0003,
            prio=1,
            target=0x10000,
            keys=["0x0/0x0+0"],
            action=[{"kind": "mirred", "direction": "egress", "action": "redirect", "ifindex": ix}],
        )
        return "tc"

    return _probe(lab, tc, "nft")


def probe_vlans(lab: str) -> bool:
    """Whether this kernel has 802.1Q VLAN devices (a VLAN-aware bridge with SVIs on it: the
    layout NVUE builds on Cumulus Linux)."""

    def vlan(ipr: IPRoute) -> bool:
        ipr.link("add", ifname="probebr", kind="bridge", br_vlan_filtering=1)
        ipr.link("add", ifname="probe", kind="vlan", link=ipr.link_lookup(ifname="probebr")[0], vlan_id=10)
        return True

    return _probe(lab, vlan, False)


def probe_bonds(lab: str) -> bool:
    """Whether this kernel has bonding (CONFIG_BONDING): NVUE's bonds made as Linux bonds (`twin.nvue.bonds`)."""

    def bond(ipr: IPRoute) -> bool:
        ipr.link("add", ifname="probebond", kind="bond", bond_mode=4)
        return True

    return _probe(lab, bond, False)


def probe_red(lab: str) -> bool:
    """Whether this kernel has the RED qdisc (CONFIG_NET_SCH_RED): RoCE QoS's ECN marking at a queue
    depth (`twin.nvue.qos`). Asked with no parameters: a kernel without it says ENOENT (no such kind),
    one with it refuses the missing parameters."""

    def red(ipr: IPRoute) -> bool:
        ipr.link("add", ifname="probe", kind="ifb")
        try:
            ipr.tc("add", "red", ipr.link_lookup(ifname="probe")[0], 0x10000)
        except NetlinkError as e:
            return e.code != errno.ENOENT
        return True

    return _probe(lab, red, False)


def _probe(lab: str, attempt: Callable[[IPRoute], T], otherwise: T) -> T:
    """`attempt(ipr)` in a new, empty namespace of its own (`netns.scratch`: gone with the thread
    that made it, so a killed run leaves nothing); `otherwise` if the kernel refuses it."""

    def run() -> T:
        with netns.here() as ipr:  # requests with deadlines
            try:
                return attempt(ipr)
            except NetlinkError:
                return otherwise

    return netns.probe(f"lab {lab}", run)


def lacks(lab: str) -> list[str]:
    """The device types of `twin.runtime.kernelhint.DEVICES` this kernel cannot make, probed in one
    throwaway namespace named after the lab."""

    def missing(ipr: IPRoute) -> list[str]:
        ipr.link("add", ifname="probe-br", kind="bridge")  # a VLAN's lower device (lo cannot be one)
        lower = ipr.link_lookup(ifname="probe-br")[0]
        out = []
        for kind, extra in (("vrf", {"vrf_table": 4242}), ("dummy", {}), ("vlan", {"link": lower, "vlan_id": 42})):
            try:
                ipr.link("add", ifname=f"probe-{kind}", kind=kind, **extra)
            except NetlinkError:
                out.append(kind)
        return out

    return _probe(lab, missing, [])


def set_link(pid: int, ns: str, port: str, up: bool, alias: str) -> bool:
    """`port` of a node's namespace (or tenant namespace `ns` in it) set up or down, with its alias
    (`twin.config.naming.link_alias`); False when there is no such interface. NetlinkFailed or
    NodeGone (an OSError) when the kernel refuses or the namespace is gone."""
    with netns.ipr(pid, ns) as ipr:
        idx = ipr.link_lookup(ifname=port)
        if not idx:
            return False
        ipr.link("set", index=idx[0], state="up" if up else "down", ifalias=alias)
    return True
