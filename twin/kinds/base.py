"""What a node kind is: capabilities as data, behaviour in a few attributes.

A kind module defines one `Kind` subclass (constants only) and the registry in
`twin.kinds` lists it. Everything kind-specific that the pipeline or runtime
needs is read from here, so no other package tests a kind's name:

- the Clos: tier order, ASN scheme, port naming, which peers it accepts,
  whether it is a transit-only tier (spines), a workload endpoint (hosts) or
  the edge of the fabric (the internet, with its test addresses);
- FRR: whether it runs FRR, which daemons and which feature templates of
  `twin/config/templates/frr/` make its frr.conf (`twin.config.render` renders them),
  or whether it runs the user's config, judged by what that declares (a router);
- its container: command, what runs once its ports are up, capabilities, sysctls.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class PortNaming:
    """How a kind names a port it auto-allocates: template and first index."""

    template: str  # e.g. "swp{}"
    start: int = 1

    def name(self, index: int) -> str:
        return self.template.format(index)


# Where a node's files are, as mounted in its container: FRR's configuration directory (an FRR
# node's own directory of the lab) and the node's lab directory, read-only (kernel steps, scripts).
FRR_DIR = "/etc/frr"
NODE_DIR = "/etc/twin"
NODE_COMMAND = "/usr/local/bin/twin-node"  # the node image's own command (images/node/twin-node)
# A node's management port, as on a switch: eth0 in its own namespace (Cumulus's VRF mgmt), where sshd
# and the NVUE API listen (`twin.config.mgmt`); the fabric's routing never sees it
MGMT_PORT = "eth0"
MGMT_NS = "mgmt"
MGMT_NETNS = "/run/twin/mgmt"  # the namespace, mounted in the node: not in /run/netns, so FRR's zebra -n never takes
# it for a VRF of its own (frr-reload would remove it), on either VRF backend
SSH_PORT = 22
NVUE_PORT = 8765  # nvued's HTTPS port on a Cumulus switch
USER = "cumulus"  # the user of SSH and the NVUE API, as on a Cumulus switch
NV_GID = 1500  # group nvapply of the node image (cumulus is in it): who may use `nv`, as on Cumulus

# the multipath hash of a router's kernel: its policy, the fields it hashes, its seed
HASH_POLICY, HASH_FIELDS, HASH_SEED = (f"net.ipv4.fib_multipath_hash_{k}" for k in ("policy", "fields", "seed"))

# Sysctls every FRR router needs (measured): Docker's --network none disables
# IPv6, which leaves every BGP-unnumbered peer Idle without an error.
ROUTER_SYSCTLS = {
    "net.ipv6.conf.all.disable_ipv6": "0",
    "net.ipv6.conf.default.disable_ipv6": "0",
    "net.ipv4.ip_forward": "1",
    "net.ipv6.conf.all.forwarding": "1",
    "net.ipv6.conf.default.forwarding": "1",
    # ECMP on the 5-tuple, as fabric switches hash: the VXLAN source port carries each
    # inner flow's entropy, so RoCE flows between two VTEPs spread over every uplink.
    # Policy 3 (the fields below: addresses, protocol, ports), not 1: policy 1 takes the
    # hash a packet already carries, and over veths a packet keeps the one its sender's
    # kernel gave it, so every router of a path would choose alike (a leaf's flows to
    # spine1 all leaving spine1 by its first port: polarized; `twin verify` on pod8
    # caught it). Each router hashes with a seed of its own too (`Kind.sysctls_of`).
    HASH_POLICY: "3",
    HASH_FIELDS: "0x0037",
    # A VTEP sends its VXLAN packets with DF set, as a switch does (`twin.runtime.steps_apply`): a hop whose
    # MTU is short drops them and answers ICMP "fragmentation needed". A switch's VTEP learns nothing from
    # that answer; a Linux one would cache a path MTU for 10 minutes and drop every jumbo frame to that VTEP
    # itself, long after the MTU is mended (a rehearsal's or a proof's restore). Mode 3 honours the answer
    # only where the protocol can verify it (TCP: BGP keeps its path MTU discovery), never for VXLAN's UDP.
    "net.ipv4.ip_no_pmtu_disc": "3",
}


class Kind:
    name: ClassVar[str]
    description: ClassVar[str]
    tier: ClassVar[int]  # allocation order: spines first
    runs_bgp: ClassVar[bool] = True  # an FRR router of the fabric (eBGP unnumbered)
    transit: ClassVar[bool] = False  # a transit-only tier (spines): no hosts, no VTEP
    endpoint: ClassVar[bool] = False  # a workload endpoint (a host): no routing daemon
    asn_base: ClassVar[int | None] = None  # first ASN of the tier
    asn_shared: ClassVar[bool] = False  # one ASN for the whole tier (spines)
    fabric_ports: ClassVar[PortNaming] = PortNaming("swp{}")  # towards BGP peers
    access_ports: ClassVar[PortNaming] = PortNaming("swp{}")  # towards hosts
    accepts_hosts: ClassVar[bool] = False
    can_be_vtep: ClassVar[bool] = False  # may terminate tenants' VXLAN (EVPN VTEP)
    edge: ClassVar[bool] = False  # outside the fabric (the internet): no EVPN, the default route
    attaches_to: ClassVar[tuple[str, ...] | None] = None  # kinds it may link to (None: any BGP kind)
    test_addresses: ClassVar[tuple[str, ...]] = ()  # addresses it answers on, for tenants to reach
    nvue_port_suffix: ClassVar[str] = ""  # how NVUE names its ports (DOCA HBN on a DPU: p0 is p0_if)
    platform_ports: ClassVar[str] = ""  # the ports its platform has, cabled or not, as NVUE ranges them
    # (a topology's `platform_ports` overrides it)
    mgmt: ClassVar[bool] = False  # has a management port (eth0 on the lab's management network)
    user_config: ClassVar[bool] = False  # runs the user's FRR config; twin derives no intent for it
    # but what that config declares (twin.intent.generic)
    daemons: ClassVar[tuple[str, ...]] = ()  # FRR daemons besides zebra/staticd/watchfrr
    frr_features: ClassVar[tuple[str, ...]] = ()  # feature templates of frr.conf, in order
    capabilities: ClassVar[tuple[str, ...]] = ("NET_ADMIN", "SYS_ADMIN", "NET_RAW")
    sysctls: ClassVar[dict[str, str]] = {}
    # limits of its container, so one runaway node cannot take the host down (FRR nodes run
    # ~30 MiB and ~30 tasks; a spine with 120 peers ~80 MiB: see `make bench`)
    memory_limit: ClassVar[str] = "512m"
    pids_limit: ClassVar[int] = 512
    command: ClassVar[list[str] | None] = None  # None: the image's CMD
    start: ClassVar[list[str] | None] = None  # run in the node once all its ports are up

    def sysctls_of(self, node: str) -> dict[str, str]:
        """The sysctls of a node of this kind: the kind's, and where it hashes ECMP a seed of its own
        (from its name; 0 would be the kernel's one random seed, the same in every node)."""
        out = dict(self.sysctls)
        if HASH_POLICY in out:
            out[HASH_SEED] = str(zlib.crc32(node.encode()) or 1)
        return out

    @property
    def runs_frr(self) -> bool:
        return bool(self.frr_features)
