"""How everything a lab creates is named after it, so `down` and the tests find exactly
what the lab owns and two labs coexist: container names and labels, link aliases,
the namespace of the VRF-backend probe."""
from __future__ import annotations

LABEL_LAB = "twin.lab"
LABEL_NODE = "twin.node"
LABEL_KIND = "twin.kind"
LABEL_RUNTIME = "twin.runtime"    # who made the container (docker, containerlab): it also takes it down


def container_name(lab: str, node: str) -> str:
    return f"twin-{lab}-{node}"


def link_alias(lab: str, local: str, peer: str) -> str:
    """The ifalias of a port: its lab, itself and its peer (`ip link` in a node says what it is)."""
    return f"twin:{lab}:{local}->{peer}"


def probe_netns(lab: str) -> str:
    """The throwaway host namespace of the VRF-backend probe (`twin.runtime.kernel.vrf_devices`)."""
    return f"twin-{lab}-probe"


def dryrun_container(lab: str) -> str:
    """The throwaway container that checks a user's FRR configs before a lab exists
    (`twin.runtime.dryrun`); a '.' keeps it apart from every node's container name."""
    return f"twin-{lab}.dryrun"
