"""What a node's container is made with beyond its kind's options (`hardening`): its CPU weight, from
its BGP sessions, and its /etc/hosts, which Docker writes in no container without networking.

twin's containers have no Docker networking at all (`network_disabled`): their ports are twin's
veths. Docker's "none" network would give each an endpoint twin never uses, whose creation costs
the engine ~0.12 s a container, and whose removal, done for many containers at once, can lock
Docker 20.10 up for good (Debian 12's docker.io: its libnetwork takes a network's lock and its
controller's in either order, moby/moby#42545, fixed in 23.0). Seen taking a 256-node lab down.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from docker.types import Mount

from twin.topology.model import Node

HOSTS = "/etc/hosts"
HOSTS_DIR = ".hosts"  # in the lab directory: the nodes' /etc/hosts files (no node name starts with a dot)
CPU_SHARES = 1024  # Docker's default weight of a container
SESSIONS_PER_SHARE = 8  # BGP sessions a node has for each CPU_SHARES of weight: a leaf's uplinks


def cpu_shares(node: Node) -> int:
    """A node's CPU weight against every other container while the host's cores are all busy (it
    changes nothing on an idle host): Docker's default for every SESSIONS_PER_SHARE BGP sessions.
    On a switch each node has a CPU of its own; here a spine with 248 sessions shares two cores with
    248 leafs of 8. With equal weights its FRR booted last and slowest (every leaf waits for it) and
    its sessions came up last: the 8 x 248 Clos's spines took 60 s more to load their config than
    any leaf, their sessions 60 s more to come up."""
    return CPU_SHARES * max(1, math.ceil(len(node.fabric_ports) / SESSIONS_PER_SHARE))


ETC_HOSTS = """127.0.0.1\tlocalhost
::1\tlocalhost ip6-localhost ip6-loopback
fe00::0\tip6-localnet
ff00::0\tip6-mcastprefix
ff02::1\tip6-allnodes
ff02::2\tip6-allrouters
127.0.1.1\t{name}
"""


def hosts_mounts(labdir: Path, name: str, taken: set[str]) -> list[Mount]:
    """Node `name`'s /etc/hosts, as Docker binds the file it writes into a container with networking:
    the loopback names and the node's own (sudo looks it up; NVUE's `system hostname` adds its new one).
    None where a bind of the user's is there already."""
    if HOSTS in taken:
        return []
    d = labdir / HOSTS_DIR
    d.mkdir(exist_ok=True)
    if d.is_symlink() or not d.is_dir():
        raise OSError(f"{d} is not a directory twin made")
    fd = os.open(d / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(ETC_HOSTS.format(name=name))
    return [Mount(HOSTS, str(d / name), type="bind")]
