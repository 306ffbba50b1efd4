"""The server's CPU priority as the kernel's scheduler sees it.

A nice value orders a process only among the processes of its own session when the kernel groups
sessions (autogroup: CONFIG_SCHED_AUTOGROUP with kernel.sched_autogroup_enabled=1, the default of
Debian's and Ubuntu's kernels, for every process outside a cpu cgroup of its own). Each session is
then one entity, weighed against every other session, dockerd's, containerd's (the runc processes
that start containers) and the containers' cgroup, whatever its processes' nice values. A server
that only lowered its nice value would share one session's weight with its own operations' work
and be no further ahead of anybody else's.

So each operation's worker leaves the server's session for one of its own (`os.setsid`): it
weighs as `twin up` in a terminal of its own would. And a server that leads its own session (a
service: systemd starts each in one, `setsid twin serve` too) raises that session's weight with its
own priority (`ahead`); one started in a terminal leaves the terminal's group as it is (it is
the shell's and everything else run there) and says so.
"""

from __future__ import annotations

import os
from pathlib import Path

AUTOGROUP = Path("/proc/self/autogroup")  # "/autogroup-N nice K"; writing K sets the session's


def ahead(steps: int) -> list[str]:
    """This process `steps` nice steps up, and its session's group as much where the kernel groups
    sessions and this process leads its session; what could not be done, said."""
    missing = []
    try:
        os.nice(-steps)
    except PermissionError:
        missing.append(f"its CPU priority (nice -{steps}) needs root or CAP_SYS_NICE")
    if not grouped():
        return missing
    if os.getsid(0) != os.getpid():
        return missing + [
            "its session's CPU weight is its terminal's (the kernel weighs sessions as one, "
            "autogroup): run it as a service, or with setsid, to put it ahead of the labs' work"
        ]
    try:
        AUTOGROUP.write_text(str(-steps))
    except OSError as e:
        missing.append(f"its session's CPU weight (autogroup nice -{steps}): {e.strerror or e}")
    return missing


def grouped() -> bool:
    """Whether the kernel weighs this process's session as one (autogroup on)."""
    try:
        return AUTOGROUP.exists() and Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    except OSError:
        return False
