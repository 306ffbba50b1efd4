"""NVUE's `system hostname` as the node runs it. On Cumulus Linux it is the switch's Linux host name and
FRR's `hostname`; twin does what a container allows, as one step of the node's plane (a plane extra `KEY`,
run in the node by its command, shown in interfaces.sh), beside the files that name it:

- the node's UTS host name (`hostname NAME`: its container has a UTS namespace of its own and
  CAP_SYS_ADMIN, as every router kind, `twin.kinds.base`);
- /etc/hostname, and the name in /etc/hosts (`127.0.1.1 NAME`: sudo looks it up), as the node's image
  writes it when FRR starts (`images/node/twin-node`);
- frr.conf's `hostname NAME` (`twin.nvue.frr`) and lldpd's system name (`twin.nvue.lldp`, sent at once).

FRR's daemons take the system's host name when they start and keep it: their running config shows it,
bgpd sends it in its BGP hostname capability (at a session's OPEN); FRR 10.3's vtysh keeps frr.conf's
`hostname` line to itself. At `twin up` the step runs before FRR starts, so FRR runs NAME from the
start; on day 2 FRR keeps the name it started with until it starts again, as FRR does anywhere (apply
does not wait for it: `twin.runtime.frr.HOSTNAME_LINE`), and `twin verify` takes either name of a peer
(`twin.intent.NodeIntent.names`). A node NVUE gives no host name, or its own, gets no step; a day-2
change that takes the name away gives the node its own again (`undo`).
"""

from __future__ import annotations

from typing import Any

from twin.config.steps import Step
from twin.nvue.tree import Path, get

KEY = ("hostname",)  # its plane extra
MAX = 64  # the kernel's HOST_NAME_MAX: a longer name (RFC 1123 allows 253) cannot be the node's
PATH: Path = ("system", "hostname")


def of(tree: dict, node: str) -> str:
    """The host name node `node` runs by its NVUE tree: `system hostname`, else the node's name."""
    name = get(tree, PATH)
    return name if isinstance(name, str) and name else node


def step(name: str, node: str) -> Step:
    """The node's host name set to `name` (`node`: its own, what `undo` puts back)."""
    return Step("hostname", name, "", {"node": node})


def attach(plane: Any, tree: dict) -> None:
    """A node's plane (`twin.nvue.plane.Plane`) with its host name step, where NVUE gives it another
    name than its own: last, kept as an extra (day 2: `undo` when it goes)."""
    name = of(tree, plane.node)
    if name != plane.node:
        s = plane.extras[KEY] = step(name, plane.node)
        plane.steps.append(s)


def undo(s: Step) -> Step:
    """What takes a host name step away: the node's own name again."""
    return step(s.args["node"], s.args["node"])


def problems(tree: dict) -> list[tuple[Path, str]]:
    """A host name the kernel cannot take (NVUE's type has checked the rest)."""
    name = get(tree, PATH)
    if isinstance(name, str) and len(name) > MAX:
        return [(PATH, f"a host name of {len(name)} characters: the node's (the kernel's) holds {MAX} at most")]
    return []
