"""Frames besides plain RoCE that verify sends: ARP, IPv6, VXLAN-wrapped. Each carries
twin's tag (magic, run, id) so that a receiver can tell which probe or attack it belongs
to wherever it turns up: in the payload, or after an ARP header as Ethernet padding
(bridges and VXLAN carry a frame's padding as they carry the rest of it).

Packed with struct (the zero-trust group sends thousands); `tests/unit` holds them to
scapy's reading of the same bytes.
"""

from __future__ import annotations

import socket
import struct

from twin.traffic import packets, roce

ETH_IP, ETH_ARP, ETH_IPV6 = 0x0800, 0x0806, 0x86DD
ARP_REQUEST, ARP_REPLY = 1, 2
BROADCAST = "ff:ff:ff:ff:ff:ff"
VXLAN_PORT = 4789
MIN_FRAME = 60  # without the FCS


def tag(run: int, ident: int) -> bytes:
    return roce.TAG.pack(roce.MAGIC, run, ident, 0)


def marker(run: int) -> bytes:
    """What every frame of run `run` carries somewhere."""
    return roce.MAGIC + run.to_bytes(4, "big")


def ident(frame: bytes, run: int) -> int | None:
    """The id in the first tag of run `run` in `frame`, or None."""
    at = frame.find(marker(run))
    return None if at < 0 or len(frame) < at + 12 else int.from_bytes(frame[at + 8 : at + 12], "big")


mac, ip4 = roce._mac, roce._ip  # "02:00:..." and "10.1.1.11" as bytes


def ether(dst: str, src: str, ethertype: int) -> bytes:
    return mac(dst) + mac(src) + ethertype.to_bytes(2, "big")


def _pad(frame: bytes) -> bytes:
    return frame + bytes(max(0, MIN_FRAME - len(frame)))


def arp(op: int, src_mac: str, dst_mac: str, sha: str, spa: str, tha: str, tpa: str, trailer: bytes = b"") -> bytes:
    """Ether / ARP (IPv4 over Ethernet) / `trailer`, padded to the minimum frame."""
    body = struct.pack("!HHBBH6s4s6s4s", 1, ETH_IP, 6, 4, op, mac(sha), ip4(spa), mac(tha), ip4(tpa))
    return _pad(ether(dst_mac, src_mac, ETH_ARP) + body + trailer)


def arp_of(frame: bytes) -> tuple[int, str, str, str, str] | None:
    """(op, sender MAC, sender IP, target MAC, target IP) of an ARP frame, else None."""
    if len(frame) < 42 or frame[12:14] != ETH_ARP.to_bytes(2, "big"):
        return None
    op, sha, spa, tha, tpa = struct.unpack("!6xH6s4s6s4s", frame[14:42])
    return op, sha.hex(":"), socket.inet_ntoa(spa), tha.hex(":"), socket.inet_ntoa(tpa)


def ipv6_udp(src_mac: str, dst_mac: str, src: str, dst: str, sport: int, dport: int, payload: bytes) -> bytes:
    """Ether / IPv6 / UDP / payload, with its UDP checksum (mandatory over IPv6)."""
    s, d = socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dst)
    length = 8 + len(payload)
    pseudo = s + d + struct.pack("!IxxxB", length, 17)
    udp = struct.pack("!HHHH", sport, dport, length, 0) + payload
    data = pseudo + udp + b"\x00" * (len(udp) % 2)
    udp = udp[:6] + roce._csum(int.from_bytes(data, "big")).to_bytes(2, "big") + udp[8:]
    return ether(dst_mac, src_mac, ETH_IPV6) + struct.pack("!IHBB", 6 << 28, length, 17, 64) + s + d + udp


def vxlan(inner: bytes, src_mac: str, dst_mac: str, src: str, dst: str, vni: int, sport: int) -> bytes:
    """`inner` in VXLAN (VNI `vni`) in UDP 4789 in IPv4, as scapy builds it: Ether / IP (id 1,
    TTL 64) / UDP (with checksum) / VXLAN (flags I) / inner."""
    vx = struct.pack("!B3xI", 0x08, vni << 8) + inner
    length = 8 + len(vx)
    udp = struct.pack("!HHHH", sport, VXLAN_PORT, length, 0) + vx
    udp = udp[:6] + packets._l4_csum(src, dst, packets.UDP, udp) + udp[8:]
    return ether(dst_mac, src_mac, ETH_IP) + packets._ipv4(src, dst, packets.UDP, udp, dont_fragment=False)
