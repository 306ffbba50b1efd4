"""The lab's management network on this host (NVIDIA Air's out-of-band network, containerlab's mgmt).

A Docker bridge network the lab owns: `twin-<lab>-mgmt`, labelled twin.lab=<lab>, `--internal`
(Docker drops whatever it would forward between it and any other interface: no route to the
host's uplink), with this host's address on its bridge (`twm<hash of the lab>`), so the host
reaches every node and nothing else does. Each managed node's eth0 is a veth pair twin makes as
soon as the node runs (containers have no Docker networking): the end on the bridge is named
`tm<hash of lab/node>` and aliased `twin:<lab>:<node>:eth0->mgmt`, the other is eth0 in the node,
which its kernel steps move into its management namespace with its address (`twin.config.mgmt`).
The pair dies with that namespace, so with the node; `remove` takes the network away (after the
containers, and after a crash: it is found by its label).

`taken` is what a management subnet must not overlap here: every Docker network's subnets and
this host's routes (`twin.topology.mgmt.choose` picks among the rest, from where the lab's name
points). Docker is the arbiter between labs brought up at once: each chooses and makes its network
on its own, and when two chose one subnet Docker refuses the second ("Pool overlaps"), which looks
again and chooses another (`claim`). No lab waits for another's network to be made.
"""

from __future__ import annotations

import errno
import zlib
from functools import partial
from ipaddress import IPv4Network, ip_network
from typing import Callable, Collection

import docker
from docker.models.networks import Network
from docker.types import IPAMConfig, IPAMPool
from pyroute2 import IPRoute, NetlinkError

from twin.base import timeouts, wait
from twin.base.errors import TwinError
from twin.config.naming import LABEL_LAB, link_alias, mgmt_network
from twin.kinds import MGMT_PORT
from twin.runtime import dockerapi, netns
from twin.runtime.failures import engine_errors
from twin.runtime.netns import netns_path
from twin.topology import mgmt as topology_mgmt
from twin.topology.model import Fabric

BRIDGE_OPTION = "com.docker.network.bridge.name"
TRIES = 5  # looks at this host's subnets: each refusal was another lab's network made meanwhile


class SubnetTaken(TwinError):
    """Docker refused a management network: its subnet overlaps another network's."""


def bridge_name(lab: str) -> str:
    """The bridge of lab `lab`'s management network on this host (15 characters at most)."""
    return f"twm{zlib.crc32(lab.encode()):08x}"


def port_name(lab: str, node: str) -> str:
    """The host's end of a node's eth0 (in the bridge)."""
    return f"tm{zlib.crc32(f'{lab}/{node}'.encode()):08x}"


def taken(client: docker.DockerClient, lab: str = "") -> list[IPv4Network]:
    """The IPv4 prefixes a new management subnet of lab `lab` must keep clear of: every Docker network's
    but the lab's own (one a killed `up` left: made again), and every route of this host's (its main
    table: its own subnets, its VPNs, Docker's bridges) but a default and the routes of those networks."""
    out: list[IPv4Network] = []
    with engine_errors("listing Docker's networks"):
        nets = dockerapi.call("listing Docker's networks", lambda: client.api.networks())
    mine = [
        _prefix(c.get("Subnet"))
        for n in nets
        if (n.get("Labels") or {}).get(LABEL_LAB) == lab and lab
        for c in ((n.get("IPAM") or {}).get("Config") or [])
    ]
    for net in nets:
        if lab and (net.get("Labels") or {}).get(LABEL_LAB) == lab:
            continue
        for cfg in (net.get("IPAM") or {}).get("Config") or []:
            prefix = _prefix(cfg.get("Subnet"))
            out += [prefix] if prefix is not None else []
    with netns.here() as ipr:  # requests with deadlines (the command's too)
        for r in ipr.get_routes(family=2, table=254):
            length = r.get("dst_len") or 0
            dst = r.get_attr("RTA_DST")
            if length and dst and IPv4Network(f"{dst}/{length}", strict=False) not in mine:
                out.append(IPv4Network(f"{dst}/{length}", strict=False))
    return out


def _prefix(text: object) -> IPv4Network | None:
    try:
        net = ip_network(str(text), strict=False)
    except ValueError:
        return None
    return net if isinstance(net, IPv4Network) else None


def claim(
    client: docker.DockerClient, fabric: Fabric, own: Collection[str], make: Callable[[Fabric], object]
) -> Fabric:
    """`fabric` with its management subnet (the topology's, else one no Docker network or route of this
    host overlaps) and its managed nodes' addresses (but those of `own`: nodes of an image of their
    own), its network made (`make`). A subnet another lab's network took between the look and the make
    (Docker refuses ours: `SubnetTaken`) is chosen again, from a new look, up to TRIES times."""
    if fabric.mgmt is None:
        return fabric
    lab, given, tries = fabric.name, fabric.mgmt.subnet, 0
    while True:
        tries += 1
        with wait.doing(f"lab {lab}", "a management subnet chosen"):
            chosen = topology_mgmt.resolve(fabric, taken(client, lab), own)
        try:
            with wait.doing(f"lab {lab}", "its management network made"):
                make(chosen)
            return chosen
        except SubnetTaken as e:
            if given or tries == TRIES:
                raise TwinError(
                    f"{e}{'' if given else f' ({tries} subnets chosen, each taken meanwhile)'}; give the "
                    "topology another mgmt.subnet, or mgmt.enabled: false"
                ) from None


def create(client: docker.DockerClient, fabric: Fabric) -> str:
    """The lab's management network, made (or the lab's own, already there with this subnet): its
    bridge's name. TwinError when Docker refuses it (a subnet another network took meanwhile)."""
    lab, m = fabric.name, fabric.mgmt
    if m is None or not m.subnet or not m.gateway:
        raise TwinError(f"lab {lab}: its management network has no subnet yet (twin.topology.mgmt.resolve)")
    name = mgmt_network(lab)
    mine = _networks(client, lab)
    if any(_ours(n, lab, m.subnet, m.gateway) for n in mine):
        return bridge_name(lab)
    for n in mine:  # another subnet: left by an earlier lab of this name
        _remove_network(n)
    ipam = IPAMConfig(pool_configs=[IPAMPool(subnet=m.subnet, gateway=m.gateway)])
    try:
        dockerapi.call(
            f"lab {lab}: creating its management network",
            lambda: client.networks.create(
                name,
                driver="bridge",
                internal=True,
                ipam=ipam,
                labels={LABEL_LAB: lab},
                options={BRIDGE_OPTION: bridge_name(lab)},
                check_duplicate=True,
            ),
        )
    except docker.errors.APIError as e:
        if any(_ours(n, lab, m.subnet, m.gateway) for n in _networks(client, lab)):
            return bridge_name(lab)  # an earlier try that timed out made it
        if "overlaps" in str(e.explanation or e):
            raise SubnetTaken(
                f"lab {lab}: Docker refused its management network {name}: {m.subnet} overlaps another "
                f"network's ({e.explanation or e})"
            ) from None
        raise TwinError(
            f"lab {lab}: Docker refused its management network {name} ({m.subnet}): "
            f"{e.explanation or e}; give the topology another mgmt.subnet, or mgmt.enabled: false"
        ) from None
    return bridge_name(lab)


def _ours(net: Network, lab: str, subnet: str, gateway: str) -> bool:
    """Is `net` lab `lab`'s management network as it should be (its name, subnet, gateway and bridge)?"""
    cfg = (net.attrs.get("IPAM") or {}).get("Config") or []
    return (
        net.attrs.get("Name") == mgmt_network(lab)
        and (net.attrs.get("Options") or {}).get(BRIDGE_OPTION) == bridge_name(lab)
        and [(c.get("Subnet"), c.get("Gateway")) for c in cfg] == [(subnet, gateway)]
    )


def _networks(client: docker.DockerClient, lab: str) -> list:
    with engine_errors(f"lab {lab}: listing its networks"):
        return dockerapi.call(
            f"lab {lab}: listing its networks", lambda: client.networks.list(filters={"label": f"{LABEL_LAB}={lab}"})
        )


def _remove_network(net: Network) -> None:
    try:
        net.remove()
    except docker.errors.NotFound:
        pass


def remove(client: docker.DockerClient, lab: str) -> list[str]:
    """Every network labelled with lab `lab` removed (after its containers); their names."""
    gone = []
    for net in _networks(client, lab):
        what = f"lab {lab}: removing its network {net.name}"
        with engine_errors(what):
            dockerapi.call(what, partial(_remove_network, net))
        gone.append(net.name)
    return gone


def attach(lab: str, node: str, pid: int, bridge: str, address: str) -> None:
    """Node `node`'s eth0 on the management network: a veth pair, one end in the bridge, eth0 in the
    node (pid `pid`). An end left by the node's earlier life (its namespace is being freed) is waited for,
    and this host's neighbour entry of its `address` (the former eth0's MAC) removed: the new one is
    reached at once, not once that entry has failed (half a minute and more)."""
    host, alias = port_name(lab, node), link_alias(lab, f"{node}:{MGMT_PORT}", "mgmt")
    with netns.here() as ipr:  # requests with deadlines (the command's too)
        found = ipr.link_lookup(ifname=bridge)
        if not found:
            raise TwinError(f"lab {lab}: the management network's bridge {bridge} is not there")
        if ipr.link_lookup(ifname=host):
            _wait_gone(ipr, host, alias, f"{lab}/{node}")
        try:
            ipr.link("add", ifname=host, kind="veth", peer={"ifname": MGMT_PORT, "net_ns_fd": netns_path(pid)})
            ipr.link("set", index=ipr.link_lookup(ifname=host)[0], master=found[0], state="up", ifalias=alias)
        except NetlinkError as e:
            raise TwinError(f"{lab}/{node}: cannot attach its {MGMT_PORT} to the management network: {e}") from None
        try:
            ipr.neigh("del", dst=address, ifindex=found[0])
        except NetlinkError as e:
            if e.code != errno.ENOENT:
                raise TwinError(f"{lab}/{node}: cannot forget its former MAC on this host: {e}") from None


def _wait_gone(ipr: IPRoute, host: str, alias: str, where: str) -> None:
    """Until the end `host` of a node's former eth0 is gone; TwinError if it is not the lab's own."""

    def left() -> list[str]:
        try:
            links = ipr.link("get", ifname=host)
        except NetlinkError as e:
            if e.code == errno.ENODEV:
                return []
            raise
        if links and links[0].get_attr("IFLA_IFALIAS") != alias:
            raise TwinError(
                f"{where}: {host} on this host is not twin's ({links[0].get_attr('IFLA_IFALIAS')!r}); "
                "it names this node's management port"
            )
        return [f"{where}: the end {host} of its former {MGMT_PORT} still there"]

    wait.until(left, timeouts.NODE_STOP, f"{where}: its former management port gone", first=0.05, cap=0.2)
