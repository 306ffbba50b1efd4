"""IPv4 addresses and prefixes in a topology: parsed with a short reason when they are not.

Loopbacks, the loopback pool and tenant subnets must be unicast space a router
can route: none of the special ranges below.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network

from twin.topology.problems import quoted

SPECIAL = [
    (IPv4Network("0.0.0.0/8"), "the 'this network' range 0.0.0.0/8"),
    (IPv4Network("127.0.0.0/8"), "the host loopback range 127.0.0.0/8"),
    (IPv4Network("169.254.0.0/16"), "the link-local range 169.254.0.0/16"),
    (IPv4Network("224.0.0.0/4"), "the multicast range 224.0.0.0/4"),
    (IPv4Network("240.0.0.0/4"), "the reserved range 240.0.0.0/4 (with the broadcast address)"),
]


def parse_address(text: object, example: str) -> tuple[IPv4Address | None, str]:
    """(address, "") or (None, why it is not an IPv4 address)."""
    try:
        return IPv4Address(text if isinstance(text, str) else ""), ""
    except ValueError:
        return None, f"{quoted(text)} is not an IPv4 address like {example}"


def parse_prefix(text: object, example: str) -> tuple[IPv4Network | None, str]:
    """(network, "") or (None, why it is not an IPv4 prefix, with a fix for host bits)."""
    try:
        return IPv4Network(text if isinstance(text, str) else ""), ""
    except ValueError as e:
        hint = str(e)
        if "has host bits set" in hint:
            hint = f"host bits are set; did you mean {IPv4Network(text, strict=False)}?"
        elif len(hint) > 60:
            hint = hint[:57] + "..."
        return None, f"{quoted(text)} is not an IPv4 prefix like {example} ({hint})"


def special_use(net: IPv4Network | IPv4Address) -> str | None:
    """The special range `net` is in or overlaps, or None for plain unicast space."""
    net = IPv4Network(net)
    for special, what in SPECIAL:
        if net.overlaps(special):
            return what
    return None
