"""A container's memory as `docker stats` counts it, from its cgroup (the bench's figures)."""

from __future__ import annotations

from pathlib import Path

from twin.runtime.base import NodeHandle


def _memory_cgroup(c: NodeHandle) -> tuple[Path, bool] | None:
    """The memory cgroup directory of a running container and whether it is cgroup v2."""
    pid = c.attrs["State"]["Pid"]
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            return Path("/sys/fs/cgroup") / path.lstrip("/"), True
        if "memory" in controllers.split(","):
            return Path("/sys/fs/cgroup/memory") / path.lstrip("/"), False
    return None


def memory(c: NodeHandle) -> tuple[int, int] | None:
    """(in use now, peak) memory of a container in bytes, as `docker stats` counts
    it (usage less inactive page cache); None if the cgroup cannot be read."""
    try:
        found = _memory_cgroup(c)
        if found is None:
            return None
        d, v2 = found
        stat = dict(line.split() for line in (d / "memory.stat").read_text().splitlines())
        if v2:
            usage, peak = int((d / "memory.current").read_text()), int((d / "memory.peak").read_text())
            inactive = int(stat.get("inactive_file", 0))
        else:
            usage = int((d / "memory.usage_in_bytes").read_text())
            peak = int((d / "memory.max_usage_in_bytes").read_text())
            inactive = int(stat.get("total_inactive_file", 0))
        return usage - inactive, peak
    except (OSError, ValueError, KeyError):
        return None
