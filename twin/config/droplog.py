"""How twin's own drop rules say why they drop: one NFLOG group and a prefix per reason.

Every nftables rule twin installs that drops packets (the zero-trust rules of host
ports, `nft/ports.nft.j2`; a loss fault, `twin.change.link_faults`; a deny rule of an NVUE ACL,
`twin.nvue.acl`) logs the packet
first with `log prefix "twin <code> <subject>" group LOG_GROUP`: `twin.observe`
reads them over NFLOG and turns each into an event whose reason is in words.
"""

from __future__ import annotations

LOG_GROUP = 1715  # the nflog group of twin's drop rules, in every namespace of every node
PREFIX = "twin"

# code -> the reason template; {subject} is the host (or the fault), the rest come from the packet
REASONS: dict[str, str] = {
    "spoof-mac": "source MAC {src_mac} is not {subject}'s ({mac})",
    "not-ipv4": "{ethertype} frame from {subject}: a host port carries only IPv4 and ARP",
    "spoof-arp-mac": "ARP sender MAC {arp_mac} is not {subject}'s ({mac})",
    "spoof-arp-ip": "ARP sender {arp_ip} is not {subject}'s address ({address})",
    "spoof-ip": "IPv4 source {src} is not {subject}'s address ({address})",
    "vxlan": "VXLAN from a host port ({subject})",
    "loss": "fault: {subject} random loss on this port",
    "acl": "acl {subject}",  # a deny rule of an NVUE ACL (twin.nvue.acl): "NAME rule N"
}
SHORT: dict[str, str] = {  # a label value per code (Prometheus `reason`)
    "spoof-mac": "spoofed_mac",
    "not-ipv4": "not_ipv4",
    "spoof-arp-mac": "spoofed_arp_mac",
    "spoof-arp-ip": "spoofed_arp_ip",
    "spoof-ip": "spoofed_ip",
    "vxlan": "vxlan_from_host",
    "loss": "fault_loss",
    "acl": "acl",
}


def log(code: str, subject: str) -> str:
    """The nft `log` statement of a drop rule (before its `drop`)."""
    if code not in REASONS:
        raise ValueError(f"unknown drop reason {code!r}")
    return f'log prefix "{PREFIX} {code} {subject}" group {LOG_GROUP}'


def parse(prefix: str) -> tuple[str, str] | None:
    """(code, subject) of a prefix twin wrote; None for anything else."""
    parts = prefix.strip().split(" ", 2)
    if len(parts) != 3 or parts[0] != PREFIX or parts[1] not in REASONS:
        return None
    return parts[1], parts[2]
