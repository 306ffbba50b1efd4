"""`make bench-large`: the largest labs this machine holds, brought up as a CI job would (issues 28, 35).
Not part of `make bench`: it loads the whole machine for ~20 minutes, and takes the host's e2e lock
(tests/e2e/conftest.py), so the test suites and benchmarks of other checkouts wait for it.

Each run is `twin up` of an eBGP Clos (`--sizes`: FRR nodes, 8 spines; a size given three times
runs three times, each lab brought up afresh), started as a command with its stdout and stderr
going to a file (not a terminal): admission decides, and a refused lab runs again with the
deadline the refusal names (`--timeout`, as a user who accepts the wait would). Its progress
lines are counted in that file (the longest silence between two of them, and the stages seen).
Then, on the converged lab: what one barrier round over every router costs (raw dumps, as the
barrier reads now, and pyroute2's reading before issue 35, for comparison), FRR's CPU-seconds
(the lab's cgroups) and the host's (every process, /proc/stat), memory per FRR node and the
host's `MemAvailable` drop, sessions that dropped after they were Established (FRR's
connectionsDropped summed over every router), `twin down`, and the 1-minute load average before
and after, and the nodes whose FRR boot stalled and was booted again (issue 46). `--loaded` adds a
8 x 120 brought up while an 8 x 56 comes up beside it (issue 28). `--beside-default` (three 256s by
default) runs its sizes with the default lab (aipod, as `make twin-up` leaves it: up and
converged) running beside them, as a user's laptop has it (issue 46: 256 FRR nodes under 180 s,
three runs quiet and three so).

Printed as a table, then as Markdown rows for docs/performance.md; bench-results/large.json keeps
every figure.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from run import MiB, clos, cpu_seconds, load1, settle  # noqa: E402  (bench/run.py, beside this file)

from tests.e2e.conftest import host_turn  # noqa: E402
from twin.base.errors import TwinError  # noqa: E402
from twin.base.wait import Deadline  # noqa: E402
from twin.lab import Lab  # noqa: E402
from twin.lifecycle import admission, barrier, hostlimits, state  # noqa: E402
from twin.runtime import (  # noqa: E402
    FRR_SUMMARY,
    NetlinkHandles,
    node_memory,
    read_routes,
)

SPINES = 8
LINE = re.compile(r"^\[\s*(\d+)s\] [^:]+: (.*)$")


def topology(tmp: Path, spines: int, leafs: int, name: str) -> Path:
    doc = clos(spines, leafs) | {"name": name, "defaults": {"loopback_pool": "10.255.0.0/22"}}
    f = tmp / f"{name}.yml"
    f.write_text(yaml.safe_dump(doc))
    return f


def host_busy() -> float:
    """CPU-seconds every process on the host has used since boot (/proc/stat, all but idle and iowait)."""
    v = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def dropped(lab: Lab) -> int:
    """Sessions that dropped after they were Established, summed over every router (FRR's counters)."""

    def one(node: str) -> int:
        try:
            (doc,) = lab.node(node).vtysh_json(FRR_SUMMARY, timeout=60)
        except TwinError:
            return 0
        return sum(int(p.get("connectionsDropped") or 0) for p in doc.get("peers", {}).values())

    with ThreadPoolExecutor(8) as pool:
        return sum(pool.map(one, [n.name for n in lab.fabric.routers()]))


def round_cost(lab: Lab, times: int = 3) -> dict:
    """Seconds one barrier round over every router takes on the converged lab (the median of
    `times`): as the barrier reads now, and as pyroute2 read each router's routes before."""
    ctx = lab.context()
    b = barrier.Barrier(ctx)
    raw, old = [], []
    with ThreadPoolExecutor(barrier.PARALLEL) as pool:
        for _ in range(times):
            t = time.monotonic()
            left = b.round(pool, b.nodes, Deadline.after(120))
            raw.append(time.monotonic() - t)
        with NetlinkHandles() as handles:
            for _ in range(times):
                t = time.monotonic()
                list(pool.map(lambda n: read_routes(handles.get(ctx.pid(n)), host_only=False), b.nodes))
                old.append(time.monotonic() - t)
    b.dumps.close()
    return {
        "round_ms": round(1000 * statistics.median(raw)),
        "round_pyroute2_ms": round(1000 * statistics.median(old)),
        "round_missing": sum(map(len, left.values())),
    }


def progress_of(log: str) -> dict:
    """The plain progress lines of a `twin up` off a terminal: how many, the longest silence, the stages."""
    at, said = [], []
    for line in log.splitlines():
        m = LINE.match(line)
        if m:
            at.append(int(m[1]))
            said.append(m[2])
    heads = []
    for s in said:
        head = s.split(":", 1)[0] if s.startswith(("starting:", "converging:")) else s.split(" ", 1)[0]
        if not heads or heads[-1] != head:
            heads.append(head)
    return {"lines": len(at), "max_gap_s": max((b - a for a, b in zip(at, at[1:])), default=None), "stages": heads}


def up(f: Path, name: str, timeout: float | None, log: Path) -> subprocess.CompletedProcess:
    """`twin up` as a command whose output goes to a file (not a terminal)."""
    args = [sys.executable, "-m", "twin.cli", "up", str(f), "--name", name]
    args += ["--timeout", f"{timeout:.0f}"] if timeout else []
    with open(log, "w") as out:
        return subprocess.run(args, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True, env=os.environ.copy())


def measure(label: str, f: Path, name: str, tmp: Path, timeout: float | None = None, beside: str = "") -> dict:
    lab = Lab.load(f, name=name)
    est = admission.estimate(lab.loaded, admission.CpuWatch().host(1.0), timeout, whole=timeout is not None)
    row = {
        "lab": label,
        "frr_nodes": len(lab.loaded.routers()),
        "links": len(lab.loaded.links),
        "sessions": len(lab.loaded.sessions()),
        "timeout": timeout,
        "beside": beside,
        "estimate": est.to_dict(),
        "load_before": load1(),
    }
    avail, busy0, t0 = hostlimits.host_usage().mem_available_mib, host_busy(), time.monotonic()
    log = tmp / f"{name}-{int(time.time())}.log"
    p = up(f, name, timeout, log)
    text = log.read_text()
    row |= {"command_s": round(time.monotonic() - t0, 1), "progress": progress_of(text)}
    if p.returncode != 0:
        error = next((line for line in text.splitlines() if line.startswith("error: ")), text.strip()[-300:])
        if "would not converge on this host" in error and "nothing was created" in error:
            return row | {"refused": error, "load_after": load1()}
        Lab(name).down()
        kept = ROOT / "bench-results" / f"large-failed-{log.name}"  # the whole output: what was missing, where
        kept.parent.mkdir(exist_ok=True)
        kept.write_text(text)
        return row | {"failed": f"{error} (whole output: {kept})", "after_s": row["command_s"], "load_after": load1()}
    try:
        host_cpu = host_busy() - busy0
        st, _ = state.load(state.labdir(name))
        timings = st.timings if st else {}
        containers = lab.runtime.containers(name)
        frr_nodes = [n.name for n in lab.loaded.routers()]
        mem = [m for m in (node_memory(containers[n]) for n in frr_nodes) if m is not None]
        row |= {
            "containers_s": round(timings["containers"], 1),
            "wired_s": round(timings["wired"], 1),
            "converged_s": round(timings["converged"], 1),
            "reloads": int(timings.get("frr_reboots", 0)),
            "frr_cpu_s": round(cpu_seconds([containers[n] for n in frr_nodes]) or 0, 1),
            "host_cpu_s": round(host_cpu, 1),
            "host_mib": avail - hostlimits.host_usage().mem_available_mib,
            "mib_avg": round(sum(m[0] for m in mem) / len(mem) / MiB, 1) if mem else None,
            "mib_max": round(max(m[0] for m in mem) / MiB, 1) if mem else None,
            "timers": str(Lab(name).context().fabric.timers or "keepalive 3 s, hold 9 s"),
            "load_after": load1(),
        }
        row |= round_cost(Lab(name))
        row["dropped"] = dropped(Lab(name))
    finally:
        t1 = time.monotonic()
        Lab(name).down()
        row["down_s"] = round(time.monotonic() - t1, 1)
    return row


def sized(tmp: Path, size: int, prefix: str) -> list[dict]:
    """One run of the Clos of `size` FRR nodes; refused, again with the deadline its refusal names."""
    name = f"{prefix}{size}"
    f = topology(tmp, SPINES, size - SPINES, name)
    label = f"clos {SPINES}x{size - SPINES}"
    settle()
    rows = [measure(label, f, name, tmp)]
    if "refused" in rows[-1]:
        m = re.search(r"--timeout (\d+)", rows[-1]["refused"])
        timeout = float(m[1]) if m else float(math.ceil(rows[-1]["estimate"]["total_s"] * 1.2 / 10) * 10)
        settle()
        rows.append(measure(f"{label}, --timeout {timeout:.0f}", f, name, tmp, timeout))
    return rows


def beside_default(tmp: Path, sizes: list[int], prefix: str) -> list[dict]:
    """Each size again, with the default lab up beside it all along (`make twin-up`'s aipod)."""
    settle()
    name, rows = f"{prefix}-aipod", []
    p = up(ROOT / "topologies" / "aipod.yml", name, None, tmp / f"{name}.log")
    if p.returncode != 0:
        raise SystemExit(f"the default lab beside the runs did not come up: {(tmp / f'{name}.log').read_text()[-500:]}")
    try:
        for size in sizes:
            for r in sized(tmp, size, prefix):
                rows.append(r | {"lab": f"{r['lab']}, beside aipod", "beside": "aipod (12 nodes, converged)"})
                show(rows[-1:])
    finally:
        Lab(name).down()
    return rows


def loaded(tmp: Path, prefix: str) -> dict:
    """clos 8x120 brought up while clos 8x56 comes up beside it (started 15 s earlier)."""
    other = Lab.load(topology(tmp, 8, 56, f"{prefix}o"))
    done: dict = {}

    def beside() -> None:
        try:
            done["timings"] = other.up(say=lambda m: None)
        except TwinError as e:
            done["error"] = str(e).splitlines()[0]

    t = threading.Thread(target=beside)
    t.start()
    try:
        time.sleep(15)  # the other lab's containers are starting and wiring: the host is busy
        row = measure(
            "clos 8x120, beside clos 8x56 coming up",
            topology(tmp, 8, 120, f"{prefix}l"),
            f"{prefix}l",
            tmp,
            beside="clos 8x56 (64 FRR nodes) started 15 s before",
        )
    finally:
        t.join()
        other.down()
    return row | {"beside_result": done.get("error") or f"converged in {done['timings']['converged']:.0f} s"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--sizes",
        default="48,128,256,256,256",
        help="FRR nodes of each run, 8 spines (a size given three times runs three times)",
    )
    ap.add_argument("--loaded", action="store_true", help="also 8 x 120 brought up beside an 8 x 56 coming up")
    ap.add_argument("--prefix", default="big", help="lab names start with this")
    ap.add_argument(
        "--beside-default",
        default="256,256,256",
        help="FRR nodes of each run with the default lab (aipod) up and converged beside it ('' for none)",
    )
    args = ap.parse_args()
    rows: list[dict] = []
    with host_turn("bench-large"), tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for size in (int(s) for s in args.sizes.split(",") if s.strip()):
            rows += sized(tmp, size, args.prefix)
            show(rows[-1:])
        if args.beside_default.strip():
            rows += beside_default(tmp, [int(s) for s in args.beside_default.split(",") if s.strip()], args.prefix)
        if args.loaded:
            settle()
            rows.append(loaded(tmp, args.prefix))
    show(rows)
    markdown(rows)
    out = ROOT / "bench-results"
    out.mkdir(exist_ok=True)
    (out / "large.json").write_text(json.dumps(rows, indent=2))
    return 0 if all("converged_s" in r or "refused" in r for r in rows) else 1


COLUMNS = (
    "lab",
    "estimate: FRR CPU-s / free cores = s (deadline)",
    "BGP timers",
    "containers (s)",
    "wired (s)",
    "converged (s)",
    "`twin up` (s)",
    "FRR booted again",
    "barrier round over all routers (ms): now / pyroute2",
    "progress lines off a terminal (longest silence s)",
    "CPU-s FRR / host",
    "MiB per FRR node avg/max",
    "host MiB",
    "sessions dropped",
    "`twin down` (s)",
    "load before/after",
)


def cells(r: dict) -> list[str]:
    e = r["estimate"]
    est = f"{e['cpu_s']:.0f} / {e['free_cores']:.1f} = {e['seconds']:.0f} ({e['deadline']:.0f})"
    pr = r.get("progress") or {}
    lines = f"{pr.get('lines', 0)} ({pr.get('max_gap_s')})"
    load = f"{r['load_before']:.1f}/{r['load_after']:.1f}"
    if "converged_s" not in r:
        what = "refused" if "refused" in r else f"FAILED after {r['after_s']} s"
        return [r["lab"], est, "-", "-", "-", what, f"{r['command_s']}", "-", "-", lines, "-", "-", "-", "-", "-", load]
    return [
        r["lab"],
        est,
        r["timers"],
        f"{r['containers_s']}",
        f"{r['wired_s']}",
        f"{r['converged_s']}",
        f"{r['command_s']}",
        str(r.get("reloads", "-")),
        f"{r['round_ms']:,} / {r['round_pyroute2_ms']:,}",
        lines,
        f"{r['frr_cpu_s']:.0f} / {r['host_cpu_s']:.0f}",
        f"{r['mib_avg']}/{r['mib_max']}",
        f"{r['host_mib']:,}",
        str(r["dropped"]),
        f"{r['down_s']}",
        load,
    ]


def show(rows: list[dict]) -> None:
    console = Console(width=260)
    t = Table(title="twin: the largest labs on this host", title_justify="left")
    for col in COLUMNS:
        t.add_column(col, justify="left" if col in ("lab", "BGP timers") else "right")
    for r in rows:
        t.add_row(*cells(r))
    console.print(t)
    for r in rows:
        for key in ("refused", "failed", "beside_result"):
            if r.get(key):
                console.print(f"{r['lab']}: {key}: {r[key]}", highlight=False)


def markdown(rows: list[dict]) -> None:
    """The table again, as Markdown rows for docs/performance.md."""
    print("\n| " + " | ".join(COLUMNS) + " |")
    print("| " + " | ".join("---" for _ in COLUMNS) + " |")
    for r in rows:
        print("| " + " | ".join(cells(r)) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
