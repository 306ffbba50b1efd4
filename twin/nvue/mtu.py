"""NVUE's MTUs as the node runs them: `interface X link mtu N` on a port (its end of the link: the
peer keeps its own, as on a cable between two switches) and on an SVI (the bridge twin makes for it).
The management port `eth0` (on the lab's management network, made at 1500) takes NVUE's MTU on the
node's end, as a switch's does; the host's end keeps 1500. A port NVUE gives no MTU keeps the topology's;
a port or SVI NVUE gives the MTU the plane makes it with (the topology's, twin's export of its design)
needs no step. Each other is a plane extra `("mtu", device)` whose undo puts back the MTU the plane made
it with (day 2: `routed.undo`).

Also here: where each NVUE interface of a node is in the kernel (`places`), which the ACLs
(`twin.nvue.acl`) and `nv show` share, and the kernel device FRR names for an NVUE interface
(`kernel_name`: a static route's next hop, a route map's `match interface`).
"""

from __future__ import annotations

from typing import Any, Callable

from twin.config.backend import Backend, tenant_ns
from twin.config.overlay import port_ns
from twin.config.steps import Step
from twin.intent.tenants import bridge_name
from twin.kinds import MGMT_NS, MGMT_PORT
from twin.nvue.routed import port_dev
from twin.nvue.tree import get

Plane = Any  # twin.nvue.plane.Plane (which imports this module)

DEFAULT = 9000  # a device the plane makes no MTU for (an uncabled port)
MGMT_MTU = 1500  # the management port's as twin makes it (twin.runtime.mgmt), in VRF mgmt's namespace


def places(plane: Plane, backend: Backend) -> dict[str, tuple[str, str]]:
    """NVUE interface name -> (namespace, kernel device) of the node's ports and SVIs."""
    out: dict[str, tuple[str, str]] = {}
    moved = {s.dev: s.args["to"] for s in plane.extras.values() if s.op == "move"}  # into a plain VRF
    bridges = {(s.op, s.dev, s.ns) for s in plane.steps if s.op == "bridge"}
    for name, dev in plane.devices.items():
        out[name] = (moved.get(dev) or port_ns(plane.fabric, plane.node, dev, backend), dev)
    for vlan, svi in plane.conf.svis.items():
        vnis = plane.conf.vlans.get(vlan) or []
        t = next((t for t in plane.fabric.tenants.values() if t.vrf == plane.vrfs.get(svi.vrf or "")), None)
        if plane.layout != "per-vni":
            out[svi.name] = ("", svi.name)
        elif vnis and t is not None:
            if ("bridge", bridge_name(vnis[0]), tenant_ns(t, backend)) in bridges:  # made here: a host is on it
                out[svi.name] = (tenant_ns(t, backend), bridge_name(vnis[0]))
        elif ("bridge", svi.name) in plane.extras:  # outside a tenant (twin.nvue.routed)
            out[svi.name] = (plane.extras[("bridge", svi.name)].ns, svi.name)
    return out


def kernel_name(plane: Plane, backend: Backend) -> Callable[[str], str]:
    """NVUE interface name -> the node's kernel device of that name, as FRR must name it: a port's device
    (HBN's p0_if is the BlueField's p0, configured or not), an SVI's bridge; any other name as written."""
    where = places(plane, backend)

    def name(n: str) -> str:
        return where[n][1] if n in where else plane.devices.get(n) or port_dev(plane.fabric, plane.node, n) or n

    return name


def made(plane: Plane, dev: str) -> int:
    """The MTU the plane gives device `dev` without NVUE's `link.mtu`: the topology's for a cabled port,
    the bridge's own for an SVI."""
    ports = plane.fabric.nodes[plane.node].ports_by_name
    if dev in ports:
        return ports[dev].mtu
    return next((s.args["mtu"] for s in plane.steps if s.dev == dev and "mtu" in s.args), DEFAULT)


def steps(plane: Plane, tree: dict, backend: Backend) -> tuple[dict[tuple, Step], list[str]]:
    """The MTU steps of the node's ports and SVIs NVUE sets one for (keyed as plane extras), and
    notes of the interfaces whose MTU is kept, not run (the loopback; the management port where the lab has
    no management network)."""
    where = places(plane, backend)
    out: dict[tuple, Step] = {}
    notes = []
    for name, i in sorted(get(tree, ("interface",), {}).items()):
        m = get(i, ("link", "mtu"))
        if not isinstance(m, int):
            continue
        if name == MGMT_PORT and plane.fabric.nodes[plane.node].mgmt:  # the host's end keeps 1500
            if m != MGMT_MTU:
                out[("mtu", MGMT_PORT)] = Step("mtu", MGMT_PORT, MGMT_NS, {"mtu": m, "was": MGMT_MTU})
            continue
        if name not in where:
            notes.append(
                f"{plane.node}: interface.{name}.link.mtu: kept, not run (twin sets the MTU of the node's "
                "ports and SVIs)"
            )
            continue
        ns, dev = where[name]
        if m != made(plane, dev):  # the MTU the plane makes the device with needs no step (twin's export says it)
            out[("mtu", dev)] = Step("mtu", dev, ns, {"mtu": m, "was": made(plane, dev)})
    return out, notes
