"""Configuration dialects: the languages a node's own configuration may be written in instead of
twin's rendering of the topology (NVUE's startup.yaml), each registering what it brings, as
containerlab's node kinds register themselves (`nodes/node_registry.go`) and its core never
imports a kind. The rooms that serve every lab (runtime, lifecycle, change, verify, prove) ask
this registry and name no dialect; `twin.dialects`, at the top of the house, registers the
ones twin speaks. A dialect brings (`Dialect`):

- its configs: their check on a topology, FRR's view of them (`vtysh --dryrun`), what a file
  declares for `twin lint` (`declared`: registered with `twin.lint`'s readers), each node's
  files and kernel plane at `twin up` (`render`), how files given differ from those running;
- what its nodes run: their kernel planes as they run them now (`planes`: day 2, faults, the proof);
- what its nodes get: files bound into them (`binds`, written once per lab: `prepare`) and a
  service of the lab's (`Service`: started with the lab, stopped with it, a column of `twin status`);
- its change kinds (`change`: the change a spec names, if it is the dialect's; `work`: its nodes'
  part of a declarative change), what `twin verify` adds (`verify`) and its `--prove` elements.

    register(Dialect("nvue", "startup.yaml", ...))     # once, by `twin.dialects`
    for d in dialects(): ...                           # in the order they were registered
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol

from twin.base.errors import Problem
from twin.config.backend import Backend
from twin.config.services import Shaping
from twin.config.steps import Step
from twin.config.userconf import UserConfigs
from twin.lint import Reader
from twin.lint import register as lint_reader
from twin.topology.model import Bind, Fabric

Say = Callable[[str], None]


class NodePlane(Protocol):
    """What a node running a dialect's configuration makes of its kernel, in twin's terms: what
    bring-up applies, what a node started again must get back, what the proof breaks and restores."""

    node: str
    fabric: Fabric  # the topology, with this node's tenants as its configuration declares them
    steps: list[Step]  # its kernel plane, before FRR starts
    bindings: list[Step]  # its workloads' bindings, once zebra knows its VNIs

    @property
    def vnis(self) -> set[int]: ...  # the VNIs zebra will know

    @property
    def per_vni(self) -> bool: ...  # its tenants on twin's per-VNI devices (the kernel elements the proof breaks)

    def as_run(self, fabric: Fabric) -> Fabric: ...  # the lab's fabric with this node's tenants as it runs them


@dataclass(frozen=True)
class Rendering:
    """What `twin up` hands a dialect to render: the lab, its intent, the user's configs, how it runs."""

    lab: str
    dir: Path
    fabric: Fabric
    configs: UserConfigs | None
    backend: Backend
    shaping: Shaping
    say: Say = lambda _: None


@dataclass
class Rendered:
    """A dialect's part of a lab at `twin up` ({}: none of its nodes)."""

    files: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> the files it runs
    planes: dict[str, NodePlane] = field(default_factory=dict)  # node -> its kernel plane
    notes: list[str] = field(default_factory=list)  # what was left out or adapted
    owned: dict[str, list[str]] = field(default_factory=dict)  # node -> files its user's automation owns
    later: list[str] = field(default_factory=list)  # nodes configured after `up`: the fabric is judged at `twin wait`


@dataclass(frozen=True)
class Service:
    """A long-lived process of a lab whose nodes run a dialect (NVUE's REST API and `nv`): started
    with the lab (and again by `twin up` or `twin apply` if it stopped), stopped with it, shown
    by `twin status` (its record: where it listens, whether it answers)."""

    what: str  # "the NVUE service (REST API, nv)"
    running: Callable[[Path], bool]  # lab dir -> whether its process runs
    start: Callable[[Path, str], dict]  # (lab dir, lab) -> its record, once it runs
    stop: Callable[[Path], bool]
    status: Callable[[Path], dict]  # lab dir -> its status document
    problem: Callable[[dict], str]  # a status document -> why it is not healthy ("": it is)
    line: Callable[[dict], str]  # a status document as one line of `twin status`


def _none(*_: Any) -> Any:
    return None


@dataclass(frozen=True)
class Dialect:
    """What one dialect brings (see the module's text). The hooks of the rooms above this one take a
    running lab (`twin.lifecycle.LabContext`) and give their room's own types."""

    name: str  # "nvue": its service's column in `twin status --json`
    file: str  # the file a node's directory holds when it runs this dialect ("startup.yaml")
    check: Callable[[UserConfigs | None, Fabric], list[Problem]]  # every problem of the user's files
    frr_view: Callable[[UserConfigs, Fabric], UserConfigs]  # the user's files as FRR reads them
    render: Callable[[Rendering], Rendered]
    differs: Callable[[UserConfigs | None, Path], list[str]]  # (files given, lab dir) -> how they differ
    planes: Callable[[Path, Fabric, Backend, Shaping, Iterable[str] | None], dict[str, NodePlane]]
    declared: Reader | None = None  # its file read for `twin lint`
    binds: Callable[[Path, str], list[Bind]] = lambda d, node: []  # (lab dir, an FRR node) -> bound into it
    prepare: Callable[[Path], object] = _none  # lab dir, before its nodes start
    service: Service | None = None
    change: Callable[[Any, Any], Any] = _none  # (ctx, spec) -> a `twin.change.Change`, or None: not its spec
    work: Callable[[Any, Any, Fabric, Fabric], None] = _none  # (ctx, Work, old, new): its nodes' part
    verify: Callable[[Any], dict[str, Any]] = lambda ctx: {}  # ctx -> what `twin verify`'s report adds
    prove: Callable[[Any], tuple[list, list]] = lambda ctx: ([], [])  # ctx -> its elements and exemptions
    # check groups of `twin verify` it brings (name -> ctx -> checks, or checks and what the report adds;
    # none where the lab has nothing for them); a group another dialect (or twin) has too runs both, its
    # checks after theirs (and what it adds beside theirs)
    groups: dict[str, Callable[[Any], list | tuple[list, dict]]] = field(default_factory=dict)


_REGISTERED: dict[str, Dialect] = {}


def register(d: Dialect) -> Dialect:
    """`d` known from now on (again: the same name is replaced, as a module imported twice registers twice);
    its reader of its file is `twin lint`'s too."""
    _REGISTERED[d.name] = d
    if d.declared is not None:
        lint_reader(d.file, d.declared)
    return d


def dialects() -> tuple[Dialect, ...]:
    """The registered dialects, in the order they were registered."""
    return tuple(_REGISTERED.values())


def running(user_files: dict[str, list[str]]) -> list[Dialect]:
    """The dialects a lab's nodes run, from what its state says of its user's files."""
    return [d for d in dialects() if any(d.file in files for files in user_files.values())]


# --- each hook over every dialect, for the rooms that ask ---------------------------------------------
def problems(configs: UserConfigs | None, fabric: Fabric) -> list[Problem]:
    return [p for d in dialects() for p in d.check(configs, fabric)]


def frr_view(configs: UserConfigs, fabric: Fabric) -> UserConfigs:
    for d in dialects():
        configs = d.frr_view(configs, fabric)
    return configs


def differs(configs: UserConfigs | None, d: Path) -> list[str]:
    return [line for x in dialects() for line in x.differs(configs, d)]


def planes(
    d: Path, fabric: Fabric, backend: Backend, shaping: Shaping, nodes: Iterable[str] | None = None
) -> dict[str, NodePlane]:
    out: dict[str, NodePlane] = {}
    for x in dialects():
        out.update(x.planes(d, fabric, backend, shaping, nodes))
    return out


def render(r: Rendering) -> Rendered:
    out = Rendered()
    for x in dialects():
        mine = x.render(r)
        out.files.update(mine.files)
        out.planes.update(mine.planes)
        out.notes += mine.notes
        out.owned.update(mine.owned)
        out.later += mine.later
    return out


def binds(labdir: Path, node: str) -> list[Bind]:
    return [b for d in dialects() for b in d.binds(labdir, node)]


def prepare(labdir: Path) -> None:
    for d in dialects():
        d.prepare(labdir)
