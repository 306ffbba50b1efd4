"""Kernel steps: one table of operations, each with its iproute2 text.

A `Step` is plain data (op, device, namespace, arguments). `OPS[op]` says, in
one place, how it reads as an iproute2 command (what `interfaces.sh` and
`twin plan` show). How each op is applied over netlink lives in the runtime
(`twin.runtime.steps_apply.APPLY`, keyed by the same ops; a unit test holds
the two tables to the same ops). Ops marked `in_node` (`netns`, `mgmt-netns`, `nft`,
`nft-delete`, the VLAN-aware layout, NVUE's bonds) have no netlink application: they run in
the node itself, by their command.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass, field
from typing import Callable

from twin.kinds.base import MGMT_NETNS, MGMT_NS, NODE_DIR  # the node's lab directory, as mounted in it

VXLAN_PORT = 4789


@dataclass(frozen=True)
class Step:
    """One kernel-side step. `ns` is the tenant namespace it runs in ("" = the node's own)."""

    op: str
    dev: str
    ns: str = ""
    args: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown kernel step {self.op!r}; steps: {', '.join(OPS)}")

    @property
    def in_node(self) -> bool:
        """Run by the node's own tools (no netlink application), not over netlink from the host."""
        return OPS[self.op].in_node

    def command(self) -> str:
        if self.ns == MGMT_NS:  # not in /run/netns, where `ip -n` looks (twin.config.mgmt)
            return f"nsenter --net={MGMT_NETNS} " + OPS[self.op].text(self, "")
        return OPS[self.op].text(self, f"-n {self.ns} " if self.ns else "")


@dataclass(frozen=True)
class Op:
    text: Callable[[Step, str], str]  # (step, "-n NS " or "") -> command
    in_node: bool = False  # run in the node by its command; else over netlink from the host


def _tc_batch(s: Step, n: str) -> str:
    """`tc -batch FILE`; with a `root` (args port, root: "KIND HANDLE OPTIONS"), that root qdisc made
    first where the port has none of that kind and handle."""
    batch = f"tc {n}-batch {NODE_DIR}/{s.dev}"
    if "root" not in s.args:
        return batch
    port, (kind, handle, opts) = s.args["port"], s.args["root"].split(" ", 2)
    return (
        f"{{ tc {n}qdisc show dev {port} root | grep -q '^qdisc {kind} {handle} root' || "
        f"tc {n}qdisc replace dev {port} root handle {handle} {kind} {opts}; }} && {batch}"
    )


def _text_ix(a: dict) -> str:
    return f" index {a['index']}" if "index" in a else ""


def _route_text(s: Step, n: str, verb: str) -> str:
    a = s.args
    return (
        f"ip {n}route {verb} {a['dst']} via {a['via']} dev {s.dev}"
        + (" onlink" if a.get("onlink") else "")
        + (f" table {a['table']}" if a.get("table") else "")
    )


def _tos(tos: int) -> str:
    return "inherit" if tos == 1 else str(tos)


def _lldp_text(a: dict) -> str:
    name = f"configure system hostname {a['hostname']}" if a.get("hostname") else "unconfigure system hostname"
    return (
        f"lldpcli {name} && lldpcli configure lldp tx-hold {a['tx-hold']} "
        f"&& lldpcli configure lldp tx-interval {a['tx-interval']}"
    )


def _hostname_text(name: str) -> str:
    """The node's host name: its UTS name, /etc/hostname, and its line in /etc/hosts (as the node's image
    writes it when FRR starts); `name` is a host name NVUE's type checked (letters, digits, '-', '.')."""
    return (
        f"hostname {name} && printf '%s\\n' {name} > /etc/hostname && "
        f"{{ grep -q '[[:space:]]{name}$' /etc/hosts || printf '127.0.1.1\\t%s\\n' {name} >> /etc/hosts; }}"
    )


def _in_ns(s: Step) -> str:
    return f"ip netns exec {s.ns} " if s.ns and s.ns != MGMT_NS else ""  # the management one: Step.command


OPS: dict[str, Op] = {
    "netns": Op(lambda s, n: f"ip netns add {s.dev}", in_node=True),
    # the node's management namespace, mounted where zebra -n does not look (twin.config.mgmt)
    "mgmt-netns": Op(
        lambda s, n: (
            f"mountpoint -q {MGMT_NETNS} || {{ mkdir -p {MGMT_NETNS.rsplit('/', 1)[0]} "
            f"&& touch {MGMT_NETNS} && unshare --net={MGMT_NETNS} true; }}"
        ),
        in_node=True,
    ),
    # Cumulus's VLAN-aware layout (`twin.nvue.vlanaware`: opt-in, for kernels with 802.1Q VLANs; this
    # project's CI kernel has none): run in the node by these very commands, golden-tested only
    "vlan-bridge": Op(
        lambda s, n: f"ip link add {s.dev} mtu {s.args['mtu']} type bridge vlan_filtering 1 vlan_default_pvid 0",
        in_node=True,
    ),
    "svd": Op(
        lambda s, n: (
            f"ip link add {s.dev} mtu {s.args['mtu']} type vxlan external local {s.args['local']} "
            f"dstport {VXLAN_PORT} nolearning tos inherit ttl 64"
        ),
        in_node=True,
    ),
    "vlan": Op(
        lambda s, n: f"ip link add link {s.args['link']} name {s.dev} type vlan id {s.args['vid']}", in_node=True
    ),
    "macvlan": Op(
        lambda s, n: (
            f"ip link add link {s.args['link']} name {s.dev} address {s.args['mac']} type macvlan mode private"
        ),
        in_node=True,
    ),
    "bridge-vlan": Op(
        lambda s, n: (
            f"bridge vlan add dev {s.dev} vid {s.args['vid']}"
            + (" pvid untagged" if s.args.get("access") else "")
            + (" self" if s.args.get("self") else "")
            + (f" tunnel_info id {s.args['vni']}" if s.args.get("vni") else "")
        ),
        in_node=True,
    ),
    "vlan-tunnel": Op(lambda s, n: f"bridge link set dev {s.dev} vlan_tunnel on", in_node=True),
    "fdb-vlan": Op(
        lambda s, n: f"bridge fdb replace {s.args['mac']} dev {s.dev} master static vlan {s.args['vid']}", in_node=True
    ),
    # an NVUE bond (`twin.nvue.bonds`: opt-in, for kernels with bonding; this project's has none): run in
    # the node by its command, golden-tested only
    "bond": Op(
        lambda s, n: f"ip {n}link add {s.dev} type bond " + " ".join(f"{k} {v}" for k, v in s.args.items()),
        in_node=True,
    ),
    "nft": Op(lambda s, n: f"{_in_ns(s)}nft -f {NODE_DIR}/{s.dev}", in_node=True),
    # an NVUE port's traffic classes (`twin.nvue.qos`, RoCE QoS on or off): a tc batch file of the node's, on
    # the port's root qdisc `root`, made first only where the port has another (a running root is never replaced)
    "tc-batch": Op(lambda s, n: _tc_batch(s, n), in_node=True),
    # NVUE's `system hostname` (`twin.nvue.hostname`): the node's UTS name (FRR shows it), /etc/hostname, /etc/hosts
    "hostname": Op(lambda s, n: _hostname_text(s.dev), in_node=True),
    # NVUE's LLDP (`twin.nvue.lldp`): the node's lldpd set at run time; each `configure` makes it send at once,
    # the interval last so what it sends then holds the rest
    "lldp": Op(lambda s, n: _lldp_text(s.args), in_node=True),
    # a table (dev: "FAMILY NAME") gone, whether it was there or not
    "nft-delete": Op(lambda s, n: f"{_in_ns(s)}nft 'add table {s.dev}; delete table {s.dev}'", in_node=True),
    # a gateway pair: this end in the node (or VRF backend: beside it), the peer in a tenant namespace
    "veth": Op(
        lambda s, n: (
            f"ip {n}link add {s.dev} index {s.args['index']} address {s.args['mac']} type veth "
            f"peer name {s.args['peer']} index {s.args['peer_index']} address {s.args['peer_mac']}"
            + (f" netns {s.args['netns']}" if s.args.get("netns") else "")
        )
    ),
    "ifb": Op(lambda s, n: f"ip {n}link add {s.dev} index {s.args['index']} type ifb"),
    # a port of the platform no cable reaches (NVUE configures every port): a veth whose peer stays down
    # in the node's namespace of such peers, so the port has no carrier; made once, kept (a switch's port)
    "netns-once": Op(lambda s, n: f"[ -e /run/netns/{s.dev} ] || ip netns add {s.dev}", in_node=True),
    "port": Op(
        lambda s, n: (
            f"ip {n}link add {s.dev} index {s.args['index']} address {s.args['mac']} type veth "
            f"peer name {s.dev} index {s.args['peer_index']} address {s.args['peer_mac']} "
            f"netns {s.args['netns']}"
        )
    ),
    # shaping: a token bucket on what leaves a device (bytes per second, burst and queue in bytes)
    "tbf": Op(
        lambda s, n: (
            f"tc {n}qdisc replace dev {s.dev} root tbf rate {s.args['rate']}bit "
            f"burst {s.args['burst']} limit {s.args['limit']}"
        )
    ),
    "ingress": Op(lambda s, n: f"tc {n}qdisc replace dev {s.dev} handle ffff: ingress"),
    "redirect": Op(
        lambda s, n: (
            f"tc {n}filter add dev {s.dev} parent ffff: protocol all prio 1 u32 match u32 0 0 "
            f"action mirred egress redirect dev {s.args['to']}"
        )
    ),
    "noqdisc": Op(lambda s, n: f"tc {n}qdisc del dev {s.dev} {s.args['parent']}"),
    # the IPv4 filters of a qdisc at one preference gone (NVUE's QoS: one DSCP's filter, `twin.nvue.qos.prio`)
    "nofilter": Op(
        lambda s, n: f"tc {n}filter del dev {s.dev} parent {s.args['parent']} protocol ip prio {s.args['prio']}"
    ),
    "vrf": Op(lambda s, n: f"ip {n}link add {s.dev} type vrf table {s.args['table']}"),
    "vxlan": Op(
        lambda s, n: (
            f"ip {n}link add {s.dev}"
            + (f" netns {s.args['netns']}" if s.args.get("netns") else "")
            + f"{_text_ix(s.args)} mtu {s.args['mtu']} type vxlan id {s.args['vni']} local "
            f"{s.args['local']} dstport {VXLAN_PORT} nolearning tos inherit ttl 64"
        )
    ),
    "bridge": Op(
        lambda s, n: (
            f"ip {n}link add {s.dev}{_text_ix(s.args)}"
            + (f" address {s.args['mac']}" if s.args.get("mac") else "")
            + f" mtu {s.args['mtu']} type bridge"
        )
    ),
    "move": Op(lambda s, n: f"ip {n}link set {s.dev} netns {MGMT_NETNS if s.args['to'] == MGMT_NS else s.args['to']}"),
    "release": Op(lambda s, n: f"ip {n}link set {s.dev} netns 1"),  # back from a tenant namespace into the node's
    "master": Op(lambda s, n: f"ip {n}link set {s.dev} master {s.args['master']}"),
    "nomaster": Op(lambda s, n: f"ip {n}link set {s.dev} nomaster"),
    "up": Op(lambda s, n: f"ip {n}link set {s.dev} up"),
    "down": Op(lambda s, n: f"ip {n}link set {s.dev} down"),  # a port NVUE says is down
    "mac": Op(lambda s, n: f"ip {n}link set {s.dev} address {s.args['mac']}"),
    "mtu": Op(lambda s, n: f"ip {n}link set {s.dev} mtu {s.args['mtu']}"),
    "brport": Op(
        lambda s, n: (
            f"bridge {n}link set dev {s.dev} " + " ".join(f"{k} {'on' if v else 'off'}" for k, v in s.args.items())
        )
    ),
    "addr": Op(lambda s, n: f"ip {n}addr add {s.args['cidr']} dev {s.dev}"),
    "unaddr": Op(lambda s, n: f"ip {n}addr del {s.args['cidr']} dev {s.dev}"),
    "flush": Op(lambda s, n: f"ip {n}addr flush dev {s.dev}"),
    "del": Op(lambda s, n: f"ip {n}link del {s.dev}"),
    "route": Op(lambda s, n: _route_text(s, n, "add")),
    "unroute": Op(lambda s, n: _route_text(s, n, "del")),
    # a static entry on the bridge port (NTF_MASTER, NUD_NOARP): never ages
    "fdb": Op(lambda s, n: f"bridge {n}fdb replace {s.args['mac']} dev {s.dev} master static"),
    "unfdb": Op(lambda s, n: f"bridge {n}fdb del {s.args['mac']} dev {s.dev} master"),
    # a VXLAN device's outer TOS: 1 is `inherit` (the inner packet's DSCP/ECN), as `vxlan` makes it
    "vxlan-tos": Op(lambda s, n: f"ip {n}link set {s.dev} type vxlan tos {_tos(s.args['tos'])}"),
    # a sysctl of the node's (or a tenant's) network namespace; containers see /proc/sys read-only
    "sysctl": Op(lambda s, n: f"{_in_ns(s)}sysctl -w {s.dev}={s.args['value']}"),
    # a workload's IP/MAC binding: PERMANENT, never aged or collected (see overlay.bindings)
    "neigh": Op(lambda s, n: f"ip {n}neigh replace {s.args['ip']} lladdr {s.args['mac']} dev {s.dev} nud permanent"),
    "unneigh": Op(lambda s, n: f"ip {n}neigh del {s.args['ip']} dev {s.dev}"),
}

# What "already done" looks like, for a rollback that re-runs steps over a half-applied change:
# the object exists already, or is gone already.
ALREADY = frozenset({errno.EEXIST, errno.ENOENT, errno.ENODEV, errno.ESRCH, errno.EADDRNOTAVAIL, errno.EADDRINUSE})
