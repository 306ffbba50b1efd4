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


class TopologySpec(_Strict):
    name: str
    description: str = ""
    defaults: Defaults = Defaults()
    nodes: dict[str, NodeSpec]
    links: list[LinkSpec] = []
