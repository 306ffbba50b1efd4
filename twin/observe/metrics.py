"""The collector's figures in Prometheus' text format (`twin exporter`), with prometheus_client
(its ASGI app, served by `twin.lifecycle.service`).

A custom collector builds the metric families from the latest snapshot on every scrape:
counters end in `_total`, every series carries `lab` and `node`, ports `port`.
"""

from __future__ import annotations

from typing import Iterator

from prometheus_client import make_asgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import CollectorRegistry
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from twin.config import droplog
from twin.lifecycle.service import error_handlers
from twin.observe.collector import Collector
from twin.observe.sample import Snapshot

PORT = {
    "rx_packets": "Packets received on the port",
    "tx_packets": "Packets sent on the port",
    "rx_bytes": "Bytes received on the port",
    "tx_bytes": "Bytes sent on the port",
    "rx_dropped": "Packets the port dropped on receive",
    "tx_dropped": "Packets the port dropped on send",
    "rx_errors": "Receive errors of the port",
    "tx_errors": "Send errors of the port",
}


class LabMetrics:
    def __init__(self, collector: Collector):
        self.c = collector

    def collect(self) -> Iterator[Metric]:
        with self.c.lock:
            snap, drops = self.c.latest, dict(self.c.drops)
        if snap is None:
            return
        lab = self.c.ctx.name
        yield from self._ports(lab, snap)
        yield from self._roce(lab, snap)
        yield from self._control(lab, snap)
        d = CounterMetricFamily(
            "twin_drop_events",
            "Packets dropped by twin's own rules (zero-trust, faults)",
            labels=["lab", "node", "port", "tenant", "reason"],
        )
        for (node, port, tenant, code), n in sorted(drops.items()):
            d.add_metric([lab, node, port, tenant, droplog.SHORT.get(code, code)], n)
        yield d

    def _ports(self, lab: str, snap: Snapshot) -> Iterator[Metric]:
        fams = {
            k: CounterMetricFamily(f"twin_port_{k}", f"{h} (netlink link stats)", labels=["lab", "node", "port"])
            for k, h in PORT.items()
        }
        up = GaugeMetricFamily("twin_port_up", "1 if the port has carrier and is up", labels=["lab", "node", "port"])
        for node, ports in sorted(snap.ports.items()):
            for port, p in sorted(ports.items()):
                for k, f in fams.items():
                    f.add_metric([lab, node, port], p[k])
                up.add_metric([lab, node, port], 1 if p["oper"] == "up" else 0)
        yield from fams.values()
        yield up
        nodes = GaugeMetricFamily("twin_node_up", "1 if the node's container runs", labels=["lab", "node"])
        for node, state in sorted(snap.nodes.items()):
            nodes.add_metric([lab, node], 1 if state == "running" else 0)
        yield nodes

    def _roce(self, lab: str, snap: Snapshot) -> Iterator[Metric]:
        labels = ["lab", "node", "port", "direction", "dscp", "ecn"]
        pk = CounterMetricFamily(
            "twin_roce_packets",
            "RoCEv2 frames (UDP 4791, also inside VXLAN) by the DSCP and ECN codepoint on the wire",
            labels=labels,
        )
        by = CounterMetricFamily("twin_roce_bytes", "Bytes of those frames", labels=labels)
        cnp = CounterMetricFamily(
            "twin_roce_cnp_packets",
            "RoCEv2 congestion notification packets (BTH opcode 0x81)",
            labels=["lab", "node", "port", "direction"],
        )
        for node, ports in sorted(snap.roce.items()):
            for port, r in sorted(ports.items()):
                for c in r["classes"]:
                    key = [lab, node, port, c["direction"], str(c["dscp"]), c["ecn"]]
                    pk.add_metric(key, c["packets"])
                    by.add_metric(key, c["bytes"])
                for d in ("rx", "tx"):
                    cnp.add_metric([lab, node, port, d], r[f"cnp_{d}"])
        yield from (pk, by, cnp)

    def _control(self, lab: str, snap: Snapshot) -> Iterator[Metric]:
        labels = ["lab", "node", "vrf", "afi", "port", "peer"]
        up = GaugeMetricFamily("twin_bgp_session_up", "1 if the BGP session is Established", labels=labels)
        pfx = GaugeMetricFamily("twin_bgp_prefixes_received", "Prefixes received on the session", labels=labels)
        for node, sessions in sorted(snap.sessions.items()):
            for s in sessions.values():
                key = [lab, node, s["vrf"], s["afi"], s["port"], s["peer"]]
                up.add_metric(key, 1 if s["up"] else 0)
                pfx.add_metric(key, s["prefixes"])
        evpn = GaugeMetricFamily(
            "twin_evpn_routes", "EVPN routes per VNI by route type", labels=["lab", "node", "vni", "tenant", "type"]
        )
        macs = GaugeMetricFamily("twin_evpn_vni_macs", "MACs known in the VNI", labels=["lab", "node", "vni", "tenant"])
        for node, vnis in sorted(snap.vnis.items()):
            for vni, v in sorted(vnis.items()):
                for t in ("type2", "type3", "type5"):
                    evpn.add_metric([lab, node, vni, v["tenant"], t[-1]], v[t])
                macs.add_metric([lab, node, vni, v["tenant"]], v["macs"])
        routes = GaugeMetricFamily(
            "twin_vrf_routes", "IPv4 routes in the VRF's kernel table", labels=["lab", "node", "vrf"]
        )
        for node, vrfs in sorted(snap.routes.items()):
            for vrf, prefixes in sorted(vrfs.items()):
                routes.add_metric([lab, node, vrf], len(prefixes))
        yield from (up, pfx, evpn, macs, routes)


def registry(collector: Collector) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(LabMetrics(collector))
    return reg


class _Asgi:
    """An ASGI callable Starlette routes to as an app, not as a request handler."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def app(collector: Collector) -> Starlette:
    """GET /metrics (prometheus_client's ASGI app on the lab's registry) as an ASGI app, served by
    `twin.lifecycle.service.Service`; any other path is a clean 404."""
    lab = collector.ctx.name
    return Starlette(
        routes=[
            Route("/metrics", _Asgi(make_asgi_app(registry(collector)))),
            Route("/", lambda request: PlainTextResponse(f"twin exporter of lab {lab}: /metrics\n")),
        ],
        exception_handlers=error_handlers(),
    )
