"""`twin up` as an ordered list of named stages, as netlab's transformation pipeline
(`netsim/augment/main.py`): each stage a function of one `BringUp`, reading what the stages
before it added and adding its own, readable alone. In order (`STAGES`):

    admit          the host's limits and CPU judged for the lab; its BGP timers scaled to the host
    choose         the VRF backend, which nodes run their own image, twin's node image
    check configs  the user's configs (and what a dialect renders of its own) read by FRR itself
    record         its management network, its directory and state, user cumulus's password,
                   how rate limits are enforced here
    render         twin's rendering, the user's files over it, each dialect's nodes (NVUE's)
    create         containers, links, and each node configured as soon as its ports are up
    converge       the barrier (or `deployed`: --no-wait, or nodes the user's automation configures)
    services       the lab's services (a dialect's: NVUE's REST API and `nv`)

Nothing is made before `record`: from there on a failure or an interrupt removes what was made
(`cleanup.on_failure`, unless asked to keep it) and the lab's state says `failed` and why. Each
stage says its name as it begins (`twin up -v`, or the progress lines off a terminal, show it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from twin.base import interrupt
from twin.base.stages import Said
from twin.base.wait import current
from twin.config import dialect, render, userconf
from twin.config.backend import DEFAULT_BACKEND, Backend
from twin.config.services import DEFAULT_SHAPING, Shaping
from twin.config.userconf import UserConfigs
from twin.lifecycle import admission, barrier, bringup, cleanup, imagechoice, mgmtnet, state, vrfbackend
from twin.lifecycle.context import LabContext
from twin.runtime import Runtime, probe_shaping
from twin.topology.model import Fabric

Say = Callable[[str], None]


@dataclass(frozen=True)
class Asked:
    """What `twin up` was asked for beyond the topology (`Lab.up`'s options)."""

    image: str | None = None
    images: str | None = None  # auto, own or twin (`imagechoice`)
    vrf_backend: str | None = None
    timeout: float | None = None  # the whole bring-up's, from `start`
    wait: bool = True
    strict_exec: bool = False
    keep: bool = False


@dataclass
class BringUp:
    """One bring-up of one lab: what it was given, and what each stage adds for the next."""

    lab: str
    dir: Path
    fabric: Fabric  # the topology; admit scales its timers, record resolves its management network
    runtime: Runtime
    configs: UserConfigs | None
    asked: Asked
    say: Say
    start: float  # time.monotonic() of the command's start
    notes: list[str]  # what twin adapted or left out (the lab's own list, added to)
    lint: list[dict] = field(default_factory=list)  # `twin lint`'s findings of the user's configs, recorded
    watch: admission.CpuWatch = field(default_factory=admission.CpuWatch)  # the host's CPU, from now
    backend: Backend = DEFAULT_BACKEND  # choose
    own: imagechoice.Choice = field(default_factory=imagechoice.Choice)
    image: str = ""
    made: float = 0.0  # record: when making began
    st: state.LabState | None = None
    password: str = ""
    shaping: Shaping = DEFAULT_SHAPING
    planes: dict[str, dialect.NodePlane] = field(default_factory=dict)  # render: nodes a dialect's config makes
    later: list[str] = field(default_factory=list)  # render: nodes configured after `up`
    pids: dict[str, int] = field(default_factory=dict)  # create

    def note(self, *lines: str) -> None:
        self.notes += lines
        if self.st is not None:
            self.st.notes = list(self.notes)

    @property
    def recorded(self) -> state.LabState:
        """The lab's state, which the record stage makes (for the stages after it)."""
        if self.st is None:
            raise RuntimeError(f"lab {self.lab}: a stage after {MAKES!r} ran before it")
        return self.st


@dataclass(frozen=True)
class Stage:
    name: str
    what: str
    run: Callable[[BringUp], None]

    def __call__(self, b: BringUp) -> None:
        interrupt.check()  # a Ctrl-C Python swallowed in the stage before stops the bring-up here
        if (bound := current()) is not None:
            bound.stage = self.name  # an error at the command's deadline names the stage (its own may say more)
        b.say(Said(f"{self.name}: {self.what}", self.name))
        self.run(b)


def admit(b: BringUp) -> None:
    est = admission.ensure(b.fabric, b.watch.host(), b.asked.timeout, whole=b.asked.timeout is not None)
    if est.timers is not None:
        b.fabric = b.fabric.model_copy(update={"timers": est.timers})
        b.say(f"{est.timers_text()}: {est.figures()}")


def choose(b: BringUp) -> None:
    choice = vrf_choice(b.fabric, b.configs, b.asked.vrf_backend)  # refused here on a kernel that lacks it
    b.backend = choice.backend
    b.own = imagechoice.resolve(b.fabric, b.asked.images, b.runtime.image_facts)  # --images own: refused here
    b.note(*(w for w in [*choice.warnings, *b.own.notes] if w not in b.notes))  # with the import's notes
    b.image = b.asked.image or b.runtime.node_image(say=b.say)


def check_configs(b: BringUp) -> None:
    if b.configs is not None:
        b.say(f"checking {len(b.configs.files)} node configs of {b.configs.source} with FRR")
        b.runtime.check_configs(b.image, b.lab, dialect.frr_view(b.configs, b.fabric))


def record(b: BringUp) -> None:
    b.fabric = mgmtnet.resolve(b.fabric, b.runtime, set(b.own.own))
    b.made = time.monotonic()
    if b.dir.is_dir():
        cleanup.stop_services(b.dir)  # leftovers of a lab that is gone (no containers)
    state.remove(b.dir)
    b.st = state.LabState(
        name=b.lab,
        topology=str(Path(b.fabric.source).resolve()),
        image=b.image,
        created=state.now(),
        runtime=b.runtime.name,
        notes=b.notes,
        images=b.own.own,
    )
    state.save(b.dir, b.st, b.fabric)
    b.st.backend, b.password = b.backend, mgmtnet.node_password(b.dir, b.fabric, b.say)
    limited = any(a.rate_limit for t in b.fabric.tenants.values() for a in t.attachments)
    b.st.shaping = probe_shaping(b.lab) if limited else None
    b.shaping = b.st.shaping or DEFAULT_SHAPING


def render_files(b: BringUp) -> None:
    b.say(f"rendering configs into {b.dir}")
    st = b.recorded
    files, notes = userconf.merge(render.render_lab(b.fabric, b.backend, b.shaping), b.configs, b.fabric, b.backend)
    own = dialect.render(dialect.Rendering(b.lab, b.dir, b.fabric, b.configs, b.backend, b.shaping, b.say))
    files.update(own.files)
    b.planes, b.later = own.planes, own.later
    b.note(*notes, *own.notes)
    if b.configs is not None:
        st.configs, st.user_files = str(Path(b.configs.source).resolve()), b.configs.owned()
        st.lint = b.lint
    st.user_files |= own.owned  # what the user's automation owns (NVUE's blank nodes)
    state.write_files(b.dir, files)


def create(b: BringUp) -> None:
    b.say(f"starting {len(b.fabric.nodes)} containers, wiring {len(b.fabric.links)} links as they run")
    execs, fabric, st = bringup.ExecLog(b.lab, b.asked.strict_exec), b.fabric, b.recorded
    try:
        b.pids = b.runtime.bring_up(
            b.own.fabric(fabric),
            b.image,
            b.dir,
            b.backend,
            configure=lambda n, ex, pid: bringup.configure_node(
                fabric,
                n,
                ex,
                pid,
                b.backend,
                b.shaping,
                b.planes.get(n),
                execs,
                starts_itself=n in b.own.starts_itself,
                password=b.password,
                say=b.say,
            ),
            on_created=lambda: st.timings.update(containers=time.monotonic() - b.made),
            say=b.say,
            bound=current(),
        )  # the command's deadline
    finally:
        b.note(*(f"{f}; the lab went on, as containerlab's does (--strict-exec stops it)" for f in execs.failures))
        if execs.rebooted:
            st.timings["frr_reboots"] = float(len(execs.rebooted))
            b.note(
                f"FRR's boot stalled and was booted again on {len(execs.rebooted)} node(s): "
                f"{', '.join(sorted(execs.rebooted))}"
            )
    st.timings["wired"] = time.monotonic() - b.made


def converge(b: BringUp) -> None:
    st = b.recorded
    if not b.asked.wait or b.later:  # nodes the user's automation configures: `twin wait` judges the fabric
        st.status = "deployed"
        return
    st.status = "converging"
    state.save(b.dir, st)
    ctx = LabContext(b.lab, b.dir, b.fabric, b.backend, b.runtime, b.image, b.shaping, _pids=dict(b.pids))
    st.timings["converged"] = converged(ctx, b.asked.timeout, b.say, b.made, b.start) - b.made
    st.status = "up"


def services(b: BringUp) -> None:
    start_services(b.dir, b.lab, b.recorded.user_files, b.say)


STAGES = (
    Stage("admit", "the host's limits and CPU, for this lab", admit),
    Stage("choose", "VRF backend, node images", choose),
    Stage("check configs", "the user's configs, read by FRR", check_configs),
    Stage("record", "management network, lab directory, password", record),
    Stage("render", "twin's rendering, the user's files, each dialect's nodes", render_files),
    Stage("create", "containers, links, each node configured", create),
    Stage("converge", "the barrier", converge),
    Stage("services", "the lab's services", services),
)
MAKES = "record"  # the first stage that makes something: from it on, a failure removes what was made


def run(b: BringUp) -> dict[str, float]:
    """Every stage in order; the lab's stage timings (s)."""
    first = next(i for i, s in enumerate(STAGES) if s.name == MAKES)
    for stage in STAGES[:first]:
        stage(b)
    with cleanup.on_failure(b.lab, b.dir, b.runtime, b.asked.keep, b.say):
        try:
            for stage in STAGES[first:]:
                stage(b)
        except BaseException as e:
            if b.st is not None:
                b.st.status, b.st.error = "failed", (str(e).splitlines() or [type(e).__name__])[0]
            raise
        finally:
            if b.st is not None and b.dir.is_dir():
                state.save(b.dir, b.st)
    return b.recorded.timings


# --- what `twin up` shares with the commands around it ------------------------------------------------
def vrf_choice(fabric: Fabric, configs: UserConfigs | None, override: str | None = None) -> vrfbackend.Choice:
    """The VRF backend `up` would use for this lab on this host, and why; TopologyError (naming
    CONFIG_NET_VRF) when it, or the user's own configs, need VRF devices this kernel lacks."""
    if configs is None:
        return vrfbackend.choose(fabric, override, {}, {})
    files = configs.files
    return vrfbackend.choose(fabric, override, files, {n: configs.path(n, userconf.FRR_CONF) for n in files})


def converged(ctx: LabContext, timeout: float | None, say: Say, since: float, start: float) -> float:
    """The barrier, said first; returns when it held (time.monotonic()). A `timeout` given is the
    command's, from its `start`; the default one is the barrier's own, from now."""
    limit = timeout if timeout is not None else barrier.deadline(ctx)
    if (b := current()) is not None:
        b.stage = "converging"  # an error at the command's deadline from here on: the barrier's stage
    begin = start if timeout is not None else time.monotonic()
    say(barrier.waiting_for(ctx, limit, begin + limit - time.monotonic() if timeout is not None else None))
    barrier.converge(ctx, limit, say=say, since=since, start=begin)
    return time.monotonic()


def start_services(d: Path, lab: str, user_files: dict[str, list[str]], say: Say = lambda _: None) -> None:
    """The services of the dialects the lab's nodes run (NVUE's), running: started where they are not."""
    for x in dialect.running(user_files):
        if x.service is not None:
            if not x.service.running(d):
                say(f"starting {x.service.what}")
            x.service.start(d, lab)
