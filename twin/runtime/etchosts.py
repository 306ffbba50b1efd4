"""Host names of a lab's nodes on this host, in /etc/hosts, as containerlab writes `clab-<lab>-<node>`.

A lab has one block of its own there, from `###### TWIN-<lab>-START ######` to its END line
(`twin.config.naming.hosts_marker`): each managed node's management address and its container's
name (`twin-<lab>-<node>`). `write` replaces the lab's block, or adds it at the end; `remove` takes
it away. No line outside the block is ever touched, and a block without its END line is left as it
is (whose it is, and where it ends, cannot be told). The file is rewritten in place (in a container
it is a bind mount, which a rename cannot replace), under an exclusive lock on it: two twins writing
their labs' blocks at once both keep theirs. `remove_block` serves containerlab's own blocks too.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from twin.config.naming import hosts_marker

HOSTS = Path("/etc/hosts")


def write(lab: str, names: dict[str, str], path: Path | None = None) -> None:
    """Lab `lab`'s block: host name -> address (the block removed when `names` is empty)."""
    lines = [f"{addr}\t{name}\n" for name, addr in names.items()]
    _edit(path or HOSTS, hosts_marker(lab, "START"), hosts_marker(lab, "END"), lines if names else None)


def remove(lab: str, path: Path | None = None) -> bool:
    """Lab `lab`'s block gone; False when it had none."""
    return remove_block(hosts_marker(lab, "START"), hosts_marker(lab, "END"), path or HOSTS)


def remove_block(start: str, end: str, path: Path | None = None) -> bool:
    return _edit(path or HOSTS, start, end, None)


def read(lab: str, path: Path | None = None) -> dict[str, str]:
    """The names in lab `lab`'s block: host name -> address."""
    try:
        text = (path or HOSTS).read_text()
    except OSError:
        return {}
    inside, out = False, {}
    for line in text.splitlines():
        if line.strip() == hosts_marker(lab, "START"):
            inside = True
        elif line.strip() == hosts_marker(lab, "END"):
            inside = False
        elif inside and line.split()[1:]:
            out[line.split()[1]] = line.split()[0]
    return out


def _edit(path: Path, start: str, end: str, block: list[str] | None) -> bool:
    """Replace the block from `start` to `end` with `block` (None: remove it); True if the file changed."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:
        if block is None:
            return False
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "r+", encoding="utf-8", errors="surrogateescape") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        lines = f.read().splitlines(keepends=True)
        out, inside, found = [], False, False
        for line in lines:
            if not inside and line.strip() == start:
                inside = found = True
            if not inside:
                out.append(line)
            elif line.strip() == end:
                inside = False
        if inside:  # no END line: not a block twin can tell the end of
            return False
        if block is not None:
            if out and not out[-1].endswith("\n"):
                out[-1] += "\n"
            out += [start + "\n", *block, end + "\n"]
        if out == lines or (not found and block is None):
            return False
        f.seek(0)
        f.write("".join(out))
        f.truncate()
        return True
