"""Readers of kernel state over netlink (pure functions of a netlink handle).

Cheap enough to poll a large lab: one dump per table, no process in the node. A
kernel's refusal leaves each as `twin.base.errors.NetlinkFailed` (`twin.runtime.failures`).
"""

from __future__ import annotations

import socket
from typing import Any, Protocol

from pyroute2 import IPRoute

from twin.base.errors import TwinError
from twin.runtime import features
from twin.runtime.failures import netlinked


class Hop(Protocol):
    """A route message of pyroute2, or one hop of its multipath: its attributes by name."""

    def get(self, key: str) -> Any: ...


FLOOD = "00:00:00:00:00:00"  # the MAC of a VXLAN flood entry (head-end replication)


@netlinked
def link_names(ipr: IPRoute) -> dict[int, str]:
    return {link["index"]: link.get("ifname") for link in ipr.get_links()}


@netlinked
def routes(
    ipr: IPRoute, table: int = 254, host_only: bool = True, names: dict[int, str] | None = None
) -> dict[str, set[str]]:
    """Routes of a table (host routes only by default; the default route as 0.0.0.0/0):
    prefix -> names of next-hop ports."""
    names = names if names is not None else link_names(ipr)
    out: dict[str, set[str]] = {}
    for r in ipr.get_routes(family=socket.AF_INET, table=table):
        dst = r.get("dst") or ("0.0.0.0" if r["dst_len"] == 0 else None)  # the default route has no dst
        if (host_only and r["dst_len"] != 32) or not dst or r.get("table") != table:
            continue
        hops = [h.get("oif") for h in r.get("multipath") or []] or [r.get("oif")]
        out[f"{dst}/{r['dst_len']}"] = {names.get(h, str(h)) for h in hops if h}
    return out


@netlinked
def fdb(ipr: IPRoute, names: dict[int, str] | None = None) -> set[tuple[str, str, str]]:
    """VXLAN forwarding entries: (device, MAC, remote VTEP)."""
    names = names if names is not None else link_names(ipr)
    return {
        (names.get(e["ifindex"], "?"), e.get("lladdr") or e.get("NDA_LLADDR"), e.get("dst") or e.get("NDA_DST"))
        for e in ipr.fdb("dump")
        if e.get("dst") or e.get("NDA_DST")
    }


@netlinked
def rib(ipr: IPRoute) -> frozenset[tuple]:
    """Every route zebra (or the kernel) holds in the node, of every table but the local one, IPv4
    and IPv6 (not link-local or multicast): what a router's routing has settled on, to compare."""
    out = set()
    for r in ipr.route("dump"):
        table = r.get("table")
        dst = r.get("dst") or ("0.0.0.0" if r["family"] == socket.AF_INET else "::")
        if table == 255 or dst.startswith(("fe80:", "ff")):
            continue
        hops = tuple(sorted(hop_key(h) for h in r.get("multipath") or [])) or (hop_key(r),)
        out.add((r["family"], table, dst, r["dst_len"], r.get("proto"), hops))
    return frozenset(out)


def hop_key(hop: Hop) -> tuple[str, int]:
    """A next hop (a route, or one hop of its multipath) as (address, port index), comparable and
    hashable: RTA_VIA, an IPv4 route's IPv6 next hop (RFC 5549, BGP unnumbered), comes as a
    {family, addr} mapping, which neither sorts nor hashes."""
    via = hop.get("via")
    addr = hop.get("gateway") or (via.get("addr") if isinstance(via, dict) else via) or ""
    return str(addr), int(hop.get("oif") or 0)


NUD_NOARP, NUD_PERMANENT, NTF_SELF, NTF_EXT_LEARNED = 0x40, 0x80, 0x02, 0x10


@netlinked
def learned(ipr: IPRoute, port: str) -> list[str]:
    """MACs a bridge learned on `port` from the frames it received there (not static, permanent
    or put there by zebra): what a frame with another host's MAC leaves behind."""
    index = ipr.link_lookup(ifname=port)
    if not index:
        return []
    out = []
    for e in ipr.fdb("dump", ifindex=index[0]):
        if (
            e["ifindex"] != index[0]
            or e["state"] & (NUD_NOARP | NUD_PERMANENT)
            or e["flags"] & (NTF_SELF | NTF_EXT_LEARNED)
        ):
            continue
        out.append(e.get_attr("NDA_LLADDR"))
    return sorted(m for m in out if m)


@netlinked
def port_counters(ipr: IPRoute, port: str) -> dict[str, int]:
    """Packets and bytes `port` received and sent (one RTM_GETLINK of that port), e.g. a host's
    port: what it sent is what its VTEP port took in, what it received what the VTEP gave it."""
    links = ipr.link("get", ifname=port)
    stats = links[0].get_attr("IFLA_STATS64") if links else None
    if stats is None:
        return {}
    return {k: int(stats.get(k, 0)) for k in ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes")}


@netlinked
def interfaces(ipr: IPRoute) -> dict[str, dict]:
    """Every link of a namespace: name -> {state, mtu, mac, master, addresses (CIDRs)}."""
    names = link_names(ipr)
    out: dict[str, dict] = {}
    for link in ipr.get_links():
        name = link.get("ifname")
        if not name:
            continue
        out[name] = {
            "state": str(link.get("operstate") or "unknown").lower(),
            "mtu": link.get("mtu"),
            "mac": link.get("address"),
            "master": names.get(link.get("master")) if link.get("master") else None,
            "addresses": [],
        }
    for a in ipr.get_addr():
        name = names.get(a["index"])
        if name in out and a.get("address"):
            out[name]["addresses"].append(f"{a.get('address')}/{a['prefixlen']}")
    return out


@netlinked
def tc_classes(ipr: IPRoute, dev: str) -> dict[int, int]:
    """Packets each class of a device's qdiscs has sent: class handle -> packets ({}: no such device)."""
    ix = ipr.link_lookup(ifname=dev)
    out: dict[int, int] = {}
    for c in ipr.get_classes(index=ix[0]) if ix else []:
        st = c.get_attr("TCA_STATS2")
        basic = (st.get_attr("TCA_STATS_BASIC") if st else None) or c.get_attr("TCA_STATS") or {}
        out[c["handle"]] = int(basic.get("packets", 0))
    return out


@netlinked
def vrf_prefixes(ipr: IPRoute, ns: str, vrfs: dict[int, str]) -> dict[str, list[str]]:
    """IPv4 prefixes per VRF in one namespace (its main table is the tenant's, with netns VRFs)."""
    out: dict[str, set[str]] = {}
    for r in ipr.route("dump", family=socket.AF_INET):
        table = r.get("table") or r.get("RTA_TABLE")
        if table == 255 or r.get("type") not in (1, None):  # local table; unicast routes only
            continue
        vrf = (ns or "default") if table == 254 else vrfs.get(table)
        if vrf is None:
            continue
        out.setdefault(vrf, set()).add(f"{r.get('dst') or '0.0.0.0'}/{r['dst_len']}")
    return {v: sorted(p) for v, p in out.items()}


@netlinked
def has_link(ipr: IPRoute, port: str) -> bool:
    return bool(ipr.link_lookup(ifname=port))


@netlinked
def mac(ipr: IPRoute, port: str) -> str:
    """The MAC address of `port` (one RTM_GETLINK); TwinError if it has none."""
    found = ipr.link("get", ifname=port)[0].get_attr("IFLA_ADDRESS")
    if not found:
        raise TwinError(f"port {port} has no MAC address")
    return found


@netlinked
def has_host_route(ipr: IPRoute, prefix: str) -> bool:
    """Whether the main table holds `prefix` as a /32 (e.g. a gateway's host route)."""
    return any(r.get_attr("RTA_DST") == prefix.split("/")[0] and r["dst_len"] == 32 for r in ipr.get_routes())


def drop_monitor() -> str:
    """Whether the kernel reports its own drops (`features.drop_monitor`), in words."""
    present = features.drop_monitor()
    if present is None:
        return "not available: generic netlink does not answer; only the drops of twin's own rules are events"
    if not present:
        return (
            "not available: this kernel has no drop_monitor (CONFIG_NET_DROP_MONITOR, generic netlink NET_DM); "
            "only the drops of twin's own rules are events"
        )
    return "available (NET_DM), not read by twin yet: only the drops of twin's own rules are events"
