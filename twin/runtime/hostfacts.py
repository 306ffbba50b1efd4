"""What Docker and the host hold for twin, read for `twin doctor`: the engine and its version,
twin's node images and the FRR each carries, and what killed labs left behind (containers
labelled `twin.lab` whose lab has no directory, twin-named network namespaces).

Reading only: nothing here removes anything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import docker

from twin.config.naming import LABEL_LAB, held_netns
from twin.runtime import images

NETNS_DIR = Path("/run/netns")
FRR_VERSION = ["dpkg-query", "-W", "-f", "${Version}", "frr"]


@dataclass(frozen=True)
class Engine:
    reachable: bool
    version: str = ""
    error: str = ""
    userns: bool | None = None  # dockerd remaps root in containers to a user of the host (`userns-remap`)
    cgroup: str = ""  # the cgroup version the engine runs containers on ("1", "2")


@dataclass(frozen=True)
class Image:
    tag: str
    frr: str  # "" when it could not be read
    current: bool  # the tag this twin builds (its recipe's hash, twin/images/)


@dataclass(frozen=True)
class Leftovers:
    containers: dict[str, list[str]] = field(default_factory=dict)  # lab -> container names, no lab dir
    netns: list[str] = field(default_factory=list)  # twin-named namespaces in /run/netns
    networks: dict[str, list[str]] = field(default_factory=dict)  # lab -> its networks, no lab dir


def _client() -> docker.DockerClient:
    return docker.from_env(timeout=30)


def engine() -> Engine:
    try:
        c = _client()
        version = str(c.version().get("Version", "?"))
        info = c.info()
        security = [str(s) for s in info.get("SecurityOptions") or []]
        return Engine(
            True, version, userns=any("name=userns" in s for s in security), cgroup=str(info.get("CgroupVersion") or "")
        )
    except docker.errors.DockerException as e:
        return Engine(False, error=str(e).splitlines()[0][:200])


def frr_of(client: docker.DockerClient, tag: str) -> str:
    """The FRR package version inside an image: one throwaway container, no network, removed."""
    try:  # not `run(remove=True)`: the engine may remove it before its output is read
        c = client.containers.create(tag, FRR_VERSION, network_mode="none", entrypoint=[], labels={"twin.doctor": "1"})
    except docker.errors.DockerException:
        return ""
    try:
        c.start()
        ok = c.wait(timeout=60).get("StatusCode") == 0
        return c.logs(stderr=False).decode(errors="replace").strip() if ok else ""
    except (docker.errors.DockerException, OSError):
        return ""
    finally:
        try:
            c.remove(force=True)
        except docker.errors.DockerException:
            pass


def node_images() -> list[Image]:
    """twin's node images present (twin-node:*), newest first, with their FRR version."""
    client = _client()
    current = images.node_tag()
    found = sorted(client.images.list(name="twin-node"), key=lambda i: i.attrs.get("Created", ""), reverse=True)
    tags = [t for i in found for t in i.tags if t.startswith("twin-node:")]
    return [Image(t, frr_of(client, t), t == current) for t in tags]


def stray_netns(names: list[str], known: set[str]) -> list[str]:
    """The twin-named namespaces (`twin-*`) among `names` that no lab in `known` holds: a lab's
    holding namespace of a stopped node's links (`naming.held_netns`) is its own, not a leftover
    (removing it would take its peers' ports)."""
    mine = tuple(held_netns(lab) for lab in known)
    return sorted(n for n in names if n.startswith("twin-") and not n.startswith(mine))


def leftovers(known: set[str]) -> Leftovers:
    """Containers and networks of labs not in `known` (the labs with a directory under $TWIN_HOME),
    and twin-named namespaces (`twin-*`) in /run/netns that none of them holds."""
    client = _client()
    labs: dict[str, list[str]] = {}
    # sparse: the listing alone, no inspection of each (one another twin removes meanwhile is no error)
    for c in client.containers.list(all=True, filters={"label": LABEL_LAB}, sparse=True):
        lab = (c.attrs.get("Labels") or {}).get(LABEL_LAB, "")
        if lab not in known:
            labs.setdefault(lab, []).append(str((c.attrs.get("Names") or ["/" + c.id[:12]])[0]).lstrip("/"))
    nets: dict[str, list[str]] = {}
    for n in client.networks.list(filters={"label": LABEL_LAB}):  # a management network
        lab = (n.attrs.get("Labels") or {}).get(LABEL_LAB, "")
        if lab not in known:
            nets.setdefault(lab, []).append(n.name)
    try:
        ns = stray_netns(os.listdir(NETNS_DIR), known)
    except OSError:
        ns = []
    return Leftovers(
        {k: sorted(v) for k, v in sorted(labs.items())}, ns, {k: sorted(v) for k, v in sorted(nets.items())}
    )
