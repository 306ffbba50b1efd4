"""RoCEv2 packets, as `scapy.contrib.roce` defines them: build flows, read arrivals.

A flow is one queue pair's worth of packets from one host endpoint to another:
Ether / IPv4 (DSCP, ECN) / UDP 4791 / BTH (opcode, destination QP, PSN) /
payload / ICRC. The payload starts with a tag (run, flow, PSN) so a receiver
can tell twin's packets from anything else and attribute each one to its flow
even when it turns up at the wrong host. The ICRC masks TTL, TOS and the UDP
checksum, so it survives routing: recomputing it on arrival proves the frame
crossed the fabric intact.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

ROCE_PORT = 4791
MAGIC = b"TWIN"
TAG = struct.Struct("!4sIII")  # magic, run, flow, psn
IPV4 = struct.Struct("!BBHHHBBH4s4s")
UDP_HDR = struct.Struct("!HHHH")
PSN_MASK = 0xFFFFFF
CNP_OPCODE = 0x81  # RoCEv2 congestion notification (scapy.contrib.roce.CNP_OPCODE)
ICRC = struct.Struct("<I")  # scapy packs crc32 big-endian, then reverses the bytes
RC_SEND_ONLY = 0x04
RC_SEND_FIRST, RC_SEND_MIDDLE, RC_SEND_LAST = 0x00, 0x01, 0x02
NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3  # the ECN field (RFC 3168)


def is_ce(tos: int) -> bool:
    return tos & 0b11 == CE


@dataclass(frozen=True)
class Flow:
    """What to send: one QP of RoCEv2 traffic between two host endpoints."""

    flow_id: int
    src: str  # host names
    dst: str
    src_mac: str
    dst_mac: str  # the peer (same segment) or the anycast gateway (routed)
    src_ip: str
    dst_ip: str
    sport: int = 49152  # UDP source port: the flow's ECMP entropy
    dqp: int = 0x11  # destination QP
    sqp: int = 0x10  # the sender's QP: where the receiver's CNPs go (not in the data frames)
    psn: int = 0  # first PSN
    count: int = 4
    payload: int = 256  # bytes of payload after the tag
    dscp: int = 26  # RoCE traffic class, as GPU clouds mark it
    ecn: int = 0b10  # ECT(0)
    opcode: int = RC_SEND_ONLY
    cnp: bool = False  # a congestion notification packet instead of data
    # Encapsulate in VXLAN as a host would to attack the fabric:
    # (outer src MAC, outer dst MAC, outer src IP, outer dst IP, VNI)
    vxlan: tuple[str, str, str, str, int] | None = None

    @property
    def tos(self) -> int:
        return (self.dscp << 2) | self.ecn


def frames(flow: Flow, run: int) -> list[bytes]:
    """The flow's frames, PSN after PSN, each with a valid ICRC: packed directly (`frame`), as
    scapy builds them byte for byte (`scapy_frames`, which also builds the VXLAN-wrapped ones)."""
    if flow.vxlan:
        return scapy_frames(flow, run)
    return [frame(flow, run, (flow.psn + i) & PSN_MASK) for i in range(flow.count)]


def frame(flow: Flow, run: int, psn: int) -> bytes:
    """One RoCEv2 frame of `flow`: Ether / IPv4 (DF, TTL 64) / UDP 4791 / BTH / tag+payload / ICRC,
    the same bytes scapy.contrib.roce makes (tests/unit/test_stream.py) at ~30 times the speed."""
    tag = TAG.pack(MAGIC, run, flow.flow_id, psn)
    opcode, byte4, body = (
        (CNP_OPCODE, 0x40, bytes(16) + tag)
        if flow.cnp  # BECN, 16 bytes reserved
        else (flow.opcode, 0, tag + bytes(flow.payload))
    )
    bth = (
        bytes([opcode, 0])
        + b"\xff\xff"
        + bytes([byte4])
        + flow.dqp.to_bytes(3, "big")
        + b"\x00"
        + psn.to_bytes(3, "big")
    )
    udp_len = 8 + len(bth) + len(body) + 4
    src, dst = _ip(flow.src_ip), _ip(flow.dst_ip)
    ip = bytearray(IPV4.pack(0x45, flow.tos, 20 + udp_len, 1, 0x4000, 64, 17, 0, src, dst))
    ip[10:12] = _csum(int.from_bytes(ip, "big")).to_bytes(2, "big")
    udp = UDP_HDR.pack(flow.sport, ROCE_PORT, udp_len, 0)
    f = bytearray(_mac(flow.dst_mac) + _mac(flow.src_mac) + b"\x08\x00" + ip + udp + bth + body + bytes(4))
    f[-4:] = icrc(f)
    segment = bytes(f[34:]) + b"\x00" * (udp_len % 2)
    f[40:42] = _csum(
        int.from_bytes(src + dst + b"\x00\x11" + udp_len.to_bytes(2, "big"), "big") + int.from_bytes(segment, "big")
    ).to_bytes(2, "big")
    return bytes(f)


def _csum(total: int) -> int:
    """The Internet checksum of a big-endian integer of 16-bit words (modulo 0xffff is the ones'
    complement sum; 0 is sent as 0xffff, as RFC 768 wants of UDP)."""
    return 0xFFFF - total % 0xFFFF


def _ip(text: str) -> bytes:
    return bytes(int(x) for x in text.split("."))


def _mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def scapy_frames(flow: Flow, run: int) -> list[bytes]:
    """The flow's frames as scapy builds them (the reference; VXLAN-wrapped attack frames).
    scapy is imported here only: it costs a quarter of a second to load, and twin packs its
    frames itself otherwise."""
    from scapy.contrib.roce import BTH, cnp
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.layers.vxlan import VXLAN
    from scapy.packet import Raw

    out = []
    for i in range(flow.count):
        psn = (flow.psn + i) & PSN_MASK
        tag = TAG.pack(MAGIC, run, flow.flow_id, psn)
        if flow.cnp:
            bth = cnp(flow.dqp)
            bth.psn = psn
            roce = bth / Raw(tag)
        else:
            roce = BTH(opcode=flow.opcode, dqpn=flow.dqp, psn=psn, ackreq=0) / Raw(tag + bytes(flow.payload))
        pkt = (
            Ether(src=flow.src_mac, dst=flow.dst_mac)
            / IP(src=flow.src_ip, dst=flow.dst_ip, tos=flow.tos, ttl=64, flags="DF")
            / UDP(sport=flow.sport, dport=ROCE_PORT)
            / roce
        )
        if flow.vxlan:
            smac, dmac, sip, dip, vni = flow.vxlan
            # scapy types `/` as returning scapy.compat.Self, a stand-in mypy cannot resolve for Python 3.10
            pkt = (
                Ether(src=smac, dst=dmac)
                / IP(src=sip, dst=dip, ttl=64)  # type: ignore[operator]
                / UDP(sport=flow.sport, dport=4789)
                / VXLAN(vni=vni, flags=0x08)
                / pkt
            )
        out.append(bytes(pkt))
    return out


@dataclass(frozen=True)
class Arrival:
    flow_id: int
    psn: int
    tos: int
    icrc_ok: bool
    size: int


def is_roce(frame: bytes) -> bool:
    """Cheap pre-filter: IPv4, UDP, destination port 4791, twin's tag after the BTH."""
    if len(frame) < 62 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return False
    udp = 14 + (frame[14] & 0x0F) * 4
    at = _tag_offset(frame)
    return frame[udp + 2 : udp + 4] == b"\x12\xb7" and frame[at : at + 4] == MAGIC


@dataclass(frozen=True)
class Encapsulated:
    """What the fabric shows of one of twin's RoCE frames inside VXLAN."""

    outer_src: str  # the sending VTEP
    outer_dscp: int
    vni: int
    inner_dscp: int
    run: int
    flow_id: int
    fragment: bool = False  # the outer packet was fragmented on its way (an MTU short of the frame)


def encapsulated(frame: bytes) -> Encapsulated | None:
    """A VXLAN frame carrying twin's RoCEv2 (IPv4 over IPv4), read at fixed offsets (no scapy:
    the underlay group reads thousands); None for anything else."""
    if len(frame) < 14 + 20 + 8 + 8 + 14 + 20 + 8 + 12 + TAG.size or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return None
    udp = 14 + (frame[14] & 0x0F) * 4
    if frame[udp + 2 : udp + 4] != b"\x12\xb5":  # 4789
        return None
    inner = udp + 8 + 8
    if frame[inner + 12 : inner + 14] != b"\x08\x00":
        return None
    ip = inner + 14
    if not is_roce(frame[inner:]):
        return None
    at = inner + _tag_offset(frame[inner:])
    magic, run, flow_id, _ = TAG.unpack(frame[at : at + TAG.size])
    src = ".".join(str(b) for b in frame[26:30])
    fragment = bool(int.from_bytes(frame[20:22], "big") & 0x3FFF)  # more fragments, or an offset
    return Encapsulated(
        src,
        frame[15] >> 2,
        int.from_bytes(frame[udp + 12 : udp + 15], "big"),
        frame[ip + 1] >> 2,
        run,
        flow_id,
        fragment,
    )


def _tag_offset(frame: bytes) -> int:
    udp = 14 + (frame[14] & 0x0F) * 4
    bth = udp + 8
    return bth + 12 + (16 if frame[bth] == CNP_OPCODE else 0)  # CNPs carry 16 bytes of padding


def icrc_pseudo(frame: bytes | bytearray, ip_at: int) -> bytearray:
    """The ICRC pseudo-header of an IPv4 RoCEv2 frame (without its ICRC): 8 bytes of
    1s (pseudo-LRH), then IP / UDP / BTH / payload with the fields routing may change
    set to 1s: IP TOS, TTL, checksum; UDP checksum; BTH FECN/BECN/resv6."""
    ihl = (frame[ip_at] & 0x0F) * 4
    total = (frame[ip_at + 2] << 8) | frame[ip_at + 3]
    p = bytearray(b"\xff" * 8)
    p += frame[ip_at : ip_at + total - 4]
    p[9] = p[16] = 0xFF  # TOS, TTL
    p[18:20] = b"\xff\xff"  # IP header checksum
    udp = 8 + ihl
    p[udp + 6 : udp + 8] = b"\xff\xff"  # UDP checksum
    p[udp + 12] = 0xFF  # BTH byte 4: FECN, BECN, resv6
    return p


def icrc(frame: bytes | bytearray, ip_at: int = 14) -> bytes:
    """The ICRC an IPv4 RoCEv2 frame (IP header at `ip_at`) should carry, as scapy computes it."""
    return ICRC.pack(zlib.crc32(icrc_pseudo(frame, ip_at)))


def icrc_ok(frame: bytes, ip_at: int = 14) -> bool:
    """Does the frame carry the right ICRC? (fast: no scapy)"""
    end = ip_at + ((frame[ip_at + 2] << 8) | frame[ip_at + 3])
    return len(frame) >= end and frame[end - 4 : end] == icrc(frame, ip_at)


def icrc_valid(frame: bytes) -> bool:
    """Recompute the ICRC of a received frame with scapy and compare it with the one it carries
    (the reference `icrc_ok` is checked against)."""
    from scapy.contrib.roce import BTH
    from scapy.layers.inet import IP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    ip = Ether(frame)[IP]
    total = ip.len
    received = bytes(ip)[total - 4 : total]
    q = ip.copy()
    q[BTH].icrc = None  # scapy fills it in on build
    payload = bytes(ip[BTH].payload)
    q[BTH].remove_payload()
    q[BTH].add_payload(Raw(payload))
    return bytes(q)[total - 4 : total] == received


def read(frame: bytes, run: int, check_icrc: bool = True) -> Arrival | None:
    """An arrival of this run's traffic, or None for anything else (parsed from the
    fixed header offsets; the ICRC recomputed when `check_icrc`, as scapy does)."""
    if not is_roce(frame):
        return None
    tag_at = _tag_offset(frame)
    magic, r, flow_id, psn = TAG.unpack(frame[tag_at : tag_at + TAG.size])
    if magic != MAGIC or r != run:
        return None
    ok = icrc_ok(frame) if check_icrc else True
    return Arrival(flow_id=flow_id, psn=psn, tos=frame[15], icrc_ok=ok, size=len(frame))


@dataclass
class FlowResult:
    flow: Flow
    sent: int
    received: int = 0
    icrc_bad: int = 0
    tos_changed: int = 0  # DSCP or ECN changed (a congestion mark, ECT -> CE, is counted in `ce` instead)
    ce: int = 0  # arrived marked CE: congestion on the way
    cnps_sent: int = 0  # CNPs the receiver answered the marks with (DCQCN notification point)
    cnps_received: int = 0  # ... and that reached the sender
    ce_times: list[int] = field(default_factory=list)  # kernel arrival times (ns) of the CE-marked frames
    times: list[int] = field(default_factory=list)  # ... of every frame that reached its destination
    gaps: int = 0  # PSNs sent but never received
    duplicates: int = 0
    reordered: int = 0  # arrivals with a PSN below one already seen
    seen_at: dict[str, int] = field(default_factory=dict)  # host -> packets (wrong hosts included)

    @property
    def delivered(self) -> bool:
        return self.received == self.sent and not (self.icrc_bad or self.tos_changed or self.duplicates)


def analyse(flow: Flow, sent: int, arrivals: list[Arrival]) -> FlowResult:
    """Per-flow outcome from the arrivals at the flow's destination (in arrival order)."""
    r = FlowResult(flow=flow, sent=sent)
    seen: set[int] = set()
    top = -1
    for a in arrivals:
        if a.psn in seen:
            r.duplicates += 1
            continue
        seen.add(a.psn)
        r.received += 1
        r.icrc_bad += not a.icrc_ok
        marked = is_ce(a.tos) and flow.ecn in (ECT1, ECT0) and a.tos >> 2 == flow.dscp
        r.ce += marked
        r.tos_changed += a.tos != flow.tos and not marked
        if a.psn < top:
            r.reordered += 1
        top = max(top, a.psn)
    expected = {(flow.psn + i) & 0xFFFFFF for i in range(sent)}
    r.gaps = len(expected - seen)
    return r
