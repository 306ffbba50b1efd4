"""RoCEv2 frames at line rate: one template per flow, patched per packet.

A `Stamper` packs one template per flow with `roce.frame`, then per packet patches
the PSN in the BTH and the tag, recomputes the ICRC (zlib.crc32 over the masked
pseudo-header, as scapy.contrib.roce does) and the UDP checksum (the big-endian
integer of the segment modulo 0xffff is its ones' complement sum). The frames are
byte-identical to scapy's (tests/unit/test_stream.py).
"""

from __future__ import annotations

import zlib
from dataclasses import replace

from twin.base.errors import TwinError
from twin.traffic import roce
from twin.traffic.roce import ICRC, PSN_MASK, icrc_pseudo


class Stamper:
    """The frames of one flow for any PSN, from one scapy-built template.

    `frame(psn)` equals `roce.frames(replace(flow, psn=psn, count=1), run)[0]`
    byte for byte. Not thread-safe (it patches a shared pseudo-header): one per sender.
    """

    def __init__(self, flow: roce.Flow, run: int):
        if flow.vxlan:
            raise TwinError(f"flow {flow.flow_id}: streams send plain RoCEv2, not VXLAN-encapsulated frames")
        self.flow, self.run = flow, run
        self.template = roce.frames(replace(flow, count=1), run)[0]
        t = self.template
        ip = 14
        ihl = (t[ip] & 0x0F) * 4
        end = ip + ((t[ip + 2] << 8) | t[ip + 3])
        udp = ip + ihl
        bth = udp + 8
        self._udp, self._end = udp, end
        self._psn = bth + 9  # BTH: 24-bit PSN in bytes 9..11
        self._tag_psn = bth + 12 + (16 if t[bth] == roce.CNP_OPCODE else 0) + 12  # tag: magic, run, flow, psn
        self._icrc = end - 4
        self._pseudo = icrc_pseudo(t, ip)
        self._shift = 8 - ip  # frame offset -> pseudo-header offset
        # UDP checksum: the IPv4 pseudo-header (addresses, protocol, UDP length) is constant
        self._udp_pseudo = int.from_bytes(t[ip + 12 : ip + 20] + b"\x00\x11" + t[udp + 4 : udp + 6], "big")
        self._pad = b"\x00" * ((end - udp) % 2)

    def frame(self, psn: int) -> bytes:
        psn &= PSN_MASK
        f = bytearray(self.template)
        p = self._pseudo
        b3, b4 = psn.to_bytes(3, "big"), psn.to_bytes(4, "big")
        a, t, s = self._psn, self._tag_psn, self._shift
        f[a : a + 3] = p[a + s : a + s + 3] = b3
        f[t : t + 4] = p[t + s : t + s + 4] = b4
        f[self._icrc : self._end] = ICRC.pack(zlib.crc32(p))
        u = self._udp
        f[u + 6 : u + 8] = b"\x00\x00"
        total = (int.from_bytes(f[u : self._end] + self._pad, "big") + self._udp_pseudo) % 0xFFFF
        f[u + 6 : u + 8] = (0xFFFF - total).to_bytes(2, "big")  # 0 is sent as 0xffff, as RFC 768 wants
        return bytes(f)
