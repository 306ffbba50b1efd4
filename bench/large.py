"""`make bench-large`: the largest lab this machine holds, and a large lab on a host loaded by
another lab (issue 28). Not part of `make bench`: it loads the whole machine for ~15 minutes.

1. clos 8x248: 256 FRR nodes, 1,984 links, 3,968 BGP sessions (loopback pool /22), brought up
   as `twin up` does it: admission decides. Refused, the refusal is the row (nothing was made),
   and the same lab runs again with the deadline the refusal names (`--timeout`, as a user who
   accepts the wait would).
2. clos 8x120 (128 FRR nodes, 960 links) started while a clos 8x56 (64 FRR nodes) comes up
   beside it: the host is loaded by another lab's bring-up.

Each row: what admission estimated (CPU-s, free cores, seconds, the BGP timers it chose), the
bring-up (containers, wired, converged), FRR's CPU-seconds (the lab's cgroups) and the host's
(every process, from /proc/stat, the lab beside it too), memory per FRR node and the host's
`MemAvailable` drop, sessions that dropped after they were Established (FRR's
connectionsDropped, summed over every router once converged), `twin down`, and the 1-minute
load average before and after. Results go to bench-results/large.json.
"""
from __future__ import annotations

import argparse
import json
import math
import os
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
from twin.errors import TwinError  # noqa: E402
from twin.lab import Lab  # noqa: E402
from twin.lifecycle import admission, hostlimits  # noqa: E402
from twin.lifecycle.admission import NotAdmitted  # noqa: E402
from twin.runtime import frr  # noqa: E402
from twin.runtime.docker import memory  # noqa: E402


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
            (doc,) = lab.node(node).vtysh_json(frr.SUMMARY, timeout=60)
        except TwinError:
            return 0
        return sum(int(p.get("connectionsDropped") or 0) for p in doc.get("peers", {}).values())

    with ThreadPoolExecutor(8) as pool:
        return sum(pool.map(one, [n.name for n in lab.fabric.routers()]))


def measure(label: str, f: Path, name: str, timeout: float | None = None, beside: str = "") -> dict:
    lab = Lab.load(f, name=name)
    est = admission.estimate(lab.loaded, admission.CpuWatch().host(1.0), timeout)
    row = {"lab": label, "frr_nodes": len(lab.loaded.routers()), "links": len(lab.loaded.links),
           "sessions": len(lab.loaded.sessions()), "timeout": timeout, "beside": beside,
           "estimate": est.to_dict(), "load_before": load1()}
    avail, busy0, t0 = hostlimits.host_usage().mem_available_mib, host_busy(), time.monotonic()
    try:
        timings = lab.up(timeout=timeout, say=lambda m: print(f"  {label}: {m}", flush=True))
    except NotAdmitted as e:
        return row | {"refused": str(e), "load_after": load1()}
    except TwinError as e:
        row |= {"failed": str(e).splitlines()[0], "failure": str(e).splitlines()[:80],
                "after_s": round(time.monotonic() - t0, 1)}
        lab.down()
        return row | {"load_after": load1()}
    try:
        host_cpu = host_busy() - busy0
        containers = lab.runtime.containers(lab.name)
        frr_nodes = [n.name for n in lab.fabric.routers()]
        mem = [m for m in (memory(containers[n]) for n in frr_nodes) if m is not None]
        row |= {"containers_s": round(timings["containers"], 1), "wired_s": round(timings["wired"], 1),
                "converged_s": round(timings["converged"], 1),
                "frr_cpu_s": round(cpu_seconds([containers[n] for n in frr_nodes]) or 0, 1),
                "host_cpu_s": round(host_cpu, 1), "host_mib": avail - hostlimits.host_usage().mem_available_mib,
                "mib_avg": round(sum(m[0] for m in mem) / len(mem) / MiB, 1) if mem else None,
                "mib_max": round(max(m[0] for m in mem) / MiB, 1) if mem else None,
                "timers": str(lab.fabric.timers or "keepalive 3 s, hold 9 s"), "load_after": load1()}
        row["dropped"] = dropped(lab)
    finally:
        t1 = time.monotonic()
        lab.down()
        row["down_s"] = round(time.monotonic() - t1, 1)
    return row


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
        time.sleep(15)   # the other lab's containers are starting and wiring: the host is busy
        row = measure("clos 8x120, beside clos 8x56 coming up", topology(tmp, 8, 120, f"{prefix}l"), f"{prefix}l",
                      beside="clos 8x56 (64 FRR nodes) started 15 s before")
    finally:
        t.join()
        other.down()
    return row | {"beside_result": done.get("error") or f"converged in {done['timings']['converged']:.0f} s"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", choices=["256", "loaded"], help="run one of the two")
    ap.add_argument("--prefix", default="big", help="lab names start with this")
    args = ap.parse_args()
    rows = []
    with host_turn("bench-large"), tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.only in (None, "256"):
            settle()
            f = topology(tmp, 8, 248, f"{args.prefix}256")
            rows.append(measure("clos 8x248", f, f"{args.prefix}256"))
            if "refused" in rows[-1]:   # the deadline a refusal names: its estimate, and a fifth more
                timeout = float(math.ceil(rows[-1]["estimate"]["seconds"] * 1.2 / 10) * 10)
                settle()
                rows.append(measure(f"clos 8x248, --timeout {timeout:.0f}", f, f"{args.prefix}256", timeout))
        if args.only in (None, "loaded"):
            settle()
            rows.append(loaded(tmp, args.prefix))
    show(rows)
    out = ROOT / "bench-results"
    out.mkdir(exist_ok=True)
    (out / "large.json").write_text(json.dumps(rows, indent=2))
    return 0 if all("converged_s" in r or "refused" in r for r in rows) else 1


def show(rows: list[dict]) -> None:
    console = Console(width=240)
    t = Table(title="twin: the largest labs on this host", title_justify="left")
    for col in ("lab", "FRR nodes", "links", "estimate: CPU-s / free cores = s (deadline)", "timers", "containers (s)",
                "wired (s)", "converged (s)", "CPU-s FRR / host", "MiB per FRR node avg/max", "host MiB",
                "sessions dropped", "down (s)", "load before/after"):
        t.add_column(col, justify="left" if col in ("lab", "timers") else "right")
    for r in rows:
        e = r["estimate"]
        est = f"{e['cpu_s']:.0f} / {e['free_cores']:.1f} = {e['seconds']:.0f} ({e['deadline']:.0f})"
        if "converged_s" not in r:
            t.add_row(r["lab"], str(r["frr_nodes"]), str(r["links"]), est, "-", "-", "-",
                      "refused" if "refused" in r else f"FAILED after {r['after_s']} s", "-", "-", "-", "-", "-",
                      f"{r['load_before']:.1f}/{r['load_after']:.1f}")
            continue
        t.add_row(r["lab"], str(r["frr_nodes"]), str(r["links"]), est, r["timers"], f"{r['containers_s']}",
                  f"{r['wired_s']}", f"{r['converged_s']}", f"{r['frr_cpu_s']:.0f} / {r['host_cpu_s']:.0f}",
                  f"{r['mib_avg']}/{r['mib_max']}", str(r["host_mib"]), str(r["dropped"]), f"{r['down_s']}",
                  f"{r['load_before']:.1f}/{r['load_after']:.1f}")
    console.print(t)
    for r in rows:
        for key in ("refused", "failed", "beside_result"):
            if r.get(key):
                console.print(f"{r['lab']}: {key}: {r[key]}", highlight=False)


if __name__ == "__main__":
    raise SystemExit(main())
