"""The topology file as written by a user: structure and types only.

Semantic rules (known kinds, links to existing nodes, unique addresses...) live
in `twin.topology.validate`, so every problem is found in one pass.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


ASN = Field(default=None, ge=1, le=4294967294, description="BGP AS number")


class NodeSpec(_Strict):
    kind: str
    asn: int | None = ASN
    loopback: str | None = Field(default=None, description="IPv4 address of lo, router-id and VTEP")
    image: str | None = None
    drain: bool = Field(default=False, description="drained for maintenance: BGP graceful shutdown (RFC 8326), "
                                                    "its routes lose to every other path while its sessions stay up")


class LinkSpec(_Strict):
    endpoints: list[str] = Field(min_length=2, max_length=2, description='["node[:port]", "node[:port]"]')
    mtu: int | None = Field(default=None, ge=1280, le=9216)


class AsnDefaults(_Strict):
    spine: int | None = ASN
    leaf: int | None = ASN
    dpu: int | None = ASN


class Defaults(_Strict):
    loopback_pool: str = "10.255.0.0/24"
    mtu: int = Field(default=9000, ge=1280, le=9216, description="MTU of fabric links")
    host_mtu: int = Field(default=8950, ge=1280, le=9216,
                          description="MTU of host links: fits a VXLAN-encapsulated frame in the fabric MTU")
    asn: AsnDefaults = AsnDefaults()


VNI = Field(ge=1, le=16777215, description="VXLAN network identifier")


class SegmentSpec(_Strict):
    """A tenant's L2 segment: one subnet stretched over VXLAN (L2VNI) with an anycast gateway."""

    subnet: str
    l2vni: int = VNI
    gateway: str | None = Field(default=None, description="anycast gateway address (default: first host)")
    mac: str | None = Field(default=None, description="anycast gateway MAC (default: 00:00:5e:00:01:01)")


class AttachmentSpec(_Strict):
    """A host endpoint in a segment, through its link to a VTEP port."""

    host: str
    segment: str
    port: str | None = Field(default=None, description='VTEP port "node:port" (default: the host\'s link to a VTEP)')
    address: str | None = Field(default=None, description="host address (default: next free in the subnet)")


class TenantSpec(_Strict):
    vrf: str | None = Field(default=None, description="VRF name (default: the tenant name)")
    l3vni: int = VNI
    segments: dict[str, SegmentSpec]
    attachments: list[AttachmentSpec] = []


class TopologySpec(_Strict):
    name: str
    description: str = ""
    defaults: Defaults = Defaults()
    nodes: dict[str, NodeSpec]
    links: list[LinkSpec] = []
    vtep: str = Field(default="dpu", description="which kind is the VTEP of tenant traffic: dpu or leaf")
    tenants: dict[str, TenantSpec] = {}
