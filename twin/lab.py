"""A lab: one fabric brought to life, and the sync Python API around it.

    lab = Lab.load("topologies/aipod.yml")   # validates; nothing created yet
    lab.up()                                  # containers, links, FRR, barrier
    lab.node("leaf1").vtysh("show bgp summary")
    lab.down()

`up` runs the stages of `twin.lifecycle.pipeline` in order (admit, choose, check configs,
record, render, create, converge, services); any failure or interruption before the lab is
up removes everything it created (unless keep=True). The configuration dialects twin speaks
(NVUE) are registered by importing this module (`twin.dialects`). One twin at a time changes a
lab: `up`, `down`, `apply` (and on the context: rehearsals, faults, the proof) hold the lab's lock
(`writing`). `context()`
is the running lab every later stage works on, and the one place that decides whether a lab is up.
"""

from __future__ import annotations

import time
import warnings
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from twin import dialects, topology  # noqa: F401  (dialects: the ones twin speaks register themselves)
from twin.base.errors import AlreadyUp, LabStateError, Problem, TopologyError, TwinError
from twin.base.wait import Bound, bounded, named
from twin.config import dialect, userconf
from twin.config.backend import DEFAULT_BACKEND, NAMES, Backend, wanted
from twin.config.userconf import UserConfigs
from twin.interop import doors
from twin.lifecycle import barrier, cleanup, locks, pipeline, state, vrfbackend
from twin.lifecycle.context import LabContext
from twin.lifecycle.status import LabStatus, lab_status
from twin.lint import Report as LintReport
from twin.lint import gate
from twin.runtime import NodeExec, Runtime
from twin.topology import confine
from twin.topology.model import Confined, Fabric
from twin.topology.names import resolve_node

if TYPE_CHECKING:
    from twin.change import Result
    from twin.change.plan import Plan

Say = Callable[[str], None]


class Lab:
    def __init__(
        self,
        name: str,
        fabric: Fabric | None = None,
        runtime: Runtime | str | None = None,
        configs: UserConfigs | None = None,
        notes: list[str] | None = None,
    ):
        """`runtime`: a runtime, or its name (docker, containerlab); default: the one that made the
        lab, else $TWIN_RUNTIME, else docker. `configs`: the user's FRR files (`up` boots them)."""
        self.dir: Path = state.labdir(name)  # the name is checked before anything is made of it
        self.name = name
        self.loaded = fabric  # the Fabric loaded from a file (Lab.load): what `up` brings up
        self.configs = configs  # the user's FRR files, over twin's rendering
        self.notes: list[str] = list(notes or [])  # what twin adapted or left out of what it was given
        self._runtime: Runtime | None = None if runtime is None or isinstance(runtime, str) else runtime
        self._runtime_name = runtime if isinstance(runtime, str) else None
        self._recorded: tuple[int, Fabric | None] | None = None
        self.linted: LintReport | None = None  # `twin lint` of its configs, at `up`

    @property
    def topology(self) -> Fabric | None:
        """Deprecated: `loaded` (what `up` brings up); `fabric` is the lab's intent now."""
        warnings.warn("Lab.topology is Lab.loaded now", DeprecationWarning, stacklevel=2)
        return self.loaded

    @property
    def fabric(self) -> Fabric | None:
        """The lab's intent: as recorded in its directory once it exists (changes made by any
        twin show here), else the topology it was loaded from (`loaded`)."""
        try:
            mtime = (self.dir / state.FABRIC).stat().st_mtime_ns
        except OSError:
            return self.loaded
        if self._recorded is None or self._recorded[0] != mtime:
            self._recorded = (mtime, state.load(self.dir)[1])
        return self._recorded[1]

    # --- construction ------------------------------------------------------
    @classmethod
    def load(
        cls,
        topology_file: str | Path,
        name: str | None = None,
        runtime: str | None = None,
        configs: str | Path | None = None,
        roles: dict[str, str] | None = None,
        confined: Confined | None = None,
    ) -> "Lab":
        """Validate a topology file (or twin's own of that name: `aipod`) into a Lab (TopologyError with
        every problem); `configs`: a directory of the user's FRR files for it (read, matched to its nodes).
        A containerlab file (`*.clab.yml`) or an NVIDIA Air file (`*.json`, `*.dot`) is imported on the way
        (`twin.interop.doors`): its bound FRR files are the user's configs, `roles` maps nodes to kinds.
        `confined`: a lab from a source not trusted with this host (`twin.topology.confine`; no root: the
        topology's directory)."""
        if name is not None:
            state.check_name(name)
        loaded = doors.load(topology_file, name, roles, configs)
        if confined is not None and not confined.root:  # its files: the topology's own directory
            confined = confined.model_copy(update={"root": str(Path(loaded.fabric.source).resolve().parent)})
        fabric = confine(loaded.fabric, confined) if confined is not None else loaded.fabric
        return cls(fabric.name, fabric, runtime, loaded.configs, loaded.notes)

    @classmethod
    def open(cls, name: str) -> "Lab":
        """An existing lab by name, from its directory (or just its containers)."""
        return cls(name, state.load(state.labdir(name))[1])

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            self._runtime = state.runtime_of(self.dir, self._runtime_name)
        return self._runtime

    @property
    def state(self) -> state.LabState | None:
        return state.load(self.dir)[0]

    @property
    def backend(self) -> Backend:
        return (st.backend if (st := self.state) else None) or DEFAULT_BACKEND

    def writing(self, what: str) -> AbstractContextManager[None]:
        """Hold the lab's lock while `what` changes it (`LabContext.writing`: LabStateError at once if held)."""
        return locks.lock(self.name, what)

    def context(self) -> LabContext:
        """The running lab; TwinError if it is not up (no recorded intent or no containers)."""
        if (ctx := LabContext.open(self.name, self.runtime)) is None:
            raise self._not_up()
        return ctx

    # --- lifecycle ---------------------------------------------------------
    def up(
        self,
        image: str | None = None,
        timeout: float | None = None,
        keep: bool = False,
        say: Say = lambda _: None,
        configs: "str | Path | UserConfigs | None" = None,
        vrf_backend: str | None = None,
        wait: bool = True,
        strict_exec: bool = False,
        images: str | None = None,
        strict: bool = False,
        warn: Callable[[LintReport], None] = lambda _: None,
    ) -> dict[str, float]:
        """Bring the lab up and return once converged; returns stage timings (s).

        `configs`: a directory of the user's FRR files (or what `userconf` read of one): those
        nodes boot them instead of twin's rendering, once FRR itself accepted every one.
        `vrf_backend`: "netns" or "device", over the topology's (default: netns).
        `wait=False` returns once the nodes run, are wired and FRR started (as `clab deploy`):
        for labs a user's scripts configure; `wait()` is the convergence barrier then. A node's
        `exec` command that fails is a note (`notes`) and the lab goes on, as in containerlab;
        `strict_exec` makes it end the bring-up. `images`: auto, own or twin (`twin.lifecycle.imagechoice`).
        The configs are linted against the topology's intent first (`warn` gets it; `strict`: refused).
        `timeout`: the whole bring-up's deadline from this call, held by every stage (StageTimeout says
        where it passed); default: convergence within 60 s + 1 s per FRR node once the nodes are wired."""
        start, loaded = time.monotonic(), self.to_bring_up()
        if configs is not None:
            self.configs = configs if isinstance(configs, UserConfigs) else userconf.load(configs, loaded)
        if self.configs is not None:
            _refuse(userconf.check(self.configs, loaded) or dialect.problems(self.configs, loaded))
            self.linted = gate(userconf.lint(self.configs, loaded), strict, warn)
            if self.runtime.name != "docker":
                raise LabStateError(
                    f"lab {self.name!r}: your FRR configs run on twin's own runtime only (the "
                    f"{self.runtime.name} runtime boots twin's rendering); drop --runtime"
                )
        with self.writing("twin up"), bounded(Bound.command(timeout, start)), named():
            b = pipeline.BringUp(
                self.name,
                self.dir,
                loaded,
                self.runtime,
                self.configs,
                pipeline.Asked(image, images, vrf_backend, timeout, wait, strict_exec, keep),
                say,
                start,
                self.notes,
                lint=[f.as_dict() for f in self.linted.findings] if self.linted else [],
            )
            if self.runtime.containers(self.name):
                self.services(say)  # the lab's services there again (NVUE's), if one stopped
                self._already_up(vrf_backend)
            try:
                return pipeline.run(b)  # its stages, in order (`twin.lifecycle.pipeline.STAGES`)
            finally:
                self.loaded = b.fabric  # its timers as scaled, its management network as resolved

    def services(self, say: Say = lambda _: None) -> None:
        """The lab's services running, for the dialects its nodes run (NVUE's: the REST API and `nv` in
        the nodes, `twin.nvue.nvued`); none for a lab whose nodes all run twin's rendering."""
        st = self.state
        if st is not None:
            pipeline.start_services(self.dir, self.name, st.user_files, say)

    def nvue_service(self, say: Say = lambda _: None) -> None:
        """Deprecated: `services` (every dialect's, NVUE's among them)."""
        warnings.warn("Lab.nvue_service is Lab.services now", DeprecationWarning, stacklevel=2)
        self.services(say)

    def vrf_backend(self, override: str | None = None) -> vrfbackend.Choice:
        """The VRF backend `up` would use for this lab on this host, and why; TopologyError (naming
        CONFIG_NET_VRF) when it, or the user's own configs, need VRF devices this kernel lacks."""
        return pipeline.vrf_choice(self.to_bring_up(), self.configs, override)

    def to_bring_up(self) -> Fabric:
        """What `up` brings up; LabStateError if no topology was loaded."""
        if self.loaded is None:
            raise LabStateError(f"lab {self.name!r}: no topology loaded; Lab.load(file) first")
        return self.loaded

    def wait(self, timeout: float | None = None, say: Say = lambda _: None) -> float:
        """The convergence barrier of a running lab (after `up(wait=False)` and the user's own scripts):
        returns the seconds it took; ConvergenceTimeout names what is missing. The lab is `up` then.
        A reader: no lock, so it waits beside the changes meanwhile (NVUE revisions) and is never refused."""
        t0 = time.monotonic()
        pipeline.converged(self.context(), timeout, say, t0, t0)
        took = time.monotonic() - t0
        state.update(self.dir, lambda st: state.converged(st, took))
        return took

    def _already_up(self, vrf_backend: str | None = None) -> None:
        """AlreadyUp if the running lab is this topology (on the VRF backend asked), up and converged;
        else what differs."""
        from twin.change.diff import FabricDiff

        try:
            st, recorded = state.load(self.dir)
        except TwinError as e:
            raise LabStateError(f"lab {self.name!r} has containers but {e}") from None
        if st is None or recorded is None:
            raise LabStateError(
                f"lab {self.name!r} has containers but no recorded state (a killed `up`?); "
                f"`twin down {self.name}` removes them"
            )
        differs = FabricDiff(recorded, topology.mgmt.carry(recorded, self.to_bring_up())).lines()
        differs += state.configs_differ(self.dir, st, self.configs)
        want = wanted(self.to_bring_up(), vrf_backend)[0]
        differs += (
            [f"it runs the {NAMES[st.backend]} VRF backend, not {NAMES[want]}"]
            if (st.backend and st.backend != want)
            else []
        )
        if differs:
            raise LabStateError(
                f"lab {self.name!r} is up from another topology or other configs ({st.topology}); "
                f"it differs in {len(differs)} way(s), e.g. {differs[0]}; `twin apply {self.name} "
                "FILE|DIR` changes it"
            )
        problems = (
            self.status().problems()
            if st.status == "up"
            else [
                f"its status is {st.status!r}"
                + (f"; `twin wait {self.name}` waits for its convergence" if st.status == "deployed" else "")
            ]
        )
        if problems:
            raise LabStateError(
                f"lab {self.name!r} exists but is not healthy ({len(problems)} problem(s), e.g. "
                f"{problems[0]}); `twin down {self.name}` and `twin up` make it again"
            )
        raise AlreadyUp(
            f"lab {self.name!r} is already up and converged from this topology; "
            f"`twin status {self.name}` shows it, `twin down {self.name}` removes it"
        )

    def down(self) -> list[str]:
        """Remove exactly what this lab owns: its containers (their links die with them), the
        namespaces a killed `up` or a stopped node left behind, and its directory."""
        with self.writing("twin down"):
            removed = cleanup.remove_all(self.name, self.dir, self._remover())
            locks.forget(self.name)  # its lock files too, as this hold ends
            return removed

    def _remover(self) -> Runtime:
        """The runtime that takes the lab down: the one that made it, even where that tool (the
        containerlab CLI) is gone now: everything the lab made carries its label or its name."""
        if self._runtime is not None:
            return self._runtime
        return state.runtime_of(self.dir, self._runtime_name, removing=True)

    # --- nodes -------------------------------------------------------------
    def _not_up(self) -> LabStateError:
        known = ", ".join(state.known_labs()) or "none"
        return LabStateError(f"no lab named {self.name!r} is up (labs here: {known}); `twin list` shows them")

    def node(self, name: str) -> NodeExec:
        containers = self.runtime.containers(self.name)
        if not containers:
            raise self._not_up()
        name = resolve_node(name, sorted(containers), self.name)  # `PC1` is pc1
        return containers[name].exec(f"{self.name}/{name}")

    def execs(self) -> dict[str, NodeExec]:
        return self.context().execs()

    def pids(self) -> dict[str, int]:
        return self.context().pids()

    # --- day 2 -------------------------------------------------------------
    def apply(
        self,
        change: "str | Path | Fabric",
        timeout: float | None = None,
        wait: bool = True,
        say: Say = lambda _: None,
        strict: bool = False,
        warn: Callable[[LintReport], None] = lambda _: None,
    ) -> Result:
        """Apply a change (edited topology file, directory of node configs, a Fabric, or any spec
        `twin.change.load_change` reads: nv:NODE:FILE, fault:...) to the running lab; returns
        twin.change.Result. Refused changes touch nothing; failures roll back. A directory of configs is
        linted against the lab's intent first (`warn` gets it; `strict`: refused)."""
        from twin.change import load_change

        with self.writing("twin apply"):
            ctx = self.context()
            result = load_change(ctx, change, strict, warn).apply(ctx, say=say, timeout=timeout, wait=wait)
            self.services(say)
            return result

    def plan(self, change: "str | Path | Fabric") -> Plan:
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


def _refuse(problems: list[Problem]) -> None:
    if problems:
        raise TopologyError(problems)
