"""Kernel side of the overlay on a VTEP: a plan of steps, rendered and applied.

The plan is pure data derived from the fabric: per tenant a VRF (a network
namespace for FRR's netns VRF backend, the default, or a Linux VRF device on the
device backend: `twin.config.backend`), an L3VNI (VXLAN device + bridge as the L3 SVI, symmetric IRB)
and, per segment with a local host, an L2VNI (VXLAN device, no learning, ARP
suppression, `tos inherit` so RoCE DSCP marks reach the underlay) in a bridge
that holds the anycast gateway and the host ports.

`script(plan)` renders it as the equivalent iproute2 commands for people to
read (`<labdir>/<node>/interfaces.sh`); `twin.runtime.kernel` applies the very
same steps over netlink (both from the one table of operations in `twin.config.steps`).
"""

from __future__ import annotations

from twin import kinds
from twin.config import droplog, mgmt, safetext, services
from twin.config.backend import BACKENDS, DEVICE, NETNS, VRF_TABLE_BASE, Backend, tenant_ns, vrf_tables
from twin.config.jinja import render_template
from twin.config.services import DEFAULT_SHAPING, SHAPINGS, Shaping
from twin.config.steps import Step
from twin.intent import frrconf
from twin.intent.tenants import bridge_name, vxlan_name
from twin.topology.model import Attachment, Fabric, Segment, Tenant
from twin.topology.tenant_checks import VXLAN_OVERHEAD

__all__ = [
    "BACKENDS",
    "VRF_TABLE_BASE",
    "Backend",
    "SHAPINGS",
    "Shaping",
    "DEFAULT_SHAPING",
    "tenant_ns",
    "vrf_tables",
    "plan",
    "script",
]
VXLAN_INDEX, BRIDGE_INDEX = 1 << 24, 2 << 24  # + VNI: interface indexes of tenant devices (netns backend)


def plan(fabric: Fabric, node: str, backend: Backend, shaping: Shaping = DEFAULT_SHAPING) -> list[Step]:
    """The kernel steps of `node`: its management port (`twin.config.mgmt`), VTEP of its tenants, or
    a host in its segment; then its services (gateways, rate limits, congestion points: `twin.config.services`)."""
    if kinds.of(fabric.nodes[node]).endpoint:
        return host_plan(fabric, node)
    tenants = fabric.tenants_on(node)
    steps: list[Step] = vtep_head(fabric, node, backend) + mgmt.namespace(fabric, node)
    if backend == NETNS:  # every namespace first (its management one too): the node runs these in one go
        steps += [Step("netns", t.vrf) for t in tenants]
    steps += mgmt.port(fabric, node)
    for t in tenants:
        steps += tenant_steps(fabric, node, t, backend, with_netns=False)
    # the host ports' zero-trust rules last, in one go as well
    if backend == NETNS:
        steps += [Step("nft", nft_file(t.vrf), t.vrf) for t in tenants]
    elif steps:
        steps.append(Step("nft", nft_file(None)))
    return steps + [s for u in services.units(fabric, node, backend, shaping) for s in u.setup]


def vtep_head(fabric: Fabric, node: str, backend: Backend) -> list[Step]:
    """What a VTEP needs once, before any tenant."""
    if backend == NETNS and fabric.tenants_on(node):
        # zebra -n cannot take interface config (see render.frr_files): the VTEP /32 is set here
        return [Step("addr", "lo", args={"cidr": f"{fabric.nodes[node].loopback}/32"})]
    return []


def loopback_steps(fabric: Fabric, node: str, backend: Backend, frr_conf: str) -> list[Step]:
    """The node's loopback on lo where neither its frr.conf nor its kernel plane puts it there: a
    user's config (`twin up --configs`) often leaves it to ifupdown2, as production switches do;
    the topology's loopback is the kernel plane's then."""
    n = fabric.nodes[node]
    if not n.runs_bgp or vtep_head(fabric, node, backend):
        return []
    cfg = frrconf.parse(frr_conf)
    lo = [a for (name, _), i in cfg.interfaces.items() if name == "lo" for a in i.addresses]
    return [] if f"{n.loopback}/32" in lo else [Step("addr", "lo", args={"cidr": f"{n.loopback}/32"})]


def vxlan_mtu(fabric: Fabric, node: str) -> int:
    """VXLAN devices (and their bridges) fit inside the node's smallest fabric MTU."""
    return min((p.mtu for p in fabric.nodes[node].fabric_ports), default=9000) - VXLAN_OVERHEAD


def port_ns(fabric: Fabric, node: str, port: str, backend: Backend) -> str:
    """The namespace a VTEP's host port lives in: its tenant's (netns backend), else the node's ("")."""
    for t in fabric.tenants_on(node):
        if any(a.vtep == node and a.port == port for a in t.attachments):
            return tenant_ns(t, backend)
    return ""


def tenant_steps(fabric: Fabric, node: str, tenant: Tenant, backend: Backend, with_netns: bool = True) -> list[Step]:
    """One tenant on VTEP `node`: its VRF, L3VNI and every segment with a local host."""
    ns = tenant_ns(tenant, backend)
    steps: list[Step] = []
    if backend == NETNS:
        steps += [Step("netns", tenant.vrf)] if with_netns else []
        steps.append(Step("up", "lo", ns))
    else:
        steps += [Step("vrf", tenant.vrf, args={"table": vrf_tables(fabric)[tenant.name]}), Step("up", tenant.vrf)]
    # L3VNI: VXLAN + bridge without address = the L3 SVI of symmetric IRB
    steps += _vni_devices(fabric, node, tenant, backend, tenant.l3vni)
    steps += [Step("up", vxlan_name(tenant.l3vni), ns), Step("up", bridge_name(tenant.l3vni), ns)]
    for seg in tenant.segments_on(node):
        steps += segment_steps(fabric, node, tenant, seg, backend)
    return steps


def _vni_devices(
    fabric: Fabric, node: str, tenant: Tenant, backend: Backend, vni: int, mac: str | None = None
) -> list[Step]:
    ns = tenant_ns(tenant, backend)
    mtu = vxlan_mtu(fabric, node)
    vx, br = vxlan_name(vni), bridge_name(vni)
    # netns backend: every tenant device gets an interface index unique in the whole node.
    # Each namespace numbers its own from 1, and zebra -n mixes up same-numbered devices
    # of different tenants when VNIs come and go while it runs (measured: adding a tenant
    # live deleted another tenant's neighbours on FRR 8.4 and 10.3).
    ix = (lambda base: {"index": base + vni}) if ns else (lambda base: {})
    # Asked for from the node's namespace, so its underlay socket lives there, and made
    # straight in the tenant's (one event for zebra: a move's delete-then-add raced it).
    out = [
        Step(
            "vxlan",
            vx,
            args={
                "vni": vni,
                "local": fabric.nodes[node].loopback,
                "mtu": mtu,
                **ix(VXLAN_INDEX),
                **({"netns": ns} if ns else {}),
            },
        )
    ]
    out.append(Step("bridge", br, ns, {"mtu": mtu, **({"mac": mac} if mac else {}), **ix(BRIDGE_INDEX)}))
    if backend == DEVICE:
        out.append(Step("master", br, ns, {"master": tenant.vrf}))
    # ARP suppression on a segment's VXLAN port: its VTEP answers for remote hosts (verify's arp
    # group proves it). Not on the L3VNI's: its bridge has no hosts and sees no ARP (`twin verify
    # --prove` found nothing that notices it, so it is not rendered)
    out += [
        Step("master", vx, ns, {"master": br}),
        Step("brport", vx, ns, {"learning": False, **({"neigh_suppress": True} if vni != tenant.l3vni else {})}),
    ]
    return out


def local_attachments(tenant: Tenant, node: str, segment: str) -> list[Attachment]:
    return [a for a in tenant.attachments if a.vtep == node and a.segment == segment]


def segment_steps(fabric: Fabric, node: str, tenant: Tenant, seg: Segment, backend: Backend) -> list[Step]:
    """An L2VNI on VTEP `node`: VXLAN + bridge with the anycast gateway, and its local host ports."""
    ns = tenant_ns(tenant, backend)
    br = bridge_name(seg.l2vni)
    steps = _vni_devices(fabric, node, tenant, backend, seg.l2vni, seg.mac)
    steps.append(Step("addr", br, ns, {"cidr": seg.gateway_cidr}))
    local = local_attachments(tenant, node, seg.name)
    for a in local:
        steps += port_steps(tenant, seg, a, backend)
    steps += [Step("up", vxlan_name(seg.l2vni), ns), Step("up", br, ns)]
    # The VTEP knows its workloads (as a DPU knows its VFs): their MAC is static on
    # their port; their IP/MAC binding follows in `bindings` once FRR runs.
    steps += [fdb_step(tenant, a, backend) for a in local]
    return steps


def port_steps(tenant: Tenant, seg: Segment, attachment: Attachment, backend: Backend) -> list[Step]:
    """A host port into its segment's bridge (into the tenant's namespace first, netns backend)."""
    ns = tenant_ns(tenant, backend)
    steps = [Step("move", attachment.port, args={"to": ns})] if ns else []
    return steps + [
        Step("master", attachment.port, ns, {"master": bridge_name(seg.l2vni)}),
        Step("up", attachment.port, ns),
    ]


def fdb_step(tenant: Tenant, attachment: Attachment, backend: Backend) -> Step:
    return Step("fdb", attachment.port, tenant_ns(tenant, backend), {"mac": attachment.mac})


def nft_file(vrf: str | None) -> str:
    return f"nftables-{vrf}.nft" if vrf else "nftables.nft"


def nft_rulesets(fabric: Fabric, node: str, backend: Backend) -> dict[str, str]:
    """Anti-spoofing rules of the VTEP's host ports: file name -> nft ruleset."""
    tenants = fabric.tenants_on(node)
    if not tenants:
        return {}
    groups = {t.vrf: [t] for t in tenants} if backend == NETNS else {None: tenants}
    return {
        nft_file(vrf): render_template(
            "nft/ports.nft.j2",
            node=node,
            fabric_name=fabric.name,
            tenant=vrf,
            log=droplog.log,
            log_group=droplog.LOG_GROUP,
            attachments=[a for t in ts for a in t.attachments if a.vtep == node],
        )
        for vrf, ts in groups.items()
    }


def bindings(fabric: Fabric, node: str, backend: Backend) -> list[Step]:
    """IP/MAC bindings of the VTEP's own workloads on their gateway (SVI), so EVPN type-2
    MAC/IP routes exist without waiting for host traffic.

    Applied once zebra runs and knows the VNIs: zebra (8.4, netns backend) misses
    neighbours that were there before it started.

    They are PERMANENT entries, the one neighbour state the kernel never ages, probes or
    garbage-collects (issue 18). They used to be STALE: the ARP table is host-wide, and
    once all namespaces together hold gc_thresh1 (128) entries, the periodic collector
    deletes every STALE entry unused for gc_stale_time (60 s); zebra then withdrew the
    host's type-2 MAC/IP route, and the hosts, silent in between checks, never brought it
    back (an aipod beside a pod8 was enough). zebra takes PERMANENT neighbours on an SVI
    as local and active (measured on FRR 10.3 and 8.4.4) and withdraws them when twin
    deletes them. NOARP is collected like STALE; extern_learn is what zebra marks its own
    remote entries with (it ignores them as local); `managed` (kernel >= 5.16) stays on the
    collector's list and turns FAILED when a probe goes unanswered; extern_valid (kernel
    >= 6.17) would do but is too new. As with the static MAC, a binding stays advertised
    while its host is down: the VTEP knows its workloads, it does not learn them. The
    static FDB entries of `fdb_step` never age either (the bridge skips static entries;
    zebra takes them as local MACs).
    """
    return [binding_step(t, a, backend) for t in fabric.tenants_on(node) for a in t.attachments if a.vtep == node]


def binding_step(tenant: Tenant, attachment: Attachment, backend: Backend) -> Step:
    return Step(
        "neigh",
        bridge_name(tenant.segments[attachment.segment].l2vni),
        tenant_ns(tenant, backend),
        {"ip": attachment.ip, "mac": attachment.mac},
    )


def host_plan(fabric: Fabric, node: str) -> list[Step]:
    """A host's tenant port: its fixed MAC, its address and the anycast gateway as default route."""
    found = fabric.attachment_of(node)
    if found is None:
        return []
    tenant, a = found
    gw = tenant.segments[a.segment].gateway
    return [
        Step("mac", a.host_port, args={"mac": a.mac}),
        Step("addr", a.host_port, args={"cidr": a.address}),
        Step("up", a.host_port),
        Step("route", a.host_port, args={"dst": "default", "via": gw}),
    ]


def script(
    fabric: Fabric, node: str, backend: Backend, shaping: Shaping = DEFAULT_SHAPING, first: list[Step] | None = None
) -> str:
    """interfaces.sh: the node's kernel steps as iproute2 commands (`first`: steps before its plan)."""
    steps = (first or []) + plan(fabric, node, backend, shaping)
    if not steps:
        return ""
    host = kinds.of(fabric.nodes[node]).endpoint
    later = [] if host else bindings(fabric, node, backend)
    what = (
        "tenant port of this host"
        if host
        else f"EVPN overlay on this VTEP, VRF backend: {backend}"
        if fabric.tenants_on(node)
        else "management port and services of this node"
        if fabric.nodes[node].mgmt
        else "services of this node"
    )
    return script_of(node, fabric.name, what, steps, later)


def script_of(node: str, lab: str, what: str, steps: list[Step], later: list[Step]) -> str:
    """interfaces.sh of given steps (and bindings, `later`), whoever worked them out."""
    head = [
        "#!/bin/sh",
        f"# {node} (lab {lab}): kernel side of the {what}.",
        "# twin applies these very steps over netlink once the node is wired (before FRR starts);",
        "# this file is for reading, and for running by hand on a node that lost them.",
        "set -e",
    ]
    tail = ["# once FRR runs and knows the VNIs: the workloads' IP/MAC bindings"] if later else []
    lines = head + [s.command() for s in steps] + tail + [s.command() for s in later]
    return "\n".join(safetext.script(lines, "interfaces.sh")) + "\n"  # no value writes a line of its own
