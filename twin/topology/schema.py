"""The topology file as written by a user: structure and types only.

Semantic rules (known kinds, links to existing nodes, unique addresses...) live
in `twin.topology.build` and `twin.topology.tenants`, so every problem is found
in one pass.

Numbers are strict: `true` is not an ASN and "9000" is not an MTU. Each kind of
number is one type whose error says what is allowed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, StrictBool
from pydantic_core import PydanticCustomError

AS_TRANS = 23456  # RFC 6793: stands in for a 4-byte ASN towards old speakers, never a real one
ASN_MAX = 4294967295
VNI_MAX = 16777215


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def whole_number(what: str, low: int, high: int, excluded: dict[int, str] | None = None) -> Any:
    """An int type of `low`..`high` (not `excluded`), refusing bools, floats and strings with one rule."""
    rule = f"{what} is a whole number from {low} to {high}"
    rule += "".join(f", not {n} ({why})" for n, why in (excluded or {}).items())

    def check(value: object) -> int:
        if type(value) is not int or not low <= value <= high or value in (excluded or {}):
            raise PydanticCustomError("rule", rule)
        return value

    return Annotated[int, PlainValidator(check)]


def _endpoints(value: object) -> list[str]:
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
        raise PydanticCustomError("rule", 'a link has two endpoints, "node" or "node:port", like [spine1, leaf1:swp1]')
    return value


if TYPE_CHECKING:  # to a type checker, each is an int
    Asn = int
    Mtu = int
    Vni = int
    L4Port = int
    Count = int
    Prefixes = int
    ExitCode = int
    Payload = int
    Dscp = int
    Ecn = int
else:
    Asn = whole_number("an ASN", 1, ASN_MAX, {AS_TRANS: "AS_TRANS"})
    Mtu = whole_number("an MTU", 1280, 9216)
    Vni = whole_number("a VNI", 1, VNI_MAX)
    L4Port = whole_number("a port", 1, 65535)
    Count = whole_number("a count", 1, 1000)
    Prefixes = whole_number("a number of prefixes", 0, 100_000_000)
    ExitCode = whole_number("an exit code", 0, 255)
    Payload = whole_number("a payload", 0, 8900)
    Dscp = whole_number("a DSCP", 0, 63)
    Ecn = whole_number("an ECN value", 0, 3)
Endpoints = Annotated[list[str], PlainValidator(_endpoints)]


class NodeSpec(_Strict):
    kind: str
    asn: Asn | None = Field(default=None, description="BGP AS number")
    loopback: str | None = Field(default=None, description="IPv4 address of lo, router-id and VTEP")
    image: str | None = Field(
        default=None,
        description="the node's own image (a Docker reference), run where the engine has it (defaults.images)",
    )
    drain: StrictBool = Field(
        default=False,
        description="drained for maintenance: BGP graceful shutdown "
        "(RFC 8326), its routes lose to every other path "
        "while its sessions stay up",
    )
    exec: list[str] | None = Field(
        default=None,
        description="commands run in the node once it is wired and configured, in order (containerlab's exec)",
    )
    binds: list[str] | None = Field(
        default=None,
        description="files or directories of this host in the node, "
        "'SOURCE:TARGET[:ro]', SOURCE relative to the topology "
        "file (containerlab's binds)",
    )
    cmd: str | None = Field(
        default=None,
        description="a host's command instead of twin's idle one, run once its ports are up (containerlab's cmd)",
    )
    entrypoint: str | None = Field(
        default=None,
        description="a host's entrypoint, run with cmd as its arguments "
        "once its ports are up (containerlab's entrypoint)",
    )
    env: dict[str, str] | None = Field(
        default=None, description="environment variables of the node's container (containerlab's env)"
    )
    mgmt_ipv4: str | None = Field(
        default=None,
        description="its address on the management network, in mgmt.subnet "
        "(containerlab's mgmt-ipv4; default: the next free one)",
    )
    platform_ports: str | None = Field(
        default=None,
        description="the ports the node's platform has, cabled or not, "
        "as NVUE ranges them (swp1-32); default: its kind's",
    )
    nvue: Literal["blank"] | None = Field(
        default=None,
        description="blank: the node runs NVUE with nothing "
        "configured yet, as a switch after zero-touch "
        "provisioning (your automation configures it)",
    )


class LinkSpec(_Strict):
    endpoints: Endpoints = Field(description='["node[:port]", "node[:port]"]')
    mtu: Mtu | None = None


class AsnDefaults(_Strict):
    spine: Asn | None = None
    leaf: Asn | None = None
    dpu: Asn | None = None


class Defaults(_Strict):
    loopback_pool: str = "10.255.0.0/24"
    mtu: Mtu = Field(default=9000, description="MTU of fabric links")
    host_mtu: Mtu = Field(
        default=8950, description="MTU of host links: fits a VXLAN-encapsulated frame in the fabric MTU"
    )
    asn: AsnDefaults = AsnDefaults()
    nvue: Literal["blank"] | None = Field(
        default=None,
        description="blank: every spine, leaf and DPU runs NVUE with "
        "nothing configured yet (a node's own nvue says "
        "otherwise)",
    )
    vrf_backend: Literal["netns", "device"] | None = Field(
        default=None,
        description="how tenant VRFs are made on VTEPs: netns (the default, on every kernel: a network "
        "namespace each) or device (Linux VRF devices; needs CONFIG_NET_VRF)",
    )
    images: Literal["twin", "own", "auto"] | None = Field(
        default=None,
        description="which image a node with its own `image` runs: auto (the default: its own where the "
        "engine has it, else twin's node image), own (its own, or nothing is made), twin "
        "(twin's node image)",
    )


class MgmtSpec(_Strict):
    """The lab's management network (NVIDIA Air's out-of-band network, containerlab's mgmt): eth0 of every
    switch, DPU and router on it, reachable from this host, with SSH (22) and the NVUE API (8765)."""

    enabled: StrictBool = Field(
        default=True, description="false: no management network (the nodes are reached with twin exec only)"
    )
    subnet: str | None = Field(
        default=None,
        description="its IPv4 prefix (containerlab's ipv4-subnet; default: a "
        "free one chosen at twin up, the same for the lab's name "
        "whenever it is free)",
    )
    gateway: str | None = Field(
        default=None, description="this host's address on it (default: the first address of the subnet no node takes)"
    )
    password: str | None = Field(
        default=None,
        description="the password of user cumulus on every node, for SSH and "
        "the NVUE API (default: one made for the lab)",
    )


class SegmentSpec(_Strict):
    """A tenant's L2 segment: one subnet stretched over VXLAN (L2VNI) with an anycast gateway."""

    subnet: str
    l2vni: Vni = Field(description="VXLAN network identifier of the segment")
    gateway: str | None = Field(default=None, description="anycast gateway address (default: first host)")
    mac: str | None = Field(default=None, description="anycast gateway MAC (default: 00:00:5e:00:01:01)")


class RateLimitSpec(_Strict):
    """What a workload may send and receive, enforced on its VTEP port: "100mbit" or "20000pps"."""

    egress: str | None = Field(default=None, description="what the workload sends (its VTEP port's ingress)")
    ingress: str | None = Field(default=None, description="what the workload receives (its VTEP port's egress)")


class AttachmentSpec(_Strict):
    """A host endpoint in a segment, through its link to a VTEP port."""

    host: str
    segment: str
    port: str | None = Field(default=None, description='VTEP port "node:port" (default: the host\'s link to a VTEP)')
    address: str | None = Field(default=None, description="host address (default: next free in the subnet)")
    rate_limit: RateLimitSpec | None = Field(default=None, description="this workload's limits (default: the tenant's)")


class ForwardSpec(_Strict):
    """Inbound from the internet: the public port of a host's public address -> a port of the host."""

    port: L4Port = Field(description="public port")
    host: str
    to: L4Port | None = Field(default=None, description="the host's port (default: the public port)")
    proto: str = Field(default="tcp", description="tcp or udp")


class InternetSpec(_Strict):
    """A tenant's way out: its VTEPs NAT it to public addresses announced in BGP."""

    pool: str | None = Field(
        default=None,
        description="public prefix: one address per gateway VTEP, shared by its hosts (source NAT with ports)",
    )
    hosts: dict[str, str] = Field(default={}, description="host -> a public address of its own (1:1 NAT)")
    segments: list[str] | None = Field(default=None, description="segments that may go out (default: all)")
    forwards: list[ForwardSpec] = []


class TenantSpec(_Strict):
    vrf: str | None = Field(default=None, description="VRF name (default: the tenant name)")
    l3vni: Vni = Field(description="VXLAN network identifier of the tenant's VRF")
    segments: dict[str, SegmentSpec]
    attachments: list[AttachmentSpec] = []
    internet: InternetSpec | None = None
    rate_limit: RateLimitSpec | None = Field(default=None, description="limits of each of its workloads")


class CongestionSpec(_Strict):
    """A congestion point: ECN-capable frames leaving `port` above `above` are marked CE, not dropped."""

    port: str = Field(description='a fabric port "node:port"')
    above: str = Field(description='"2000pps" or "50mbit"')


class TopologySpec(_Strict):
    name: str
    description: str = ""
    defaults: Defaults = Defaults()
    mgmt: MgmtSpec = MgmtSpec()
    nodes: dict[str, NodeSpec]
    links: list[LinkSpec | None] = []  # None: a malformed link (reported), kept so indexes match the file
    vtep: str | list[str] = Field(
        default="dpu",
        description="which kind is the VTEP of tenant traffic: dpu or leaf, "
        "or a list of both ([leaf, dpu]: hosts on either)",
    )
    tenants: dict[str, TenantSpec] = {}
    congestion: list[CongestionSpec | None] = []  # None: malformed (reported), as links
    checks: list[Any] = Field(
        default=[],
        description="the user's own checks, run by `twin verify` (see CheckSpec; read by twin.topology.checks)",
    )


# --- checks: what a network team expects of the lab, in its own terms -----------------------------


def seconds(what: str, low: float, high: float) -> Any:
    """A number of seconds (whole or not) from `low` (excluded) to `high`, refusing bools and text."""
    rule = f"{what} is a number of seconds above {low:g} and at most {high:g}"

    def check(value: object) -> float:
        if not (type(value) is int or type(value) is float) or not low < value <= high:
            raise PydanticCustomError("rule", rule)
        return float(value)

    return Annotated[float, PlainValidator(check)]


if TYPE_CHECKING:
    Timeout = float
    Window = float
else:
    Timeout = seconds("a timeout", 0, 3600)
    Window = seconds("a window", 0, 600)
Afi = Literal["ipv4", "ipv6", "evpn"]


def _command(value: object) -> str | list[str]:
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    raise PydanticCustomError(
        "rule", "a command is a shell command line (text, run with sh -c) or a list of its arguments"
    )


CommandLine = Annotated[Any, PlainValidator(_command)]


class CheckSpec(_Strict):
    """One check as written: every check has a `name` (unique) and a `type`.

    A positive check waits up to `timeout` for what it expects to hold; a negative
    one (something must stay absent, fail or be blocked) is judged only once the
    lab has converged (waiting up to `timeout` for that), and must then hold for
    `window` seconds."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    name: str
    type: str
    description: str = ""
    timeout: Timeout | None = Field(
        default=None, description="seconds to wait for it to hold (positive) or for the lab to converge (negative)"
    )
    window: Window | None = Field(default=None, description="seconds a negative check must hold for")

    @property
    def negative(self) -> bool:
        """Judged after convergence and over a window: its passing could otherwise mean 'not up yet'."""
        return False


class BgpSessionCheck(CheckSpec):
    type: Literal["bgp_session"]
    node: str
    peer: str | None = Field(
        default=None,
        description="a node of the lab (its sessions with it), or FRR's name of the neighbour (IP or interface)",
    )
    port: str | None = Field(default=None, description="the node's port of the session")
    vrf: str = "default"
    afi: Afi = "ipv4"
    state: Literal["established", "down", "absent", "idle", "connect", "active", "opensent", "openconfirm"] = (
        "established"
    )

    @property
    def negative(self) -> bool:
        return self.state != "established"


class BgpPrefixesCheck(CheckSpec):
    type: Literal["bgp_prefixes"]
    node: str
    peer: str | None = None
    port: str | None = None
    vrf: str = "default"
    afi: Afi = "ipv4"
    count: Literal["accepted", "received"] = Field(
        default="accepted", description="accepted: kept after the node's inbound policy; received: what the peer sent"
    )
    min: Prefixes | None = None
    max: Prefixes | None = None

    @property
    def negative(self) -> bool:
        return self.max is not None


class RouteCheck(CheckSpec):
    type: Literal["route"]
    node: str
    vrf: str | None = None
    tenant: str | None = None
    prefix: str
    expect: Literal["present", "absent"] = "present"
    protocol: str | None = None
    nexthops: list[str] | None = Field(default=None, description="next-hop addresses or interfaces, all of them")
    vteps: list[str] | None = Field(default=None, description="VTEP nodes the route leads to, all of them")

    @property
    def negative(self) -> bool:
        return self.expect == "absent"


class PingCheck(CheckSpec):
    type: Literal["ping"]
    from_: str = Field(alias="from", description="a node or host")
    to: str = Field(description="an IPv4 or IPv6 address")
    vrf: str | None = None
    tenant: str | None = None
    source: str | None = Field(default=None, description="source address or interface (ping -I)")
    expect: Literal["success", "failure"] = "success"
    count: Count = 3

    @property
    def negative(self) -> bool:
        return self.expect == "failure"


class RoceCheck(CheckSpec):
    type: Literal["roce"]
    from_: str = Field(alias="from", description="a host")
    to: str = Field(description="a host, or an address (sent as the source would address it)")
    expect: Literal["delivered", "blocked"] = "delivered"
    count: Count = 8
    payload: Payload = 1024
    dscp: Dscp = 26
    ecn: Ecn = 2
    keep_marking: StrictBool = Field(default=True, description="delivered frames keep their DSCP and ECN")

    @property
    def negative(self) -> bool:
        return self.expect == "blocked"


class FrrJsonCheck(CheckSpec):
    type: Literal["frr_json"]
    node: str
    command: str = Field(description="a vtysh command that prints JSON")
    match: Any = Field(description="the JSON it must contain (subset: objects by key, lists in any order)")


class ExecCheck(CheckSpec):
    type: Literal["exec"]
    node: str
    command: CommandLine = Field(description="a shell command line (sh -c), or a list of arguments")
    exit_code: ExitCode | None = None
    regex: str | None = Field(default=None, description="must match the output (stdout and stderr)")
    not_regex: str | None = Field(default=None, description="must never match the output")

    @property
    def negative(self) -> bool:
        return self.not_regex is not None


CHECK_TYPES: dict[str, type[CheckSpec]] = {
    "bgp_session": BgpSessionCheck,
    "bgp_prefixes": BgpPrefixesCheck,
    "route": RouteCheck,
    "ping": PingCheck,
    "roce": RoceCheck,
    "frr_json": FrrJsonCheck,
    "exec": ExecCheck,
}

AnyCheck = Annotated[
    Union[BgpSessionCheck, BgpPrefixesCheck, RouteCheck, PingCheck, RoceCheck, FrrJsonCheck, ExecCheck],
    Field(discriminator="type"),
]
