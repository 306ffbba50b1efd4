"""Twin's design as NVUE: each spine's, leaf's and DPU's startup.yaml, the day-0 an operator
loads on Cumulus Linux or DOCA HBN, equivalent to twin's own rendering (the round trip:
exported, read back and built, it gives the same kernel steps and the same FRR instances).

What NVUE's emulated subset says for twin's design:
- the loopback on lo, the router id, the ASN; every cabled port at its link's MTU (`link.mtu`);
  each fabric port a BGP unnumbered neighbor of peer-group `fabric` (remote-as external,
  connection-retry 2 s, the keepalive and hold `twin up` scaled for a busy host where the
  fabric has them; EVPN activated where the fabric has tenants), ports towards the internet in
  peer-group `internet`; the loopback (and a gateway VTEP's public addresses) as `network`s,
  multipath relax, a drain as graceful-shutdown;
- on a VTEP, per tenant: a VRF with its L3VNI and BGP (redistribute connected, type-5 export);
  per segment with a local host: a VLAN (10, 20, ... numbered over the whole design) mapped to
  its L2VNI, an SVI in the tenant's VRF with the anycast gateway as its VRR address and MAC and
  the MTU of the segment's bridge, the host ports as access ports; nve vxlan from the loopback
  with ARP suppression; evpn on.

Nothing else: twin's designs render no RoCE QoS, ACL, BFD, static route, route policy or OSPF.
What stays the topology's (NVUE's subset has no place for it): the cabling, the hosts with
their addresses and MACs, and DPU services (NAT gateways, rate limits, congestion points: ECN
marked above a rate, where NVUE's marks at queue depths), which twin builds from the topology
beside the NVUE-built plane.
"""

from __future__ import annotations

from twin import kinds
from twin.config import overlay
from twin.intent.gateway import vtep_gateways
from twin.nvue.load import dump
from twin.topology.model import BgpTimers, Fabric

FABRIC_GROUP, INTERNET_GROUP = "fabric", "internet"
CONNECT = 2  # twin's connection-retry (NVUE's default is 10)
ON = True


def exported(fabric: Fabric) -> list[str]:
    """The nodes NVUE runs on: spines, leafs and DPUs (not routers of the user's config, not the internet)."""
    return [
        n
        for n, node in fabric.nodes.items()
        if kinds.of(node).runs_frr and not kinds.of(node).user_config and not kinds.of(node).edge
    ]


def vlans(fabric: Fabric) -> dict[tuple[str, str], int]:
    """(tenant, segment) -> its VLAN id, numbered over the whole design: 10, 20, 30..."""
    return {
        (t, s): 10 * (i + 1)
        for i, (t, s) in enumerate((t.name, s) for t in fabric.tenants.values() for s in t.segments)
    }


def port_name(fabric: Fabric, node: str, port: str) -> str:
    return port + kinds.of(fabric.nodes[node]).nvue_port_suffix


def export_node(fabric: Fabric, node: str) -> dict:
    """The NVUE tree of one spine, leaf or DPU."""
    me = fabric.nodes[node]
    kind = kinds.of(me)
    edge = {p.name for p in me.fabric_ports if kinds.of(fabric.nodes[p.peer_node]).edge}
    lo = f"{me.loopback}/32"
    tree: dict = {"system": {"hostname": node}, "interface": {"lo": {"type": "loopback", "ip": {"address": {lo: {}}}}}}
    for p in me.ports:
        tree["interface"][port_name(fabric, node, p.name)] = {"type": "swp"}
    bgp: dict = {"enable": ON, "autonomous-system": me.asn, "router-id": me.loopback}
    if me.drain:
        bgp["graceful-shutdown"] = ON
    tree["router"] = {"bgp": bgp}
    public = [f"{ip}/32" for g in vtep_gateways(fabric, node).values() for ip in g.public]
    evpn = bool(fabric.tenants) and not kind.edge
    groups = {FABRIC_GROUP: _group(evpn, fabric.timers)} | (
        {INTERNET_GROUP: _group(False, fabric.timers)} if edge else {}
    )
    tree["vrf"] = {
        "default": {
            "router": {
                "bgp": {
                    "address-family": {
                        "ipv4-unicast": {"enable": ON, "network": {p: {} for p in [lo] + public}},
                        **({"l2vpn-evpn": {"enable": ON}} if evpn else {}),
                    },
                    "path-selection": {"multipath": {"aspath-ignore": ON}},
                    "peer-group": groups,
                    "neighbor": {
                        port_name(fabric, node, p.name): {
                            "type": "unnumbered",
                            "peer-group": INTERNET_GROUP if p.name in edge else FABRIC_GROUP,
                        }
                        for p in me.fabric_ports
                    },
                }
            }
        }
    }
    if fabric.tenants_on(node):
        _vtep(fabric, node, tree)
    _mtus(fabric, node, tree)
    return tree


def _mtus(fabric: Fabric, node: str, tree: dict) -> None:
    """Every MTU twin's rendering sets, as NVUE's `link.mtu`: each cabled port's, its link's (the topology's
    `mtu` for fabric links, `host_mtu` for a host's, a link's own), and each SVI's, the bridge twin makes
    for a segment (the fabric MTU less VXLAN's 50 bytes, as its VXLAN device)."""
    ifs = tree["interface"]
    for p in fabric.nodes[node].ports:
        ifs[port_name(fabric, node, p.name)]["link"] = {"mtu": p.mtu}
    for i in ifs.values():
        if i.get("type") == "svi":
            i["link"] = {"mtu": overlay.vxlan_mtu(fabric, node)}


def _group(evpn: bool, timers: BgpTimers | None) -> dict:
    scaled = {"keepalive": timers.keepalive, "hold": timers.hold} if timers else {}
    return {
        "remote-as": "external",
        "timers": {"connection-retry": CONNECT, **scaled},
        **({"address-family": {"l2vpn-evpn": {"enable": ON}}} if evpn else {}),
    }


def _vtep(fabric: Fabric, node: str, tree: dict) -> None:
    me = fabric.nodes[node]
    ids = vlans(fabric)
    domain: dict = {}
    for t in fabric.tenants_on(node):
        tree["vrf"][t.vrf] = {
            "evpn": {"enable": ON, "vni": {str(t.l3vni): {}}},
            "router": {
                "bgp": {
                    "enable": ON,
                    "address-family": {
                        "ipv4-unicast": {
                            "enable": ON,
                            "redistribute": {"connected": {"enable": ON}},
                            "route-export": {"to-evpn": {"enable": ON}},
                        }
                    },
                }
            },
        }
        for seg in t.segments_on(node):
            vlan = ids[(t.name, seg.name)]
            domain[str(vlan)] = {"vni": {str(seg.l2vni): {}}}
            tree["interface"][f"vlan{vlan}"] = {
                "type": "svi",
                "vlan": vlan,
                "ip": {"vrf": t.vrf, "vrr": {"enable": ON, "mac-address": seg.mac, "address": {seg.gateway_cidr: {}}}},
            }
            for a in t.attachments:
                if a.vtep == node and a.segment == seg.name:
                    tree["interface"][port_name(fabric, node, a.port)]["bridge"] = {
                        "domain": {"br_default": {"access": vlan}}
                    }
    tree["bridge"] = {"domain": {"br_default": {"vlan": domain}}}
    tree["nve"] = {"vxlan": {"enable": ON, "arp-nd-suppress": ON, "source": {"address": me.loopback}}}
    tree["evpn"] = {"enable": ON}
    tree["router"]["vrr"] = {"enable": ON}


def export(fabric: Fabric) -> tuple[dict[str, str], list[str]]:
    """Every spine's, leaf's and DPU's startup.yaml (node -> text), and what stays the topology's."""
    header = {
        "model": "twin",
        "nvue-api-version": "nvue_v1",
        "rev-id": 1.0,
        "version": f"exported by twin from {fabric.name}",
    }
    out = {n: dump(export_node(fabric, n), header) for n in exported(fabric)}
    notes = [
        "the cabling and the hosts (their ports, addresses and MACs) stay the topology's: NVUE configures a "
        "switch or a DPU, not what is cabled to it"
    ]
    if (
        any(t.internet for t in fabric.tenants.values())
        or fabric.congestion
        or any(a.rate_limit for t in fabric.tenants.values() for a in t.attachments)
    ):
        notes.append(
            "DPU services (NAT gateways, rate limits, congestion points) stay the topology's: NVUE's "
            "emulated subset has no place for them; twin builds them from the topology beside the NVUE-built "
            "plane (a gateway VTEP's public addresses are exported, as BGP networks)"
        )
    skipped = [n for n in fabric.nodes if n not in out and not kinds.of(fabric.nodes[n]).endpoint]
    if skipped:
        notes.append(f"{', '.join(skipped)}: not exported (NVUE runs on spines, leafs and DPUs); twin renders them")
    return out, notes
