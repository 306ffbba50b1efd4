"""Kernel steps: one table of operations, each with its iproute2 text and its netlink application.

A `Step` is plain data (op, device, namespace, arguments). `OPS[op]` says, in
one place, how it reads as an iproute2 command (what `interfaces.sh` and
`twin plan` show) and how it is applied over netlink (pyroute2), so the two
can never disagree. Ops without a netlink application (`netns`, `nft`, `nft-delete`) run
in the node itself, by their command.

Application gets a `Netns` (see `twin.runtime.kernel`): `ipr(ns)` is a pyroute2
IPRoute in the node's namespace ("") or in a tenant namespace inside it, and
`path(ns)` that namespace's path. A missing interface raises NetlinkError
ENODEV, so callers branch on the errno, never on message text.
"""
from __future__ import annotations

import errno
import os
import socket
from dataclasses import dataclass, field
from typing import Callable, Protocol

from pyroute2 import IPRoute, NetlinkError
from pyroute2.netlink import NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST
from pyroute2.netlink.rtnl import RTM_NEWLINK
from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg

VXLAN_PORT = 4789
NODE_DIR = "/etc/twin"   # the node's lab directory, as mounted in the node
NTF_MASTER, NUD_NOARP, NUD_PERMANENT = 0x04, 0x40, 0x80
RTNH_F_ONLINK = 0x04
INGRESS = 0xFFFF0000            # the ingress qdisc's handle (ffff:)
ETH_P_ALL = 0x0003


class Netns(Protocol):
    def ipr(self, ns: str) -> IPRoute: ...
    def path(self, ns: str) -> str: ...
    def sysctl(self, ns: str, key: str, value: str) -> None: ...


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
        return OPS[self.op].apply is None

    def command(self) -> str:
        return OPS[self.op].text(self, f"-n {self.ns} " if self.ns else "")

    def apply(self, netns: Netns) -> None:
        fn = OPS[self.op].apply
        if fn is None:
            raise ValueError(f"{self.command()}: runs in the node, not over netlink")
        fn(self, netns.ipr(self.ns), netns)


@dataclass(frozen=True)
class Op:
    text: Callable[[Step, str], str]                             # (step, "-n NS " or "") -> command
    apply: Callable[[Step, IPRoute, Netns], None] | None = None  # over netlink; None: in the node


def index(ipr: IPRoute, dev: str) -> int:
    """Index of one interface by name: a single RTM_GETLINK, not a dump of every link."""
    try:
        return ipr.link("get", ifname=dev)[0]["index"]
    except NetlinkError as e:
        raise NetlinkError(errno.ENODEV, f"no interface {dev}") from e


def _ix(a: dict) -> dict:
    return {"index": a["index"]} if "index" in a else {}


def _text_ix(a: dict) -> str:
    return f" index {a['index']}" if "index" in a else ""


def _vxlan(s: Step, ipr: IPRoute, nn: Netns) -> None:
    a = s.args
    extra = _ix(a) | ({"net_ns_fd": nn.path(a["netns"])} if a.get("netns") else {})  # made in the tenant's
    ipr.link("add", ifname=s.dev, kind="vxlan", mtu=a["mtu"], vxlan_id=a["vni"], vxlan_local=a["local"], **extra,
             vxlan_port=VXLAN_PORT, vxlan_learning=0, vxlan_tos=1, vxlan_ttl=64)  # tos 1 = inherit


def _route(s: Step, ipr: IPRoute, verb: str) -> None:
    a = s.args
    extra = ({} if a["dst"] == "default" else {"dst": a["dst"]}) | ({"table": a["table"]} if a.get("table") else {})
    ipr.route(verb, gateway=a["via"], oif=index(ipr, s.dev), family=socket.AF_INET,
              flags=RTNH_F_ONLINK if a.get("onlink") else 0, **extra)


def _route_text(s: Step, n: str, verb: str) -> str:
    a = s.args
    return (f"ip {n}route {verb} {a['dst']} via {a['via']} dev {s.dev}" + (" onlink" if a.get("onlink") else "")
            + (f" table {a['table']}" if a.get("table") else ""))


def _veth(s: Step, ipr: IPRoute, nn: Netns) -> None:
    """A veth pair with both interface indexes chosen (pyroute2's `peer` cannot carry one), the
    peer made straight in namespace `netns` (or beside the first end)."""
    a = s.args
    fd = os.open(nn.path(a.get("netns", "")), os.O_RDONLY) if a.get("netns") else None
    try:
        peer = [("IFLA_IFNAME", a["peer"]), ("IFLA_ADDRESS", a["peer_mac"])] + ([("IFLA_NET_NS_FD", fd)] if fd else [])
        msg = ifinfmsg()
        msg["index"] = a["index"]
        msg["attrs"] = [("IFLA_IFNAME", s.dev), ("IFLA_ADDRESS", a["mac"]), ("IFLA_LINKINFO", {"attrs": [
            ("IFLA_INFO_KIND", "veth"),
            ("IFLA_INFO_DATA", {"attrs": [("VETH_INFO_PEER", {"index": a["peer_index"], "attrs": peer})]})]})]
        msg["header"]["type"] = RTM_NEWLINK
        msg["header"]["flags"] = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK
        ipr.nlm_request_batch([msg])
    finally:
        if fd is not None:
            os.close(fd)


def _tbf(s: Step, ipr: IPRoute, nn: Netns) -> None:
    a = s.args
    ipr.tc("replace", "tbf", index(ipr, s.dev), 0x10000, rate=f"{a['rate']}bit", burst=a["burst"], limit=a["limit"])


def _redirect(s: Step, ipr: IPRoute, nn: Netns) -> None:
    """Everything arriving on the port, redirected to the egress of an IFB device (shaped there)."""
    ipr.tc("add-filter", "u32", index(ipr, s.dev), parent=INGRESS, protocol=ETH_P_ALL, prio=1, target=0x10000,
           keys=["0x0/0x0+0"], action=[{"kind": "mirred", "direction": "egress", "action": "redirect",
                                        "ifindex": index(ipr, s.args["to"])}])


def _noqdisc(s: Step, ipr: IPRoute, nn: Netns) -> None:
    """Delete the root or ingress qdisc of a port, if it has one (a device that changed
    namespace has lost them already)."""
    try:
        if s.args["parent"] == "ingress":
            ipr.tc("del", "ingress", index(ipr, s.dev), INGRESS)
        else:
            ipr.tc("del", index=index(ipr, s.dev), root=True)
    except NetlinkError as e:
        if e.code not in (errno.ENOENT, errno.EINVAL):
            raise


def _tos(tos: int) -> str:
    return "inherit" if tos == 1 else str(tos)


def _set(**kw) -> Callable[[Step, IPRoute, Netns], None]:
    """`ip link set DEV ...` with attributes taken from the step's args (callables) or constants."""
    return lambda s, ipr, nn: ipr.link("set", index=index(ipr, s.dev),
                                       **{k: v(s, ipr, nn) if callable(v) else v for k, v in kw.items()})


OPS: dict[str, Op] = {
    "netns": Op(lambda s, n: f"ip netns add {s.dev}"),
    # Cumulus's VLAN-aware layout (`twin.interop.nvue.vlanaware`: opt-in, for kernels with 802.1Q VLANs; this
    # project's CI kernel has none): run in the node by these very commands, golden-tested only
    "vlan-bridge": Op(lambda s, n: f"ip link add {s.dev} mtu {s.args['mtu']} type bridge vlan_filtering 1 "
                                   "vlan_default_pvid 0"),
    "svd": Op(lambda s, n: f"ip link add {s.dev} mtu {s.args['mtu']} type vxlan external local {s.args['local']} "
                           f"dstport {VXLAN_PORT} nolearning tos inherit ttl 64"),
    "vlan": Op(lambda s, n: f"ip link add link {s.args['link']} name {s.dev} type vlan id {s.args['vid']}"),
    "macvlan": Op(lambda s, n: f"ip link add link {s.args['link']} name {s.dev} address {s.args['mac']} "
                               "type macvlan mode private"),
    "bridge-vlan": Op(lambda s, n: f"bridge vlan add dev {s.dev} vid {s.args['vid']}"
                                   + (" pvid untagged" if s.args.get("access") else "")
                                   + (" self" if s.args.get("self") else "")
                                   + (f" tunnel_info id {s.args['vni']}" if s.args.get("vni") else "")),
    "vlan-tunnel": Op(lambda s, n: f"bridge link set dev {s.dev} vlan_tunnel on"),
    "fdb-vlan": Op(lambda s, n: f"bridge fdb replace {s.args['mac']} dev {s.dev} master static vlan {s.args['vid']}"),
    "nft": Op(lambda s, n: f"{'ip netns exec ' + s.ns + ' ' if s.ns else ''}nft -f {NODE_DIR}/{s.dev}"),
    # a table (dev: "FAMILY NAME") gone, whether it was there or not
    "nft-delete": Op(lambda s, n: f"{'ip netns exec ' + s.ns + ' ' if s.ns else ''}nft 'add table {s.dev}; "
                                  f"delete table {s.dev}'"),
    # a gateway pair: this end in the node (or VRF backend: beside it), the peer in a tenant namespace
    "veth": Op(lambda s, n: (f"ip {n}link add {s.dev} index {s.args['index']} address {s.args['mac']} type veth "
                             f"peer name {s.args['peer']} index {s.args['peer_index']} address {s.args['peer_mac']}"
                             + (f" netns {s.args['netns']}" if s.args.get("netns") else "")), _veth),
    "ifb": Op(lambda s, n: f"ip {n}link add {s.dev} index {s.args['index']} type ifb",
              lambda s, ipr, nn: ipr.link("add", ifname=s.dev, kind="ifb", index=s.args["index"])),
    # shaping: a token bucket on what leaves a device (bytes per second, burst and queue in bytes)
    "tbf": Op(lambda s, n: (f"tc {n}qdisc replace dev {s.dev} root tbf rate {s.args['rate']}bit "
                            f"burst {s.args['burst']} limit {s.args['limit']}"), _tbf),
    "ingress": Op(lambda s, n: f"tc {n}qdisc replace dev {s.dev} handle ffff: ingress",
                  lambda s, ipr, nn: ipr.tc("replace", "ingress", index(ipr, s.dev), INGRESS)),
    "redirect": Op(lambda s, n: (f"tc {n}filter add dev {s.dev} parent ffff: protocol all prio 1 u32 match u32 0 0 "
                                 f"action mirred egress redirect dev {s.args['to']}"), _redirect),
    "noqdisc": Op(lambda s, n: f"tc {n}qdisc del dev {s.dev} {s.args['parent']}", _noqdisc),
    "vrf": Op(lambda s, n: f"ip {n}link add {s.dev} type vrf table {s.args['table']}",
              lambda s, ipr, nn: ipr.link("add", ifname=s.dev, kind="vrf", vrf_table=s.args["table"])),
    "vxlan": Op(lambda s, n: (f"ip {n}link add {s.dev}" + (f" netns {s.args['netns']}" if s.args.get("netns") else "")
                              + f"{_text_ix(s.args)} mtu {s.args['mtu']} type vxlan id {s.args['vni']} local "
                              f"{s.args['local']} dstport {VXLAN_PORT} nolearning tos inherit ttl 64"), _vxlan),
    "bridge": Op(lambda s, n: (f"ip {n}link add {s.dev}{_text_ix(s.args)}"
                               + (f" address {s.args['mac']}" if s.args.get("mac") else "")
                               + f" mtu {s.args['mtu']} type bridge"),
                 lambda s, ipr, nn: ipr.link("add", ifname=s.dev, kind="bridge", mtu=s.args["mtu"], **_ix(s.args),
                                             **({"address": s.args["mac"]} if s.args.get("mac") else {}))),
    "move": Op(lambda s, n: f"ip {n}link set {s.dev} netns {s.args['to']}",
               _set(net_ns_fd=lambda s, ipr, nn: nn.path(s.args["to"]))),
    "release": Op(lambda s, n: f"ip {n}link set {s.dev} netns 1",   # back from a tenant namespace into the node's
                  _set(net_ns_fd=lambda s, ipr, nn: nn.path(""))),
    "master": Op(lambda s, n: f"ip {n}link set {s.dev} master {s.args['master']}",
                 _set(master=lambda s, ipr, nn: index(ipr, s.args["master"]))),
    "nomaster": Op(lambda s, n: f"ip {n}link set {s.dev} nomaster", _set(master=0)),
    "up": Op(lambda s, n: f"ip {n}link set {s.dev} up", _set(state="up")),
    "down": Op(lambda s, n: f"ip {n}link set {s.dev} down", _set(state="down")),   # a port NVUE says is down
    "mac": Op(lambda s, n: f"ip {n}link set {s.dev} address {s.args['mac']}",
              _set(address=lambda s, ipr, nn: s.args["mac"])),
    "mtu": Op(lambda s, n: f"ip {n}link set {s.dev} mtu {s.args['mtu']}", _set(mtu=lambda s, ipr, nn: s.args["mtu"])),
    "brport": Op(lambda s, n: f"bridge {n}link set dev {s.dev} "
                              + " ".join(f"{k} {'on' if v else 'off'}" for k, v in s.args.items()),
                 lambda s, ipr, nn: ipr.brport("set", index=index(ipr, s.dev),
                                               **{k: int(v) for k, v in s.args.items()})),
    "addr": Op(lambda s, n: f"ip {n}addr add {s.args['cidr']} dev {s.dev}",
               lambda s, ipr, nn: ipr.addr("add", index=index(ipr, s.dev), address=s.args["cidr"].split("/")[0],
                                           prefixlen=int(s.args["cidr"].split("/")[1]))),
    "unaddr": Op(lambda s, n: f"ip {n}addr del {s.args['cidr']} dev {s.dev}",
                 lambda s, ipr, nn: ipr.addr("del", index=index(ipr, s.dev), address=s.args["cidr"].split("/")[0],
                                             prefixlen=int(s.args["cidr"].split("/")[1]))),
    "flush": Op(lambda s, n: f"ip {n}addr flush dev {s.dev}",
                lambda s, ipr, nn: ipr.flush_addr(index=index(ipr, s.dev))),
    "del": Op(lambda s, n: f"ip {n}link del {s.dev}", lambda s, ipr, nn: ipr.link("del", index=index(ipr, s.dev))),
    "route": Op(lambda s, n: _route_text(s, n, "add"), lambda s, ipr, nn: _route(s, ipr, "add")),
    "unroute": Op(lambda s, n: _route_text(s, n, "del"), lambda s, ipr, nn: _route(s, ipr, "del")),
    # a static entry on the bridge port (NTF_MASTER, NUD_NOARP): never ages
    "fdb": Op(lambda s, n: f"bridge {n}fdb replace {s.args['mac']} dev {s.dev} master static",
              lambda s, ipr, nn: ipr.fdb("replace", ifindex=index(ipr, s.dev), lladdr=s.args["mac"],
                                         flags=NTF_MASTER, state=NUD_NOARP)),
    "unfdb": Op(lambda s, n: f"bridge {n}fdb del {s.args['mac']} dev {s.dev} master",
                lambda s, ipr, nn: ipr.fdb("del", ifindex=index(ipr, s.dev), lladdr=s.args["mac"], flags=NTF_MASTER)),
    # a VXLAN device's outer TOS: 1 is `inherit` (the inner packet's DSCP/ECN), as `vxlan` makes it
    "vxlan-tos": Op(lambda s, n: f"ip {n}link set {s.dev} type vxlan tos {_tos(s.args['tos'])}",
                    lambda s, ipr, nn: ipr.link("set", index=index(ipr, s.dev), kind="vxlan", vxlan_tos=s.args["tos"])),
    # a sysctl of the node's (or a tenant's) network namespace; containers see /proc/sys read-only
    "sysctl": Op(lambda s, n: f"{'ip netns exec ' + s.ns + ' ' if s.ns else ''}sysctl -w {s.dev}={s.args['value']}",
                 lambda s, ipr, nn: nn.sysctl(s.ns, s.dev, str(s.args["value"]))),
    # a workload's IP/MAC binding: PERMANENT, never aged or collected (see overlay.bindings)
    "neigh": Op(lambda s, n: f"ip {n}neigh replace {s.args['ip']} lladdr {s.args['mac']} dev {s.dev} nud permanent",
                lambda s, ipr, nn: ipr.neigh("replace", dst=s.args["ip"], lladdr=s.args["mac"],
                                             ifindex=index(ipr, s.dev), state=NUD_PERMANENT)),
    "unneigh": Op(lambda s, n: f"ip {n}neigh del {s.args['ip']} dev {s.dev}",
                  lambda s, ipr, nn: ipr.neigh("del", dst=s.args["ip"], ifindex=index(ipr, s.dev))),
}

# What "already done" looks like, for a rollback that re-runs steps over a half-applied change:
# the object exists already, or is gone already.
ALREADY = frozenset({errno.EEXIST, errno.ENOENT, errno.ENODEV, errno.ESRCH, errno.EADDRNOTAVAIL, errno.EADDRINUSE})
