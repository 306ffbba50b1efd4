"""Plain IPv4 probes (ICMP echo, UDP, TCP SYN) that carry twin's tag, packed with struct,
and what a capture shows of them: for checks of what NAT, routing and filters do to
addresses and ports (the gateway group). RoCE frames are `twin.traffic.roce`'s.

The tag (MAGIC, run, probe id) sits at the start of the payload, so a probe is
recognised wherever it turns up, rewritten or not: an echo reply carries the
request's payload back, NAT rewrites addresses and ports, never the payload, and an
ICMP error (destination unreachable, time exceeded) quotes the probe it answers.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

from twin.traffic.roce import MAGIC, _csum, _ip, _mac

TAG = struct.Struct("!4sII")  # magic, run, probe id
ICMP, TCP, UDP = 1, 6, 17
ECHO_REPLY, ECHO_REQUEST = 0, 8
ERRORS = {3: "destination unreachable", 11: "time exceeded"}  # ICMP errors, which quote the packet
PAD = 32  # payload bytes after the tag


def _ipv4(src: str, dst: str, proto: int, payload: bytes, ttl: int = 64, dont_fragment: bool = True) -> bytes:
    flags = 0x4000 if dont_fragment else 0
    head = bytearray(
        struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, flags, ttl, proto, 0, _ip(src), _ip(dst))
    )
    head[10:12] = _csum(int.from_bytes(head, "big")).to_bytes(2, "big")
    return bytes(head) + payload


def _l4_csum(src: str, dst: str, proto: int, segment: bytes) -> bytes:
    pseudo = _ip(src) + _ip(dst) + bytes([0, proto]) + len(segment).to_bytes(2, "big")
    data = pseudo + segment + (b"\x00" if len(segment) % 2 else b"")
    return _csum(int.from_bytes(data, "big")).to_bytes(2, "big")


def tag(run: int, probe: int) -> bytes:
    return TAG.pack(MAGIC, run, probe) + bytes(PAD)


def echo(src_mac: str, dst_mac: str, src: str, dst: str, ident: int, seq: int, body: bytes) -> bytes:
    """An ICMP echo request."""
    icmp = bytearray(struct.pack("!BBHHH", ECHO_REQUEST, 0, 0, ident, seq) + body)
    icmp[2:4] = _csum(int.from_bytes(icmp + (b"\x00" if len(icmp) % 2 else b""), "big")).to_bytes(2, "big")
    return _mac(dst_mac) + _mac(src_mac) + b"\x08\x00" + _ipv4(src, dst, ICMP, bytes(icmp))


def datagram(src_mac: str, dst_mac: str, src: str, dst: str, sport: int, dport: int, body: bytes) -> bytes:
    """A UDP datagram."""
    udp = bytearray(struct.pack("!HHHH", sport, dport, 8 + len(body), 0) + body)
    udp[6:8] = _l4_csum(src, dst, UDP, bytes(udp))
    return _mac(dst_mac) + _mac(src_mac) + b"\x08\x00" + _ipv4(src, dst, UDP, bytes(udp))


def syn(src_mac: str, dst_mac: str, src: str, dst: str, sport: int, dport: int, body: bytes) -> bytes:
    """A TCP SYN (with data, which a SYN may carry: the tag)."""
    tcp = bytearray(struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x02, 65535, 0, 0) + body)
    tcp[16:18] = _l4_csum(src, dst, TCP, bytes(tcp))
    return _mac(dst_mac) + _mac(src_mac) + b"\x08\x00" + _ipv4(src, dst, TCP, bytes(tcp))


@dataclass(frozen=True)
class Seen:
    """A probe as a capture shows it."""

    probe: int
    src: str
    dst: str
    proto: int
    icmp_type: int | None = None
    sport: int | None = None
    dport: int | None = None

    @property
    def reply(self) -> bool:
        return self.proto == ICMP and self.icmp_type == ECHO_REPLY

    @property
    def error(self) -> str:
        """What ICMP error answered the probe ("" if this is the probe, or its reply)."""
        return ERRORS.get(self.icmp_type, "") if self.proto == ICMP and self.icmp_type is not None else ""


def _tag_at(packet: bytes, ip: int) -> tuple[int, int, int] | None:
    """(protocol, start of L4, start of the tag) of the IPv4 packet at offset `ip`, if it has room for one."""
    if len(packet) < ip + 20:
        return None
    proto, l4 = packet[ip + 9], ip + (packet[ip] & 0x0F) * 4
    head = {ICMP: 8, UDP: 8, TCP: 20}.get(proto)
    if head is None or len(packet) < l4 + head:
        return None
    return proto, l4, l4 + (((packet[l4 + 12] >> 4) * 4) if proto == TCP else head)


def read(frame: bytes, run: int) -> Seen | None:
    """A probe of run `run` (request, reply, rewritten, or quoted by an ICMP error), else None."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00" or (where := _tag_at(frame, 14)) is None:
        return None
    proto, l4, at = where
    if proto == ICMP and frame[l4] in ERRORS:  # the probe it answers is quoted after the ICMP header
        quoted = _tag_at(frame, l4 + 8)
        at = quoted[2] if quoted else len(frame)
    if len(frame) < at + TAG.size:
        return None
    magic, r, probe = TAG.unpack(frame[at : at + TAG.size])
    if magic != MAGIC or r != run:
        return None
    src, dst = ".".join(map(str, frame[26:30])), ".".join(map(str, frame[30:34]))
    if proto == ICMP:
        return Seen(probe, src, dst, proto, icmp_type=frame[l4])
    sport, dport = struct.unpack("!HH", frame[l4 : l4 + 4])
    return Seen(probe, src, dst, proto, sport=sport, dport=dport)


def keep(run: int) -> Callable[[bytes], bool]:
    """A capture filter: frames that carry this run's tag."""
    key = MAGIC + run.to_bytes(4, "big")
    return lambda f: key in f[:120]
