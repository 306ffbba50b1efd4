"""A running lab, resolved once: what every stage after bring-up works on.

`twin.Lab.context()` builds it (and is the one place that decides whether a
lab is up); change, verify, traffic and status take it and need nothing else:
the lab's intent (fabric and what every node must hold), its VRF backend and
directory, and per node its exec seam, container pid and namespaces.

    ctx = Lab.open("aipod").context()
    ctx.exec("leaf1").vtysh("show bgp summary")
    with ctx.ipr("dpu1", "red") as ipr: ...        # a tenant namespace on a VTEP
    with ctx.writing("twin apply"): ...           # what changes the lab holds its lock

Whatever changes a running lab (`twin.change.apply`, every fault, a rehearsal, the
proof, and any new writer such as an NVUE apply) does it inside `writing`: one twin
at a time changes a lab, a second is refused naming the first; readers never wait.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Protocol

from twin.base.errors import TwinError
from twin.config import dialect
from twin.config.backend import DEFAULT_BACKEND
from twin.config.dialect import NodePlane
from twin.config.overlay import Backend, Shaping
from twin.intent import Intent
from twin.lifecycle import locks, state
from twin.runtime import Netlink, NodeExec, NodeHandle, Runtime, namespace_path, node_netlink
from twin.topology.model import Fabric
from twin.topology.names import resolve_node


@dataclass
class LabContext:
    name: str
    dir: Path
    fabric: Fabric
    backend: Backend
    runtime: Runtime
    image: str = ""
    shaping: Shaping = "tc"  # how the lab enforces rate limits (probed at `up`)
    _containers: dict[str, NodeHandle] | None = field(default=None, repr=False)
    _pids: dict[str, int] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, name: str, runtime: Runtime) -> "LabContext | None":
        """The running lab `name` (None when it is not up: no recorded intent or no containers)."""
        d = state.labdir(name)
        st, fabric = state.load(d)
        containers = runtime.containers(name)
        if fabric is None or st is None or not containers:
            return None
        return cls(
            name,
            d,
            fabric,
            st.backend or DEFAULT_BACKEND,
            runtime,
            st.image,
            st.shaping or "tc",
            _containers=containers,
        )

    def writing(self, what: str) -> AbstractContextManager[None]:
        """Hold the lab's lock while `what` (the command, e.g. "twin fault link-down dpu1:p0")
        changes it; LabStateError at once naming the holder if another twin changes it now
        (re-entrant in this thread: a rehearsal's change runs under the rehearsal's hold)."""
        return locks.lock(self.name, what)

    def writing_node(self, node: str, what: str) -> AbstractContextManager[None]:
        """Hold node `node` while `what` changes it alone (an NVUE revision): other nodes' own changes
        run meanwhile; a lab-wide change (`writing`) excludes them and they it."""
        return locks.node_lock(self.name, node, what)

    @cached_property
    def intent(self) -> Intent:
        return Intent(
            self.fabric, state.running_files(self.dir, self.fabric), state.frr_hostnames(self.dir, self.fabric)
        )

    def with_fabric(self, fabric: Fabric) -> "LabContext":
        """The same running lab, judged against another intent (after a change)."""
        return replace(self, fabric=fabric, _containers=self._containers, _pids=dict(self._pids))

    # --- containers ------------------------------------------------------------------
    def containers(self) -> dict[str, NodeHandle]:
        """The lab's nodes that have a container, as the runtime listed them (`refresh` lists again)."""
        if self._containers is None:
            self._containers = self.runtime.containers(self.name)
        return self._containers

    def refresh(self) -> "LabContext":
        """Read the containers again (after nodes were started, stopped or added)."""
        self._containers, self._pids = None, {}
        return self

    def container(self, node: str) -> NodeHandle:
        c = self.containers().get(node)
        if c is None:
            node = self.node(node)  # a node the intent does not have is named as such
            c = self.containers().get(node)
        if c is None:
            raise TwinError(f"lab {self.name!r}: node {node} has no container; `twin status {self.name}` shows the lab")
        return c

    def node(self, node: str) -> str:
        """The lab's name of `node` as a user typed it (`PC1` is pc1: `names.match_node`), else an
        error naming the nodes it has (or the ones it could mean)."""
        return resolve_node(node, self.fabric.nodes, self.name)

    def exec(self, node: str) -> NodeExec:
        c = self.container(node)
        return c.exec(f"{self.name}/{c.node}", self._pids.get(c.node, 0))

    def execs(self) -> dict[str, NodeExec]:
        return {n: c.exec(f"{self.name}/{n}", self._pids.get(n, 0)) for n, c in self.containers().items()}

    def running(self) -> list[str]:
        """Nodes whose containers run now."""
        out = []
        for n, c in self.containers().items():
            if c.running():
                out.append(n)
        return out

    def planes(self) -> dict[str, NodePlane]:
        """The nodes whose own configuration makes their kernel plane (a dialect's: NVUE's applied
        startup.yaml, its directory's), as they run it now on the lab's intent: their kernel steps,
        bindings and VNIs. {} for a lab whose nodes all run twin's rendering. What a node started
        again, or an element put back, must get."""
        return dialect.planes(self.dir, self.fabric, self.backend, self.shaping)

    # --- namespaces -------------------------------------------------------------------
    def pid(self, node: str) -> int:
        if node not in self._pids:
            self._pids[node] = self.container(node).pid()
        return self._pids[node]

    def pids(self) -> dict[str, int]:
        return {n: self.pid(n) for n in self.containers()}

    def netns(self, node: str, ns: str = "") -> str:
        return namespace_path(self.pid(node), ns)

    def ipr(self, node: str, ns: str = "") -> AbstractContextManager[Netlink]:
        """A netlink handle in the node's namespace (or tenant namespace `ns` in it), closed on exit;
        what fails in the block is twin's error (NetlinkFailed with the errno, NodeGone)."""
        return node_netlink(self.pid(node), ns)


class MakesContext(Protocol):
    """What makes a LabContext of a running lab (a `twin.Lab`)."""

    def context(self) -> LabContext: ...


LabLike = LabContext | MakesContext  # a running lab, as a `twin.Lab` or its context


def context_of(target: LabLike) -> LabContext:
    """A LabContext from a LabContext or from anything that makes one (a `twin.Lab`)."""
    return target if isinstance(target, LabContext) else target.context()
