"""A logged packet becomes a drop event: where (node, port, tenant), why in words, headers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from twin.config import droplog
from twin.observe import packets
from twin.observe.nflog import Logged
from twin.topology.model import Fabric

NETDEV, NETDEV_EGRESS = 5, 1


@dataclass
class Place:
    """Where a socket listens: a node's namespace, or a tenant's inside it."""

    node: str
    ns: str = ""  # "" the node's own namespace
    names: dict[int, str] = field(default_factory=dict)  # ifindex -> port, refreshed by the collector


def tenant_of_port(fabric: Fabric, node: str, port: str) -> tuple[str, Any]:
    """(tenant, attachment) of a host port on a VTEP, ("", None) for any other port."""
    for t in fabric.tenants_on(node):
        for a in t.attachments:
            if a.vtep == node and a.port == port:
                return t.name, a
    att = fabric.attachment_of(node)  # a host's own port
    if att and att[1].host_port == port:
        return att[0].name, att[1]
    return "", None


def drop_event(fabric: Fabric, place: Place, p: Logged) -> dict[str, Any] | None:
    """The event of one packet a twin rule logged; None for a prefix twin did not write."""
    parsed = droplog.parse(p.prefix)
    if parsed is None:
        return None
    code, subject = parsed
    dev = next((d for d in (p.physindev, p.indev, p.physoutdev, p.outdev) if d is not None), None)
    port = place.names.get(dev, f"ifindex {dev}") if dev is not None else ""
    h = packets.headers(p.hw_protocol, p.payload, p.hwheader, link_first=p.family == NETDEV and p.hook == NETDEV_EGRESS)
    if p.hwaddr and "src_mac" not in h:
        h["src_mac"] = p.hwaddr
    tenant, att = tenant_of_port(fabric, place.node, port)
    words = {
        "subject": subject,
        "mac": getattr(att, "mac", "?"),
        "address": getattr(att, "ip", "?"),
        **{k: h.get(k, "?") for k in ("src_mac", "ethertype", "arp_mac", "arp_ip", "src")},
    }
    reason = droplog.REASONS[code].format(**words)
    direction = "in" if p.indev is not None or p.physindev is not None else "out"
    return {
        "time": round(p.time, 6),
        "kind": "drop",
        "node": place.node,
        "port": port,
        "tenant": tenant,
        "direction": direction,
        "code": code,
        "reason": reason,
        "headers": h,
        "count": 1,
        "text": f"{place.node} {port}: dropped ({reason}): {packets.summary(h)}",
    }
