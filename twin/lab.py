"""A lab: one fabric brought to life, and the sync Python API around it.

    lab = Lab.load("topologies/aipod.yml")   # validates; nothing created yet
    lab.up()                                  # containers, links, FRR, barrier
    lab.node("leaf1").vtysh("show bgp summary")
    lab.down()

Bring-up stages (as containerlab): render -> create -> wire -> converge. Any
failure or interruption before the lab is up removes everything it created
(unless keep=True). One twin at a time changes a lab: `up`, `down` and
`apply` hold the lab's lock. `context()` is the running lab every later stage
works on, and the one place that decides whether a lab is up.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

from twin import topology
from twin.config import render, userconf
from twin.config.userconf import UserConfigs
from twin.errors import AlreadyUp, LabStateError, Problem, TopologyError, TwinError
from twin.interop.clab_import import import_clab, is_clab
from twin.lifecycle import admission, barrier, bringup, cleanup, state
from twin.lifecycle.context import LabContext
from twin.lifecycle.status import LabStatus, lab_status
from twin.runtime import containerlab, dryrun, images, kernel
from twin.runtime.docker import DockerRuntime
from twin.runtime.exec import NodeExec
from twin.topology.model import Fabric

Say = Callable[[str], None]


class Lab:
    def __init__(self, name: str, fabric: Fabric | None = None, runtime: DockerRuntime | str | None = None,
                 configs: UserConfigs | None = None, notes: list[str] | None = None):
        """`runtime`: a runtime, or its name (docker, containerlab); default: the one that made the
        lab, else $TWIN_RUNTIME, else docker. `configs`: the user's FRR files (`up` boots them)."""
        self.dir: Path = state.labdir(name)      # the name is checked before anything is made of it
        self.name = name
        self.topology = fabric                   # what `up` brings up (Lab.load)
        self.configs = configs                   # the user's FRR files, over twin's rendering
        self.notes: list[str] = list(notes or [])   # what twin adapted or left out of what it was given
        self._runtime = runtime if isinstance(runtime, DockerRuntime) else None
        self._runtime_name = runtime if isinstance(runtime, str) else None
        self._recorded: tuple[int, Fabric | None] | None = None

    @property
    def fabric(self) -> Fabric | None:
        """The lab's intent: as recorded in its directory once it exists (changes made by any
        twin show here), else the topology it was loaded from."""
        try:
            mtime = (self.dir / state.FABRIC).stat().st_mtime_ns
        except OSError:
            return self.topology
        if self._recorded is None or self._recorded[0] != mtime:
            self._recorded = (mtime, state.load(self.dir)[1])
        return self._recorded[1]

    # --- construction ------------------------------------------------------
    @classmethod
    def load(cls, topology_file: str | Path, name: str | None = None, runtime: str | None = None,
             configs: str | Path | None = None, roles: dict[str, str] | None = None) -> "Lab":
        """Validate a topology file (TopologyError with every problem) into a Lab; `configs`: a
        directory of the user's FRR files for it (read and matched to its nodes here).

        A containerlab file (`*.clab.yml`) is imported on the way (`twin.interop.clab_import`):
        its nodes' bound FRR files are the user's configs, `roles` maps kinds twin cannot run to
        twin's, and what twin leaves out of it is in `notes`."""
        if name is not None:
            state.check_name(name)
        if not is_clab(topology_file):
            if roles:
                raise TopologyError([Problem("--role", "", "roles map the nodes of a containerlab or NVIDIA Air "
                                                           "file; a twin topology says each node's kind itself")])
            fabric = topology.load(topology_file, name=name)
            return cls(fabric.name, fabric, runtime, userconf.load(configs, fabric) if configs is not None else None)
        imported = import_clab(topology_file, roles, name)
        fabric = topology.load_document(imported.doc, imported.source, name)
        user = imported.configs.under(userconf.load(configs, fabric)) if configs is not None else imported.configs
        return cls(fabric.name, fabric, runtime, user if user.files else None, imported.notes)

    @classmethod
    def open(cls, name: str) -> "Lab":
        """An existing lab by name, from its directory (or just its containers)."""
        _, fabric = state.load(state.labdir(name))
        return cls(name, fabric)

    @property
    def runtime(self) -> DockerRuntime:
        if self._runtime is None:
            try:
                recorded = (state.load(self.dir)[0] or state.LabState(name="", topology="", image="")).runtime
            except TwinError:
                recorded = None   # a broken lab directory: `down` still removes it, with Docker
            name = self._runtime_name or (recorded if self.dir.is_dir() else None) or os.environ.get("TWIN_RUNTIME")
            self._runtime = containerlab.runtime(name)
        return self._runtime

    @property
    def state(self) -> state.LabState | None:
        return state.load(self.dir)[0]

    @property
    def backend(self) -> str:
        st = self.state
        return (st.backend if st else None) or "netns"

    def context(self) -> LabContext:
        """The running lab; TwinError if it is not up (no recorded intent or no containers)."""
        st, fabric = state.load(self.dir)
        containers = self.runtime.containers(self.name)
        if fabric is None or st is None or not containers:
            raise self._not_up()
        return LabContext(self.name, self.dir, fabric, st.backend or "netns", self.runtime, st.image,
                          st.shaping or "tc", _containers=containers)

    # --- lifecycle ---------------------------------------------------------
    def up(self, image: str | None = None, timeout: float | None = None, keep: bool = False,
           say: Say = lambda _: None, configs: "str | Path | UserConfigs | None" = None) -> dict[str, float]:
        """Bring the lab up and return once converged; returns stage timings (s).

        `configs`: a directory of the user's FRR files (or what `userconf` read of one): those
        nodes boot them instead of twin's rendering, once FRR itself accepted every one."""
        if self.topology is None:
            raise LabStateError(f"lab {self.name!r}: no topology loaded; Lab.load(file) first")
        if configs is not None:
            self.configs = configs if isinstance(configs, UserConfigs) else userconf.load(configs, self.topology)
        if self.configs is not None:
            problems = userconf.check(self.configs, self.topology)
            if problems:
                raise TopologyError(problems)
            if self.runtime.name != "docker":
                raise LabStateError(f"lab {self.name!r}: your FRR configs run on twin's own runtime only (the "
                                    f"{self.runtime.name} runtime boots twin's rendering); drop --runtime")
        with state.lock(self.name, "twin up"):
            watch = admission.CpuWatch()
            if self.runtime.containers(self.name):
                self._already_up()
            # host-wide kernel limits and CPU, before anything is created; timers scaled where needed
            est = admission.ensure(self.topology, watch.host(), timeout)
            if est.timers is not None:
                self.topology = self.topology.model_copy(update={"timers": est.timers})
                say(f"{est.timers_text()}: {est.figures()}")
            image = image or images.ensure(self.runtime.client, say=say)
            if self.configs is not None:
                say(f"checking {len(self.configs.files)} node configs of {self.configs.source} with FRR")
                dryrun.check(self.runtime.client, image, self.name, self.configs)
            with cleanup.on_failure(self.name, self.dir, self.runtime, keep, say):
                return self._bring_up(image, timeout, say)

    def _bring_up(self, image: str, timeout: float | None, say: Say) -> dict[str, float]:
        fabric = self.topology
        t0 = time.monotonic()
        st = state.LabState(name=self.name, topology=str(Path(fabric.source).resolve()), image=image,
                            created=state.now(), runtime=self.runtime.name, notes=self.notes)
        state.remove(self.dir)  # leftovers of a lab that is gone (no containers)
        state.save(self.dir, st, fabric)
        try:
            st.backend = kernel.probe_backend(self.name) if fabric.tenants else None
            limited = any(a.rate_limit for t in fabric.tenants.values() for a in t.attachments)
            st.shaping = kernel.probe_shaping(self.name) if limited else None
            backend, shaping = st.backend or "netns", st.shaping or "tc"
            say(f"rendering configs into {self.dir}")
            files, notes = userconf.merge(render.render_lab(fabric, backend, shaping), self.configs, fabric, backend)
            self.notes += notes
            st.notes = list(self.notes)
            if self.configs is not None:
                st.configs, st.user_files = str(Path(self.configs.source).resolve()), self.configs.owned()
            state.write_files(self.dir, files)
            say(f"starting {len(fabric.nodes)} containers, wiring {len(fabric.links)} links as they run")
            self.runtime.bring_up(fabric, image, self.dir, backend,
                                  configure=lambda n, ex, pid: bringup.configure_node(fabric, n, ex, pid, backend,
                                                                                      shaping),
                                  on_created=lambda: st.timings.__setitem__("containers", time.monotonic() - t0),
                                  say=say)
            st.timings["wired"] = time.monotonic() - t0
            st.status = "converging"
            state.save(self.dir, st)
            ctx = LabContext(self.name, self.dir, fabric, backend, self.runtime, image, shaping)
            limit = timeout if timeout is not None else barrier.deadline(ctx)
            mine = ctx.intent.generic
            say(f"waiting for {len(fabric.sessions())} BGP sessions and loopback routes on "
                f"{len(ctx.intent.nodes)} routers" + (f", {len(fabric.tenants)} tenants' EVPN routes"
                                                      if fabric.tenants else "")
                + (f", {sum(len(g.adjacencies) for g in mine.values())} adjacencies of {len(mine)} routers of "
                   "your configs" if mine else "") + f" (deadline {limit:.0f}s)")
            barrier.converge(ctx, limit, say=say, since=t0)
            st.timings["converged"] = time.monotonic() - t0
            st.status = "up"
            return st.timings
        except BaseException as e:
            st.status, st.error = "failed", (str(e).splitlines() or [type(e).__name__])[0]
            raise
        finally:
            if self.dir.is_dir():
                state.save(self.dir, st)

    def _already_up(self) -> None:
        """AlreadyUp if the running lab is this topology, up and converged; else what differs."""
        from twin.change.diff import FabricDiff

        try:
            st, recorded = state.load(self.dir)
        except TwinError as e:
            raise LabStateError(f"lab {self.name!r} has containers but {e}") from None
        if st is None or recorded is None:
            raise LabStateError(f"lab {self.name!r} has containers but no recorded state (a killed `up`?); "
                                f"`twin down {self.name}` removes them")
        differs = FabricDiff(recorded, self.topology).lines() + self._configs_differ(st)
        if differs:
            raise LabStateError(f"lab {self.name!r} is up from another topology or other configs ({st.topology}); "
                                f"it differs in {len(differs)} way(s), e.g. {differs[0]}; `twin apply {self.name} "
                                "FILE|DIR` changes it")
        problems = self.status().problems() if st.status == "up" else [f"its status is {st.status!r}"]
        if problems:
            raise LabStateError(f"lab {self.name!r} exists but is not healthy ({len(problems)} problem(s), e.g. "
                                f"{problems[0]}); `twin down {self.name}` and `twin up` make it again")
        raise AlreadyUp(f"lab {self.name!r} is already up and converged from this topology; "
                        f"`twin status {self.name}` shows it, `twin down {self.name}` removes it")

    def _configs_differ(self, st: state.LabState) -> list[str]:
        """How the user's files given now differ from those the running lab booted."""
        given = self.configs.files if self.configs is not None else {}
        out = [f"{n} runs your {', '.join(st.user_files[n])}, not twin's rendering" for n in st.user_files
               if n not in given]
        for n, files in given.items():
            if n not in st.user_files:
                out.append(f"{n} runs twin's rendering, not your files")
            elif userconf.FRR_CONF in files and files[userconf.FRR_CONF] != state.read_files(
                    self.dir, n, [userconf.FRR_CONF]).get(userconf.FRR_CONF):
                out.append(f"{n}: your frr.conf differs from the one it runs")
        return out

    def down(self) -> list[str]:
        """Remove exactly what this lab owns: its containers (their links die with them), a
        namespace a killed `up` left behind, and its directory."""
        with state.lock(self.name, "twin down"):
            return cleanup.remove_all(self.name, self.dir, self.runtime)

    # --- nodes -------------------------------------------------------------
    def _not_up(self) -> LabStateError:
        known = ", ".join(state.known_labs()) or "none"
        return LabStateError(f"no lab named {self.name!r} is up (labs here: {known}); `twin list` shows them")

    def node(self, name: str) -> NodeExec:
        containers = self.runtime.containers(self.name)
        if not containers:
            raise self._not_up()
        if name not in containers:
            raise TwinError(f"lab {self.name!r} has no node {name!r}; nodes: {', '.join(sorted(containers))}")
        return NodeExec(containers[name], f"{self.name}/{name}")

    def execs(self) -> dict[str, NodeExec]:
        return self.context().execs()

    def pids(self) -> dict[str, int]:
        return self.context().pids()

    # --- day 2 -------------------------------------------------------------
    def apply(self, change: "str | Path | Fabric", timeout: float | None = None, wait: bool = True,
              say: Say = lambda _: None):
        """Apply a change (edited topology file, directory of node configs, or a Fabric) to the
        running lab; returns twin.change.apply.Result. Refused changes touch nothing; failures roll back."""
        from twin.change import load_change
        from twin.change.apply import apply

        with state.lock(self.name, "twin apply"):
            ctx = self.context()
            return apply(ctx, load_change(ctx, change), timeout=timeout, wait=wait, say=say)

    def plan(self, change: "str | Path | Fabric"):
        from twin.change import load_change

        ctx = self.context()
        return load_change(ctx, change).plan(ctx)

    def missing(self) -> list[str]:
        """What is missing of the intended state now (one round, no waiting)."""
        return barrier.missing(self.context())

    def status(self) -> LabStatus:
        """Nodes, container state, BGP sessions up/expected, tenants with VNIs, VTEPs and EVPN
        routes, and what is missing of the intent."""
        return lab_status(self.name, self.dir, self.runtime)
