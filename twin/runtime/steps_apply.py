"""How each kernel step (`twin.config.steps`) is applied over netlink (pyroute2).

`APPLY[op]` is the netlink side of the op whose iproute2 text is
`twin.config.steps.OPS[op]`: the same ops, but for those run in the node by their
command (`in_node`); a unit test holds the two tables together.

Application gets a `Netns` (`twin.runtime.netns.Handles`): `ipr(ns)` is a pyroute2
IPRoute in the node's namespace ("") or in a tenant namespace inside it, and
`fd(ns)` a descriptor of that namespace, opened and checked once (a device is moved
there by descriptor, never by a path the node could have replaced). A missing interface raises NetlinkError ENODEV,
so callers branch on the errno, never on message text.
"""

from __future__ import annotations

import errno
import socket
from typing import Callable, Protocol

from pyroute2 import IPRoute, NetlinkError
from pyroute2.netlink import NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST
from pyroute2.netlink.rtnl import RTM_NEWLINK
from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg

from twin.config.steps import VXLAN_PORT, Step

NTF_MASTER, NUD_NOARP, NUD_PERMANENT = 0x04, 0x40, 0x80
RTNH_F_ONLINK = 0x04
INGRESS = 0xFFFF0000  # the ingress qdisc's handle (ffff:)
ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800


class Netns(Protocol):
    def ipr(self, ns: str) -> IPRoute: ...
    def fd(self, ns: str) -> int: ...
    def sysctl(self, ns: str, key: str, value: str) -> None: ...


Apply = Callable[[Step, IPRoute, Netns], None]


def apply(step: Step, netns: Netns) -> None:
    """Apply one step over netlink in its namespace (NetlinkError / OSError as the kernel says)."""
    fn = APPLY.get(step.op)
    if fn is None:
        raise ValueError(f"{step.command()}: runs in the node, not over netlink")
    fn(step, netns.ipr(step.ns), netns)


def index(ipr: IPRoute, dev: str) -> int:
    """Index of one interface by name: a single RTM_GETLINK, not a dump of every link."""
    try:
        return ipr.link("get", ifname=dev)[0]["index"]
    except NetlinkError as e:
        raise NetlinkError(errno.ENODEV, f"no interface {dev}") from e


def _ix(a: dict) -> dict:
    return {"index": a["index"]} if "index" in a else {}


# The outer header's DF bit always set, as a switch's VTEP sends it: a frame too big for the underlay is lost
# where the path is short, never fragmented by the kernel and put together again at the far VTEP.
VXLAN_DF_SET = 1  # IFLA_VXLAN_DF: 0 unset (the kernel's default), 1 set, 2 inherit


def _vxlan(s: Step, ipr: IPRoute, nn: Netns) -> None:
    a = s.args
    extra = _ix(a) | ({"net_ns_fd": nn.fd(a["netns"])} if a.get("netns") else {})  # made in the tenant's
    ipr.link(
        "add",
        ifname=s.dev,
        kind="vxlan",
        mtu=a["mtu"],
        vxlan_id=a["vni"],
        vxlan_local=a["local"],
        **extra,
        vxlan_port=VXLAN_PORT,
        vxlan_learning=0,
        vxlan_tos=1,
        vxlan_ttl=64,
        vxlan_df=VXLAN_DF_SET,
    )  # tos 1 = inherit


def _route(s: Step, ipr: IPRoute, verb: str) -> None:
    a = s.args
    extra = ({} if a["dst"] == "default" else {"dst": a["dst"]}) | ({"table": a["table"]} if a.get("table") else {})
    ipr.route(
        verb,
        gateway=a["via"],
        oif=index(ipr, s.dev),
        family=socket.AF_INET,
        flags=RTNH_F_ONLINK if a.get("onlink") else 0,
        **extra,
    )


def _veth(s: Step, ipr: IPRoute, nn: Netns) -> None:
    """A veth pair with both interface indexes chosen (pyroute2's `peer` cannot carry one), the
    peer made straight in namespace `netns` (or beside the first end)."""
    a = s.args
    fd = nn.fd(a["netns"]) if a.get("netns") else None
    peer = [("IFLA_IFNAME", a["peer"]), ("IFLA_ADDRESS", a["peer_mac"])] + ([("IFLA_NET_NS_FD", fd)] if fd else [])
    msg = ifinfmsg()
    msg["index"] = a["index"]
    msg["attrs"] = [
        ("IFLA_IFNAME", s.dev),
        ("IFLA_ADDRESS", a["mac"]),
        (
            "IFLA_LINKINFO",
            {
                "attrs": [
                    ("IFLA_INFO_KIND", "veth"),
                    ("IFLA_INFO_DATA", {"attrs": [("VETH_INFO_PEER", {"index": a["peer_index"], "attrs": peer})]}),
                ]
            },
        ),
    ]
    msg["header"]["type"] = RTM_NEWLINK
    msg["header"]["flags"] = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK
    ipr.nlm_request_batch([msg])


def _port(s: Step, ipr: IPRoute, nn: Netns) -> None:
    """An uncabled port: made once (a veth whose peer, of the same name, stays down in namespace
    `netns`), and kept as it is when it is there already."""
    if ipr.link_lookup(ifname=s.dev):
        return
    _veth(Step("veth", s.dev, s.ns, {**s.args, "peer": s.dev}), ipr, nn)


def _tbf(s: Step, ipr: IPRoute, nn: Netns) -> None:
    a = s.args
    ipr.tc("replace", "tbf", index(ipr, s.dev), 0x10000, rate=f"{a['rate']}bit", burst=a["burst"], limit=a["limit"])


def _redirect(s: Step, ipr: IPRoute, nn: Netns) -> None:
    """Everything arriving on the port, redirected to the egress of an IFB device (shaped there)."""
    ipr.tc(
        "add-filter",
        "u32",
        index(ipr, s.dev),
        parent=INGRESS,
        protocol=ETH_P_ALL,
        prio=1,
        target=0x10000,
        keys=["0x0/0x0+0"],
        action=[{"kind": "mirred", "direction": "egress", "action": "redirect", "ifindex": index(ipr, s.args["to"])}],
    )


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


def _nofilter(s: Step, ipr: IPRoute, nn: Netns) -> None:
    """Delete the IPv4 filters of a qdisc (`parent`, as tc writes it: "1:") at one preference."""
    parent = int(s.args["parent"].split(":")[0], 16) << 16
    ipr.tc("del-filter", index=index(ipr, s.dev), parent=parent, info=(s.args["prio"] << 16) | socket.htons(ETH_P_IP))


def _set(**kw: object) -> Apply:
    """`ip link set DEV ...` with attributes taken from the step's args (callables) or constants."""
    return lambda s, ipr, nn: ipr.link(
        "set", index=index(ipr, s.dev), **{k: v(s, ipr, nn) if callable(v) else v for k, v in kw.items()}
    )


def _addr(verb: str) -> Apply:
    return lambda s, ipr, nn: ipr.addr(
        verb, index=index(ipr, s.dev), address=s.args["cidr"].split("/")[0], prefixlen=int(s.args["cidr"].split("/")[1])
    )


APPLY: dict[str, Apply] = {
    "veth": _veth,
    "port": _port,
    "ifb": lambda s, ipr, nn: ipr.link("add", ifname=s.dev, kind="ifb", index=s.args["index"]),
    "tbf": _tbf,
    "ingress": lambda s, ipr, nn: ipr.tc("replace", "ingress", index(ipr, s.dev), INGRESS),
    "redirect": _redirect,
    "noqdisc": _noqdisc,
    "nofilter": _nofilter,
    "vrf": lambda s, ipr, nn: ipr.link("add", ifname=s.dev, kind="vrf", vrf_table=s.args["table"]),
    "vxlan": _vxlan,
    "bridge": lambda s, ipr, nn: ipr.link(
        "add",
        ifname=s.dev,
        kind="bridge",
        mtu=s.args["mtu"],
        **_ix(s.args),
        **({"address": s.args["mac"]} if s.args.get("mac") else {}),
    ),
    "move": _set(net_ns_fd=lambda s, ipr, nn: nn.fd(s.args["to"])),
    "release": _set(net_ns_fd=lambda s, ipr, nn: nn.fd("")),
    "master": _set(master=lambda s, ipr, nn: index(ipr, s.args["master"])),
    "nomaster": _set(master=0),
    "up": _set(state="up"),
    "down": _set(state="down"),
    "mac": _set(address=lambda s, ipr, nn: s.args["mac"]),
    "mtu": _set(mtu=lambda s, ipr, nn: s.args["mtu"]),
    "brport": lambda s, ipr, nn: ipr.brport("set", index=index(ipr, s.dev), **{k: int(v) for k, v in s.args.items()}),
    "addr": _addr("add"),
    "unaddr": _addr("del"),
    "flush": lambda s, ipr, nn: ipr.flush_addr(index=index(ipr, s.dev)),
    "del": lambda s, ipr, nn: ipr.link("del", index=index(ipr, s.dev)),
    "route": lambda s, ipr, nn: _route(s, ipr, "add"),
    "unroute": lambda s, ipr, nn: _route(s, ipr, "del"),
    "fdb": lambda s, ipr, nn: ipr.fdb(
        "replace", ifindex=index(ipr, s.dev), lladdr=s.args["mac"], flags=NTF_MASTER, state=NUD_NOARP
    ),
    "unfdb": lambda s, ipr, nn: ipr.fdb("del", ifindex=index(ipr, s.dev), lladdr=s.args["mac"], flags=NTF_MASTER),
    "vxlan-tos": lambda s, ipr, nn: ipr.link("set", index=index(ipr, s.dev), kind="vxlan", vxlan_tos=s.args["tos"]),
    "sysctl": lambda s, ipr, nn: nn.sysctl(s.ns, s.dev, str(s.args["value"])),
    "neigh": lambda s, ipr, nn: ipr.neigh(
        "replace", dst=s.args["ip"], lladdr=s.args["mac"], ifindex=index(ipr, s.dev), state=NUD_PERMANENT
    ),
    "unneigh": lambda s, ipr, nn: ipr.neigh("del", dst=s.args["ip"], ifindex=index(ipr, s.dev)),
}
