"""Host-wide kernel limits a lab consumes, and the host-level causes of a lab that does not converge.

Every network namespace on a host shares some kernel limits: the IPv4 ARP and IPv6 ND
neighbour tables (`net.ipv{4,6}.neigh.default.gc_thresh1/2/3`), inotify instances, pids.
This module owns:
- the demand formula: what a fabric takes from those limits, per node and per link, as
  measured on FRR 10.3 and kernel 6.18 (docs/host-settings.md);
- `check(fabric, running_usage, settings)`: the lab's demand (or what `twin apply` adds to a
  running lab) plus what the host uses now against the host's settings, as Shortfalls with the
  numbers; `ensure` runs it before a growing `apply`, `twin.lifecycle.admission` before `up`;
- `host_causes(lab, since, containers)`: what the convergence barrier names first on a
  timeout (neighbour table overflow and OOM kills in the kernel log, containers killed for
  memory, dead FRR daemons, an overloaded host). Pure computation comes first; what reads the
  host (/proc, /sys, /dev/kmsg, Docker, a node's files through twin.runtime.nodefs) follows.
"""

from __future__ import annotations

import itertools
import os
import re
import time
from dataclasses import asdict, dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Mapping

from twin import kinds
from twin.base.errors import TwinError
from twin.intent import generic
from twin.runtime import FRR_DAEMONS, NodeFileError, NodeHandle, node_file_exists, read_node_file
from twin.topology.model import Fabric, Tenant

# --- demand per node, measured (neighbour entries counted in every namespace of converged labs) ----
# The kernel caps the entries its collector may remove (gc_thresh2/3); PERMANENT and extern_learn
# entries are exempt from that count but count towards gc_thresh1, below which nothing is collected.
ND_PER_FABRIC_PORT = 5  # the peer's link-local address (BGP unnumbered) + ff02::1, ff02::16 and two
# solicited-node groups (NOARP); measured 3.2-4.4 per port, 5 at most
ARP_PER_FABRIC_PORT = 1  # zebra's 169.254.0.1 next hop (RFC 5549), PERMANENT: exempt from gc
ND_PER_TENANT_DEVICE = 3  # ff02::2, ff02::16, a solicited-node group on each device of a tenant namespace
TASKS_PER_FRR_NODE = 32  # FRR's daemons and threads (17) + the node's containerd shim (12): measured 29
TASKS_PER_HOST = 14  # docker-init, sleep + shim
MIB_PER_FRR_NODE = 40  # host MemAvailable drop per FRR node, kernel too: 38-40 (make bench, 96/128 nodes)
MIB_PER_HOST = 2
SETUP = Path(str(resources.files("twin.lifecycle") / "host-setup.sh"))  # installs Docker, raises the limits
SYSCTL_FILE = "/etc/sysctl.d/60-twin.conf"


@dataclass(frozen=True)
class Demand:
    """What a lab takes from host-wide limits."""

    arp_gc: int = 0  # IPv4 neighbour entries the collector counts (gc_thresh2/3)
    arp_all: int = 0  # every IPv4 entry, PERMANENT and extern_learn ones too (reported, not judged)
    nd_gc: int = 0  # IPv6 neighbour entries (all of them are counted)
    inotify: int = 0  # inotify instances: zebra -n watches /run/netns on every VTEP
    tasks: int = 0  # pids: processes and threads
    mem_mib: int = 0

    def __add__(self, o: "Demand") -> "Demand":
        return Demand(*(getattr(self, f.name) + getattr(o, f.name) for f in fields(self)))


def vtep_tenant_demand(t: Tenant, vtep: str) -> Demand:
    """One tenant on one VTEP: its namespace's devices, multicast groups, bindings and EVPN neighbours."""
    segs = t.segments_on(vtep)
    local = [a for a in t.attachments if a.vtep == vtep]
    names = {s.name for s in segs}
    remote_hosts = [a for a in t.attachments if a.vtep != vtep and a.segment in names]
    devices = 2 + 2 * len(segs) + len(local)  # L3VNI bridge + VXLAN, per segment bridge + VXLAN, host ports
    arp_gc = 1 + 2 * len(segs)  # IGMP 224.0.0.22 per bridge, one unresolved probe per segment
    # PERMANENT bindings of local hosts (issue 18); remote VTEPs' router MACs and remote hosts: extern_learn
    exempt = len(local) + len(t.vteps()) - 1 + len(remote_hosts)
    return Demand(arp_gc=arp_gc, arp_all=arp_gc + exempt, nd_gc=ND_PER_TENANT_DEVICE * devices)


def node_demand(fabric: Fabric, name: str) -> Demand:
    node = fabric.nodes[name]
    if kinds.of(node).endpoint:  # a workload: ARP for its gateway and for each host of its segment
        found = fabric.attachment_of(name)
        peers = sum(1 for a in found[0].attachments if a.segment == found[1].segment) if found else 0
        return Demand(arp_gc=peers, arp_all=peers, tasks=TASKS_PER_HOST, mem_mib=MIB_PER_HOST)
    ports = len([p for p in node.ports if p.role != "access"])
    d = Demand(
        arp_all=ARP_PER_FABRIC_PORT * ports,
        nd_gc=ND_PER_FABRIC_PORT * ports,
        tasks=TASKS_PER_FRR_NODE,
        mem_mib=MIB_PER_FRR_NODE,
    )
    tenants = fabric.tenants_on(name)
    for t in tenants:
        d += vtep_tenant_demand(t, name)
    return d + Demand(inotify=1 if tenants else 0)


def demand(fabric: Fabric) -> Demand:
    return sum((node_demand(fabric, name) for name in fabric.nodes), Demand())


# --- the check -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Usage:
    """What the host uses now, all labs and everything else together."""

    arp: int = 0  # IPv4 neighbour entries (/proc/net/stat/arp_cache; counts exempt ones too)
    nd: int = 0  # IPv6 neighbour entries (/proc/net/stat/ndisc_cache)
    inotify: int = 0  # inotify instances, every user's
    tasks: int = 0  # threads (/proc/loadavg)
    mem_available_mib: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Rule:
    setting: str
    demand: str  # Demand field
    usage: str  # Usage field
    why: str


RULES = (
    Rule(
        "net.ipv6.neigh.default.gc_thresh3",
        "nd_gc",
        "nd",
        "IPv6 neighbours beyond it are never created: BGP-unnumbered sessions stay down",
    ),
    Rule("net.ipv6.neigh.default.gc_thresh2", "nd_gc", "nd", "beyond it the kernel flushes IPv6 neighbours every 5 s"),
    Rule("net.ipv4.neigh.default.gc_thresh3", "arp_gc", "arp", "IPv4 neighbours beyond it are never created"),
    Rule(
        "net.ipv4.neigh.default.gc_thresh2", "arp_gc", "arp", "beyond it the kernel flushes IPv4 neighbours every 5 s"
    ),
    Rule("fs.inotify.max_user_instances", "inotify", "inotify", "zebra on a VTEP (netns VRFs) needs one"),
    Rule("kernel.pid_max", "tasks", "tasks", "every process and thread takes a pid"),
    Rule("kernel.threads-max", "tasks", "tasks", "every process and thread counts"),
)
MEMORY = "MemAvailable (MiB)"


@dataclass(frozen=True)
class Shortfall:
    """One host setting (or memory) below what the labs need."""

    setting: str
    have: int
    need: int  # lab + running
    lab: int  # this lab's demand
    running: int  # what the host uses now
    why: str

    def __str__(self) -> str:
        used = f"{self.lab} for this lab + {self.running} in use now; " if self.setting != MEMORY else ""
        return f"{self.setting} = {self.have} < {self.need} needed ({used}{self.why})"

    def to_dict(self) -> dict:
        return asdict(self)


def check(
    fabric: Fabric, running_usage: Usage, settings: Mapping[str, int], grown_from: Fabric | None = None
) -> list[Shortfall]:
    """Every setting the host is short of for this lab (with `grown_from`, the running lab `twin
    apply` grows: what it takes beyond it) on top of what runs now (pure; unreadable ones not judged)."""
    need, out = demand(fabric), []
    if grown_from is not None:  # what the running lab takes is in `running_usage` already
        need = Demand(*(max(0, getattr(need, f.name) - getattr(demand(grown_from), f.name)) for f in fields(need)))
    for r in RULES:
        have = settings.get(r.setting)
        if have is None:
            continue
        lab, running = getattr(need, r.demand), getattr(running_usage, r.usage)
        if lab + running > have:
            out.append(Shortfall(r.setting, have, lab + running, lab, running, r.why))
    if running_usage.mem_available_mib and need.mem_mib > running_usage.mem_available_mib:
        out.append(
            Shortfall(
                MEMORY,
                running_usage.mem_available_mib,
                need.mem_mib,
                need.mem_mib,
                0,
                f"~{MIB_PER_FRR_NODE} MiB per FRR node; free memory or run a smaller lab",
            )
        )
    return out


def fix_command(short: list[Shortfall], setup_ran: bool = False) -> str:
    """The commands that raise the settings found short: the host setup (unless it ran already),
    or sysctl -w right now."""
    now = " ".join(f"{s.setting}={1 << (s.need - 1).bit_length()}" for s in short if s.setting != MEMORY)
    if not now:
        return ""
    if setup_ran or not SETUP.exists():
        return f"fix: `sudo sysctl -w {now}` (to keep it, in {SYSCTL_FILE})"
    return f"fix: `sudo {SETUP}` (persistent, in {SYSCTL_FILE}) or, for now, `sudo sysctl -w {now}`"


def refusal(lab: str, short: list[Shortfall], setup_ran: bool = False) -> str:
    """One line: every shortfall with its numbers, then the command that fixes them."""
    fix = fix_command(short, setup_ran)
    return (
        f"host limits too low for lab {lab!r}, nothing was created: "
        + "; ".join(map(str, short))
        + (f"; {fix}" if fix else "")
    )


class HostLimitsShort(TwinError):
    """`twin up` refused: the host's kernel limits cannot hold the lab. Nothing was created."""

    def __init__(self, lab: str, shortfalls: list[Shortfall], setup_ran: bool = False):
        self.shortfalls, self.fix = shortfalls, fix_command(shortfalls, setup_ran)
        super().__init__(refusal(lab, shortfalls, setup_ran))

    def to_dict(self) -> dict:
        return {"shortfalls": [s.to_dict() for s in self.shortfalls], "fix": self.fix}


# --- host-level causes of a timeout, from what was read ---------------------------------------------
OVERFLOW = re.compile(r"(arp_cache|ndisc_cache): neighbor table overflow")
OOM = re.compile(r"Killed process \d+ \(([^)]+)\)")
ATOMIC = re.compile(r"percpu: allocation failed, .*atomic=1")  # the kernel's atomic per-CPU reserve ran out
TABLES = {
    "arp_cache": ("IPv4", "net.ipv4.neigh.default.gc_thresh3"),
    "ndisc_cache": ("IPv6", "net.ipv6.neigh.default.gc_thresh3"),
}
SETTLE_S = 5.0  # FRR starts its daemons, then watchfrr: give a start this long before judging it
OVERLOAD = 4.0  # runnable tasks per core (1-minute load average) beyond which FRR's timers slip


def load_causes(load1: float, cores: int) -> list[str]:
    """An overloaded host (pure): FRR answers late, BGP hold timers expire, convergence drags."""
    return (
        [
            f"host: load average {load1:.1f} on {cores} cores: FRR runs late, sessions may reset; "
            "`--timeout` gives the lab longer, fewer labs at once make it faster"
        ]
        if load1 > OVERLOAD * cores
        else []
    )


def kernel_log_causes(messages: list[str], usage: Usage, settings: Mapping[str, int], lab: str = "") -> list[str]:
    """Neighbour table overflows and out-of-memory kills among kernel messages (pure)."""
    causes = []
    for table, (family, setting) in TABLES.items():
        n = sum(1 for m in messages if OVERFLOW.search(m) and table in m)
        if n:
            now = usage.nd if family == "IPv6" else usage.arp
            causes.append(
                f"kernel: {family} neighbour table overflow ({n} messages, rate-limited, since lab {lab} "
                f"started; host-wide: {now} entries now, {setting} = {settings.get(setting, '?')}): "
                f"new neighbours fail, BGP-unnumbered sessions stay down; "
                + (f"`sudo {SETUP}` raises it" if SETUP.exists() else f"raise {setting}")
            )
    atomic = sum(1 for m in messages if ATOMIC.search(m))
    if atomic:
        causes.append(
            f"kernel: {atomic} atomic per-CPU allocation(s) failed since lab {lab} started (its reserve ran out "
            "while many ports came up at once): a route or address the kernel adds by itself may be missing "
            "(twin adds each fabric port's fe80::/64 itself; a port's own link-local address it cannot); "
            f"`twin fault link-down {lab or 'LAB'} NODE:PORT`, then `link-up`, of a session named above makes the "
            "kernel add them again"
        )
    killed = [m.group(1) for m in map(OOM.search, messages) if m]
    if killed:
        causes.append(
            f"kernel: out of memory, {len(killed)} process(es) killed since lab {lab} started "
            f"({', '.join(sorted(set(killed)))})"
        )
    return causes


def missing_daemons(running: Mapping[str, float], watched: list[str] | None, enabled: list[str]) -> list[str]:
    """FRR daemons of a node that should run and do not (pure). `running`: process name -> age (s);
    `watched`: what watchfrr watches, if it runs; `enabled`: from the node's daemons file."""
    frr = [age for name, age in running.items() if name in enabled or name == "watchfrr"]
    if not frr or max(frr) < SETTLE_S:  # FRR not started (yet), or still starting
        return []
    expected = watched if watched is not None else [*enabled, "watchfrr"]
    return sorted(set(expected) - set(running))


def daemons_enabled(daemons_file: str, has_mgmtd: bool) -> list[str]:
    """Daemons FRR's init script starts: zebra (and mgmtd on FRR 10) always, `xd=yes` ones, and
    staticd unless the file says `staticd=no` (twin's image lets that count; stock FRR does not)."""
    static = [] if re.search(r"^\s*staticd\s*=\s*no\b", daemons_file, re.M) else ["staticd"]
    return sorted({*static, *(["mgmtd"] if has_mgmtd else []), *generic.daemons_enabled(daemons_file)})


# --- reading the host -------------------------------------------------------------------------------
def host_settings() -> dict[str, int]:
    """The host's values of every setting the check judges; those not readable here are left out
    (the neighbour thresholds are visible in the host's network namespace only)."""
    out = {}
    for name in (r.setting for r in RULES):
        try:
            out[name] = int((Path("/proc/sys") / name.replace(".", "/")).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return out


def table_entries(table: str) -> int:
    """Entries of a neighbour table, host-wide (first column of /proc/net/stat/<table>, hex)."""
    return int(Path(f"/proc/net/stat/{table}").read_text().splitlines()[1].split()[0], 16)


def inotify_instances() -> int:
    """inotify instances open on the host, every process's (a readlink per open file)."""
    n = 0
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            n += sum(1 for fd in os.scandir(fd_dir) if os.readlink(fd.path) == "anon_inode:inotify")
        except OSError:
            continue  # gone, or not ours to read
    return n


def host_usage() -> Usage:
    """What the host uses now: neighbour entries of every lab and namespace, inotify, threads, memory."""
    tasks = int(Path("/proc/loadavg").read_text().split()[3].split("/")[1])
    mem = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return Usage(
        arp=table_entries("arp_cache"),
        nd=table_entries("ndisc_cache"),
        inotify=inotify_instances(),
        tasks=tasks,
        mem_available_mib=int(mem["MemAvailable"].split()[0]) // 1024,
    )


def ensure(fabric: Fabric, grown_from: Fabric | None = None) -> None:
    """Refuse (HostLimitsShort, one line with the numbers) when the host cannot hold the lab (`check`)."""
    settings = host_settings()
    short = check(fabric, host_usage(), settings, grown_from) if settings else []
    if short:
        raise HostLimitsShort(fabric.name, short, setup_ran=Path(SYSCTL_FILE).exists())


def kernel_messages(since: float) -> list[str]:
    """Kernel log messages since `since` (time.monotonic(): the kernel log's clock), from /dev/kmsg."""
    out: list[str] = []
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return out
    try:
        while True:
            try:
                head, _, text = os.read(fd, 8192).decode(errors="replace").partition(";")
            except BrokenPipeError:  # overwritten while reading: go on with the next record
                continue
            except OSError:  # BlockingIOError: read to the end
                return out
            stamp = head.split(",")[2:3]  # priority,sequence,microseconds,flags
            if stamp and stamp[0].isdigit() and int(stamp[0]) >= (since - 1.0) * 1e6:
                out.append(text.strip())
    finally:
        os.close(fd)


def cgroup_dir(pid: int, controller: str) -> Path | None:
    """A process's cgroup directory for `controller` (cgroup v1), or its unified one (v2)."""
    unified = None
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return Path("/sys/fs/cgroup") / controllers / path.lstrip("/")
        if controllers == "":
            unified = path.lstrip("/")
    if unified is not None and Path("/sys/fs/cgroup/cgroup.controllers").exists():
        return Path("/sys/fs/cgroup") / unified
    return None


def oom_kills(pid: int) -> int:
    """Processes the kernel killed for lack of memory in this process's cgroup."""
    d = cgroup_dir(pid, "memory")
    for f in [d / "memory.events", d / "memory.oom_control"] if d else []:  # v2, v1
        try:
            return int(dict((k, v) for k, v in (ln.split() for ln in f.read_text().splitlines())).get("oom_kill", 0))
        except (OSError, TypeError, ValueError):
            continue
    return 0


def processes(pid: int) -> dict[str, tuple[float, list[str]]]:
    """Processes in the container of `pid`: name -> (age in s, argv), from its cgroup."""
    d = cgroup_dir(pid, "pids")
    now, hz = float(Path("/proc/uptime").read_text().split()[0]), os.sysconf("SC_CLK_TCK")
    out = {}
    for p in (d / "cgroup.procs").read_text().split() if d else []:
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
            argv = Path(f"/proc/{p}/cmdline").read_text().split("\0")
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        out[name] = (now - int(rest[19]) / hz, [a for a in argv if a])
    return out


def dead_daemons(pid: int, node: str) -> tuple[list[str], bool]:
    """FRR daemons of the node that should run and do not; and whether watchfrr runs (nodefs: no link followed)."""
    procs = processes(pid)
    if (text := read_node_file(pid, FRR_DAEMONS, node)) is None:
        return [], "watchfrr" in procs
    enabled = daemons_enabled(text, node_file_exists(pid, "/usr/lib/frr/mgmtd", node))
    w = procs.get("watchfrr")
    watched = [a for a in w[1][1:] if not a.startswith("-") and a in enabled] if w else None
    return missing_daemons({n: age for n, (age, _) in procs.items()}, watched, enabled), w is not None


def container_causes(node: str, c: NodeHandle) -> list[str]:
    """A node's container that stopped, was killed for memory, or lost FRR daemons."""
    st = c.state()
    causes = [f"{node}: out of memory (Docker: OOMKilled)"] if st.get("OOMKilled") else []
    if not st.get("Running"):
        return causes + [f"{node}: container {st.get('Status')} (exit code {st.get('ExitCode')})"]
    pid, killed = st["Pid"], oom_kills(st["Pid"])
    causes += [f"{node}: out of memory: {killed} process(es) killed in its container"] if killed else []
    try:
        dead, watching = dead_daemons(pid, node)
    except NodeFileError as e:  # what the node did to its files is a cause too
        return causes + [str(e)]
    if dead:
        causes.append(
            f"{node}: FRR {', '.join(dead)} not running"
            + (", watchfrr is restarting it?" if watching else ": nothing restarts it (watchfrr is gone)")
        )
    return causes


def host_causes(lab_name: str, since: float, containers: Mapping[str, NodeHandle], until: float = 1e18) -> list[str]:
    """Host-level causes the barrier sees when `lab_name` did not converge: the kernel log since `since`, each
    node's container until `until` (monotonic); never raises (a cause it cannot read in time it does not name)."""
    try:
        causes = kernel_log_causes(kernel_messages(since), host_usage(), host_settings(), lab_name)
        causes += load_causes(float(Path("/proc/loadavg").read_text().split()[0]), os.cpu_count() or 1)
    except OSError:
        causes = []
    for node, c in itertools.takewhile(lambda _: time.monotonic() < until, sorted(containers.items())):
        try:
            causes += container_causes(node, c)
        except (TwinError, OSError, KeyError, ValueError):  # gone while read (NodeGone): nothing to name
            continue
    return causes
