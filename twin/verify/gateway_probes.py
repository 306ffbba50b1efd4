"""The probes of the gateway group: who sends what, and what must come of it.

- out: every host that may go out pings every test address of the internet. All
  use the same ICMP id and sequence, so only the NAT tells their replies apart;
- stay: a host of a segment that does not go out (or of a tenant without internet
  access) pings the internet: it must not get there;
- fabric: a host that goes out pings the fabric's own loopbacks through its gateway:
  no reply may come back;
- inbound: the internet sends to every public address on a port no forward opens,
  and pings it: nothing may reach any host;
- forward: the internet sends to every forwarded port: only the forward's host gets
  it, at its own address and port;
- cross: a host of one tenant sends to another tenant's public addresses: as the
  internet would (its own public address as source), and only where a forward lets it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from twin import kinds
from twin.lifecycle.context import LabContext
from twin.runtime import port_mac
from twin.topology.model import Attachment, Fabric, Tenant
from twin.traffic import packets
from twin.traffic.engine import Tap

CLOSED_PORT = 33434  # the first port no forward opens is the closed one


Make = Callable[[bytes], bytes]  # a probe's frame around its tag


@dataclass(frozen=True)
class Probe:
    id: int
    kind: str  # out, stay, fabric, inbound, forward, cross
    what: str  # the check's name
    tap: str  # who sends it
    frame: bytes
    host: str | None = None  # the host that sends it (out, stay, fabric, cross)
    public: str | None = None  # out: the source the internet must see; forward/cross: the address sent to
    target: str | None = None  # forward (and cross to a forward): the host it must reach ...
    ip: str | None = None  # ... at this address ...
    port: int | None = None  # ... and port
    source: str | None = None  # cross to a forward: the source it must arrive from (the sender's public)


def edges(fabric: Fabric) -> list[str]:
    return [n for n, nd in fabric.nodes.items() if kinds.of(nd).edge]


def edge_taps(ctx: LabContext) -> list[Tap]:
    return [
        Tap(f"{e}:{p.name}", ctx.netns(e), p.name) for e in edges(ctx.fabric) for p in ctx.fabric.nodes[e].fabric_ports
    ]


def _mac(ctx: LabContext, node: str, port: str) -> str:
    with ctx.ipr(node) as ipr:
        return port_mac(ipr, port)


class Builder:
    def __init__(self, ctx: LabContext, run: int):
        self.ctx, self.fabric, self.run = ctx, ctx.fabric, run
        # new connections every run (an old one would keep its NAT after a rule is gone); within a run the
        # same ICMP id and source port for every host: the NAT alone must keep them apart
        self.ident, self.sport = run & 0xFFFF, 1024 + run % 60000
        self.probes: list[Probe] = []
        e = edges(self.fabric)[0]
        port = self.fabric.nodes[e].fabric_ports[0]
        self.inet = (f"{e}:{port.name}", _mac(ctx, e, port.name), _mac(ctx, port.peer_node, port.peer_port))
        self.tests = [ip for n in edges(self.fabric) for ip in kinds.of(self.fabric.nodes[n]).test_addresses]
        opened = {fw.port for t in self.fabric.tenants.values() if t.internet for fw in t.internet.forwards}
        self.closed = next(p for p in range(CLOSED_PORT, 65536) if p not in opened)

    def add(self, kind: str, what: str, tap: str, make: Make, **kw: Any) -> None:  # kw: Probe's fields
        i = len(self.probes) + 1
        self.probes.append(Probe(i, kind, what, tap, make(packets.tag(self.run, i)), **kw))

    def from_host(self, t: Tenant, a: Attachment, dst: str, proto: str = "icmp", dport: int | None = None) -> Make:
        gw, dport = t.segments[a.segment].mac, dport or self.closed
        if proto == "icmp":
            return lambda body: packets.echo(a.mac, gw, a.ip, dst, self.ident, 1, body)
        build = packets.syn if proto == "tcp" else packets.datagram
        return lambda body: build(a.mac, gw, a.ip, dst, self.sport, dport, body)

    def from_internet(self, dst: str, proto: str = "icmp", dport: int | None = None) -> Make:
        (_, smac, dmac), dport = self.inet, dport or self.closed
        if proto == "icmp":
            return lambda body: packets.echo(smac, dmac, self.tests[0], dst, self.ident, 1, body)
        build = packets.syn if proto == "tcp" else packets.datagram
        return lambda body: build(smac, dmac, self.tests[0], dst, self.sport, dport, body)

    def build(self) -> list[Probe]:
        f = self.fabric
        loopbacks = {n.loopback: n.name for n in f.routers() if n.loopback}
        for t in f.tenants.values():
            for a in t.attachments:
                if t.goes_out(a):
                    for ip in self.tests:
                        self.add(
                            "out",
                            f"{t.name} {a.host} -> internet {ip}",
                            a.host,
                            self.from_host(t, a, ip),
                            host=a.host,
                            public=t.public_of(a),
                        )
                    for lo in (f.loopback_of(a.vtep), next(iter(loopbacks))):
                        self.add(
                            "fabric",
                            f"{t.name} {a.host} -> fabric {lo} ({loopbacks[lo]}) through its gateway",
                            a.host,
                            self.from_host(t, a, lo),
                            host=a.host,
                        )
                else:
                    why = "its segment does not go out" if t.internet else "its tenant has no internet access"
                    self.add(
                        "stay",
                        f"{t.name} {a.host} -> internet {self.tests[0]} ({why})",
                        a.host,
                        self.from_host(t, a, self.tests[0]),
                        host=a.host,
                    )
        self._inbound()
        self._cross()
        return self.probes

    def _inbound(self) -> None:
        for prefix, (tenant, _vtep) in sorted(self.fabric.public().items()):
            public = prefix.split("/")[0]
            t = self.fabric.tenants[tenant]
            for proto in ("icmp", "udp"):
                shown = "ping" if proto == "icmp" else f"udp/{self.closed}"
                self.add(
                    "inbound",
                    f"internet -> {tenant} {public} {shown} (no forward)",
                    self.inet[0],
                    self.from_internet(public, proto),
                    public=public,
                )
            for fw in t.internet.forwards if t.internet else ():
                a = next(x for x in t.attachments if x.host == fw.host)
                if t.public_of(a) == public:
                    self.add(
                        "forward",
                        f"internet -> {tenant} {public} {fw.proto}/{fw.port} (forward to {fw.host}:{fw.to})",
                        self.inet[0],
                        self.from_internet(public, fw.proto, fw.port),
                        public=public,
                        target=fw.host,
                        ip=a.ip,
                        port=fw.to,
                    )

    def _cross(self) -> None:
        """From the first host of each tenant that goes out to every public address of the others."""
        f = self.fabric
        for t in f.tenants.values():
            a = next((x for x in t.attachments if t.goes_out(x)), None)
            if a is None:
                continue
            for prefix, (other, _) in sorted(f.public().items()):
                if other == t.name:
                    continue
                public = prefix.split("/")[0]
                self.add(
                    "cross",
                    f"{t.name} {a.host} -> {other} {public} udp/{self.closed} (no forward)",
                    a.host,
                    self.from_host(t, a, public, "udp"),
                    host=a.host,
                    public=public,
                )
                o = f.tenants[other]
                for fw in o.internet.forwards if o.internet else ():
                    b = next(x for x in o.attachments if x.host == fw.host)
                    if o.public_of(b) == public:
                        self.add(
                            "cross",
                            f"{t.name} {a.host} -> {other} {public} {fw.proto}/{fw.port} (forward to {fw.host})",
                            a.host,
                            self.from_host(t, a, public, fw.proto, fw.port),
                            host=a.host,
                            public=public,
                            target=fw.host,
                            ip=b.ip,
                            port=fw.to,
                            source=t.public_of(a),
                        )
