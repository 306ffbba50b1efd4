"""The registry of node kinds. Adding a kind is one module plus one line here.

Owns what each kind is (as data); imports nothing of twin but its own modules.
"""

from __future__ import annotations

from typing import Protocol

from twin.kinds.base import (
    FRR_DIR,
    HASH_FIELDS,
    HASH_POLICY,
    HASH_SEED,
    MGMT_NETNS,
    MGMT_NS,
    MGMT_PORT,
    NODE_COMMAND,
    NODE_DIR,
    NV_GID,
    NVUE_PORT,
    SSH_PORT,
    USER,
    Kind,
    PortNaming,
)
from twin.kinds.dpu import Dpu
from twin.kinds.host import Host
from twin.kinds.internet import Internet
from twin.kinds.leaf import Leaf
from twin.kinds.router import Router
from twin.kinds.spine import Spine


class HasKind(Protocol):
    """A node of a validated fabric, or anything else with the name of its kind."""

    @property
    def kind(self) -> str: ...


KINDS: dict[str, Kind] = {k.name: k() for k in (Spine, Leaf, Dpu, Host, Router, Internet)}


def get(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise KeyError(f"unknown kind {name!r}; known kinds: {', '.join(KINDS)}") from None


def of(node: HasKind) -> Kind:
    """The kind of a node of a validated fabric (anything with a `kind` name)."""
    return KINDS[node.kind]


__all__ = [
    "KINDS",
    "Kind",
    "PortNaming",
    "get",
    "of",
    "FRR_DIR",
    "HASH_FIELDS",
    "HASH_POLICY",
    "HASH_SEED",
    "NODE_COMMAND",
    "NODE_DIR",
    "NV_GID",
    "MGMT_NETNS",
    "MGMT_NS",
    "MGMT_PORT",
    "NVUE_PORT",
    "SSH_PORT",
    "USER",
]
