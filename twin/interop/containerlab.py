"""containerlab export: a twin lab as `<lab>.clab.yml` plus the files it binds.

Owns the mapping of a rendered twin lab onto containerlab's topology file:
every node a `kind: linux` container of twin's node image; a switch, DPU or router
on the lab's management network (`mgmt`: twin's network, `mgmt-ipv4`: its address;
its start script moves eth0 into its management namespace as twin's bring-up does),
a host without one (`network-mode: none`, as twin runs it), with twin's own mounts (an FRR
node's directory on /etc/frr, every node's read-only on /etc/twin), twin's
labels (so twin finds the containers), the kind's sysctls and capabilities, and
`exec` of `twin-start.sh` (twin.interop.startscript) for what twin's bring-up
does once the links exist, then the node's own exec commands. Links keep twin's
port names and MTUs. What the user gave a node is carried too: the FRR files it
runs (the lab's own, a router's frr.conf and daemons), every file it binds
(copied beside them, bound where it was), a host's cmd (started once its ports
are up, as twin starts it) and its env.

The layout of the output directory is twin's lab directory
(`<dir>/<node>/<file>`) plus `twin-start.sh` per node and the topology file.
"""

from __future__ import annotations

import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml

from twin.base.errors import TwinError
from twin.config.backend import DEFAULT_BACKEND
from twin.config.naming import LABEL_KIND, LABEL_LAB, LABEL_NODE, LABEL_RUNTIME, mgmt_network
from twin.config.overlay import Backend, loopback_steps, script
from twin.interop.startscript import START_PATH, START_SCRIPT, WAIT_SCRIPT, start_script, wait_then_exec
from twin.kinds import get as kind_of
from twin.kinds.base import FRR_DIR, NODE_DIR
from twin.topology import Bind
from twin.topology import files as inputs
from twin.topology.model import Fabric, Node

# Containers are named <prefix>-<lab>-<node>: with "twin" that is the very name
# twin's own runtime gives them, so `docker exec twin-<lab>-<node>` works alike
# and one lab cannot run under both runtimes at once.
PREFIX = "twin"
LABEL_ASN = "twin.asn"
LABEL_LOOPBACK = "twin.loopback"
RUNTIME = "containerlab"
MAX_BOUND_FILES = 256  # files of the user's a node binds, carried into an export

Files = dict[str, dict[str, str]]  # node -> file name -> text, as twin.config.render.render_lab returns


@dataclass(frozen=True)
class ClabLab:
    """A lab in containerlab's terms: the topology document and the files it binds."""

    name: str
    topology: dict
    files: dict[str, dict[str, str | bytes]]  # node -> file name -> text (twin's) or bytes (the user's)
    executable: frozenset[tuple[str, str]] = frozenset()  # (node, file name) written executable
    notes: tuple[str, ...] = ()  # what is carried otherwise (kept binds)

    @property
    def filename(self) -> str:
        return f"{self.name}.clab.yml"

    def text(self) -> str:
        head = (
            f"# containerlab topology of twin lab {self.name}, from the same rendering as `twin up`.\n"
            f"# containerlab deploy -t {self.filename}   (twin up --runtime containerlab does it for you)\n"
        )
        return head + yaml.safe_dump(self.topology, sort_keys=False, default_flow_style=False)


def export_containerlab(
    fabric: Fabric,
    files: Files,
    out_dir: Path,
    *,
    image: str,
    backend: Backend = DEFAULT_BACKEND,
    say: Callable[[str], None] = lambda _: None,
) -> Path:
    """Write `<out_dir>/<lab>.clab.yml` and every file it binds; returns the topology file's path.

    `files` is `twin.config.render.render_lab(fabric, backend)`; `image` is twin's node image tag;
    `say` hears a note for each thing carried otherwise than copied (a socket kept as a bind).
    """
    lab = build_containerlab(fabric, files, image=image, backend=backend)
    out_dir = Path(out_dir)
    for node, node_files in lab.files.items():
        d = out_dir / node
        d.mkdir(parents=True, exist_ok=True)
        for name, data in node_files.items():
            (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())
            (d / name).chmod(0o755 if (node, name) in lab.executable else 0o644)
    for note in lab.notes:
        say(note)
    path = out_dir / lab.filename
    path.write_text(lab.text())
    return path


def build_containerlab(fabric: Fabric, files: Files, *, image: str, backend: Backend = DEFAULT_BACKEND) -> ClabLab:
    """The containerlab topology and its bound files (pure)."""
    _check_rendering(fabric, files, backend)
    bound: dict[str, dict[str, str | bytes]] = {}
    executable, user = set(), {}
    for n, node in fabric.nodes.items():
        own = {**files.get(n, {}), START_SCRIPT: start_script(fabric, n, backend, files.get(n, {}).get("frr.conf"))}
        executable.add((n, START_SCRIPT))
        if node.cmd or node.entrypoint:
            own[WAIT_SCRIPT] = wait_then_exec([p.name for p in node.ports])
        user[n] = user_files(node, set(own))
        bound[n] = {**own, **{name: f.data for name, f in user[n].files.items()}}
        executable |= {(n, name) for name, f in user[n].files.items() if f.executable}
    topology = {
        "name": fabric.name,
        "prefix": PREFIX,
        **({"mgmt": mgmt_of(fabric)} if fabric.mgmt is not None and fabric.mgmt.subnet else {}),
        "topology": {
            "nodes": {n.name: clab_node(fabric, n, image, user[n.name]) for n in fabric.nodes.values()},
            "links": [
                {"endpoints": [f"{link.a.node}:{link.a.port}", f"{link.b.node}:{link.b.port}"], "mtu": link.mtu}
                for link in fabric.links
            ],
        },
    }
    notes = tuple(k.note(n) for n, u in user.items() for k in u.kept)
    return ClabLab(name=fabric.name, topology=topology, files=bound, executable=frozenset(executable), notes=notes)


def clab_node(fabric: Fabric, node: Node, image: str, user: "Bound | None" = None) -> dict:
    """One node: twin's container settings in containerlab's words, and the node's own (binds of the
    user's files, copied beside it; a host's cmd after its ports are up; env; exec)."""
    kind = kind_of(node.kind)
    out: dict = {"kind": "linux", "image": node.image or image}
    out.update({"mgmt-ipv4": node.mgmt} if node.mgmt else {"network-mode": "none"})
    if node.cmd or node.entrypoint:
        out["entrypoint"] = f"sh {NODE_DIR}/{WAIT_SCRIPT}"
        out["cmd"] = shlex.join([*node.entrypoint, *node.cmd])
    elif kind.command:
        out["cmd"] = shlex.join(kind.command)
    # As twin mounts them: the whole directory, not file by file, so a file twin replaces
    # (twin apply writes a new one and renames it) is what the node sees, not the old inode.
    frr = [f"{node.name}:{FRR_DIR}"] if kind.runs_frr else []
    user = user or Bound({}, [])
    out["binds"] = (
        frr
        + [f"{node.name}:{NODE_DIR}:ro"]
        + [f"{node.name}/{name}:{f.target}" + (":ro" if f.read_only else "") for name, f in user.files.items()]
        + [k.bind() for k in user.kept]
    )
    if node.env:
        out["env"] = dict(node.env)
    out["labels"] = labels(fabric, node)
    if kind.sysctls:
        out["sysctls"] = kind.sysctls_of(node.name)
    out["cap-add"] = list(kind.capabilities)
    out["exec"] = [f"sh {START_PATH}", *node.exec]
    return out


def mgmt_of(fabric: Fabric) -> dict:
    """The lab's management network, as containerlab's `mgmt` (twin's runtime makes it first, internal)."""
    assert fabric.mgmt is not None
    return {"network": mgmt_network(fabric.name), "ipv4-subnet": fabric.mgmt.subnet, "ipv4-gw": fabric.mgmt.gateway}


@dataclass(frozen=True)
class BoundFile:
    """A file of the user's that a node binds, copied into the export as its bytes."""

    target: str
    data: bytes
    read_only: bool
    executable: bool


@dataclass(frozen=True)
class Kept:
    """What a node binds that is no file to copy (a socket, a FIFO, a device): bound from the host as is."""

    source: str
    target: str
    read_only: bool
    what: str

    def bind(self) -> str:
        return f"{self.source}:{self.target}" + (":ro" if self.read_only else "")

    def note(self, node: str) -> str:
        return (
            f"{node} binds {self.what}, {self.source}, on {self.target}: kept as a bind of this host's "
            "(the exported lab needs it on the host it runs on)"
        )


@dataclass
class Bound:
    """Everything a node binds, as the export carries it."""

    files: dict[str, BoundFile]
    kept: list[Kept]


def user_files(node: Node, taken: set[str]) -> Bound:
    """Every file the node binds (a directory: each file below it, by the directory rule of
    `twin.topology.files`: a link inside is what it leads to, a link out of it is refused), by the
    name it gets beside twin's files of the node: its path in the node, flattened (`/setup.sh`:
    setup.sh, `/etc/frr/vtysh.conf`: etc_frr_vtysh.conf), copied as its bytes. A socket, FIFO or
    device is kept as a bind of the host's. TwinError names what cannot be carried, with the limits."""
    out = Bound({}, [])
    for b in node.binds:
        for found, p, target, under in _bound(node, b):
            if not found.regular:
                out.kept.append(Kept(str(p), target, b.read_only, found.what))
                continue
            if len(out.files) >= MAX_BOUND_FILES:
                raise TwinError(f"{node.name}: binds more than {MAX_BOUND_FILES} files ({b}); {LIMITS}")
            try:
                data = inputs.read_bytes(found.rel if under else p, inputs.BOUND_FILE, under)
            except inputs.Refused as e:
                raise TwinError(
                    f"{node.name}: cannot carry {p} (bound on {target}) into the export: {e.message}; {LIMITS}"
                ) from None
            name = target.lstrip("/").replace("/", "_")
            name = name if name not in taken and name not in out.files else f"bind_{name}"
            out.files[name] = BoundFile(target, data, b.read_only, bool(found.mode & 0o111))
    return out


LIMITS = f"an export carries at most {MAX_BOUND_FILES} files a node binds, each at most {inputs.BOUND_FILE.limit}"


def _bound(node: Node, b: Bind) -> list[tuple[inputs.Found, Path, str, Path | None]]:
    """What bind `b` holds: (what it is, its path on this host, its path in the node, the bound
    directory it is read below: None for a file bound itself)."""
    src = Path(b.source)
    try:
        mode = src.stat().st_mode
    except OSError as e:
        raise TwinError(
            f"{node.name}: cannot carry {src} (bound on {b.target}) into the export: {e.strerror}"
        ) from None
    if not stat.S_ISDIR(mode):
        return [(inputs.Found(src.name, mode), src, b.target, None)]
    try:
        found = inputs.walk(src, MAX_BOUND_FILES)
    except inputs.Refused as e:
        raise TwinError(
            f"{node.name}: cannot carry {src} (bound on {b.target}) into the export: {e.message}"
            + (f"; {LIMITS}" if "more than" in e.message else "")
        ) from None
    return [(f, src / f.rel, f"{b.target.rstrip('/')}/{f.rel}", src) for f in found]


def labels(fabric: Fabric, node: Node) -> dict[str, str]:
    """twin's own container labels, plus what the node is in the fabric."""
    out = {LABEL_LAB: fabric.name, LABEL_NODE: node.name, LABEL_KIND: node.kind, LABEL_RUNTIME: RUNTIME}
    if node.asn is not None:
        out[LABEL_ASN] = str(node.asn)
    if node.loopback:
        out[LABEL_LOOPBACK] = node.loopback
    return out


def _check_rendering(fabric: Fabric, files: Files, backend: Backend) -> None:
    """The files must be this fabric's rendering on this backend: the start script is derived from both."""
    missing = sorted(set(fabric.nodes) - set(files))
    if missing:
        raise TwinError(f"no rendered files for node(s) {', '.join(missing)} of lab {fabric.name}")
    stale = [
        n
        for n in fabric.nodes
        if files[n].get("interfaces.sh", "")
        not in (
            script(fabric, n, backend),
            script(fabric, n, backend, first=loopback_steps(fabric, n, backend, files[n].get("frr.conf", ""))),
        )
    ]
    if stale:
        raise TwinError(
            f"the rendered files of {', '.join(stale)} are not lab {fabric.name}'s on the {backend} "
            "VRF backend; render them with the same fabric and backend"
        )
