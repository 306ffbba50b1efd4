"""Admission by CPU: will a lab converge on this host within its deadline, and which BGP timers
keep its sessions alive while it comes up.

What bounds a large lab on a small host is CPU, not memory or kernel tables (issue 28: an 8 x 248
Clos on 2 cores never converged, its sessions kept expiring). Before `twin up` creates anything,
`ensure` adds the lab's cost to what the host does now and refuses, with the numbers and what
would fit, a lab that cannot converge within its deadline:

- cost: FRR CPU-seconds from start to convergence, `CPU_PER_ROUTER` per FRR node (its daemons
  starting, reading their config) plus `CPU_PER_LINK_ROUTE` per fabric link per router (every
  session carries every router's loopback, both ways), measured by `make bench` and
  `make bench-large` (docs/performance.md, "How large a lab this machine holds");
- host: its cores (`TWIN_CPUS` overrides the count, for a host whose labs get fewer cores than
  it has, or to rehearse a smaller one), less what other work (other labs, other processes, not
  this twin) kept busy in a short window, never below `MIN_SHARE` of them;
- time: cost / free cores, against the barrier's deadline (60 s + 1 s per FRR node once the
  nodes are wired), or with containers and links (`HOST_CPU_PER_NODE`) against a `--timeout`,
  which is the whole command's, from its start. Bring-up time is CPU-bound on such a host, so
  this is the wait to expect.

Timers (`timers_for`): FRR's datacenter timers (keepalive 3 s, hold 9 s) hold while a host runs
at most `ROUTERS_PER_CORE` FRR nodes per free core during a bring-up; beyond, a bgpd waits for the
CPU longer than its peers wait for its keepalives, and sessions expire and start over. There the
rendered fabric sessions get keepalive 3k and hold 9k, k = ceil(nodes per free core /
ROUTERS_PER_CORE), at most keepalive 60 and hold 180 (BGP's customary values). Your own configs
keep their timers. twin renders no BFD.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from twin import kinds
from twin.base import timeouts
from twin.base.errors import TwinError
from twin.lifecycle import hostlimits
from twin.topology.model import BgpTimers, Fabric

# fitted (least squares of the relative error) to the FRR CPU-s of Clos labs measured by `make bench`,
# `make bench-large` and `make bench-compare` on a 2-core host since zebra's dataplane queue holds 10,000
# updates (docs/performance.md): 6 FRR nodes: 2, 24: 8, 48: 15, 128: 53, 256: 125-145 (the figures give 2,
# 8, 17, 53, 135); before that queue, zebra's spinning made 256 nodes cost 230-256 (the per-link term)
CPU_PER_ROUTER = 0.31  # FRR CPU-s per FRR node from start to convergence (quiet host)
CPU_PER_LINK_ROUTE = 0.00011  # ... and per fabric link per router of the lab
HOST_CPU_PER_NODE = 0.4  # the rest of a bring-up per FRR node: Docker, the kernel, twin (make bench-large:
# the host's CPU-s less FRR's, 0.31 at 48 nodes, 0.32 at 128, 0.39-0.53 at 256; 0.17, 0.21 and 0.25-0.30 since)
MIN_SHARE = 0.5  # a lab gets at least this share of the cores: the kernel shares them with other work
ROUTERS_PER_CORE = 32  # FRR nodes per free core that FRR's datacenter timers outlast in a bring-up
KEEPALIVE, HOLD, MAX_SCALE = 3, 9, 20


@dataclass(frozen=True)
class Host:
    """The CPU a lab can have now."""

    cores: float  # cores labs run on (TWIN_CPUS, else the machine's)
    busy: float  # cores kept busy by other work over the sampled window (not this twin)
    load1: float  # 1-minute load average, for the record

    @property
    def free(self) -> float:
        return max(self.cores - self.busy, self.cores * MIN_SHARE)

    def __str__(self) -> str:
        return (
            f"{self.cores:g} core(s), {self.busy:.1f} busy with other work (load average {self.load1:.1f}): "
            f"{self.free:.1f} free"
        )


def cores() -> float:
    """Cores labs run on: TWIN_CPUS if set (a positive number), else the machine's."""
    given = os.environ.get("TWIN_CPUS", "").strip()
    if given:
        try:
            n = float(given)
        except ValueError:
            n = 0.0
        if not (n > 0 and math.isfinite(n)):
            raise TwinError(f"TWIN_CPUS={given!r}: expected a positive number of cores, e.g. 2 or 1.5")
        return n
    return float(os.cpu_count() or 1)


class CpuWatch:
    """CPU the host spends on other work from now until `host()`: /proc/stat's busy time less this
    process's own (and its children's)."""

    def __init__(self) -> None:
        self.t0, self.stat0, self.own0 = time.monotonic(), _stat(), _own()

    def host(self, window: float = 0.3) -> Host:
        left = window - (time.monotonic() - self.t0)
        if left > 0:
            time.sleep(left)  # the measurement's own window: a shorter one says nothing
        (busy1, total1), (busy0, total0) = _stat(), self.stat0
        wall = time.monotonic() - self.t0
        machine = os.cpu_count() or 1
        busy = machine * (busy1 - busy0) / max(1, total1 - total0) - (_own() - self.own0) / wall
        load1 = float(Path("/proc/loadavg").read_text().split()[0])
        return Host(cores(), round(min(max(busy, 0.0), cores()), 2), load1)


def _stat() -> tuple[int, int]:
    v = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return sum(v) - v[3] - v[4], sum(v)  # all but idle and iowait; everything


def _own() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


# --- the estimate (pure) ----------------------------------------------------------------------
def frr_nodes(fabric: Fabric) -> int:
    return sum(1 for n in fabric.nodes.values() if kinds.of(n).runs_frr)


def cost(fabric: Fabric) -> float:
    """FRR CPU-seconds the lab takes from start to convergence, on a quiet host."""
    links = len(fabric.sessions()) // 2
    return CPU_PER_ROUTER * frr_nodes(fabric) + CPU_PER_LINK_ROUTE * links * len(fabric.routers())


def timers_for(routers: int, free: float) -> BgpTimers | None:
    """BGP timers for `routers` FRR nodes on `free` cores (None: FRR's datacenter defaults)."""
    k = min(MAX_SCALE, math.ceil(routers / max(free, 1e-3) / ROUTERS_PER_CORE))
    return BgpTimers(keepalive=KEEPALIVE * k, hold=HOLD * k) if k > 1 else None


@dataclass(frozen=True)
class Estimate:
    lab: str
    routers: int  # FRR nodes
    links: int  # fabric links (BGP sessions / 2)
    cpu_s: float
    host: Host
    deadline: float  # the barrier's, or with `whole` the bring-up's (a --timeout: from the command's start)
    timers: BgpTimers | None
    fewer: int = field(default=0)  # FRR nodes of this shape that would fit (0: not worked out)
    whole: bool = False

    @property
    def seconds(self) -> float:
        return self.cpu_s / self.host.free

    @property
    def fits(self) -> bool:
        return (self.total_s if self.whole else self.seconds) <= self.deadline

    @property
    def total_s(self) -> float:
        """The whole bring-up, containers and wiring too: every CPU-second of it on the free cores."""
        return (self.cpu_s + HOST_CPU_PER_NODE * self.routers) / self.host.free

    def figures(self) -> str:
        return (
            f"FRR needs ~{self.cpu_s:.0f} CPU-s for {self.routers} FRR nodes and {self.links} links "
            f"({CPU_PER_ROUTER:g} per node + {CPU_PER_LINK_ROUTE:g} per link per router); this host has "
            f"{self.host}, so ~{self.seconds:.0f} s to converge (~{self.total_s:.0f} s with containers and links)"
        )

    def timers_text(self) -> str:
        per = self.routers / self.host.free
        return (
            f"BGP timers {self.timers} ({per:.0f} FRR nodes per free core > {ROUTERS_PER_CORE})"
            if self.timers
            else f"BGP timers keepalive {KEEPALIVE} s, hold {HOLD} s (FRR's datacenter defaults)"
        )

    def advice(self) -> list[str]:
        """What would fit: fewer nodes, a longer deadline, more cores."""
        out = [f"at most ~{self.fewer} FRR nodes of this shape"] if self.fewer else []
        out.append(f"a longer deadline (`--timeout {math.ceil(self.total_s * 1.2 / 10) * 10}`, for the whole bring-up)")
        out.append(f"{math.ceil(self.host.busy + self.cpu_s / self.deadline)} cores")
        return out

    def refusal(self) -> str:
        whose = " (--timeout, from the command's start)" if self.whole else ""
        return (
            f"lab {self.lab!r} would not converge on this host within its deadline: {self.figures()}, "
            f"beyond the deadline of {self.deadline:.0f} s{whose}; what would: " + ", or ".join(self.advice())
        )

    def to_dict(self) -> dict:
        return {
            **asdict(self),
            "seconds": round(self.seconds, 1),
            "total_s": round(self.total_s, 1),
            "fits": self.fits,
            "free_cores": self.host.free,
            "timers": self.timers.model_dump() if self.timers else None,
        }


def fewer(fabric: Fabric, free: float, deadline: float, whole: bool = False) -> int:
    """FRR nodes a lab of the same shape (links in proportion) may have to fit: a R s + c L R s^2 = D f
    (a: per FRR node, and the rest of a bring-up's per node with `whole`)."""
    r, links, routers = frr_nodes(fabric), len(fabric.sessions()) // 2, len(fabric.routers())
    a = (CPU_PER_ROUTER + (HOST_CPU_PER_NODE if whole else 0)) * r
    q, budget = CPU_PER_LINK_ROUTE * links * routers, deadline * free
    s = budget / a if not q else (-a + math.sqrt(a * a + 4 * q * budget)) / (2 * q)
    return max(0, math.floor(r * min(s, 1.0)))


def estimate(fabric: Fabric, host: Host, timeout: float | None = None, whole: bool = False) -> Estimate:
    """`whole`: `timeout` is the whole bring-up's (a --timeout), not the barrier's."""
    r = frr_nodes(fabric)
    deadline = timeout if timeout is not None else timeouts.converge(r)
    est = Estimate(
        fabric.name,
        r,
        len(fabric.sessions()) // 2,
        round(cost(fabric), 1),
        host,
        deadline,
        timers_for(r, host.free),
        whole=whole,
    )
    return est if est.fits else replace(est, fewer=fewer(fabric, host.free, deadline, whole))


# --- admission -------------------------------------------------------------------------------
class NotAdmitted(TwinError):
    """`twin up` refused: the host's kernel limits or its CPU cannot take the lab. Nothing was created."""

    def __init__(self, lab: str, short: list[hostlimits.Shortfall], est: Estimate, setup_ran: bool = False):
        self.shortfalls, self.estimate, self.fix = short, est, hostlimits.fix_command(short, setup_ran)
        parts = [hostlimits.refusal(lab, short, setup_ran)] if short else []
        if not est.fits:
            parts.append(est.refusal() + ("" if short else "; nothing was created"))
        super().__init__("; and ".join(parts))

    def to_dict(self) -> dict:
        return {"shortfalls": [s.to_dict() for s in self.shortfalls], "fix": self.fix, "cpu": self.estimate.to_dict()}


def ensure(fabric: Fabric, host: Host, timeout: float | None = None, whole: bool = False) -> Estimate:
    """The lab's estimate, or NotAdmitted (one line with every number) when the host cannot take it."""
    settings = hostlimits.host_settings()
    short = hostlimits.check(fabric, hostlimits.host_usage(), settings) if settings else []
    est = estimate(fabric, host, timeout, whole)
    if short or not est.fits:
        raise NotAdmitted(fabric.name, short, est, setup_ran=Path(hostlimits.SYSCTL_FILE).exists())
    return est
