"""RoCEv2 counters per port, in the kernel: one nftables table per namespace of a node.

The table `twin_watch_<lab>` (netdev family) hooks ingress and egress of every port of
the namespace and counts, in dynamic sets with a counter per element, RoCEv2 frames
(UDP 4791, or inside VXLAN: UDP 4789 whose inner UDP port is 4791) by port, DSCP and
ECN codepoint of the header on the wire, and CNPs (BTH opcode 0x81). It goes with the
node's container, so with the lab. Ingress counts before a loss fault's rule
(priority -600 < -500), egress after it (-400): what arrived, and what left.

Reading: the node's own `nft -j list table` in each namespace, forked on the host under
nsenter into the node's mount and network namespaces (~6 ms of CPU; a `docker exec`
costs ~30 ms with dockerd and containerd; the host's own nft may be older: Debian 12's
1.0.6 crashes listing these sets).
"""
from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

from twin import timeouts
from twin.errors import TwinError
from twin.runtime.exec import NodeExec

RX_PRIORITY, TX_PRIORITY = -600, -400
# byte offsets from the outer UDP header: VXLAN 8 + inner Ethernet 14 + inner IPv4 20 + UDP dport at 2
INNER_DPORT, INNER_OPCODE, OPCODE = (8 + 8 + 14 + 20 + 2) * 8, (8 + 8 + 14 + 20 + 8) * 8, 8 * 8
CNP = "0x81"
DSCP_NAMES = {**{f"cs{i}": i * 8 for i in range(8)}, "ef": 46, "va": 44, "le": 1,
              **{f"af{c}{d}": c * 8 + d * 2 for c in range(1, 5) for d in range(1, 4)}}
ECN_NAMES = {"not-ect": "not-ect", "ect1": "ect1", "ect0": "ect0", "ce": "ce"}


def table(lab: str) -> str:
    return f"twin_watch_{lab}"


def ruleset(lab: str, ports: list[str]) -> str:
    """The counter table of one namespace whose ports are `ports` (at least one)."""
    t, devs = table(lab), ", ".join(f'"{p}"' for p in sorted(ports))
    sets = "".join(f"\tset {name} {{ type {kind}; flags dynamic; size 4096; counter; }}\n"
                   for name, kind in (("roce_rx", "ifname . dscp . ecn"), ("roce_tx", "ifname . dscp . ecn"),
                                      ("cnp_rx", "ifname"), ("cnp_tx", "ifname")))

    def chain(name: str, hook: str, prio: int, dev: str) -> str:
        key = f"{dev} . ip dscp . ip ecn"
        return (f"\tchain {name} {{\n\t\ttype filter hook {hook} devices = {{ {devs} }} priority {prio}; policy accept;\n"
                f"\t\tudp dport 4791 add @roce_{name} {{ {key} }}\n"
                f"\t\tudp dport 4789 @th,{INNER_DPORT},16 4791 add @roce_{name} {{ {key} }}\n"
                f"\t\tudp dport 4791 @th,{OPCODE},8 {CNP} add @cnp_{name} {{ {dev} }}\n"
                f"\t\tudp dport 4789 @th,{INNER_DPORT},16 4791 @th,{INNER_OPCODE},8 {CNP} add @cnp_{name} {{ {dev} }}\n"
                f"\t}}\n")
    return (f"table netdev {t}\ndelete table netdev {t}\ntable netdev {t} {{\n{sets}"
            f"{chain('rx', 'ingress', RX_PRIORITY, 'iifname')}{chain('tx', 'egress', TX_PRIORITY, 'oifname')}}}\n")


@dataclass
class PortRoce:
    """RoCEv2 counters of one port: (direction, dscp, ecn) -> [packets, bytes]; CNPs per direction."""
    by_class: dict[tuple[str, int, str], list[int]] = field(default_factory=dict)
    cnp: dict[str, int] = field(default_factory=lambda: {"rx": 0, "tx": 0})

    def packets(self, direction: str, ecn: str | None = None) -> int:
        return sum(v[0] for (d, _, e), v in self.by_class.items() if d == direction and (ecn is None or e == ecn))

    def to_dict(self) -> dict[str, Any]:
        return {"rx_packets": self.packets("rx"), "tx_packets": self.packets("tx"),
                "rx_ce": self.packets("rx", "ce"), "tx_ce": self.packets("tx", "ce"),
                "cnp_rx": self.cnp["rx"], "cnp_tx": self.cnp["tx"],
                "classes": [{"direction": d, "dscp": s, "ecn": e, "packets": v[0], "bytes": v[1]}
                            for (d, s, e), v in sorted(self.by_class.items())]}


def _dscp(v: Any) -> int:
    if isinstance(v, int):
        return v
    return DSCP_NAMES.get(v) if v in DSCP_NAMES else int(str(v), 0)


def parse(doc: dict) -> tuple[dict[str, PortRoce], set[str]]:
    """`nft -j list table netdev T` -> (port -> counters, the ports its chains hook)."""
    ports: dict[str, PortRoce] = {}
    hooked: set[str] = set()
    for item in doc.get("nftables", []):
        if "chain" in item:
            dev = item["chain"].get("dev", [])
            hooked |= set([dev] if isinstance(dev, str) else dev)
        if "set" not in item:
            continue
        s = item["set"]
        direction = s["name"].rsplit("_", 1)[1]
        for el in s.get("elem", []):
            e = el.get("elem", el) if isinstance(el, dict) else {}
            val, cnt = e.get("val"), e.get("counter") or {}
            if val is None:
                continue
            key = val["concat"] if isinstance(val, dict) else [val]
            pr = ports.setdefault(key[0], PortRoce())
            if s["name"].startswith("cnp"):
                pr.cnp[direction] += cnt.get("packets", 0)
            else:
                c = pr.by_class.setdefault((direction, _dscp(key[1]), ECN_NAMES.get(key[2], str(key[2]))), [0, 0])
                c[0] += cnt.get("packets", 0)
                c[1] += cnt.get("bytes", 0)
    return ports, hooked


def _nft(ex: NodeExec, pid: int, netns_path: str, ns: str, args: list[str], stdin: str = "") -> tuple[int, str, str]:
    """The node's own nft (its image's version: the host's may not read these tables) in one of
    its namespaces: forked on the host under nsenter into the node's mount and that network
    namespace, or, without nsenter, through the node's exec seam."""
    if shutil.which("nsenter"):
        p = subprocess.run(["nsenter", "-t", str(pid), "-m", f"--net={netns_path}", "nft", *args], input=stdin,
                           capture_output=True, text=True, timeout=timeouts.EXEC_DEFAULT)
        return p.returncode, p.stdout, p.stderr
    cmd = ["sh", "-c", 'printf "%s" "$1" | nft -f -', "nft", stdin] if stdin else ["nft", *args]
    res = ex.run((["ip", "netns", "exec", ns] if ns else []) + cmd)
    return res.rc, res.stdout, res.stderr


def read(ex: NodeExec, pid: int, netns_path: str, ns: str, lab: str) -> dict | None:
    """The table of one namespace as nft's JSON (None: no such table there)."""
    rc, out, _ = _nft(ex, pid, netns_path, ns, ["-j", "list", "table", "netdev", table(lab)])
    if rc != 0:
        return None
    try:
        return json.loads(out)
    except ValueError as e:
        raise TwinError(f"{ex.where}{'/' + ns if ns else ''}: unreadable nft output ({e})") from None


def install(ex: NodeExec, pid: int, netns_path: str, ns: str, lab: str, ports: list[str]) -> None:
    """(Re)make the counter table of one namespace, hooked on `ports`."""
    rc, out, err = _nft(ex, pid, netns_path, ns, ["-f", "-"], stdin=ruleset(lab, ports))
    if rc != 0:
        raise TwinError(f"{ex.where}{'/' + ns if ns else ''}: nft could not install the counter table: "
                        f"{(err or out).strip()}")
