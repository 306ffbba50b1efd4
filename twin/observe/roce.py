"""RoCEv2 counters per port, in the kernel: one nftables table per namespace of a node.

The table `twin_watch_<lab>` (netdev family) hooks ingress and egress of every port of
the namespace and counts, in dynamic sets with a counter per element, RoCEv2 frames
(UDP 4791, or inside VXLAN: UDP 4789 whose inner UDP port is 4791) by port, DSCP and
ECN codepoint of the header on the wire, and CNPs (BTH opcode 0x81). It goes with the
node's container, so with the lab. Ingress counts before a loss fault's rule
(priority -600 < -500), egress after it (-400): what arrived, and what left.

Reading: over netlink, in-process (`nftnl`: a few dumps per namespace, ~0.02 ms each; an
`nft -j list table` forked under nsenter costs ~6 ms of CPU, a `docker exec` ~30 ms with
dockerd and containerd). Installing: the node's own nft (its image's version: the host's
may be older, and Debian 12's 1.0.6 crashes listing these sets), run through the node's
exec seam (nsenter into its namespaces).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from twin.base.errors import TwinError
from twin.observe.nftnl import NftSocket
from twin.runtime import NodeExec

RX_PRIORITY, TX_PRIORITY = -600, -400
# byte offsets from the outer UDP header: VXLAN 8 + inner Ethernet 14 + inner IPv4 20 + UDP dport at 2
INNER_DPORT, INNER_OPCODE, OPCODE = (8 + 8 + 14 + 20 + 2) * 8, (8 + 8 + 14 + 20 + 8) * 8, 8 * 8
CNP = "0x81"


def table(lab: str) -> str:
    return f"twin_watch_{lab}"


def ruleset(lab: str, ports: list[str]) -> str:
    """The counter table of one namespace whose ports are `ports` (at least one)."""
    t, devs = table(lab), ", ".join(f'"{p}"' for p in sorted(ports))
    sets = "".join(
        f"\tset {name} {{ type {kind}; flags dynamic; size 4096; counter; }}\n"
        for name, kind in (
            ("roce_rx", "ifname . dscp . ecn"),
            ("roce_tx", "ifname . dscp . ecn"),
            ("cnp_rx", "ifname"),
            ("cnp_tx", "ifname"),
        )
    )

    def chain(name: str, hook: str, prio: int, dev: str) -> str:
        key = f"{dev} . ip dscp . ip ecn"
        return (
            f"\tchain {name} {{\n"
            f"\t\ttype filter hook {hook} devices = {{ {devs} }} priority {prio}; policy accept;\n"
            f"\t\tudp dport 4791 add @roce_{name} {{ {key} }}\n"
            f"\t\tudp dport 4789 @th,{INNER_DPORT},16 4791 add @roce_{name} {{ {key} }}\n"
            f"\t\tudp dport 4791 @th,{OPCODE},8 {CNP} add @cnp_{name} {{ {dev} }}\n"
            f"\t\tudp dport 4789 @th,{INNER_DPORT},16 4791 @th,{INNER_OPCODE},8 {CNP} add @cnp_{name} {{ {dev} }}\n"
            f"\t}}\n"
        )

    return (
        f"table netdev {t}\ndelete table netdev {t}\ntable netdev {t} {{\n{sets}"
        f"{chain('rx', 'ingress', RX_PRIORITY, 'iifname')}{chain('tx', 'egress', TX_PRIORITY, 'oifname')}}}\n"
    )


@dataclass
class PortRoce:
    """RoCEv2 counters of one port: (direction, dscp, ecn) -> [packets, bytes]; CNPs per direction."""

    by_class: dict[tuple[str, int, str], list[int]] = field(default_factory=dict)
    cnp: dict[str, int] = field(default_factory=lambda: {"rx": 0, "tx": 0})

    def packets(self, direction: str, ecn: str | None = None) -> int:
        return sum(v[0] for (d, _, e), v in self.by_class.items() if d == direction and (ecn is None or e == ecn))

    def to_dict(self) -> dict[str, Any]:
        return {
            "rx_packets": self.packets("rx"),
            "tx_packets": self.packets("tx"),
            "rx_ce": self.packets("rx", "ce"),
            "tx_ce": self.packets("tx", "ce"),
            "cnp_rx": self.cnp["rx"],
            "cnp_tx": self.cnp["tx"],
            "classes": [
                {"direction": d, "dscp": s, "ecn": e, "packets": v[0], "bytes": v[1]}
                for (d, s, e), v in sorted(self.by_class.items())
            ],
        }


def read(sock: NftSocket, lab: str) -> tuple[dict[str, PortRoce], set[str]] | None:
    """(port -> counters, the ports the chains hook) of one namespace's table; None: no table."""
    t = table(lab)
    hooked = sock.hooked(t)
    if not hooked:  # no such table (a dump of its chains finds nothing)
        return None
    ports: dict[str, PortRoce] = {}
    for name in ("roce_rx", "roce_tx", "cnp_rx", "cnp_tx"):
        direction = name.rsplit("_", 1)[1]
        for key, packets, octets in sock.elements(t, name) or []:
            pr = ports.setdefault(key[0], PortRoce())
            if name.startswith("cnp"):
                pr.cnp[direction] += packets
            else:
                c = pr.by_class.setdefault((direction, key[1], key[2]), [0, 0])
                c[0] += packets
                c[1] += octets
    return ports, hooked


def _nft(ex: NodeExec, pid: int, netns_path: str, ns: str, args: list[str], stdin: str = "") -> tuple[int, str, str]:
    """The node's own nft (its image's version: the host's may not read these tables) in one of
    its namespaces, through the node's exec seam (nsenter: no docker exec per poll)."""
    cmd = ["sh", "-c", 'printf "%s" "$1" | nft -f -', "nft", stdin] if stdin else ["nft", *args]
    res = ex.run((["ip", "netns", "exec", ns] if ns else []) + cmd)
    return res.rc, res.stdout, res.stderr


def install(ex: NodeExec, pid: int, netns_path: str, ns: str, lab: str, ports: list[str]) -> None:
    """(Re)make the counter table of one namespace, hooked on `ports`."""
    rc, out, err = _nft(ex, pid, netns_path, ns, ["-f", "-"], stdin=ruleset(lab, ports))
    if rc != 0:
        raise TwinError(
            f"{ex.where}{'/' + ns if ns else ''}: nft could not install the counter table: {(err or out).strip()}"
        )
