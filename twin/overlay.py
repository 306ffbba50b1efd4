"""Kernel side of the overlay on a VTEP: a plan of steps, rendered and applied.

The plan is pure data derived from the fabric: per tenant a VRF (a Linux VRF
device, or a network namespace for FRR's netns VRF backend when the kernel has
no VRF devices), an L3VNI (VXLAN device + bridge as the L3 SVI, symmetric IRB)
and, per segment with a local host, an L2VNI (VXLAN device, no learning, ARP
suppression, `tos inherit` so RoCE DSCP marks reach the underlay) in a bridge
that holds the anycast gateway and the host ports.

`script(plan)` renders it as the equivalent iproute2 commands for people to
read (`<labdir>/<node>/interfaces.sh`); `twin.runtime.kernel` applies the very
same steps over netlink.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from twin.topology.model import Fabric

Backend = Literal["vrf", "netns"]
BACKENDS: tuple[Backend, ...] = ("vrf", "netns")
VXLAN_PORT = 4789
VXLAN_OVERHEAD = 50
VRF_TABLE_BASE = 1000
NODE_DIR = "/etc/twin"   # the node's lab directory, as mounted in the node


@dataclass(frozen=True)
class Step:
    """One kernel-side step. `ns` is the tenant namespace it runs in ("" = the node's own)."""

    op: Literal["netns", "vrf", "vxlan", "bridge", "move", "master", "brport", "addr", "up", "mac", "route",
                "fdb", "neigh", "nft", "mtu"]
    dev: str
    ns: str = ""
    args: dict = field(default_factory=dict)

    @property
    def in_node(self) -> bool:
        """Run by the node's own tools (no netlink API for it), not over netlink from the host."""
        return self.op in ("netns", "nft")

    def command(self) -> str:
        n = f"-n {self.ns} " if self.ns else ""
        a = self.args
        if self.op == "netns":
            return f"ip netns add {self.dev}"
        if self.op == "vrf":
            return f"ip {n}link add {self.dev} type vrf table {a['table']}"
        if self.op == "vxlan":
            return (f"ip {n}link add {self.dev} mtu {a['mtu']} type vxlan id {a['vni']} local {a['local']} "
                    f"dstport {VXLAN_PORT} nolearning tos inherit ttl 64")
        if self.op == "bridge":
            mac = f" address {a['mac']}" if a.get("mac") else ""
            return f"ip {n}link add {self.dev}{mac} mtu {a['mtu']} type bridge"
        if self.op == "move":
            return f"ip {n}link set {self.dev} netns {a['to']}"
        if self.op == "master":
            return f"ip {n}link set {self.dev} master {a['master']}"
        if self.op == "brport":
            flags = " ".join(f"{k} {'on' if v else 'off'}" for k, v in a.items())
            return f"bridge {n}link set dev {self.dev} {flags}"
        if self.op == "addr":
            return f"ip {n}addr add {a['cidr']} dev {self.dev}"
        if self.op == "up":
            return f"ip {n}link set {self.dev} up"
        if self.op == "mac":
            return f"ip {n}link set {self.dev} address {a['mac']}"
        if self.op == "mtu":
            return f"ip {n}link set {self.dev} mtu {a['mtu']}"
        if self.op == "nft":
            return f"{'ip netns exec ' + self.ns + ' ' if self.ns else ''}nft -f {NODE_DIR}/{self.dev}"
        if self.op == "fdb":
            return f"bridge {n}fdb replace {a['mac']} dev {self.dev} master static"
        if self.op == "neigh":
            return f"ip {n}neigh replace {a['ip']} lladdr {a['mac']} dev {self.dev} nud stale"
        if self.op == "route":
            return f"ip {n}route add {a['dst']} via {a['via']} dev {self.dev}"
        raise ValueError(self.op)


def vrf_tables(fabric: Fabric) -> dict[str, int]:
    """Routing table of each tenant's VRF device (VRF backend), stable across VTEPs."""
    return {name: VRF_TABLE_BASE + i + 1 for i, name in enumerate(fabric.tenants)}


def vxlan_name(vni: int) -> str:
    return f"vxlan{vni}"


def bridge_name(vni: int) -> str:
    return f"br{vni}"


def plan(fabric: Fabric, node: str, backend: Backend) -> list[Step]:
    """The kernel steps of `node`: VTEP of its tenants, or a host in its segment."""
    me = fabric.nodes[node]
    if me.kind == "host":
        return host_plan(fabric, node)
    fabric_mtu = min((p.mtu for p in me.fabric_ports), default=9000)
    vx_mtu = fabric_mtu - VXLAN_OVERHEAD
    steps: list[Step] = []
    table = vrf_tables(fabric)
    if backend == "netns" and fabric.tenants_on(node):
        # zebra -n cannot take interface config (see render.frr_files): the VTEP /32 is set here
        steps.append(Step("addr", "lo", args={"cidr": f"{me.loopback}/32"}))
    if backend == "netns":  # every tenant namespace first: the node runs these in one go
        steps += [Step("netns", t.vrf) for t in fabric.tenants_on(node)]
    for t in fabric.tenants_on(node):
        # in the netns backend every tenant device lives in the tenant's namespace
        ns = t.vrf if backend == "netns" else ""
        vrf_master = {} if backend == "netns" else {"master": t.vrf}
        if backend == "netns":
            steps.append(Step("up", "lo", ns))
        else:
            steps += [Step("vrf", t.vrf, args={"table": table[t.name]}), Step("up", t.vrf)]

        def vni_devices(vni: int, mac: str | None = None) -> list[Step]:
            vx, br = vxlan_name(vni), bridge_name(vni)
            out = [Step("vxlan", vx, args={"vni": vni, "local": me.loopback, "mtu": vx_mtu})]
            if ns:  # created in the node's namespace, so it keeps its underlay socket, then moved
                out.append(Step("move", vx, args={"to": ns}))
            out.append(Step("bridge", br, ns, {"mtu": vx_mtu, **({"mac": mac} if mac else {})}))
            if vrf_master:
                out.append(Step("master", br, ns, vrf_master))
            out += [Step("master", vx, ns, {"master": br}),
                    Step("brport", vx, ns, {"learning": False, "neigh_suppress": True})]
            return out

        # L3VNI: VXLAN + bridge without address = the L3 SVI of symmetric IRB
        steps += vni_devices(t.l3vni)
        steps += [Step("up", vxlan_name(t.l3vni), ns), Step("up", bridge_name(t.l3vni), ns)]
        for seg in t.segments_on(node):
            br = bridge_name(seg.l2vni)
            steps += vni_devices(seg.l2vni, seg.mac)
            steps.append(Step("addr", br, ns, {"cidr": seg.gateway_cidr}))
            for a in t.attachments:
                if a.vtep == node and a.segment == seg.name:
                    if ns:
                        steps.append(Step("move", a.port, args={"to": ns}))
                    steps += [Step("master", a.port, ns, {"master": br}), Step("up", a.port, ns)]
            steps += [Step("up", vxlan_name(seg.l2vni), ns), Step("up", br, ns)]
            # The VTEP knows its workloads (as a DPU knows its VFs): their MAC is static on
            # their port; their IP/MAC binding follows in `bindings` once FRR runs.
            steps += [Step("fdb", a.port, ns, {"mac": a.mac})
                      for a in t.attachments if a.vtep == node and a.segment == seg.name]
    # the host ports' zero-trust rules last, in one go as well
    if backend == "netns":
        steps += [Step("nft", nft_file(t.vrf), t.vrf) for t in fabric.tenants_on(node)]
    elif steps:
        steps.append(Step("nft", nft_file(None)))
    return steps


def nft_file(vrf: str | None) -> str:
    return f"nftables-{vrf}.nft" if vrf else "nftables.nft"


def nft_rulesets(fabric: Fabric, node: str, backend: Backend) -> dict[str, str]:
    """Anti-spoofing rules of the VTEP's host ports: file name -> nft ruleset."""
    from twin.render import render_template

    tenants = fabric.tenants_on(node)
    if not tenants:
        return {}
    groups = {t.vrf: [t] for t in tenants} if backend == "netns" else {None: tenants}
    return {nft_file(vrf): render_template("nft/ports.nft.j2", node=node, fabric_name=fabric.name, tenant=vrf,
                                           attachments=[a for t in ts for a in t.attachments if a.vtep == node])
            for vrf, ts in groups.items()}


def bindings(fabric: Fabric, node: str, backend: Backend) -> list[Step]:
    """IP/MAC bindings of the VTEP's own workloads on their gateway (SVI), so EVPN type-2
    MAC/IP routes exist without waiting for host traffic.

    Applied once zebra runs and knows the VNIs: zebra (8.4, netns backend) misses
    neighbours that were there before it started, and ignores PERMANENT ones, so
    these are STALE entries the kernel re-validates (and withdraws if a host is gone).
    """
    steps = []
    for t in fabric.tenants_on(node):
        ns = t.vrf if backend == "netns" else ""
        for a in t.attachments:
            if a.vtep == node:
                steps.append(Step("neigh", bridge_name(t.segments[a.segment].l2vni), ns,
                                  {"ip": a.address.split("/")[0], "mac": a.mac}))
    return steps


def host_plan(fabric: Fabric, node: str) -> list[Step]:
    """A host's tenant port: its fixed MAC, its address and the anycast gateway as default route."""
    found = fabric.attachment_of(node)
    if found is None:
        return []
    tenant, a = found
    gw = tenant.segments[a.segment].gateway
    return [Step("mac", a.host_port, args={"mac": a.mac}), Step("addr", a.host_port, args={"cidr": a.address}),
            Step("up", a.host_port), Step("route", a.host_port, args={"dst": "default", "via": gw})]


def script(fabric: Fabric, node: str, backend: Backend) -> str:
    steps = plan(fabric, node, backend)
    if not steps:
        return ""
    later = bindings(fabric, node, backend) if fabric.nodes[node].kind != "host" else []
    what = ("tenant port of this host" if fabric.nodes[node].kind == "host"
            else f"EVPN overlay on this VTEP, VRF backend: {backend}")
    head = [
        "#!/bin/sh",
        f"# {node} (lab {fabric.name}): kernel side of the {what}.",
        "# twin applies these very steps over netlink once the node is wired (before FRR starts);",
        "# this file is for reading, and for running by hand on a node that lost them.",
        "set -e",
    ]
    tail = ["# once FRR runs and knows the VNIs: the workloads' IP/MAC bindings"] if later else []
    return "\n".join(head + [s.command() for s in steps] + tail + [s.command() for s in later]) + "\n"
