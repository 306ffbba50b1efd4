"""Applies an overlay plan (twin.overlay) inside a node, over netlink.

Steps run from the host with pyroute2 in the node's namespace, or in a tenant
namespace inside it (`/proc/<pid>/root/run/netns/<vrf>`). Creating a tenant
namespace is the one step run by the node itself (`ip netns add`), so that it
lands in the node's /run/netns where FRR's zebra (-n) finds it.
"""
from __future__ import annotations

import errno
import socket

from pyroute2 import IPRoute, NetlinkError, netns

from twin.errors import TwinError

NTF_MASTER, NUD_NOARP, NUD_PERMANENT = 0x04, 0x40, 0x80
from twin.overlay import VXLAN_PORT, Backend, Step
from twin.runtime.exec import NodeExec
from twin.runtime.links import netns_path


def tenant_netns_path(pid: int, ns: str) -> str:
    return f"/proc/{pid}/root/run/netns/{ns}"


class _Namespaces:
    """One IPRoute handle per namespace touched, closed at the end."""

    def __init__(self, pid: int):
        self.pid, self.handles = pid, {}

    def __call__(self, ns: str) -> IPRoute:
        if ns not in self.handles:
            path = tenant_netns_path(self.pid, ns) if ns else netns_path(self.pid)
            self.handles[ns] = IPRoute(netns=path, flags=0)
        return self.handles[ns]

    def close(self) -> None:
        for h in self.handles.values():
            h.close()


def _index(ipr: IPRoute, dev: str) -> int:
    """Index of one interface by name: a single RTM_GETLINK, not a dump of every link."""
    try:
        return ipr.link("get", ifname=dev)[0]["index"]
    except NetlinkError:
        raise TwinError(f"no interface {dev}") from None


def _apply(step: Step, ns: _Namespaces) -> None:
    a = step.args
    ipr = ns(step.ns)
    if step.op == "vrf":
        ipr.link("add", ifname=step.dev, kind="vrf", vrf_table=a["table"])
    elif step.op == "vxlan":
        extra = {"index": a["index"]} if "index" in a else {}
        if a.get("netns"):  # made in the tenant namespace, its socket in this one
            extra["net_ns_fd"] = tenant_netns_path(ns.pid, a["netns"])
        ipr.link("add", ifname=step.dev, kind="vxlan", mtu=a["mtu"], vxlan_id=a["vni"], vxlan_local=a["local"], **extra,
                 vxlan_port=VXLAN_PORT, vxlan_learning=0, vxlan_tos=1, vxlan_ttl=64)  # tos 1 = inherit
    elif step.op == "bridge":
        extra = {"address": a["mac"]} if a.get("mac") else {}
        extra.update({"index": a["index"]} if "index" in a else {})
        ipr.link("add", ifname=step.dev, kind="bridge", mtu=a["mtu"], **extra)
    elif step.op == "move":
        ipr.link("set", index=_index(ipr, step.dev), net_ns_fd=tenant_netns_path(ns.pid, a["to"]))
    elif step.op == "master":
        ipr.link("set", index=_index(ipr, step.dev), master=_index(ipr, a["master"]))
    elif step.op == "brport":
        ipr.brport("set", index=_index(ipr, step.dev), **{k: int(v) for k, v in a.items()})
    elif step.op == "addr":
        ip, plen = a["cidr"].split("/")
        ipr.addr("add", index=_index(ipr, step.dev), address=ip, prefixlen=int(plen))
    elif step.op == "up":
        ipr.link("set", index=_index(ipr, step.dev), state="up")
    elif step.op == "mtu":
        ipr.link("set", index=_index(ipr, step.dev), mtu=a["mtu"])
    elif step.op == "mac":
        ipr.link("set", index=_index(ipr, step.dev), address=a["mac"])
    elif step.op == "fdb":  # static entry on the bridge port (NTF_MASTER, NUD_NOARP)
        ipr.fdb("replace", ifindex=_index(ipr, step.dev), lladdr=a["mac"], flags=NTF_MASTER, state=NUD_NOARP)
    elif step.op == "neigh":  # a workload's binding: PERMANENT, never collected (twin.overlay.bindings, issue 18)
        ipr.neigh("replace", dst=a["ip"], lladdr=a["mac"], ifindex=_index(ipr, step.dev), state=NUD_PERMANENT)
    elif step.op == "route":
        dst = {} if a["dst"] == "default" else {"dst": a["dst"]}
        ipr.route("add", gateway=a["via"], oif=_index(ipr, step.dev), family=socket.AF_INET, **dst)
    elif step.op == "del":
        ipr.link("del", index=_index(ipr, step.dev))
    elif step.op == "nomaster":
        ipr.link("set", index=_index(ipr, step.dev), master=0)
    elif step.op == "release":
        ipr.link("set", index=_index(ipr, step.dev), net_ns_fd=netns_path(ns.pid))
    elif step.op == "flush":
        ipr.flush_addr(index=_index(ipr, step.dev))
    elif step.op == "unroute":
        dst = {} if a["dst"] == "default" else {"dst": a["dst"]}
        ipr.route("del", gateway=a["via"], oif=_index(ipr, step.dev), family=socket.AF_INET, **dst)
    elif step.op == "unneigh":
        ipr.neigh("del", dst=a["ip"], ifindex=_index(ipr, step.dev))
    else:
        raise TwinError(f"unknown step {step.op}")


# what "already done" looks like, for a rollback that re-runs steps over a half-applied change
_ALREADY = {errno.EEXIST, errno.ENOENT, errno.ENODEV, errno.ESRCH, errno.EADDRNOTAVAIL, errno.EADDRINUSE}


def apply(steps: list[Step], pid: int, ex: NodeExec, tolerant: bool = False) -> list[str]:
    """Apply every step in order; a failure names the step as its command.

    Steps the node runs itself (`ip netns add`, `nft -f`: no netlink API for
    them in pyroute2) go in one exec per run of consecutive ones.
    `tolerant` (rollback): a step whose object already exists or is already
    gone is skipped and the run goes on; returns what was skipped."""
    skipped: list[str] = []
    ns = _Namespaces(pid)
    try:
        i = 0
        while i < len(steps):
            if steps[i].in_node:
                j = i
                while j < len(steps) and steps[j].in_node:
                    j += 1
                script = "\n".join(s.command() + (" || true" if tolerant else "") for s in steps[i:j])
                ex.check(["sh", "-ec", script])
                i = j
                continue
            try:
                _apply(steps[i], ns)
            except (NetlinkError, TwinError, OSError) as e:
                code = getattr(e, "code", None) or getattr(e, "errno", None)
                if tolerant and (code in _ALREADY or str(e).startswith("no interface")):
                    skipped.append(f"{steps[i].command()}: {e}")
                else:
                    raise TwinError(f"{ex.where}: `{steps[i].command()}` failed: {e}") from None
            i += 1
    finally:
        ns.close()
    return skipped


def probe_backend(lab: str) -> Backend:
    """The VRF backend this kernel offers: Linux VRF devices if it can make one, else netns.

    The probe runs in a throwaway namespace named after the lab, removed at once.
    """
    name = f"twin-{lab}-probe"
    netns.create(name)
    try:
        with IPRoute(netns=name, flags=0) as ipr:
            try:
                ipr.link("add", ifname="probe", kind="vrf", vrf_table=4242)
                return "vrf"
            except NetlinkError:
                return "netns"
    finally:
        netns.remove(name)
