"""Snapshots: what a lab runs now, as an archive a new lab can be made from.

    snapshot.json               what it is: lab, when, nodes, whose files are the user's, notes
    topology/<file>             the topology the lab runs (the last one `apply` gave it)
    configs/<node>/<file>       the user's files as the lab runs them now (FRR, NVUE's applied
                                startup.yaml, after every apply and NVUE change)
    rendered/<node>/<file>      twin's rendering as the lab runs it (for the record: a new lab
                                renders the same from the same topology)
    nvue/saved/<node>.yaml      what `nv config save` saved, given back to the new lab's NVUE service

What is not kept: running memory. BGP tables, EVPN routes, ARP and MAC tables, counters and the
event history are learned again by the new lab as it converges; a fault in force (a link down)
is not part of the configuration and is not carried over.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from twin.base.errors import LabStateError
from twin.lab import Lab
from twin.lifecycle import state
from twin.nvue import service as nvue_service
from twin.server import bodies
from twin.server.home import Home
from twin.server.problems import ApiProblem
from twin.server.worker import Say, Work

if TYPE_CHECKING:
    from twin.server.core import Core

NOT_KEPT = (
    "running memory is not kept: BGP and EVPN tables, ARP and MAC entries, counters and events are learned "
    "again as the new lab converges; a fault in force is not configuration and is not carried over"
)
MAX_RENDERED = 64  # files of one node directory taken into `rendered/`


def room(core: "Core", owner: str) -> None:
    """409 with the numbers when `owner` keeps as many snapshots, or as many bytes of them, as the
    server allows one user (`twin serve --max-snapshots`, `--max-snapshot-bytes`)."""
    rows = core.store.snapshots(owner)
    count, size = len(rows), sum(r["size"] for r in rows)
    limit, most = core.settings.max_snapshots, core.settings.max_snapshot_bytes
    if count >= limit or size >= most:
        raise ApiProblem(
            409,
            f"{owner} keeps {count} snapshots of {size:,} bytes; a user keeps at most {limit} and "
            f"{most:,} bytes on this server: DELETE /v1/snapshots/ID first",
            "quota",
            quota={"snapshots": {"limit": limit, "held": count}, "snapshot_bytes": {"limit": most, "held": size}},
        )


def take(name: str, sid: str, owner: str) -> Work:
    return partial(_take, name, sid, owner)


def _take(name: str, sid: str, owner: str, home: Home, say: Say) -> tuple[Any, int]:
    lab = Lab(name)
    st, fabric = state.load(lab.dir)
    if st is None or fabric is None:
        raise LabStateError(f"lab {name!r} has no recorded state to snapshot")
    topo = Path(st.topology)
    if not topo.is_file():
        raise LabStateError(f"lab {name!r}: its topology {topo} is gone; it cannot be snapshotted")
    say(f"snapshot of {name}: topology, configs of {len(fabric.nodes)} nodes, NVUE state")
    buf = io.BytesIO()
    user = {n: list(fs) for n, fs in st.user_files.items()}
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        _add(tar, f"topology/{topo.name}", topo.read_bytes())
        for node in fabric.nodes:
            for fname, text in state.read_files(lab.dir, node, user.get(node, [])).items():
                _add(tar, f"configs/{node}/{fname}", text.encode())
            for fname, text in _rendered(lab.dir, node).items():
                _add(tar, f"rendered/{node}/{fname}", text.encode())
            saved = nvue_service.saved(lab.dir, node)
            if saved.is_file() and not saved.is_symlink():
                _add(tar, f"nvue/saved/{node}.yaml", state.read_text(saved).encode())
        meta = {
            "id": sid,
            "lab": name,
            "taken": time.time(),
            "topology": topo.name,
            "nodes": sorted(fabric.nodes),
            "user_files": user,
            "history": len(st.history),
            "not_kept": NOT_KEPT,
        }
        _add(tar, "snapshot.json", json.dumps(meta, indent=2).encode())
    f = home.where("snapshots") / f"{sid}.tar.gz"
    f.write_bytes(buf.getvalue())
    summary = {"nodes": len(fabric.nodes), "user_files": sum(map(len, user.values())), "not_kept": NOT_KEPT}
    home.store.run(
        "INSERT INTO snapshots(id, lab, owner, created, size, summary) VALUES (?, ?, ?, ?, ?, ?)",
        sid,
        name,
        owner,
        time.time(),
        len(buf.getvalue()),
        json.dumps(summary),
    )
    return {"snapshot": sid, "lab": name, "size": len(buf.getvalue()), **summary}, 0


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), int(time.time()), 0o600
    tar.addfile(info, io.BytesIO(data))


def _rendered(d: Path, node: str) -> dict[str, str]:
    sub = d / node
    if not sub.is_dir() or sub.is_symlink():
        return {}
    names = sorted(e.name for e in os.scandir(sub) if e.is_file(follow_symlinks=False))[:MAX_RENDERED]
    return state.read_files(d, node, names)


def unpack(home: Home, sid: str, into: Path) -> tuple[Path, Path | None, Path | None]:
    """Snapshot `sid` unpacked into `into` (through the body reader, as any archive):
    (its topology file, its configs directory or None, its NVUE saved files or None)."""
    data = (home.where("snapshots") / f"{sid}.tar.gz").read_bytes()
    root = bodies.archive(into, data, "snapshot")
    meta = json.loads((root / "snapshot.json").read_text())
    topo = root / "topology" / Path(meta["topology"]).name
    configs = root / "configs" if (root / "configs").is_dir() else None
    saved = root / "nvue" / "saved" if (root / "nvue" / "saved").is_dir() else None
    return topo, configs, saved


def path(home: Home, sid: str) -> Path:
    return home.where("snapshots") / f"{sid}.tar.gz"
