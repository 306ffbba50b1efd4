"""The lab's management network at `twin up` (`twin.topology.mgmt`, the runtime's side): its subnet
and addresses chosen clear of what this host holds, and user cumulus's password on the nodes (SSH,
and any service of the lab's that asks for it: NVUE's REST API).

The password is a file of the lab directory's, for its owner only (`twin.config.naming.password_file`),
read and written without following a symlink, written whole (a new file renamed over the old)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Callable

from twin.config.naming import password_file
from twin.kinds import NVUE_PORT, USER
from twin.runtime import Runtime
from twin.topology.model import Fabric


def resolve(fabric: Fabric, runtime: Runtime, own: set[str] | None = None) -> Fabric:
    """`fabric` with its management subnet (the topology's, else one no Docker network, route of this
    host or address of the fabric overlaps) and every managed node's address, but those of the nodes
    that run an image of their own (`own`); its network made, so that no other lab brought up on this
    host meanwhile chooses the same subnet (`Runtime.claim_mgmt`)."""
    return runtime.claim_mgmt(fabric, own or set())


def node_password(d: Path, fabric: Fabric, say: Callable[[str], None] = lambda _: None) -> str:
    """User cumulus's password on the nodes (SSH, the NVUE API): the topology's, else the lab's own
    (`password`), said with where to reach the nodes; "" for a lab without a management network."""
    if fabric.mgmt is None:
        return ""
    if fabric.mgmt.password:
        set_password(d, fabric.mgmt.password)
    say(
        f"management network {fabric.mgmt.subnet} ({len(fabric.managed())} nodes, this host {fabric.mgmt.gateway}): "
        f"ssh {USER}@twin-{fabric.name}-NODE, the NVUE API on port {NVUE_PORT}; `twin inventory {fabric.name}` "
        "lists them"
    )
    return password(d)


def password(d: Path) -> str:
    """The lab's password, made on first use (24 random bytes, mode 0600)."""
    f = _place(d)
    try:
        return read_private(f)
    except FileNotFoundError:
        pass
    write_private(f, secrets.token_urlsafe(24).encode())
    return read_private(f)


def set_password(d: Path, text: str) -> None:
    """The lab's password is `text` (the topology's `mgmt.password`)."""
    write_private(_place(d), text.encode())


def _place(d: Path) -> Path:
    """The password's file, in a directory of the lab's for its owner only (made when missing)."""
    f = password_file(d)
    if d.is_dir() and not f.parent.exists():
        f.parent.mkdir(mode=0o700)
    return f


def write_private(f: Path, data: bytes, mode: int = 0o600) -> None:
    """`data` as file `f`, with `mode`, written whole (a new file renamed over the old: never through a symlink)."""
    tmp = f.with_name(f".{f.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, f)


def read_private(f: Path) -> str:
    fd = os.open(f, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as fh:
        return fh.read().strip()
