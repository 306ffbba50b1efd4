"""The lab's management network in the topology (pure): what a file gives, checked, and at `twin up`
its subnet and every node's address chosen.

    mgmt:                         # every field optional
      subnet: 192.168.200.0/24    # containerlab's mgmt.ipv4-subnet
      gateway: 192.168.200.1      # this host's address on it (containerlab's ipv4-gw)
      password: CumulusLinux!     # user cumulus's, for SSH and the NVUE API (default: the lab's own)
      enabled: false              # no management network at all
    nodes:
      leaf01: {kind: leaf, mgmt_ipv4: 192.168.200.11}   # containerlab's mgmt-ipv4

Every switch, DPU and router has a management port (`Kind.mgmt`) where it runs twin's node image (one
running an image of its own may lack what the port needs: twin's sshd, relay, tools); hosts and the
internet have none.
Without a subnet, `choose` picks one at `twin up`: the smallest prefix that holds the lab's nodes (a
/24 for up to 253 of them), from POOLS, starting where the lab's name points (so a lab gets the same
one whenever it is free), skipping every prefix that overlaps another Docker network, a route of this
host or the fabric's own addresses. `resolve` gives every managed node its address (the pinned ones
first, then the next free one in the file's order), `carry` keeps a running lab's on `twin apply`.
"""

from __future__ import annotations

import zlib
from ipaddress import IPv4Address, IPv4Network
from typing import Collection, Iterable, Mapping

from twin.base.errors import TwinError
from twin.kinds import KINDS, MGMT_PORT, Kind
from twin.topology.addresses import parse_address, parse_prefix, special_use
from twin.topology.model import Fabric, Mgmt
from twin.topology.problems import Problems
from twin.topology.schema import TopologySpec

POOLS = (IPv4Network("10.250.0.0/16"), IPv4Network("172.20.0.0/14"), IPv4Network("192.168.128.0/17"))
LARGEST = 16  # the largest subnet twin chooses (or takes): a /16
SMALLEST = 29  # the smallest one a topology may give: a /29
PASSWORD_RULE = "1-128 printable ASCII characters (no control character)"


def build_mgmt(spec: TopologySpec, kinds: Mapping[str, Kind], problems: Problems) -> tuple[Mgmt | None, dict[str, str]]:
    """The management network as the file gives it and the addresses it pins (node -> address);
    every problem into `problems`."""
    m = spec.mgmt
    pins = {n: s.mgmt_ipv4 for n, s in spec.nodes.items() if s.mgmt_ipv4 is not None and n in kinds}
    if not m.enabled:
        for field in ("subnet", "gateway", "password"):
            if getattr(m, field) is not None:
                problems.add(
                    ("mgmt", field),
                    f"the lab has no management network (mgmt.enabled is false): '{field}' is not allowed",
                )
        for n in pins:
            problems.add(("nodes", n, "mgmt_ipv4"), "the lab has no management network (mgmt.enabled is false)")
        return None, {}
    subnet = _subnet(m.subnet, problems)
    gateway = _gateway(m.gateway, subnet, problems)
    if m.password is not None and (not 1 <= len(m.password) <= 128 or any(not 32 <= ord(c) < 127 for c in m.password)):
        problems.add(("mgmt", "password"), f"the password is not allowed: {PASSWORD_RULE}")
    addresses = _pins(pins, kinds, subnet, gateway, m.subnet is not None, problems)
    _eth0_links(spec, kinds, problems)
    managed = [n for n, k in kinds.items() if k.mgmt]
    if subnet is not None and gateway is not None and _room(subnet) < len(managed) + 1:
        problems.add(
            ("mgmt", "subnet"),
            f"{subnet} has room for {_room(subnet)} addresses: too few for this host's "
            f"and {len(managed)} nodes'; use a larger one",
        )
    return Mgmt(
        subnet=str(subnet) if subnet else None, gateway=str(gateway) if gateway else None, password=m.password
    ), addresses


def _subnet(text: str | None, problems: Problems) -> IPv4Network | None:
    if text is None:
        return None
    net, why = parse_prefix(text, "192.168.200.0/24")
    if net is None:
        problems.add(("mgmt", "subnet"), why)
    elif special_use(net):
        problems.add(("mgmt", "subnet"), f"{net} overlaps {special_use(net)}: the management network is unicast space")
    elif not LARGEST <= net.prefixlen <= SMALLEST:
        problems.add(
            ("mgmt", "subnet"),
            f"{net} is not a /{LARGEST} to /{SMALLEST}: a management network is one subnet of this host's",
        )
    else:
        return net
    return None


def _gateway(text: str | None, subnet: IPv4Network | None, problems: Problems) -> IPv4Address | None:
    if text is None:
        return None
    addr, why = parse_address(text, "192.168.200.1")
    if addr is None:
        problems.add(("mgmt", "gateway"), why)
        return None
    if subnet is None:
        problems.add(("mgmt", "gateway"), "a gateway needs mgmt.subnet, the network it is on")
        return None
    if addr not in subnet or addr in (subnet.network_address, subnet.broadcast_address):
        problems.add(("mgmt", "gateway"), f"{addr} is not a host address of {subnet}")
        return None
    return addr


def _pins(
    pins: dict[str, str],
    kinds: Mapping[str, Kind],
    subnet: IPv4Network | None,
    gateway: IPv4Address | None,
    given: bool,
    problems: Problems,
) -> dict[str, str]:
    owner: dict[IPv4Address, str] = {}
    out: dict[str, str] = {}
    for n, text in pins.items():
        at = ("nodes", n, "mgmt_ipv4")
        if not kinds[n].mgmt:
            problems.add(
                at,
                f"a {kinds[n].name} has no management port; "
                f"{', '.join(k.name for k in KINDS.values() if k.mgmt)} have one",
            )
            continue
        addr, why = parse_address(text, "192.168.200.11")
        if addr is None:
            problems.add(at, why)
        elif subnet is None:
            if not given:  # a broken subnet is reported once, at mgmt.subnet
                problems.add(at, "a node's management address needs mgmt.subnet, the network it is on")
        elif addr not in subnet or addr in (subnet.network_address, subnet.broadcast_address):
            problems.add(at, f"{addr} is not a host address of the management subnet {subnet}")
        elif addr == gateway:
            problems.add(at, f"{addr} is this host's address on the management network (mgmt.gateway)")
        elif addr in owner:
            problems.add(at, f"{addr} is already the management address of {owner[addr]}")
        else:
            owner[addr] = n
            out[n] = str(addr)
    return out


def _eth0_links(spec: TopologySpec, kinds: Mapping[str, Kind], problems: Problems) -> None:
    """A node's management port is eth0: no link may take it."""
    for i, link in enumerate(spec.links):
        for j, end in enumerate(link.endpoints if link is not None else ()):
            node, _, port = end.partition(":")
            if port == MGMT_PORT and node in kinds and kinds[node].mgmt:
                problems.add(
                    ("links", i, "endpoints", j),
                    f"{MGMT_PORT} of {node} is its management port (mgmt.enabled: false leaves it to links)",
                )


def _room(subnet: IPv4Network) -> int:
    return subnet.num_addresses - 2


# --- at `twin up`: the subnet and every address ------------------------------------------------------
def prefixlen_for(nodes: int) -> int:
    """The longest prefix whose subnet holds this host's address and `nodes` nodes' (at least /24's room)."""
    for length in range(24, LARGEST - 1, -1):
        if 2 ** (32 - length) - 2 >= nodes + 1:
            return length
    raise TwinError(f"{nodes} nodes do not fit a /{LARGEST} management network")


def own_prefixes(fabric: Fabric) -> list[IPv4Network]:
    """The fabric's own addresses, which a chosen management subnet keeps clear of (less confusing)."""
    out = [IPv4Network(f"{n.loopback}/32") for n in fabric.nodes.values() if n.loopback]
    for t in fabric.tenants.values():
        out += [IPv4Network(s.subnet) for s in t.segments.values()]
        if t.internet is not None:
            out += [IPv4Network(t.internet.pool)] if t.internet.pool else []
            out += [IPv4Network(f"{a}/32") for a in t.internet.hosts.values()]
    return out


def choose(lab: str, nodes: int, taken: Iterable[IPv4Network]) -> IPv4Network:
    """A free subnet for lab `lab`'s `nodes` managed nodes: the first of POOLS' candidates from where the
    lab's name points, that overlaps nothing `taken`; TwinError when every one is taken."""
    length, busy = prefixlen_for(nodes), list(taken)
    start = zlib.crc32(lab.encode())
    for pool in POOLS:
        candidates = list(pool.subnets(new_prefix=length))
        for i in range(len(candidates)):
            net = candidates[(start + i) % len(candidates)]
            if not any(net.overlaps(t) for t in busy):
                return net
    raise TwinError(
        f"lab {lab}: no free /{length} for its management network in "
        f"{', '.join(map(str, POOLS))} (each overlaps a Docker network, a route of this host or the "
        "fabric's own addresses); give the topology mgmt.subnet, or mgmt.enabled: false"
    )


def resolve(fabric: Fabric, taken: Iterable[IPv4Network] = (), own: Collection[str] = ()) -> Fabric:
    """`fabric` with its management subnet (the topology's, else `choose`n clear of `taken` and the
    fabric's own prefixes), this host's address on it and every managed node's address, but the
    nodes that run an image of their own (`own`: they have none, even one the file pins)."""
    given = fabric.mgmt
    if given is None:
        return fabric
    if own:
        fabric = fabric.model_copy(
            update={
                "nodes": {k: v.model_copy(update={"mgmt": None}) if k in own else v for k, v in fabric.nodes.items()}
            }
        )
    managed = [n for n in fabric.managed() if n.name not in own]
    subnet = (
        IPv4Network(given.subnet)
        if given.subnet
        else choose(fabric.name, len(managed), [*taken, *own_prefixes(fabric)])
    )
    used = {IPv4Address(n.mgmt) for n in managed if n.mgmt}
    free = (a for a in subnet.hosts() if a not in used)
    gateway = IPv4Address(given.gateway) if given.gateway else next(free)
    addresses = {}
    for n in managed:
        if n.mgmt is None:
            addr = next((a for a in free if a != gateway), None)
            if addr is None:
                raise TwinError(f"lab {fabric.name}: the management subnet {subnet} has no address left for {n.name}")
            addresses[n.name] = str(addr)
    nodes = {k: v.model_copy(update={"mgmt": addresses[k]}) if k in addresses else v for k, v in fabric.nodes.items()}
    mgmt = given.model_copy(update={"subnet": str(subnet), "gateway": str(gateway)})
    return fabric.model_copy(update={"mgmt": mgmt, "nodes": nodes})


def carry(old: Fabric, new: Fabric) -> Fabric:
    """`new` (a topology file's, for the running lab `old`) with what `twin up` chose for `old` where the
    file leaves it to twin: the subnet, this host's address and each node's address stay. What the file
    pins otherwise stays too, for `FabricDiff` to name (a running lab's management network is fixed)."""
    if old.mgmt is None or new.mgmt is None or not old.mgmt.subnet or new.mgmt.subnet not in (None, old.mgmt.subnet):
        return new
    mgmt = new.mgmt.model_copy(update={"subnet": old.mgmt.subnet, "gateway": new.mgmt.gateway or old.mgmt.gateway})
    kept = {k for k, v in old.nodes.items() if v.mgmt}
    nodes = {
        k: v.model_copy(update={"mgmt": old.nodes[k].mgmt})
        if k in old.nodes and (v.mgmt is None or k not in kept)
        else v
        for k, v in new.nodes.items()
    }
    own = {k for k, v in old.nodes.items() if KINDS[v.kind].mgmt and k not in kept}  # on images of their own
    return resolve(new.model_copy(update={"mgmt": mgmt, "nodes": nodes}), own=own)


def differs(old: Fabric, new: Fabric) -> list[str]:
    """How the management network of `new` differs from the one `old` runs (after `carry`)."""
    word = lambda m: "none" if m is None else f"{m.subnet or 'chosen at up'} via {m.gateway or 'its first address'}"  # noqa: E731
    if (old.mgmt is None) != (new.mgmt is None) or (
        old.mgmt and new.mgmt and ((old.mgmt.subnet, old.mgmt.gateway) != (new.mgmt.subnet, new.mgmt.gateway))
    ):
        return [f"change mgmt ({word(old.mgmt)} -> {word(new.mgmt)})"]
    return [
        f"change mgmt_ipv4 of {n} ({old.nodes[n].mgmt} -> {new.nodes[n].mgmt})"
        for n in sorted(new.nodes)
        if n in old.nodes and old.nodes[n].mgmt != new.nodes[n].mgmt
    ]
