"""Netlink attributes (type-length-value, 4-byte aligned), packed and read by hand: for the
families pyroute2 does not decode, or decodes too slowly to poll (NFLOG, nf_tables sets and
chains, raw link dumps: `twin.observe.nflog`, `nftnl`, `linkstats`)."""

from __future__ import annotations

import struct

NLA_TYPE_MASK = 0x3FFF  # without the NESTED and NET_BYTEORDER flags


def attr(kind: int, data: bytes) -> bytes:
    """One attribute, padded to 4 bytes."""
    pad = (4 - len(data) % 4) % 4
    return struct.pack("=HH", 4 + len(data), kind) + data + b"\0" * pad


def attrs_all(data: bytes) -> list[tuple[int, bytes]]:
    """Every attribute of `data` in order, as (type, payload); repeated types kept (a list's items)."""
    out, pos = [], 0
    while pos + 4 <= len(data):
        length, kind = struct.unpack_from("=HH", data, pos)
        if length < 4:
            break
        out.append((kind & NLA_TYPE_MASK, data[pos + 4 : pos + length]))
        pos += (length + 3) & ~3
    return out


def attrs(data: bytes) -> dict[int, bytes]:
    """The attributes of `data` by type (the last of a repeated type wins)."""
    return dict(attrs_all(data))
