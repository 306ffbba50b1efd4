"""RoCEv2 packets with scapy (`scapy.contrib.roce`): build flows, read arrivals.

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
from dataclasses import dataclass, field

from scapy.contrib.roce import BTH, CNP_OPCODE, cnp
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Raw

ROCE_PORT = 4791
MAGIC = b"TWIN"
TAG = struct.Struct("!4sIII")  # magic, run, flow, psn
RC_SEND_ONLY = 0x04
RC_SEND_FIRST, RC_SEND_MIDDLE, RC_SEND_LAST = 0x00, 0x01, 0x02


@dataclass(frozen=True)
class Flow:
    """What to send: one QP of RoCEv2 traffic between two host endpoints."""

    flow_id: int
    src: str                 # host names
    dst: str
    src_mac: str
    dst_mac: str             # the peer (same segment) or the anycast gateway (routed)
    src_ip: str
    dst_ip: str
    sport: int = 49152       # UDP source port: the flow's ECMP entropy
    dqp: int = 0x11          # destination QP
    psn: int = 0             # first PSN
    count: int = 4
    payload: int = 256       # bytes of payload after the tag
    dscp: int = 26           # RoCE traffic class, as GPU clouds mark it
    ecn: int = 0b10          # ECT(0)
    opcode: int = RC_SEND_ONLY
    cnp: bool = False        # a congestion notification packet instead of data
    # Encapsulate in VXLAN as a host would to attack the fabric:
    # (outer src MAC, outer dst MAC, outer src IP, outer dst IP, VNI)
    vxlan: tuple[str, str, str, str, int] | None = None

    @property
    def tos(self) -> int:
        return (self.dscp << 2) | self.ecn


def frames(flow: Flow, run: int) -> list[bytes]:
    """The flow's frames, PSN after PSN, each with a valid ICRC."""
    out = []
    for i in range(flow.count):
        psn = (flow.psn + i) & 0xFFFFFF
        tag = TAG.pack(MAGIC, run, flow.flow_id, psn)
        if flow.cnp:
            bth = cnp(flow.dqp)
            bth.psn = psn
            roce = bth / Raw(tag)
        else:
            roce = BTH(opcode=flow.opcode, dqpn=flow.dqp, psn=psn, ackreq=0) / Raw(tag + bytes(flow.payload))
        pkt = (Ether(src=flow.src_mac, dst=flow.dst_mac) /
               IP(src=flow.src_ip, dst=flow.dst_ip, tos=flow.tos, ttl=64, flags="DF") /
               UDP(sport=flow.sport, dport=ROCE_PORT) / roce)
        if flow.vxlan:
            smac, dmac, sip, dip, vni = flow.vxlan
            pkt = (Ether(src=smac, dst=dmac) / IP(src=sip, dst=dip, ttl=64) /
                   UDP(sport=flow.sport, dport=4789) / VXLAN(vni=vni, flags=0x08) / pkt)
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
    return frame[udp + 2:udp + 4] == b"\x12\xb7" and frame[at:at + 4] == MAGIC


def _tag_offset(frame: bytes) -> int:
    udp = 14 + (frame[14] & 0x0F) * 4
    bth = udp + 8
    return bth + 12 + (16 if frame[bth] == CNP_OPCODE else 0)  # CNPs carry 16 bytes of padding


def icrc_valid(frame: bytes) -> bool:
    """Recompute the ICRC of a received frame with scapy and compare it with the one it carries."""
    ip = Ether(frame)[IP]
    total = ip.len
    received = bytes(ip)[total - 4:total]
    q = ip.copy()
    q[BTH].icrc = None          # scapy fills it in on build
    payload = bytes(ip[BTH].payload)
    q[BTH].remove_payload()
    q[BTH].add_payload(Raw(payload))
    return bytes(q)[total - 4:total] == received


def read(frame: bytes, run: int, check_icrc: bool = True) -> Arrival | None:
    """An arrival of this run's traffic, or None for anything else (parsed from the
    fixed header offsets; scapy recomputes the ICRC when `check_icrc`)."""
    if not is_roce(frame):
        return None
    tag_at = _tag_offset(frame)
    magic, r, flow_id, psn = TAG.unpack(frame[tag_at:tag_at + TAG.size])
    if magic != MAGIC or r != run:
        return None
    ok = icrc_valid(frame) if check_icrc else True
    return Arrival(flow_id=flow_id, psn=psn, tos=frame[15], icrc_ok=ok, size=len(frame))


@dataclass
class FlowResult:
    flow: Flow
    sent: int
    received: int = 0
    icrc_bad: int = 0
    tos_changed: int = 0
    gaps: int = 0            # PSNs sent but never received
    duplicates: int = 0
    reordered: int = 0       # arrivals with a PSN below one already seen
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
        r.tos_changed += a.tos != flow.tos
        if a.psn < top:
            r.reordered += 1
        top = max(top, a.psn)
    expected = {(flow.psn + i) & 0xFFFFFF for i in range(sent)}
    r.gaps = len(expected - seen)
    return r
