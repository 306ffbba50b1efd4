"""The headers of a logged packet, read with struct (cheap enough for a flood of drops):
Ethernet, ARP, IPv4, UDP, VXLAN (and the frame inside it), RoCEv2's BTH."""

from __future__ import annotations

import socket
import struct
from typing import Any

ETHERTYPES = {0x0800: "IPv4", 0x0806: "ARP", 0x86DD: "IPv6", 0x8100: "802.1Q", 0x88CC: "LLDP"}
VXLAN_PORT, ROCE_PORT = 4789, 4791
ECN = {0: "not-ect", 1: "ect1", 2: "ect0", 3: "ce"}


def mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def ethertype_name(value: int) -> str:
    return ETHERTYPES.get(value, f"ethertype 0x{value:04x}")


def ethernet(frame: bytes) -> dict[str, Any]:
    """An Ethernet frame: its link header, then what it carries."""
    if len(frame) < 14:
        return {}
    dst, src, kind = frame[:6], frame[6:12], struct.unpack("!H", frame[12:14])[0]
    return {"dst_mac": mac(dst), "src_mac": mac(src), "ethertype": ethertype_name(kind), **network(kind, frame[14:])}


def network(kind: int, data: bytes) -> dict[str, Any]:
    """What an ethertype `kind` carries, from its network header on."""
    if kind == 0x0806 and len(data) >= 28:
        (op,) = struct.unpack("!H", data[6:8])
        return {
            "arp": {1: "request", 2: "reply"}.get(op, str(op)),
            "arp_mac": mac(data[8:14]),
            "arp_ip": socket.inet_ntoa(data[14:18]),
            "arp_target": socket.inet_ntoa(data[24:28]),
        }
    if kind == 0x0800 and len(data) >= 20:
        return ipv4(data)
    return {}


def ipv4(data: bytes) -> dict[str, Any]:
    ihl = (data[0] & 0x0F) * 4
    tos, total, ttl, proto = data[1], struct.unpack("!H", data[2:4])[0], data[8], data[9]
    out: dict[str, Any] = {
        "src": socket.inet_ntoa(data[12:16]),
        "dst": socket.inet_ntoa(data[16:20]),
        "proto": {1: "icmp", 6: "tcp", 17: "udp"}.get(proto, str(proto)),
        "dscp": tos >> 2,
        "ecn": ECN[tos & 3],
        "ttl": ttl,
        "length": total,
    }
    l4 = data[ihl:]
    if proto in (6, 17) and len(l4) >= 4:
        out["sport"], out["dport"] = struct.unpack("!HH", l4[:4])
    if proto == 17 and len(l4) >= 8:
        body = l4[8:]
        if out["dport"] == VXLAN_PORT and len(body) >= 8:
            out["vni"] = int.from_bytes(body[4:7], "big")
            out["inner"] = ethernet(body[8:])
        elif out["dport"] == ROCE_PORT and len(body) >= 12:
            out["bth"] = {
                "opcode": f"0x{body[0]:02x}",
                "qp": int.from_bytes(body[5:8], "big"),
                "psn": int.from_bytes(body[9:12], "big"),
            }
    return out


def headers(hw_protocol: int, payload: bytes, hwheader: bytes = b"", link_first: bool = False) -> dict[str, Any]:
    """A logged packet's headers: `payload` from its network header (or its link header,
    `link_first`, as on a netdev egress hook); `hwheader` the link header the kernel gave."""
    if link_first:
        return ethernet(payload)
    out: dict[str, Any] = {}
    if len(hwheader) >= 14:
        out = {"dst_mac": mac(hwheader[:6]), "src_mac": mac(hwheader[6:12])}
    out["ethertype"] = ethertype_name(hw_protocol)
    return {**out, **network(hw_protocol, payload)}


def summary(h: dict[str, Any]) -> str:
    """One line, tcpdump-like."""
    if "arp" in h:
        return f"ARP {h['arp']} {h['arp_ip']} ({h['arp_mac']}) asks {h['arp_target']}"
    if "src" not in h:
        return f"{h.get('ethertype', '?')} {h.get('src_mac', '')} > {h.get('dst_mac', '')}".strip()
    ports = f" {h['sport']} > {h['dport']}" if "dport" in h else ""
    text = f"{h['src']} > {h['dst']} {h['proto']}{ports} dscp {h['dscp']} {h['ecn']}"
    if "vni" in h:
        text += f" vni {h['vni']}" + (f" [{summary(h['inner'])}]" if h.get("inner") else "")
    if "bth" in h:
        text += f" BTH op {h['bth']['opcode']} qp {h['bth']['qp']} psn {h['bth']['psn']}"
    return text
