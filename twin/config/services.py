"""A node's services beyond the EVPN overlay, as units of kernel steps (pure).

Each unit is set up and torn down as one, and `twin apply` remakes exactly the
units that differ between two intents (`twin.config.reconcile`):

- `gateway T`, `nat T`: tenant T's internet gateway on a VTEP: a veth pair from
  its VRF to the node's routing table (default route on one side, routes to the
  public addresses on the other, both unnumbered with permanent neighbours), and
  the NAT rules (`gateway-<vrf>.nft`) in the tenant's namespace;
- `shaping PORT`: a workload's bit rates shaped with tc on its VTEP port
  (TBF on what it receives; IFB + TBF on what it sends, redirected from the
  port's ingress), where the kernel has them;
- `policing NS`: what tc cannot do here, policed with nftables `limit`
  (`ratelimit*.nft`): packet rates, and bit rates where tc is missing;
- `congestion`: ECN marking above a rate on fabric ports (`congestion.nft`).

Which rate-limit mechanism a lab uses (`Shaping`: "tc" or "nft") is probed at
`twin up` (`twin.runtime.kernel.probe_shaping`) and shown by `twin status`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, TypeGuard

from twin.config.backend import NETNS, Backend, tenant_ns, vrf_tables
from twin.config.jinja import render_template
from twin.config.steps import Step
from twin.intent.gateway import NODE_SIDE, TENANT_SIDE, GatewayIntent, vtep_gateways
from twin.topology.model import Attachment, Fabric, Rate, Tenant

Shaping = Literal["tc", "nft"]
SHAPINGS: tuple[Shaping, ...] = ("tc", "nft")
DEFAULT_SHAPING: Shaping = "tc"  # the one default: a lab without rate limits, or before the probe
GW_INDEX, PUB_INDEX, IFB_INDEX = 3 << 24, 4 << 24, 5 << 24  # + L3VNI / port number: node-unique indexes
# token bucket: 10 ms of the rate (at least 2 frames); 100 ms queued, so a burst such as verify's
# traffic group (16 x 4 KiB to every peer of the tenant at once, ~200 KB from a host with 3 peers)
# is shaped at 20 Mbit/s, not dropped
SHAPE_BURST_S, SHAPE_QUEUE_S = 0.01, 0.1
CONGESTION_BURST_S = 0.01  # a congestion point lets 10 ms of its rate pass unmarked at once


@dataclass(frozen=True)
class Unit:
    key: str  # e.g. "gateway red", "shaping pf0vf0", "congestion"
    setup: tuple[Step, ...]
    teardown: tuple[Step, ...]
    basis: str = ""  # what else makes it (a file's text): when it differs, the unit is remade


@dataclass(frozen=True)
class _Node:
    """What `node`'s services are made of, read from the Fabric and the intent once: its tenants,
    their gateways, its workloads with a rate limit, its ports and congestion points."""

    fabric: Fabric
    node: str
    backend: Backend
    shaping: Shaping
    tenants: tuple[Tenant, ...]
    gateways: dict[str, GatewayIntent]
    limited: tuple[tuple[Tenant, Attachment], ...]

    @classmethod
    def of(cls, fabric: Fabric, node: str, backend: Backend, shaping: Shaping) -> "_Node":
        tenants = tuple(fabric.tenants_on(node))
        limited = tuple((t, a) for t in tenants for a in t.attachments if a.vtep == node and a.rate_limit)
        return cls(fabric, node, backend, shaping, tenants, vtep_gateways(fabric, node), limited)


def units(fabric: Fabric, node: str, backend: Backend, shaping: Shaping = DEFAULT_SHAPING) -> list[Unit]:
    """Every service unit of `node`, in the order they are set up."""
    here = _Node.of(fabric, node, backend, shaping)
    files = _rulesets(here)
    out: list[Unit] = []
    for t in here.tenants:
        if t.name in here.gateways:
            out += _gateway(here, t, here.gateways[t.name], files)
    out += _shaping(here, files)
    if "congestion.nft" in files:
        out.append(
            Unit(
                "congestion",
                (Step("nft", "congestion.nft"),),
                (Step("nft-delete", "ip twin_ecn"),),
                files["congestion.nft"],
            )
        )
    return out


def rulesets(fabric: Fabric, node: str, backend: Backend, shaping: Shaping = DEFAULT_SHAPING) -> dict[str, str]:
    """The nftables files of `node`'s services: file name -> ruleset."""
    return _rulesets(_Node.of(fabric, node, backend, shaping))


def _rulesets(here: _Node) -> dict[str, str]:
    fabric, node = here.fabric, here.node
    out: dict[str, str] = {}
    loopbacks = sorted({n.loopback for n in fabric.nodes.values() if n.loopback}, key=_ip_key)
    for t in here.tenants:
        g = here.gateways.get(t.name)
        if g is not None:
            zone = 0 if here.backend == NETNS else list(fabric.tenants).index(t.name) + 1
            out[gateway_file(t)] = render_template(
                "nft/gateway.nft.j2",
                node=node,
                fabric_name=fabric.name,
                g=g,
                table=gateway_table(t, here.backend),
                fabric_addresses=loopbacks,
                zone=zone,
                zone_ports=_zone_ports(node, t, g),
                own=[(h, ip) for ip, h in g.public.items() if h != "pool"],
                pool=[ip for ip, h in g.public.items() if h == "pool"],
            )
    for ns, rules in _policed(here).items():
        out[policing_file(ns)] = render_template(
            "nft/ratelimit.nft.j2", node=node, fabric_name=fabric.name, tenant=ns, rules=rules
        )
    points = [p for p in fabric.congestion if p.node == node]
    if points:
        out["congestion.nft"] = render_template(
            "nft/congestion.nft.j2",
            node=node,
            fabric_name=fabric.name,
            points=[
                {
                    "port": p.port,
                    "id": nft_id(p.port),
                    "rate": str(p.above),
                    "limit": nft_limit(p.above, CONGESTION_BURST_S),
                }
                for p in points
            ],
        )
    return out


# --- the internet gateway -------------------------------------------------------------------
def gateway_file(tenant: Tenant) -> str:
    return f"gateway-{tenant.vrf}.nft"


def gateway_table(tenant: Tenant, backend: Backend) -> str:
    """Its own namespace holds one gateway; the node's (VRF backend) one per tenant."""
    return "twin_gw" if backend == NETNS else f"twin_gw_{tenant.l3vni}"


def _mac(prefix: int, l3vni: int) -> str:
    return f"02:74:{prefix:02x}:{l3vni >> 16 & 255:02x}:{l3vni >> 8 & 255:02x}:{l3vni & 255:02x}"


def _gateway(here: _Node, tenant: Tenant, intent: GatewayIntent, files: dict[str, str]) -> list[Unit]:
    ns = tenant_ns(tenant, here.backend)
    up_mac, gw_mac = _mac(0x70, tenant.l3vni), _mac(0x67, tenant.l3vni)
    pair = {
        "peer": intent.gateway,
        "index": PUB_INDEX + tenant.l3vni,
        "peer_index": GW_INDEX + tenant.l3vni,
        "mac": up_mac,
        "peer_mac": gw_mac,
        **({"netns": ns} if ns else {}),
    }
    steps = [Step("veth", intent.uplink, args=pair)]
    steps += [] if ns else [Step("master", intent.gateway, args={"master": tenant.vrf})]
    steps += [
        Step("up", intent.uplink),
        Step("up", intent.gateway, ns),
        Step("neigh", intent.uplink, args={"ip": TENANT_SIDE, "mac": gw_mac}),
        Step("neigh", intent.gateway, ns, {"ip": NODE_SIDE, "mac": up_mac}),
    ]
    steps += [
        Step("route", intent.uplink, args={"dst": f"{ip}/32", "via": TENANT_SIDE, "onlink": True})
        for ip in intent.public
    ]
    table = {} if ns else {"table": vrf_tables(here.fabric)[tenant.name]}
    steps.append(Step("route", intent.gateway, ns, {"dst": "default", "via": NODE_SIDE, "onlink": True, **table}))
    nat = Unit(
        f"nat {tenant.name}",
        (Step("nft", gateway_file(tenant), ns),),
        (Step("nft-delete", f"ip {gateway_table(tenant, here.backend)}", ns),),
        files[gateway_file(tenant)],
    )
    return [Unit(f"gateway {tenant.name}", tuple(steps), (Step("del", intent.uplink),)), nat]


def _zone_ports(node: str, tenant: Tenant, intent: GatewayIntent) -> list[str]:
    """VRF backend: the tenant's devices its packets enter the node's connection tracking on."""
    return [tenant.vrf, intent.gateway, f"br{tenant.l3vni}"] + [f"br{s.l2vni}" for s in tenant.segments_on(node)]


# --- rate limits --------------------------------------------------------------------------
def policing_file(ns: str) -> str:
    return f"ratelimit-{ns}.nft" if ns else "ratelimit.nft"


def nft_id(port: str) -> str:
    """A port name as an nftables identifier."""
    return re.sub(r"[^A-Za-z0-9_]", "_", port)


def shaped(rate: Rate | None, shaping: Shaping) -> TypeGuard[Rate]:
    return rate is not None and rate.unit == "bit" and shaping == "tc"


def tbf_args(rate: Rate, mtu: int) -> dict:
    """The TBF of a shaped `rate` on a port of `mtu`: its rate, bucket and queue (bytes)."""
    per_s = rate.value // 8
    burst = max(int(per_s * SHAPE_BURST_S), 2 * (mtu + 14))
    return {"rate": rate.value, "burst": burst, "limit": burst + int(per_s * SHAPE_QUEUE_S)}


def _shaping(here: _Node, files: dict[str, str]) -> list[Unit]:
    out: list[Unit] = []
    shaping, node = here.shaping, here.fabric.nodes[here.node]
    ports = [p.name for p in node.ports]
    for t, a in here.limited:
        ns, mtu, limit = tenant_ns(t, here.backend), node.ports_by_name[a.port].mtu, a.rate_limit
        setup: list[Step] = []
        teardown: list[Step] = []
        if limit is None:  # (`limited` holds only attachments with a rate limit)
            continue
        if shaped(limit.ingress, shaping):  # what the workload receives leaves the port
            setup.append(Step("tbf", a.port, ns, tbf_args(limit.ingress, mtu)))
            teardown.append(Step("noqdisc", a.port, ns, {"parent": "root"}))
        if shaped(limit.egress, shaping):  # what it sends enters the port: shaped on an IFB
            ifb = f"twinifb{ports.index(a.port)}"
            setup += [
                Step("ifb", ifb, ns, {"index": IFB_INDEX + ports.index(a.port)}),
                Step("up", ifb, ns),
                Step("tbf", ifb, ns, tbf_args(limit.egress, mtu)),
                Step("ingress", a.port, ns),
                Step("redirect", a.port, ns, {"to": ifb}),
            ]
            teardown += [Step("noqdisc", a.port, ns, {"parent": "ingress"}), Step("del", ifb, ns)]
        if setup:
            out.append(Unit(f"shaping {a.port}", tuple(setup), tuple(teardown), a.model_dump_json()))
    for ns in _policed(here):
        f = policing_file(ns)
        out.append(
            Unit(
                f"policing {ns or here.node}",
                (Step("nft", f, ns),),
                (Step("nft-delete", "bridge twin_rate", ns),),
                files[f],
            )
        )
    return out


def _policed(here: _Node) -> dict[str, list[dict]]:
    """The limits nftables polices, per namespace: packet rates, and bit rates without tc."""
    out: dict[str, list[dict]] = {}
    for t, a in here.limited:
        for direction in ("egress", "ingress"):
            rate = getattr(a.rate_limit, direction)
            if rate is None or shaped(rate, here.shaping):
                continue
            out.setdefault(tenant_ns(t, here.backend), []).append(
                {
                    "port": a.port,
                    "host": a.host,
                    "direction": direction,
                    "rate": str(rate),
                    "limit": nft_limit(rate, SHAPE_BURST_S),
                }
            )
    return out


def bucket(rate: Rate, burst_s: float) -> tuple[int, int]:
    """(rate, burst) of the nftables `limit` of `rate` with `burst_s` of it allowed at once: in
    packets for a packet rate, in bytes for a bit rate."""
    if rate.unit == "pps":
        return rate.value, max(2, int(rate.value * burst_s))
    per_s = rate.value // 8
    return per_s, max(1500, int(per_s * burst_s))


def nft_limit(rate: Rate, burst_s: float) -> str:
    """An nftables `limit` of `rate`, with `burst_s` of it allowed at once."""
    per_s, burst = bucket(rate, burst_s)
    return (
        f"{per_s}/second burst {burst} packets" if rate.unit == "pps" else f"{per_s} bytes/second burst {burst} bytes"
    )


def _ip_key(ip: str) -> tuple[int, ...]:
    return tuple(int(x) for x in ip.split("."))
