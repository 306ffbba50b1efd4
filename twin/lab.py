"""A lab: one fabric brought to life, and the sync Python API around it.

    lab = Lab.load("topologies/aipod.yml")   # validates; nothing created yet
    lab.up()                                  # containers, links, FRR, barrier
    lab.node("leaf1").vtysh("show bgp summary")
    lab.down()

Bring-up stages (as containerlab): render -> create -> wire -> converge. Any
failure or interruption before the lab is up removes everything it created
(unless keep=True). One twin at a time changes a lab: `up`, `down`, `apply` (and on
the context: rehearsals, faults, the proof) hold the lab's lock (`writing`). `context()`
is the running lab every later stage works on, and the one place that decides whether a lab is up.
"""
from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Callable

from twin import nvue, topology
from twin.base.errors import AlreadyUp, LabStateError, Problem, TopologyError, TwinError
from twin.base.wait import Bound, bounded, current, named
from twin.config import render, userconf
from twin.config.backend import DEFAULT_BACKEND, NAMES, Backend, wanted
from twin.config.services import DEFAULT_SHAPING
from twin.config.userconf import UserConfigs
from twin.interop import doors
from twin.lifecycle import admission, barrier, bringup, cleanup, imagechoice, locks, mgmtnet, state, vrfbackend
from twin.lifecycle.context import LabContext
from twin.lifecycle.status import LabStatus, lab_status
from twin.lint import Report as LintReport
from twin.lint import gate
from twin.nvue import nvued
from twin.nvue import service as nvue_service
from twin.runtime import kernel
from twin.runtime.base import Runtime
from twin.runtime.exec import NodeExec
from twin.topology import samples
from twin.topology.model import Fabric
from twin.topology.names import resolve_node

Say = Callable[[str], None]


class Lab:
    def __init__(self, name: str, fabric: Fabric | None = None, runtime: Runtime | str | None = None,
                 configs: UserConfigs | None = None, notes: list[str] | None = None):
        """`runtime`: a runtime, or its name (docker, containerlab); default: the one that made the
        lab, else $TWIN_RUNTIME, else docker. `configs`: the user's FRR files (`up` boots them)."""
        self.dir: Path = state.labdir(name)      # the name is checked before anything is made of it
        self.name = name
        self.loaded = fabric                     # the Fabric loaded from a file (Lab.load): what `up` brings up
        self.configs = configs                   # the user's FRR files, over twin's rendering
        self.notes: list[str] = list(notes or [])   # what twin adapted or left out of what it was given
        self._runtime: Runtime | None = None if runtime is None or isinstance(runtime, str) else runtime
        self._runtime_name = runtime if isinstance(runtime, str) else None
        self._recorded: tuple[int, Fabric | None] | None = None
        self.linted: LintReport | None = None    # `twin lint` of its configs, at `up`

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
    def load(cls, topology_file: str | Path, name: str | None = None, runtime: str | None = None,
             configs: str | Path | None = None, roles: dict[str, str] | None = None) -> "Lab":
        """Validate a topology file (or twin's own of that name: `aipod`) into a Lab (TopologyError with
        every problem); `configs`: a directory of the user's FRR files for it (read, matched to its nodes).
        A containerlab file (`*.clab.yml`) or an NVIDIA Air file (`*.json`, `*.dot`) is imported on the way
        (`twin.interop.doors`): its bound FRR files are the user's configs, `roles` maps nodes to kinds."""
        if name is not None:
            state.check_name(name)
        topology_file = samples.resolve(topology_file)
        imported = doors.import_other(topology_file, roles, name)
        if imported is None:
            if roles:
                raise TopologyError([Problem("--role", "", "roles map the nodes of a containerlab or NVIDIA Air "
                                                           "file; a twin topology says each node's kind itself")])
            fabric = topology.load(topology_file, name=name)
            user = userconf.load(configs, fabric) if configs is not None else None
            _refuse(nvue.check_files(user, fabric))
            return cls(fabric.name, fabric, runtime, user)
        fabric = topology.load_document(imported.doc, imported.source, name, imported.lines)
        user = imported.configs.under(userconf.load(configs, fabric)) if configs is not None else imported.configs
        _refuse(nvue.check_files(user, fabric))
        return cls(fabric.name, fabric, runtime, user if user.files else None, imported.notes)

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

    def writing(self, what: str):
        """Hold the lab's lock while `what` changes it (`LabContext.writing`: LabStateError at once if held)."""
        return locks.lock(self.name, what)

    def context(self) -> LabContext:
        """The running lab; TwinError if it is not up (no recorded intent or no containers)."""
        if (ctx := LabContext.open(self.name, self.runtime)) is None:
            raise self._not_up()
        return ctx

    # --- lifecycle ---------------------------------------------------------
    def up(self, image: str | None = None, timeout: float | None = None, keep: bool = False,
           say: Say = lambda _: None, configs: "str | Path | UserConfigs | None" = None,
           vrf_backend: str | None = None, wait: bool = True, strict_exec: bool = False, images: str | None = None,
           strict: bool = False, warn: Callable[[LintReport], None] = lambda _: None) -> dict[str, float]:
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
        start = time.monotonic()
        if self.loaded is None:
            raise LabStateError(f"lab {self.name!r}: no topology loaded; Lab.load(file) first")
        if configs is not None:
            self.configs = configs if isinstance(configs, UserConfigs) else userconf.load(configs, self.loaded)
        if self.configs is not None:
            _refuse(userconf.check(self.configs, self.loaded) or nvue.check_files(self.configs, self.loaded))
            self.linted = gate(userconf.lint(self.configs, self.loaded), strict, warn)
            if self.runtime.name != "docker":
                raise LabStateError(f"lab {self.name!r}: your FRR configs run on twin's own runtime only (the "
                                    f"{self.runtime.name} runtime boots twin's rendering); drop --runtime")
        with self.writing("twin up"), bounded(Bound.command(timeout, start)), named():
            watch = admission.CpuWatch()
            if self.runtime.containers(self.name):
                self.nvue_service(say)      # the lab's NVUE service there again, if it stopped
                self._already_up(vrf_backend)
            # host-wide kernel limits and CPU, before anything is created; timers scaled where needed
            est = admission.ensure(self.loaded, watch.host(), timeout, whole=timeout is not None)
            if est.timers is not None:
                self.loaded = self.loaded.model_copy(update={"timers": est.timers})
                say(f"{est.timers_text()}: {est.figures()}")
            choice = self.vrf_backend(vrf_backend)   # refused here on a kernel that lacks what it needs
            own = imagechoice.resolve(self.loaded, images, self.runtime.image_facts)   # --images own: refused here
            self.notes += [w for w in [*choice.warnings, *own.notes] if w not in self.notes]   # with the import's notes
            image = image or self.runtime.node_image(say=say)
            if self.configs is not None:
                say(f"checking {len(self.configs.files)} node configs of {self.configs.source} with FRR")
                self.runtime.check_configs(image, self.name, nvue.frr_view(self.configs, self.loaded))
            with cleanup.on_failure(self.name, self.dir, self.runtime, keep, say):
                timings = self._bring_up(image, timeout, say, choice.backend, wait,
                                         bringup.ExecLog(self.name, strict_exec), own, start)
                self.nvue_service(say)
                return timings

    def nvue_service(self, say: Say = lambda _: None) -> dict | None:
        """The lab's NVUE service running, when its nodes run NVUE (`twin.nvue.nvued`: the REST API and
        `nv` in the nodes); its record (where it listens), or None for a lab without NVUE."""
        st = self.state
        if st is None or not any(nvue.STARTUP in files for files in st.user_files.values()):
            return None
        if nvue_service.record(self.dir) is None:
            say("starting the NVUE service (REST API, nv)")
        return nvue_service.start(self.dir, self.name, nvued.command(self.name))

    def vrf_backend(self, override: str | None = None) -> vrfbackend.Choice:
        """The VRF backend `up` would use for this lab on this host, and why; TopologyError (naming
        CONFIG_NET_VRF) when it, or the user's own configs, need VRF devices this kernel lacks."""
        if self.loaded is None:
            raise LabStateError(f"lab {self.name!r}: no topology loaded; Lab.load(file) first")
        files = self.configs.files if self.configs is not None else {}
        return vrfbackend.choose(self.loaded, override, files,
                                 {n: self.configs.path(n, userconf.FRR_CONF) for n in files})

    def _bring_up(self, image: str, timeout: float | None, say: Say, backend: Backend, wait: bool,
                  execs: bringup.ExecLog, own: imagechoice.Choice, start: float) -> dict[str, float]:
        fabric = self.loaded = mgmtnet.resolve(self.loaded, self.runtime, set(own.own))   # its management network
        t0 = time.monotonic()
        st = state.LabState(name=self.name, topology=str(Path(fabric.source).resolve()), image=image,
                            created=state.now(), runtime=self.runtime.name, notes=self.notes, images=own.own)
        if self.dir.is_dir():
            nvue_service.stop(self.dir)   # leftovers of a lab that is gone (no containers)
        state.remove(self.dir)
        state.save(self.dir, st, fabric)
        try:
            password, st.backend = mgmtnet.password(self.dir, fabric, say), backend   # user cumulus's (ssh, NVUE)
            limited = any(a.rate_limit for t in fabric.tenants.values() for a in t.attachments)
            st.shaping = kernel.probe_shaping(self.name) if limited else None
            shaping = st.shaping or DEFAULT_SHAPING
            say(f"rendering configs into {self.dir}")
            files, notes = userconf.merge(render.render_lab(fabric, backend, shaping), self.configs, fabric, backend)
            nfs = nvue.read_configs(self.configs) | (blank := nvue.blank(fabric, self.configs))   # nvue: blank
            st.layout, st.nvue_bonds = nvue_service.kernel_plane(self.name, backend, say) if nfs else (None, None)
            nv, nv_notes = nvue.build(nfs, fabric, backend, shaping, st.layout or nvue.PER_VNI, bool(st.nvue_bonds))
            files.update({n: x.files for n, x in nv.items()})
            layouts = {x.plane.layout for node, x in nv.items() if x.plane.fabric.tenants_on(node)}
            self.notes += notes + nv_notes + ([f"NVUE's kernel plane on {', '.join(nv)}: {', '.join(sorted(layouts))} "
                                               "layout (interfaces.sh says which; docs/nvue.md)"]
                                              if layouts else [])
            st.notes = list(self.notes)
            if self.configs is not None:
                st.configs, st.user_files = str(Path(self.configs.source).resolve()), self.configs.owned()
                st.lint = [f.as_dict() for f in self.linted.findings] if self.linted else []
            st.user_files |= {n: [nvue.STARTUP] for n in blank}     # a blank node's NVUE is its automation's
            state.write_files(self.dir, files)
            say(f"starting {len(fabric.nodes)} containers, wiring {len(fabric.links)} links as they run")
            try:
                pids = self.runtime.bring_up(own.fabric(fabric), image, self.dir, backend,
                                             configure=lambda n, ex, pid: bringup.configure_node(
                                                 fabric, n, ex, pid, backend, shaping, nv[n].plane if n in nv else None,
                                                 execs, starts_itself=n in own.starts_itself, password=password),
                                             on_created=lambda: st.timings.update(containers=time.monotonic() - t0),
                                             say=say, bound=current())   # the command's deadline
            finally:
                self.notes += [f"{f}; the lab went on, as containerlab's does (--strict-exec stops it)"
                               for f in execs.failures]
                st.notes = list(self.notes)
            st.timings["wired"] = time.monotonic() - t0
            if not wait or blank:     # blank NVUE nodes: `twin wait` judges the fabric once configured
                st.status = "deployed"
                return st.timings
            st.status = "converging"
            state.save(self.dir, st)
            ctx = LabContext(self.name, self.dir, fabric, backend, self.runtime, image, shaping, _pids=dict(pids))
            st.timings["converged"] = self._converge(ctx, timeout, say, t0, start) - t0
            st.status = "up"
            return st.timings
        except BaseException as e:
            st.status, st.error = "failed", (str(e).splitlines() or [type(e).__name__])[0]
            raise
        finally:
            if self.dir.is_dir():
                state.save(self.dir, st)

    @staticmethod
    def _converge(ctx: LabContext, timeout: float | None, say: Say, since: float, start: float) -> float:
        """The barrier, said first; returns when it held (time.monotonic()). A `timeout` given is the
        command's, from its `start`; the default one is the barrier's own, from now."""
        limit = timeout if timeout is not None else barrier.deadline(ctx)
        if (b := current()) is not None:
            b.stage = "converging"   # an error at the command's deadline from here on: the barrier's stage
        begin = start if timeout is not None else time.monotonic()
        say(barrier.waiting_for(ctx, limit, begin + limit - time.monotonic() if timeout is not None else None))
        barrier.converge(ctx, limit, say=say, since=since, start=begin)
        return time.monotonic()

    def wait(self, timeout: float | None = None, say: Say = lambda _: None) -> float:
        """The convergence barrier of a running lab (after `up(wait=False)` and the user's own scripts):
        returns the seconds it took; ConvergenceTimeout names what is missing. The lab is `up` then.
        A reader: no lock, so it waits beside the changes meanwhile (NVUE revisions) and is never refused."""
        t0 = time.monotonic()
        self._converge(self.context(), timeout, say, t0, t0)
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
            raise LabStateError(f"lab {self.name!r} has containers but no recorded state (a killed `up`?); "
                                f"`twin down {self.name}` removes them")
        differs = FabricDiff(recorded, topology.mgmt.carry(recorded, self.loaded)).lines()
        differs += state.configs_differ(self.dir, st, self.configs)
        want = wanted(self.loaded, vrf_backend)[0]
        differs += [f"it runs the {NAMES[st.backend]} VRF backend, not {NAMES[want]}"] if (
            st.backend and st.backend != want) else []
        if differs:
            raise LabStateError(f"lab {self.name!r} is up from another topology or other configs ({st.topology}); "
                                f"it differs in {len(differs)} way(s), e.g. {differs[0]}; `twin apply {self.name} "
                                "FILE|DIR` changes it")
        problems = self.status().problems() if st.status == "up" else [f"its status is {st.status!r}" + (
            f"; `twin wait {self.name}` waits for its convergence" if st.status == "deployed" else "")]
        if problems:
            raise LabStateError(f"lab {self.name!r} exists but is not healthy ({len(problems)} problem(s), e.g. "
                                f"{problems[0]}); `twin down {self.name}` and `twin up` make it again")
        raise AlreadyUp(f"lab {self.name!r} is already up and converged from this topology; "
                        f"`twin status {self.name}` shows it, `twin down {self.name}` removes it")

    def down(self) -> list[str]:
        """Remove exactly what this lab owns: its containers (their links die with them), the
        namespaces a killed `up` or a stopped node left behind, and its directory."""
        with self.writing("twin down"):
            removed = cleanup.remove_all(self.name, self.dir, self._remover())
            locks.forget(self.name)      # its lock files too, as this hold ends
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
        name = resolve_node(name, sorted(containers), self.name)   # `PC1` is pc1
        return containers[name].exec(f"{self.name}/{name}")

    def execs(self) -> dict[str, NodeExec]:
        return self.context().execs()

    def pids(self) -> dict[str, int]:
        return self.context().pids()

    # --- day 2 -------------------------------------------------------------
    def apply(self, change: "str | Path | Fabric", timeout: float | None = None, wait: bool = True,
              say: Say = lambda _: None, strict: bool = False, warn: Callable[[LintReport], None] = lambda _: None):
        """Apply a change (edited topology file, directory of node configs, a Fabric, or any spec
        `twin.change.load_change` reads: nv:NODE:FILE, fault:...) to the running lab; returns
        twin.change.Result. Refused changes touch nothing; failures roll back. A directory of configs is
        linted against the lab's intent first (`warn` gets it; `strict`: refused)."""
        from twin.change import load_change

        with self.writing("twin apply"):
            ctx = self.context()
            result = load_change(ctx, change, strict, warn).apply(ctx, say=say, timeout=timeout, wait=wait)
            self.nvue_service(say)
            return result

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


def _refuse(problems: list[Problem]) -> None:
    if problems:
        raise TopologyError(problems)
