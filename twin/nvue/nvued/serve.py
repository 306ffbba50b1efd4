"""The NVUE service process of a lab: its record first, then per FRR node an HTTPS listener on
127.0.0.1 (a port the kernel picks) and unix sockets in the node's run directory (bound into the
node at /run/nvue): `nvue.sock` for its `nv` (root and group nvapply in the node may use it, as on
Cumulus) and, on a node with a management address, `api.sock`, HTTPS as on the TCP port, where the
node's relay brings what reaches its eth0:8765 (`twin-node start-frr`): the socket a connection
arrives on says which node it is for, whatever the client says. One app on all of them; it serves
until SIGTERM, or until its lab directory is gone, and leaves nothing listening behind. Every
failure is one line on stderr (its log) and an exit code.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from twin import kinds
from twin.base.errors import TwinError
from twin.config.dialect import register
from twin.config.naming import nvue_run
from twin.lifecycle import daemon, state
from twin.lifecycle.service import Listener, Service
from twin.nvue import service as nvue_service
from twin.nvue.dialect import DIALECT
from twin.nvue.nvued import nv
from twin.nvue.nvued.app import make_app, problem_body
from twin.nvue.nvued.engine import Engine
from twin.topology.model import Fabric

MAX_BODY = nv.MAX_BODY  # a request body: a startup.yaml of 1 MiB, in base64 (nv) or JSON (the REST API)
SOCKET = "nvue.sock"
API_SOCKET = "api.sock"  # the node's NVUE API on its management address (eth0:8765), through its relay


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m twin.nvue.nvued LAB", file=sys.stderr)
        return 2
    register(DIALECT)  # a process of its own, without `twin.Lab`: the dialect it serves, registered by itself
    try:
        return serve(argv[0])
    except TwinError as e:
        print(f"twin nvued: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"twin nvued: {e.filename + ': ' if e.filename else ''}{e.strerror or e}", file=sys.stderr)
        return 1


def serve(lab: str) -> int:
    d = state.labdir(lab)
    if not d.is_dir():
        raise TwinError(f"lab {lab!r} has no directory {d}")
    gone = daemon.orphaned(d)
    rec = nvue_service.record_file(d)
    daemon.announce(rec, lab=lab)  # first: `down` finds it from here on
    _, fabric = state.load(d)
    if fabric is None:
        raise TwinError(f"lab {lab!r} has no recorded intent")
    cert, key = nvue_service.certificate(d, lab, fabric)
    engine = Engine(lab, d)
    _saved(engine, d, fabric)
    nodes = [n for n, x in fabric.nodes.items() if kinds.of(x).runs_frr]
    tcp = {n: Listener(port=0, certfile=str(cert), keyfile=str(key), tag=f"tcp:{n}") for n in nodes}
    socks = {(n, SOCKET): _bind(nvue_run(d, n) / SOCKET, kinds.NV_GID) for n in nodes}
    socks |= {(n, API_SOCKET): _bind(nvue_run(d, n) / API_SOCKET) for n in nodes if fabric.nodes[n].mgmt}
    listeners = list(tcp.values()) + [
        Listener(uds=str(nvue_run(d, n) / f), fd=s.fileno(), tag=f"unix:{n}")
        if f == SOCKET
        else Listener(uds=str(nvue_run(d, n) / f), fd=s.fileno(), certfile=str(cert), keyfile=str(key), tag=f"mgmt:{n}")
        for (n, f), s in socks.items()
    ]
    svc = Service("nvued", make_app(engine, nvue_service.password(d)), listeners, max_body=MAX_BODY, body=problem_body)

    def started(s: Service) -> None:
        daemon.announce(
            rec, lab=lab, listeners={n: {"port": s.port(tcp[n]), "socket": str(nvue_run(d, n) / SOCKET)} for n in nodes}
        )

    try:
        svc.run(on_start=started, watch=lambda: not gone())
    finally:
        for (n, f), s in socks.items():
            s.close()
            _unlink(nvue_run(d, n) / f)
        mine = daemon.read(rec)
        if mine and mine["pid"] == os.getpid():
            rec.unlink(missing_ok=True)
    return 0


def _bind(path: Path, group: int | None = None) -> socket.socket:
    """A unix socket bound at `path` (through the directory's descriptor: the path may be longer
    than bind(2) takes), only its owner may connect (root, in the node), and `group` if given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        short = f"/proc/self/fd/{fd}/{path.name}"
        _unlink(Path(short))
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(short)
        os.chmod(short, 0o600 if group is None else 0o660)
        if group is not None:
            os.chown(short, -1, group)
        return s
    finally:
        os.close(fd)


def _unlink(p: Path) -> None:
    try:
        if p.is_socket():
            p.unlink()
    except OSError:
        pass


def _saved(engine: Engine, d: Path, fabric: Fabric) -> None:
    """On the service's first start, each NVUE node's startup configuration is what it came up with."""
    first = nvue_service.saved(d, "x").parent
    if first.is_dir():
        return
    first.mkdir(parents=True, exist_ok=True)
    for n in fabric.nodes:
        try:
            engine.save(n)
        except TwinError:
            continue  # a node of twin's rendering
