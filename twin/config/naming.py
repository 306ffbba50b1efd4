"""How everything a lab creates is named after it, so `down` and the tests find exactly
what the lab owns and two labs coexist: container names and labels (a node's container name is
also its host name on this host: /etc/hosts), link aliases, the management network, the
namespaces of the VRF-backend probe and of a stopped node's links."""

from __future__ import annotations

from pathlib import Path

LABEL_LAB = "twin.lab"
LABEL_NODE = "twin.node"
LABEL_KIND = "twin.kind"
LABEL_RUNTIME = "twin.runtime"  # who made the container (docker, containerlab): it also takes it down


def container_name(lab: str, node: str) -> str:
    return f"twin-{lab}-{node}"


def mgmt_network(lab: str) -> str:
    """The Docker network of the lab's management network (`twin.runtime.mgmt`)."""
    return f"twin-{lab}-mgmt"


def hosts_marker(lab: str, end: str) -> str:
    """A line that opens ("START") or closes ("END") the lab's block of host names in /etc/hosts
    (containerlab's own is `###### CLAB-<lab>-START ######`)."""
    return f"###### TWIN-{lab}-{end} ######"


def link_alias(lab: str, local: str, peer: str) -> str:
    """The ifalias of a port: its lab, itself and its peer (`ip link` in a node says what it is)."""
    return f"twin:{lab}:{local}->{peer}"


def probe_netns(lab: str) -> str:
    """The throwaway host namespace of the VRF-backend probe (`twin.runtime.kernel.vrf_devices`)."""
    return f"twin-{lab}-probe"


def held_netns(lab: str, node: str = "") -> str:
    """The host namespace that holds a stopped node's ends of its links (`twin.runtime.links.park`), so
    its peers keep their ports; "" node: the prefix of the lab's (a '.' is in no lab or node name)."""
    return f"twin-{lab}.held.{node}"


def dryrun_container(lab: str) -> str:
    """The throwaway container that checks a user's FRR configs before a lab exists
    (`twin.runtime.dryrun`); a '.' keeps it apart from every node's container name."""
    return f"twin-{lab}.dryrun"


NVUE_DIR = "_nvue"  # a lab directory's NVUE service files ('_': no node has that name)


def password_file(labdir: Path) -> Path:
    """User cumulus's password on the lab's nodes (SSH, the NVUE API), for the lab's owner only."""
    return labdir / NVUE_DIR / "password"


def nvue_run(labdir: Path, node: str) -> Path:
    """The directory of a node's NVUE socket in its lab directory (bound into the node at NVUE_RUN)."""
    return labdir / NVUE_DIR / "run" / node
