"""Where NVUE's ACLs (`twin.nvue.acl`) run on a node, and the nftables files that run them.

- Bound to a port, a bond the lab makes or an SVI (`interface X acl NAME inbound|outbound`): a chain of
  table `netdev twin_acl` in the namespace holding the device, on its own hook (ingress: inbound, egress:
  outbound). A port's sees what it receives or sends, bridged and routed alike; an SVI's device is the
  bridge twin makes for it (the VLAN-aware layout: its VLAN device), whose ingress sees what the bridge
  passes up to be routed (what enters the SVI from its VLAN) and whose egress what is routed out into the
  VLAN: as on Cumulus Linux, an SVI's ACLs meet routed traffic only, never what the VLAN bridges.
- Bound to the control plane (`system control-plane acl NAME inbound|outbound`, or one interface's:
  `interface X acl NAME inbound|outbound control-plane`): a chain of table `inet twin_acl` on the input
  (inbound) or output (outbound) hook, what the node's own stack receives or sends (BGP, BFD, SSH, the
  NVUE API, pings of its addresses), in every namespace of the node that runs its control plane: its
  own (FRR's sockets), each VRF's where VRFs are namespaces (the netns backend) and the management
  namespace (eth0: sshd, the NVUE API, as Cumulus's iptables INPUT has VRF mgmt too). Its own traffic
  (lo) and VXLAN (a switch's ASIC carries it, not its CPU) pass before the rules; one interface's
  returns whatever else arrives or leaves (`iifname` or, in a VRF device, `sdifname`).

Each binding has its chain and a named counter per rule (`r<binding>_<rule>`): `nv show acl` reads them,
and `twin verify` (`twin.nvue.kernelcheck`). Kept, not run, and said: a binding to a bond the lab does
not make or an SVI the node does not make (no host of the topology in its VLAN there), and Cumulus's own
control-plane ACLs (`acl-default-dos`, `acl-default-whitelist`) a file binds without declaring them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from itertools import count
from typing import Any

from twin.base.errors import TopologyError
from twin.config.backend import Backend
from twin.config.steps import Step
from twin.kinds import MGMT_NS
from twin.nvue import mtu as nvue_mtu
from twin.nvue import qos as nvue_qos
from twin.nvue.acl import INET, NETDEV, PRIORITY, TABLE, TYPES, Acl, acls_of
from twin.nvue.tree import Path, get

CONTROL_PLANE = "control-plane"
BUILTIN = ("acl-default-dos", "acl-default-whitelist")  # Cumulus's own (5.9): bound in its files, declared nowhere
VXLAN_PORT = 4789


@dataclass(frozen=True)
class Binding:
    """ACL `acl` bound one way to NVUE interface `port` (kernel device `dev`, in namespace `ns`), or to
    the node's control plane (`cp`: the system's, `port` CONTROL_PLANE and no device, or one interface's)."""

    port: str
    dev: str
    ns: str
    way: str  # inbound or outbound
    acl: str
    index: int  # its place among the node's bindings: its chain and counters
    cp: bool = False

    @property
    def family(self) -> str:
        return INET if self.cp else NETDEV

    @property
    def inbound(self) -> bool:
        return self.way == "inbound"

    @property
    def chain(self) -> str:
        return f"b{self.index}_{'in' if self.inbound else 'out'}"

    @property
    def hook(self) -> str:
        return ("input" if self.inbound else "output") if self.cp else ("ingress" if self.inbound else "egress")

    @property
    def place(self) -> str:
        """How checks and proof elements name it: the interface (swp1, vlan10, bond1), `swp1 control-plane`,
        or `control-plane` (the system's, in the node's own namespace; `control-plane/red` in another)."""
        if not self.cp:
            return self.port
        if self.port != CONTROL_PLANE:
            return f"{self.port} {CONTROL_PLANE}"
        return CONTROL_PLANE + (f"/{self.ns}" if self.ns else "")

    @property
    def hooked(self) -> str:
        """Its hook in words: `swp1's ingress`, `the control plane's input`, `swp1's control-plane input`."""
        if not self.cp:
            return f"{self.port}'s {self.hook}"
        return f"the control plane's {self.hook}" if self.port == CONTROL_PLANE else f"{self.place} {self.hook}"

    def counter(self, seq: int) -> str:
        return f"r{self.index}_{seq}"


@dataclass
class Acls:
    """A node's ACLs and their bindings, what it keeps without running, and what twin would run half."""

    acls: dict[str, Acl] = field(default_factory=dict)
    bindings: list[Binding] = field(default_factory=list)
    problems: list[tuple[Path, str]] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # "NVUE path: kept, not run (why)"

    def tables(self) -> list[tuple[str, str]]:
        """(family, namespace) of each table the node's bindings need."""
        return sorted({(b.family, b.ns) for b in self.bindings})

    def namespaces(self, family: str = NETDEV) -> list[str]:
        return sorted({ns for f, ns in self.tables() if f == family})

    @staticmethod
    def file(ns: str, family: str = NETDEV) -> str:
        """The node's file of its ACLs in namespace `ns` (netdev: ports, bonds, SVIs; inet: control plane)."""
        base = "acl" if family == NETDEV else "acl-cp"
        return f"{base}-{ns}.nft" if ns else f"{base}.nft"

    def render(self, ns: str, node: str, family: str = NETDEV) -> str:
        """The nftables file of table `family twin_acl` in namespace `ns`: made anew, a chain per binding."""
        where = f" in namespace {ns}" if ns else ""
        out = (
            [
                f"# {node}: NVUE's ACLs bound to its ports, bonds and SVIs{where} (twin.nvue.aclbind).",
                "# Per binding a chain on the device's own hook (ingress: inbound, egress: outbound), its rules",
                "# in order, each counted; what no rule matches passes.",
            ]
            if family == NETDEV
            else [
                f"# {node}: NVUE's ACLs bound to its control plane{where} (twin.nvue.aclbind).",
                "# Per binding a chain on the input (inbound) or output (outbound) hook, its rules in order, each",
                "# counted; what no rule matches passes, and so do the node's own traffic (lo) and VXLAN.",
            ]
        )
        out += [f"table {family} {TABLE}", f"delete table {family} {TABLE}", f"table {family} {TABLE} {{"]
        mine = [b for b in self.bindings if b.ns == ns and b.family == family]
        for b in mine:
            out += [line for r in self.acls[b.acl].rules for line in (f"\tcounter {b.counter(r.seq)} {{", "\t}")]
        for b in mine:
            out += [f"\tchain {b.chain} {{", f"\t\t# acl {b.acl} {b.way} on {b.place}"]
            out += [f"\t\t{line}" for line in _head(b)]
            out += [f"\t\t{r.nft(b.acl, b.counter(r.seq), family)}" for r in self.acls[b.acl].rules]
            out.append("\t}")
        return "\n".join(out + ["}", ""])

    def files(self, node: str) -> dict[str, str]:
        return {self.file(ns, f): self.render(ns, node, f) for f, ns in self.tables()}

    def steps(self, node: str) -> dict[tuple, Step]:
        """Each table's file loaded in its namespace once its devices are there (the plane's last steps), keyed
        as plane extras (`("acl", ns)`: netdev, `("acl-cp", ns)`: inet); the file's digest in its arguments,
        so a changed ACL is loaded again on day 2."""
        out = {}
        for f, ns in self.tables():
            sha = hashlib.sha256(self.render(ns, node, f).encode()).hexdigest()[:16]
            key = ("acl" if f == NETDEV else "acl-cp", ns)
            out[key] = Step("nft", self.file(ns, f), ns, {"sha": sha, "table": f"{f} {TABLE}"})
        return out


def _head(b: Binding) -> list[str]:
    """A chain's hook and what passes before its rules (a control-plane chain: lo, VXLAN, other interfaces)."""
    dev = f' device "{b.dev}"' if not b.cp else ""
    out = [f"type filter hook {b.hook}{dev} priority {PRIORITY}; policy accept;"]
    if not b.cp:
        return out
    io = "i" if b.inbound else "o"
    out += [
        f'{io}if "lo" accept comment "twin: the node to itself"',
        f'udp dport {VXLAN_PORT} accept comment "twin: VXLAN (a switch\'s ASIC carries it, not its CPU)"',
    ]
    if b.port != CONTROL_PLANE:
        also = f' meta sdifname != "{b.dev}"' if b.inbound else ""
        out.append(f'{io}ifname != "{b.dev}"{also} return comment "twin: {b.port} only"')
    return out


def of(
    tree: dict, where: dict[str, tuple[str, str]], cp: list[str] | None = None, kept: dict[str, str] | None = None
) -> Acls:
    """The ACLs of an NVUE tree and their bindings: to ports, bonds and SVIs (`where`: NVUE interface ->
    (namespace, kernel device) of those the node makes; `kept`: those it declares and does not make, and
    why), and to the control plane (in each namespace of `cp`); with every problem (NVUE path, why) of what
    twin would run half."""
    out = Acls()
    out.acls = acls_of(tree, out.problems)
    kept, index = kept or {}, count()
    for port, i in sorted(get(tree, ("interface",), {}).items()):
        for name, ways in sorted(get(i, ("acl",), {}).items()):
            at: Path = ("interface", port, "acl", name)
            if not _runs(out, at, name):
                continue
            for way in (w for w in ("inbound", "outbound") if w in ways):
                if port in kept:
                    out.kept.append(f"{'.'.join(at + (way,))}: kept, not run ({kept[port]})")
                elif port not in where:
                    why = f"{port} is no port twin makes on this node: an ACL binds to a port, bond or SVI of the node"
                    out.problems.append((at + (way,), why))
                else:
                    plane = get(ways, (way, "control-plane")) is not None
                    if plane and not _packets(out, at + (way, "control-plane"), name):
                        continue
                    out.bindings.append(Binding(port, where[port][1], where[port][0], way, name, next(index), plane))
    for name, ways in sorted(get(tree, ("system", CONTROL_PLANE, "acl"), {}).items()):
        at = ("system", CONTROL_PLANE, "acl", name)
        if name in BUILTIN and name not in out.acls:
            out.kept.append(f"{'.'.join(at)}: kept, not run (Cumulus Linux's own control-plane ACL, not in this file)")
        elif _runs(out, at, name) and _packets(out, at, name):
            for way in (w for w in ("inbound", "outbound") if w in ways):
                i = next(index)
                out.bindings += [Binding(CONTROL_PLANE, "", ns, way, name, i, True) for ns in cp or [""]]
    return out


def _runs(out: Acls, at: Path, name: str) -> bool:
    """Whether ACL `name`, bound at `at`, is one twin runs (else the problem said)."""
    if name not in out.acls:
        out.problems.append((at, f"ACL {name} is not declared in this file (acl.{name})"))
    elif out.acls[name].type not in TYPES:
        out.problems.append(
            (at, f"ACL {name} is of type {out.acls[name].type}: only ipv4, ipv6 and mac ACLs are run here")
        )
    else:
        return True
    return False


def _packets(out: Acls, at: Path, name: str) -> bool:
    """Whether ACL `name` can bind to the control plane at `at` (a mac ACL cannot: its chains see packets)."""
    if out.acls[name].type == "mac":
        out.problems.append(
            (at, f"ACL {name} is of type mac: it matches frames on ports, bonds and SVIs, not the control plane")
        )
        return False
    return True


def control_namespaces(plane: Any) -> list[str]:
    """The namespaces running a node's control plane: its own, each of its VRFs' (the netns backend), the
    management one (eth0's, where the node has one)."""
    vrfs = sorted({s.dev for s in plane.steps if s.op == "netns"})
    return [""] + vrfs + ([MGMT_NS] if any(s.op == "mgmt-netns" for s in plane.steps) else [])


def not_made(plane: Any, where: dict[str, tuple[str, str]]) -> dict[str, str]:
    """NVUE interfaces the node declares and does not make (an ACL bound to one is kept): bonds the lab does
    not make, SVIs with no host of the topology in their VLAN on the node."""
    out = {b: "the bond is stored, not made here" for b in plane.conf.bonds if b not in plane.bonds}
    for vlan, svi in plane.conf.svis.items():
        if svi.name not in where:
            out[svi.name] = f"{svi.name} is not made on {plane.node}: no host of the topology is in VLAN {vlan} there"
    return out


def attach(plane: Any, nf: Any, backend: Backend, steps: bool, red: bool = False) -> None:
    """A node's plane (`twin.nvue.plane.Plane`, of NVUE file `nf`) with the MTUs, ACLs and RoCE QoS it runs:
    their steps last, once every device is in its namespace, kept as extras (day 2); TopologyError with what
    twin would run half."""
    where = nvue_mtu.places(plane, backend)
    plane.acls = of(nf.tree, where, control_namespaces(plane), not_made(plane, where))
    if plane.acls.problems:
        raise TopologyError([nf.problem(at, why) for at, why in plane.acls.problems])
    if not steps:
        return
    mtus, notes = nvue_mtu.steps(plane, nf.tree, backend)
    plane.notes += notes + [f"{plane.node}: {k}" for k in plane.acls.kept]
    acls = plane.acls.steps(plane.node)
    plane.extras.update(mtus | acls)
    plane.steps += list(mtus.values()) + list(acls.values())
    plane.kfiles = plane.acls.files(plane.node) | nvue_qos.attach(plane, nf.tree, red, where)
