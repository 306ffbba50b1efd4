"""A lab: one fabric brought to life, and the sync Python API around it.

    lab = Lab.load("topologies/aipod.yml")   # validates; nothing created yet
    lab.up()                                  # containers, links, FRR, barrier
    lab.node("leaf1").vtysh("show bgp summary")
    lab.down()

Bring-up stages (as containerlab): render -> create -> wire -> converge. Any
failure before the lab is up removes everything it created (unless keep=True).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from twin import bringup, converge, hostlimits, images, render, state, timeouts, topology
from twin.errors import AlreadyUp, LabStateError, TwinError
from twin.runtime.docker import DockerRuntime
from twin.runtime.exec import NodeExec
from twin.runtime import kernel
from twin.topology.model import Fabric

Say = Callable[[str], None]


class Lab:
    def __init__(self, name: str, fabric: Fabric | None = None, runtime: DockerRuntime | None = None):
        self.name = name
        self.fabric = fabric
        self._runtime = runtime
        self.dir: Path = state.labdir(name)

    # --- construction ------------------------------------------------------
    @classmethod
    def load(cls, topology_file: str | Path, name: str | None = None) -> "Lab":
        """Validate a topology file (TopologyError with every problem) into a Lab."""
        fabric = topology.load(topology_file, name=name)
        return cls(fabric.name, fabric)

    @classmethod
    def open(cls, name: str) -> "Lab":
        """An existing lab by name, from its directory (or just its containers)."""
        _, fabric = state.load(state.labdir(name))
        return cls(name, fabric)

    @property
    def runtime(self) -> DockerRuntime:
        if self._runtime is None:
            self._runtime = DockerRuntime()
        return self._runtime

    @property
    def state(self) -> state.LabState | None:
        return state.load(self.dir)[0]

    def _need_fabric(self) -> Fabric:
        if self.fabric is None:
            raise LabStateError(f"lab {self.name!r} has no recorded topology in {self.dir}; "
                                f"`twin down {self.name}` removes what is left of it")
        return self.fabric

    # --- lifecycle ---------------------------------------------------------
    def up(self, image: str | None = None, timeout: float | None = None, keep: bool = False,
           say: Say = lambda _: None) -> dict[str, float]:
        """Bring the lab up and return once converged; returns stage timings (s)."""
        fabric = self._need_fabric()
        existing = self.runtime.containers(self.name)
        if existing:
            raise AlreadyUp(f"lab {self.name!r} is already up ({len(existing)} containers); "
                                f"`twin status {self.name}` shows it, `twin down {self.name}` removes it")
        hostlimits.ensure(fabric)  # issue 19: host-wide kernel limits, checked before anything is created
        image = image or images.ensure(self.runtime.client, say=say)
        t0 = time.monotonic()
        st = state.LabState(name=self.name, topology=str(Path(fabric.source).resolve()), image=image,
                             created=state.now())
        state.remove(self.dir)  # leftovers of a lab that is gone (no containers)
        state.save(self.dir, st, fabric)
        try:
            backend = kernel.probe_backend(self.name) if fabric.tenants else "netns"
            st.backend = backend if fabric.tenants else None
            say(f"rendering configs into {self.dir}")
            render.write_lab(fabric, self.dir, backend)
            say(f"starting {len(fabric.nodes)} containers, wiring {len(fabric.links)} links as they run")
            pids = bringup.create_wire_configure(
                fabric, self.runtime, image, self.dir, backend,
                on_created=lambda: st.timings.__setitem__("containers", time.monotonic() - t0))
            st.timings["wired"] = time.monotonic() - t0
            execs = self.execs()
            st.status = "converging"
            state.save(self.dir, st)
            routers = fabric.routers()
            limit = timeout if timeout is not None else timeouts.converge(len(routers))
            say(f"waiting for {len(fabric.sessions())} BGP sessions and loopback routes on "
                f"{len(routers)} routers" + (f", {len(fabric.tenants)} tenants' EVPN routes" if fabric.tenants else "")
                + f" (deadline {limit:.0f}s)")
            converge.Barrier(fabric, execs, pids, backend, since=t0).wait(limit, say=say)  # since: issue 19
            st.timings["converged"] = time.monotonic() - t0
            st.status = "up"
            state.save(self.dir, st)
            return st.timings
        except BaseException as e:
            st.status, st.error = "failed", str(e).splitlines()[0] if str(e) else type(e).__name__
            state.save(self.dir, st)
            if not keep:
                say("bring-up failed: removing what was created")
                self.down()
            raise

    def down(self) -> list[str]:
        """Remove exactly what this lab owns: its containers (and their links) and its directory."""
        removed = self.runtime.remove(self.name)
        state.remove(self.dir)
        return removed

    # --- nodes -------------------------------------------------------------
    def node(self, name: str) -> NodeExec:
        containers = self.runtime.containers(self.name)
        if name not in containers:
            known = ", ".join(sorted(containers)) or "none: the lab is not up"
            raise TwinError(f"lab {self.name!r} has no node {name!r}; nodes: {known}")
        return NodeExec(containers[name], f"{self.name}/{name}")

    def execs(self) -> dict[str, NodeExec]:
        return {n: NodeExec(c, f"{self.name}/{n}") for n, c in self.runtime.containers(self.name).items()}

    def pids(self) -> dict[str, int]:
        return {n: self.runtime.pid(c) for n, c in self.runtime.containers(self.name).items()}

    @property
    def backend(self) -> str:
        st = self.state
        return (st.backend if st else None) or "netns"

    def apply(self, change: "str | Path | Fabric", timeout: float | None = None, wait: bool = True,
              say: Say = lambda _: None):
        """Apply a change (edited topology file, directory of node configs, or a Fabric) to the
        running lab; returns twin.apply.Result. Refused changes touch nothing; failures roll back."""
        from twin import apply as A

        self._need_fabric()
        c = A.Change.from_fabric(change) if isinstance(change, Fabric) else A.load_change(self, change)
        return A.apply(self, c, timeout=timeout, wait=wait, say=say)

    def plan(self, change: "str | Path | Fabric"):
        from twin import apply as A

        c = A.Change.from_fabric(change) if isinstance(change, Fabric) else A.load_change(self, change)
        return A.plan(self, c)

    def missing(self) -> list[str]:
        """What is missing of the intended state now (one round, no waiting)."""
        return converge.check_now(self._need_fabric(), self.execs(), self.pids(), self.backend)

    def status(self) -> dict[str, Any]:
        """Nodes, container state, BGP sessions up/expected, tenants with VNIs, VTEPs and EVPN routes."""
        from twin.status import lab_status

        return lab_status(self)
