"""A lab from a source not trusted with this host (a `twin serve` user's request, a PR's topology in
CI: `twin up --confined`): what its topology may reach here.

- `binds`: sources beneath the lab's own directory (`Confined.root`: the files that came with the
  request, or the topology's directory), followed through every link: one that leads out of it
  (`/`, `/var/run/docker.sock`, a link to /etc) is refused; each is mounted read-only;
- `image`: twin's node image, or one the admin allows (`Confined.images`);
- the node's `exec` commands and a checks file's `type: exec` run inside the node's container
  (its namespaces, cgroup, capabilities and seccomp profile: `twin.runtime.hardening`), never from
  the host; `cmd`, `entrypoint` and `env` are its container's own already.

`confine` is pure but for the file system it resolves the binds' sources on; TopologyError names
every node and field refused, and what is allowed.
"""

from __future__ import annotations

import os

from twin.base.errors import Problem, TopologyError
from twin.topology.model import Confined, Fabric, Node


def confine(fabric: Fabric, rules: Confined) -> Fabric:
    """`fabric` held to `rules` (binds read-only, `confined` set), or TopologyError with every problem."""
    problems: list[Problem] = []
    nodes = {name: _node(fabric, name, node, rules, problems) for name, node in fabric.nodes.items()}
    if problems:
        raise TopologyError(problems)
    return fabric.model_copy(update={"nodes": nodes, "confined": rules})


def beneath(source: str, root: str) -> bool:
    """Is `source`, every link in it followed, inside directory `root` (itself followed)?"""
    real, top = os.path.realpath(source), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip("/") + "/")


def allowed(image: str | None, rules: Confined) -> bool:
    return image is None or image in rules.images


def _node(fabric: Fabric, name: str, node: Node, rules: Confined, problems: list[Problem]) -> Node:
    for i, b in enumerate(node.binds):
        if not beneath(b.source, rules.root):
            problems.append(
                Problem(
                    fabric.source,
                    f"nodes.{name}.binds[{i}]",
                    f"{b.source}:{b.target}: a confined lab binds only the files that came with it "
                    "(its archive's, beside its topology; no link out of them), never a path of the "
                    "host",
                )
            )
    if not allowed(node.image, rules) and fabric.images != "twin":
        allow = ", ".join(rules.images) if rules.images else "none besides twin's"
        problems.append(
            Problem(
                fabric.source,
                f"nodes.{name}.image",
                f"{node.image!r} is not an image this twin allows; twin's own node image (no `image:`) and: {allow}",
            )
        )
    return node.model_copy(update={"binds": tuple(b.model_copy(update={"read_only": True}) for b in node.binds)})
