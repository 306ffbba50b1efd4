"""Kernel side of a change: what to add and take down on each node to go from
one intent (Fabric) to another, as overlay Steps. Pure, like `twin.config.overlay`.

The unit of change is the smallest object that changed, so traffic that does
not depend on it keeps flowing:

- a tenant on a VTEP (its VRF / namespace, L3VNI, segments, ports),
- a segment on a VTEP (L2VNI, anycast gateway, its host ports),
- an attachment (one host port in a segment, its MAC, its binding),
- a host's tenant port (MAC, address, default route),
- MTUs of links and of the VXLAN devices that must fit inside them,
- a service unit (`twin.config.services`: a tenant's gateway or NAT rules, a port's
  shaping, a node's policing or congestion rules), remade when it differs,
- links themselves (created and deleted by `twin.change.apply`, not here).

Each node's change comes in three phases, in the order `twin.change.apply` runs them
around FRR's reload: `add` (new devices, before FRR is told about them), `bind`
(IP/MAC bindings, once zebra knows the new VNIs) and `remove` (after FRR has
dropped its config for them). Something that changed in place is taken down
and made again inside `add`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from twin import kinds
from twin.config import overlay, services
from twin.config.backend import NETNS
from twin.config.overlay import DEFAULT_SHAPING, Backend, Shaping, tenant_ns
from twin.config.steps import Step
from twin.intent.tenants import bridge_name, vxlan_name
from twin.topology.model import Attachment, Fabric, Segment, Tenant


@dataclass
class NodeDelta:
    add: list[Step] = field(default_factory=list)
    bind: list[Step] = field(default_factory=list)
    remove: list[Step] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.add or self.bind or self.remove)

    def commands(self) -> list[str]:
        """The change as iproute2 commands, in the order it runs (FRR reload between add and remove)."""
        return [s.command() for s in self.add] + [s.command() for s in self.bind] + [s.command() for s in self.remove]


def node_delta(old: Fabric, new: Fabric, node: str, backend: Backend, shaping: Shaping = DEFAULT_SHAPING) -> NodeDelta:
    """Steps that take `node` from `old` to `new` intent (the node exists in both)."""
    d = NodeDelta()
    if kinds.of(new.nodes[node]).endpoint:
        _host(old, new, node, d)
    else:
        _services(old, new, node, backend, shaping, d)
    _port_mtus(old, new, node, backend, d)
    return d


def _services(old: Fabric, new: Fabric, node: str, backend: Backend, shaping: Shaping, delta: NodeDelta) -> None:
    """Service units that differ are taken down first (in the reverse order of their setup,
    before the tenants under them change) and made again once the tenants are there; units
    that go are taken down with the tenants' objects."""
    before = {u.key: u for u in services.units(old, node, backend, shaping)}
    after = {u.key: u for u in services.units(new, node, backend, shaping)}
    for key in reversed(list(before)):
        if key not in after:
            delta.remove += before[key].teardown
        elif after[key] != before[key]:
            delta.add += before[key].teardown
    _vtep(old, new, node, backend, delta)
    delta.add += [s for key, u in after.items() if before.get(key) != u for s in u.setup]


# --- hosts -------------------------------------------------------------------
def _host(old: Fabric, new: Fabric, node: str, delta: NodeDelta) -> None:
    before, after = overlay.host_plan(old, node), overlay.host_plan(new, node)
    if before == after:
        return
    # take the old port identity down (its default route first, while its gateway is on-link)...
    delta.add += [Step("unroute", s.dev, args=s.args) for s in before if s.op == "route"]
    delta.add += [Step("flush", s.dev) for s in before if s.op == "addr"]
    delta.add += after  # ...and give it the new one


# --- VTEPs -------------------------------------------------------------------
def _tenant_key(tenant: Tenant) -> tuple:
    return (tenant.vrf, tenant.l3vni)


def _vtep(old: Fabric, new: Fabric, node: str, backend: Backend, delta: NodeDelta) -> None:
    was = {t.name: t for t in old.tenants_on(node)}
    now = {t.name: t for t in new.tenants_on(node)}
    # A node that becomes a VTEP already has its /32 on lo (FRR set it, the node had no
    # tenant); one that stops being one keeps it (router-id, underlay address).
    mtu_changed = overlay.vxlan_mtu(old, node) != overlay.vxlan_mtu(new, node)
    for name in sorted(set(was) | set(now)):
        o, n = was.get(name), now.get(name)
        if o and n and _tenant_key(o) == _tenant_key(n):
            _segments(old, new, node, o, n, backend, delta, mtu_changed)
            continue
        if o and n:  # VRF or L3VNI changed: the tenant is made again on this VTEP
            delta.add += tenant_teardown(old, node, o, backend)
        elif o:
            delta.remove += tenant_teardown(old, node, o, backend)
        if n:
            delta.add += overlay.tenant_steps(new, node, n, backend) + [_nft(n, backend)]
            delta.bind += [overlay.binding_step(n, a, backend) for a in n.attachments if a.vtep == node]


def _segments(
    old: Fabric,
    new: Fabric,
    node: str,
    old_tenant: Tenant,
    new_tenant: Tenant,
    backend: Backend,
    delta: NodeDelta,
    mtu_changed: bool,
) -> None:
    ns = tenant_ns(new_tenant, backend)
    was = {s.name: s for s in old_tenant.segments_on(node)}
    now = {s.name: s for s in new_tenant.segments_on(node)}
    ports_changed = False
    if mtu_changed:
        mtu = overlay.vxlan_mtu(new, node)
        for vni in [new_tenant.l3vni] + [s.l2vni for s in was.values() if now.get(s.name) == s]:
            delta.add += [
                Step("mtu", vxlan_name(vni), ns, {"mtu": mtu}),
                Step("mtu", bridge_name(vni), ns, {"mtu": mtu}),
            ]
    for name in sorted(set(was) | set(now)):
        so, sn = was.get(name), now.get(name)
        if so and sn and so == sn:
            ports_changed |= _attachments(old_tenant, new_tenant, node, sn, backend, delta)
            continue
        ports_changed = True
        if so and sn:
            delta.add += segment_teardown(old_tenant, node, so, backend)
        elif so:
            delta.remove += segment_teardown(old_tenant, node, so, backend)
        if sn:
            delta.add += overlay.segment_steps(new, node, new_tenant, sn, backend)
            delta.bind += [
                overlay.binding_step(new_tenant, a, backend)
                for a in overlay.local_attachments(new_tenant, node, sn.name)
            ]
    if ports_changed:  # the zero-trust rules list every host port of the tenant
        delta.add.append(_nft(new_tenant, backend))


def _attachments(
    old_tenant: Tenant, new_tenant: Tenant, node: str, seg: Segment, backend: Backend, delta: NodeDelta
) -> bool:
    # a workload's rate limits are a service of its port (`_services`): a change of them alone leaves it be
    was = {
        a.port: a.model_copy(update={"rate_limit": None}) for a in overlay.local_attachments(old_tenant, node, seg.name)
    }
    now = {
        a.port: a.model_copy(update={"rate_limit": None}) for a in overlay.local_attachments(new_tenant, node, seg.name)
    }
    if was == now:
        return False
    for port in sorted(set(was) | set(now)):
        ao, an = was.get(port), now.get(port)
        if ao == an:
            continue
        if ao:
            (delta.add if an else delta.remove).extend(attachment_teardown(old_tenant, seg, ao, backend))
        if an:
            delta.add += overlay.port_steps(new_tenant, seg, an, backend) + [overlay.fdb_step(new_tenant, an, backend)]
            delta.bind.append(overlay.binding_step(new_tenant, an, backend))
    return True


def _nft(tenant: Tenant, backend: Backend) -> Step:
    return Step("nft", overlay.nft_file(tenant.vrf if backend == NETNS else None), tenant_ns(tenant, backend))


# --- taking down ---------------------------------------------------------------
def attachment_teardown(tenant: Tenant, seg: Segment, attachment: Attachment, backend: Backend) -> list[Step]:
    """A host port out of its segment: its binding gone, out of the bridge, back in the node's namespace."""
    ns = tenant_ns(tenant, backend)
    steps = [Step("unneigh", bridge_name(seg.l2vni), ns, {"ip": attachment.ip}), Step("nomaster", attachment.port, ns)]
    return steps + ([Step("release", attachment.port, ns)] if ns else [])


def segment_teardown(tenant: Tenant, node: str, seg: Segment, backend: Backend) -> list[Step]:
    ns = tenant_ns(tenant, backend)
    steps: list[Step] = []
    for a in overlay.local_attachments(tenant, node, seg.name):
        steps += attachment_teardown(tenant, seg, a, backend)
    return steps + [Step("del", vxlan_name(seg.l2vni), ns), Step("del", bridge_name(seg.l2vni), ns)]


def tenant_teardown(fabric: Fabric, node: str, tenant: Tenant, backend: Backend) -> list[Step]:
    """A tenant off a VTEP: host ports back to the node, its VXLAN devices and bridges
    deleted, then its VRF device (the VRF backend; the netns backend keeps the namespace)."""
    ns = tenant_ns(tenant, backend)
    steps: list[Step] = []
    for seg in tenant.segments_on(node):
        for a in overlay.local_attachments(tenant, node, seg.name):
            steps += [Step("nomaster", a.port, ns)] + ([Step("release", a.port, ns)] if ns else [])
    for vni in [tenant.l3vni] + [s.l2vni for s in tenant.segments_on(node)]:
        steps += [Step("del", vxlan_name(vni), ns), Step("del", bridge_name(vni), ns)]
    # The netns backend keeps the tenant's namespace, empty: FRR 10.3's zebra crashes
    # (netlink_route_multipath_msg_encode) when a namespace VRF of a name it has seen
    # before is created again, so a tenant that comes back finds its namespace there.
    return steps + ([] if backend == NETNS else [Step("del", tenant.vrf)])


# --- MTUs of a node's own ports ---------------------------------------------------
def _port_mtus(old: Fabric, new: Fabric, node: str, backend: Backend, delta: NodeDelta) -> None:
    before = {p.name: p for p in old.nodes[node].ports}
    for p in new.nodes[node].ports:
        if p.name in before and before[p.name].peer_node == p.peer_node and before[p.name].mtu != p.mtu:
            # first of all, in the namespace the port is in now
            delta.add.insert(0, Step("mtu", p.name, overlay.port_ns(old, node, p.name, backend), {"mtu": p.mtu}))
