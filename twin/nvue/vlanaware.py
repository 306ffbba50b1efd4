"""Cumulus's own kernel layout for an NVUE node: one VLAN-aware bridge (br_default), one VXLAN
device (vxlan48, VLANs mapped to VNIs on it), an SVI per VLAN (vlan10) in its VRF with its own
address, the VRR as a macvlan on it (vlan10-v0: the anycast address and MAC), and per VRF an
L3VNI VLAN (vlan4000_l3), as NVUE builds them through ifupdown2.

Opt-in (TWIN_NVUE_LAYOUT=vlan-aware) and only where the kernel has 802.1Q VLANs and VRF
devices (`twin.runtime.kernel.probe_vlans`, probed at `twin up`). This project's CI kernel
has no 802.1Q VLANs, so the layout is golden-tested (its interfaces.sh), never run here; its
steps run in the node by their iproute2 commands. twin verify's device-level groups
(underlay captures on per-VNI VXLAN devices, the VNI proof) assume the per-VNI layout.
"""

from __future__ import annotations

from twin.config import overlay
from twin.config.backend import vrf_tables
from twin.config.overlay import Backend
from twin.config.steps import Step
from twin.nvue.plane import VLAN_AWARE, Plane, svi_of

BRIDGE, VXLAN = "br_default", "vxlan48"
# what the plane runs last on either layout, once every device is made (its extras by kind): NVUE's link.mtu,
# ACL tables (ports' and SVIs', the control plane's), RoCE QoS per port (twin.nvue.aclbind, .qos), the
# host name (.hostname) and lldpd's settings (.lldp); ports and SVIs keep their names in this layout
LAST = frozenset({"mtu", "acl", "acl-cp", "qos", "hostname", "lldp"})
L3_VLAN_BASE = 4000  # NVUE's reserved range for L3VNI VLANs (system.global.reserved.vlan.l3-vni-vlan)


def apply(p: Plane, backend: Backend) -> None:
    """Give plane `p` the VLAN-aware layout (its steps and bindings); the per-VNI one stays where
    the backend is network namespaces (one bridge cannot span them)."""
    if backend != "vrf":
        p.notes.append(f"{p.node}: the VLAN-aware layout needs VRF devices; the per-VNI layout is used")
        return
    nfab, node, conf = p.fabric, p.node, p.conf
    mtu = overlay.vxlan_mtu(nfab, node)
    steps = [Step("addr", "lo", args={"cidr": a}) for a in conf.loopbacks]
    tables = vrf_tables(nfab)
    tenants = nfab.tenants_on(node)
    steps += [s for t in tenants for s in (Step("vrf", t.vrf, args={"table": tables[t.name]}), Step("up", t.vrf))]
    steps += [Step("vlan-bridge", BRIDGE, args={"mtu": mtu}), Step("up", BRIDGE)]
    if conf.vxlan:
        steps += [
            Step("svd", VXLAN, args={"mtu": mtu, "local": nfab.nodes[node].loopback}),
            Step("master", VXLAN, args={"master": BRIDGE}),
            Step("vlan-tunnel", VXLAN),
            Step("brport", VXLAN, args={"learning": False, **({"neigh_suppress": True} if conf.suppress else {})}),
            Step("up", VXLAN),
        ]
    binds: list[Step] = []
    for i, t in enumerate(tenants):
        steps += _svi(f"vlan{L3_VLAN_BASE + i}_l3", L3_VLAN_BASE + i, t.l3vni, t.vrf, conf.vxlan)
        for seg in t.segments_on(node):
            vid, svi = svi_of(conf, seg.l2vni)
            steps += _svi(svi.name, vid, seg.l2vni, t.vrf, conf.vxlan)
            steps += [Step("addr", svi.name, args={"cidr": a}) for a in svi.addresses]
            if svi.vrr:
                vrr = f"{svi.name}-v0"
                steps += [
                    Step("macvlan", vrr, args={"link": svi.name, "mac": seg.mac}),
                    Step("master", vrr, args={"master": t.vrf}),
                ]
                steps += [Step("addr", vrr, args={"cidr": a}) for a in svi.vrr] + [Step("up", vrr)]
            for a in t.attachments:
                if a.vtep == node and a.segment == seg.name:
                    steps += [
                        Step("master", a.port, args={"master": BRIDGE}),
                        Step("bridge-vlan", a.port, args={"vid": vid, "access": True}),
                        Step("up", a.port),
                        Step("fdb-vlan", a.port, args={"mac": a.mac, "vid": vid}),
                    ]
                    binds.append(Step("neigh", svi.name, args={"ip": a.ip, "mac": a.mac}))
    if tenants:
        steps.append(Step("nft", overlay.nft_file(None)))
    last = [s for s in p.steps if any(s is x for k, x in p.extras.items() if k[0] in LAST)]
    p.steps = p.first + steps + [s for u in overlay.services.units(nfab, node, backend) for s in u.setup] + last
    p.bindings, p.layout = binds, VLAN_AWARE


def _svi(name: str, vid: int, vni: int, vrf: str, vxlan: bool) -> list[Step]:
    """A VLAN of br_default with its SVI in `vrf`, carried over the VXLAN device as `vni`."""
    out = [Step("bridge-vlan", BRIDGE, args={"vid": vid, "self": True})]
    if vxlan:
        out += [Step("bridge-vlan", VXLAN, args={"vid": vid, "vni": vni})]
    return out + [
        Step("vlan", name, args={"link": BRIDGE, "vid": vid}),
        Step("master", name, args={"master": vrf}),
        Step("up", name),
    ]
