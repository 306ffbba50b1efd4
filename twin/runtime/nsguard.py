"""A node's network namespaces opened without trusting the node, and checked before twin uses them.

A tenant namespace of the netns VRF backend is a file of the node's: `/run/netns/<vrf>`, an nsfs
file bound there by `ip netns add` in the node. The node can replace it: with a symbolic link
(followed from the host, an absolute link resolves against the host's root: `/proc/1/ns/net` is the
host's own namespace) or with a bind mount of another namespace file (not a link: only its
namespace says what it is). Whatever twin then did there (netlink steps, sysctls, captures)
would land outside the node. So a tenant namespace is

1. opened relative to the node's root, following no link at all (`twin.base.safeopen`, NO_LINKS:
   openat2 with RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
2. checked on the open descriptor (nothing is looked up twice): a network namespace (the
   NS_GET_NSTYPE ioctl answers only on nsfs files), not the host's (pid 1's), not twin's own, not
   the node's own, and, from the kernel's own tables (/proc/*/ns/net, every mount namespace's
   mountinfo), held by no process of another container and mounted nowhere but at that one
   place in the node: not another node's, another lab's, another tenant's;
3. used through that descriptor (setns, IFLA_NET_NS_FD), never by its path again.

A refusal (NamespaceRefused) names the node, the file and what it is instead. A node's own
namespace (`/proc/<pid>/ns/net`) is the kernel's link to its init process, not a file of the
node's; it is opened as is and checked to be a network namespace.

The check reads the host's tables at most once a second per process (a verdict for one node,
tenant and namespace is kept: the namespace's inode is the key, so a file replaced later is
checked again).
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import time
from dataclasses import dataclass, field

from twin.base import safeopen
from twin.base.errors import NamespaceRefused

NS_GET_NSTYPE = 0xB703  # _IO(0xb7, 0x3): the type of the namespace an nsfs file is
CLONE_NEWNET = 0x40000000
TENANT = re.compile(r"^/proc/(\d+)/root/run/netns/([^/\0]+)$")
INIT_NET = 0xEFFFFFF9  # the kernel's fixed inode of the host's first network namespace (PROC_NET_INIT_INO)
TABLES_FOR = 1.0  # seconds the host's tables read once serve the checks of a process
NAMES: dict[int, str] = {}  # node pid -> "lab/node", as the runtime found it (for messages)


def known(pid: int, where: str) -> int:
    """Remember that `pid` is node `where` ("lab/node"): refusals name it. Returns `pid`."""
    NAMES[pid] = where
    return pid


def who(pid: int) -> str:
    return f"node {NAMES[pid]}" if pid in NAMES else f"the node of pid {pid}"


def open_path(ns_path: str, flags: int = os.O_RDONLY) -> int:
    """A checked descriptor of network namespace `ns_path`: a node's tenant namespace
    (`/proc/<pid>/root/run/netns/<vrf>`) as the module says, anything else (a node's own
    `/proc/<pid>/ns/net`, a host's named namespace) opened as is and checked to be one."""
    m = TENANT.match(ns_path)
    if m:
        return open_tenant(int(m.group(1)), m.group(2))
    fd = os.open(ns_path, flags | os.O_CLOEXEC)
    if _nstype(fd) != CLONE_NEWNET:
        os.close(fd)
        raise NamespaceRefused(f"{ns_path} is not a network namespace")
    return fd


def open_tenant(pid: int, vrf: str) -> int:
    """The descriptor of tenant namespace `vrf` of the node whose init process is `pid`, checked."""
    inside = f"/run/netns/{vrf}"
    if vrf in (".", "..") or "/" in vrf or "\0" in vrf:
        raise NamespaceRefused(f"{who(pid)}: {inside!r} is no tenant namespace name")
    try:
        fd = safeopen.open_under(f"/proc/{pid}/root", inside, safeopen.NO_LINKS, os.O_RDONLY | os.O_NONBLOCK)
    except safeopen.LinkRefused as e:
        raise NamespaceRefused(
            f"{who(pid)}: {inside}: {e.why}: not followed (a node is not trusted; a link "
            "there could lead twin into the host's or another node's namespace)"
        ) from None
    try:
        if _nstype(fd) != CLONE_NEWNET:
            raise NamespaceRefused(f"{who(pid)}: {inside} is not a network namespace (an nsfs file)")
        why = GUARD.foreign(pid, vrf, os.fstat(fd).st_ino)
        if why:
            raise NamespaceRefused(f"{who(pid)}: {inside} is {why}: not used (a node is not trusted)")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _nstype(fd: int) -> int:
    """The namespace type of nsfs file `fd` (CLONE_NEW*), 0 for any other file (the ioctl is asked of
    nsfs files only: a device planted there is never handed it)."""
    if os.fstat(fd).st_dev != os.stat("/proc/self/ns/net").st_dev:
        return 0
    try:
        return fcntl.ioctl(fd, NS_GET_NSTYPE)
    except OSError as e:
        if e.errno in (errno.ENOTTY, errno.EINVAL, errno.ENOSYS):
            return 0
        raise


def _ino(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


@dataclass
class Tables:
    """Who holds which network namespace on the host, read from /proc at `at`."""

    at: float = 0.0
    procs: dict[int, set[tuple[int, int]]] = field(default_factory=dict)  # netns -> {(pid ns, a pid in it)}
    mounts: dict[int, set[tuple[int, str, int]]] = field(default_factory=dict)  # netns -> {(mount ns, where, a pid)}

    @classmethod
    def read(cls) -> "Tables":
        t, mnt_seen = cls(at=time.monotonic()), set()
        for p in (d for d in os.listdir("/proc") if d.isdigit()):
            net, pidns, mnt = (_ino(f"/proc/{p}/ns/{k}") for k in ("net", "pid", "mnt"))
            if net is None or pidns is None or mnt is None:
                continue  # gone meanwhile
            t.procs.setdefault(net, set()).add((pidns, int(p)))
            if mnt not in mnt_seen:
                mnt_seen.add(mnt)
                for ino, where in _nsfs_mounts(p):
                    t.mounts.setdefault(ino, set()).add((mnt, where, int(p)))
        return t


_NSFS = re.compile(r"^\S+ \S+ \S+ net:\[(\d+)\] (\S+) .* - nsfs ")


def _nsfs_mounts(pid: str) -> list[tuple[int, str]]:
    """The network namespaces mounted in `pid`'s mount namespace, and where (as that process sees it)."""
    try:
        with open(f"/proc/{pid}/mountinfo", encoding="utf-8", errors="replace") as f:
            return [(int(m.group(1)), m.group(2).encode().decode("unicode_escape")) for m in map(_NSFS.match, f) if m]
    except OSError:
        return []


class Guard:
    """The checks of step 2, with the verdicts and tables a process keeps."""

    def __init__(self) -> None:
        self.tables = Tables()
        self.passed: set[tuple[int, str, int]] = set()  # (node pid, vrf, namespace inode) found its own

    def foreign(self, pid: int, vrf: str, ino: int) -> str:
        """ "" when namespace `ino`, found at the node's /run/netns/<vrf>, is that tenant's own; else what it is."""
        if (pid, vrf, ino) in self.passed:
            return ""
        host = "the host's network namespace"  # the first one, pid 1's where twin may read it, twin's own
        for known_ino, what in (
            (INIT_NET, host),
            (_ino("/proc/1/ns/net"), host),
            (_ino("/proc/self/ns/net"), f"{host} (twin's own)"),
            (_ino(f"/proc/{pid}/ns/net"), f"the node's own network namespace, not tenant {vrf}'s"),
        ):
            if ino == known_ino:
                return what
        node_pidns, node_mnt = _ino(f"/proc/{pid}/ns/pid"), _ino(f"/proc/{pid}/ns/mnt")
        host_pidns = _ino("/proc/self/ns/pid")  # twin's: processes of the host (twin's own helpers among them)
        asked = time.monotonic()
        if asked - self.tables.at > TABLES_FOR or ino not in self.tables.mounts:
            self.tables = Tables.read()
        why = self._judge(ino, vrf, node_pidns, node_mnt, host_pidns)
        if why and self.tables.at < asked:  # refused on tables read before: the kernel reuses a freed namespace's
            self.tables = Tables.read()  # inode (a stopped node's holding namespace, removed as it started
            why = self._judge(ino, vrf, node_pidns, node_mnt, host_pidns)  # again): refused on what is there now
        if not why:
            self.passed.add((pid, vrf, ino))
        return why

    def _judge(self, ino: int, vrf: str, node_pidns: int | None, node_mnt: int | None, host_pidns: int | None) -> str:
        others = sorted(p for pidns, p in self.tables.procs.get(ino, ()) if pidns not in (node_pidns, host_pidns))
        if others:
            return f"the network namespace of another container (host pid {others[0]})"
        places = self.tables.mounts.get(ino, set())
        elsewhere = sorted((p, w) for mnt, w, p in places if mnt != node_mnt)
        if elsewhere:
            p, w = elsewhere[0]
            there = who(p) if p in NAMES else f"the mounts of host pid {p}"
            return f"a namespace mounted outside the node too: at {w} in {there} (another node's, or the host's)"
        twins = sorted(w for _, w, _ in places if w != f"/run/netns/{vrf}")
        if twins:
            return f"the same namespace as {twins[0]} in the node (another tenant's)"
        return ""


GUARD = Guard()
