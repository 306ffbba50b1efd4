"""Where a bring-up's CPU goes: `twin up` of the bench's Clos (4 x 20 by default) with the CPU-seconds
of each party, then `twin down`.

Parties: twin's own process (`twin self`; its import apart) and what it forked (`twin children`:
nsenter's commands), dockerd, containerd, containerd-shim (with the runc it runs and reaps), the lab's
containers (their cgroups: FRR, its boot, lldpd, what a docker exec runs), and the rest of the
machine (the kernel's threads, other people's work: `other`, from /proc/stat). CPU-seconds, not wall
time, are what to compare on a shared machine; the 1-minute load average before each run is printed
too. `--tree` names checkouts to compare (each run interleaved with the others'); each line is one
run as JSON, then the medians. Issue 46 (docs/performance.md, "twin's share of a bring-up").

    python bench/upcpu.py --runs 3 --tree base=/tmp/base --tree new=.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from run import clos, cpu_seconds  # noqa: E402  (the bench's own Clos, and its containers' CPU from their cgroups)

from twin.runtime import DockerRuntime  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
DAEMONS = ("dockerd", "containerd", "containerd-shim")
# twin's CLI in this process, its own CPU and its children's written at exit (to $UPCPU_OUT)
WRAPPER = """
import atexit, json, os, resource, sys
def report():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.environ["UPCPU_OUT"], "w") as f:
        json.dump({"self": s.ru_utime + s.ru_stime, "children": c.ru_utime + c.ru_stime, "import": IMPORT}, f)
IMPORT = 0.0
atexit.register(report)
from twin.cli import main
from twin.cli.lab import up
r = resource.getrusage(resource.RUSAGE_SELF)
IMPORT = r.ru_utime + r.ru_stime
main(sys.argv[1:], prog_name="twin")
"""


def processes(name: str) -> dict[int, float]:
    """CPU-seconds of every process called `name`, its reaped children's included, by pid."""
    out = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            if (p / "comm").read_text().strip() != name:
                continue
            f = (p / "stat").read_text().rsplit(")", 1)[1].split()
            out[int(p.name)] = sum(int(x) for x in f[11:15]) / TICK
        except OSError:
            continue
    return out


def busy() -> float:
    v = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(v) - v[3] - v[4]) / TICK


def containers_cpu(lab: str) -> float | None:
    """CPU-seconds of the lab's containers since they started (their cgroups; None: unreadable)."""
    return cpu_seconds([c.container for c in DockerRuntime().containers(lab).values()])


def one(tree: Path, topo: Path, lab: str) -> dict:
    out = Path(tempfile.mkstemp(prefix="upcpu-")[1])
    env = {**os.environ, "PYTHONPATH": str(tree), "UPCPU_OUT": str(out)}
    before = {d: processes(d) for d in DAEMONS}
    busy0, load0, t0 = busy(), os.getloadavg()[0], time.monotonic()
    p = subprocess.Popen(
        [sys.executable, "-c", WRAPPER, "up", str(topo), "--name", lab],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stages = []
    assert p.stderr is not None
    for line in p.stderr:
        stages.append(f"{time.monotonic() - t0:6.2f} {line.rstrip()}")
    p.wait()
    wall, spent = time.monotonic() - t0, busy() - busy0
    after = {d: processes(d) for d in DAEMONS}
    twin = json.loads(out.read_text())
    out.unlink()
    r = {
        "rc": p.returncode,
        "wall_s": round(wall, 2),
        "load_before": round(load0, 1),
        "twin_self": round(twin["self"], 2),
        "twin_import": round(twin["import"], 2),
        "twin_children": round(twin["children"], 2),
        **{d: round(sum(v - before[d].get(pid, 0.0) for pid, v in after[d].items()), 2) for d in DAEMONS},
        "containers": round(containers_cpu(lab) or 0.0, 2),
    }
    parties = [v for k, v in r.items() if k not in ("rc", "wall_s", "load_before", "twin_import")]
    r["other"] = round(spent - sum(parties), 2)
    down = subprocess.run(
        [sys.executable, "-m", "twin", "down", lab], cwd=tree, env=env, capture_output=True, text=True
    )
    if down.returncode != 0:
        print(f"twin down {lab} failed: {down.stderr.strip()}", file=sys.stderr)
    if p.returncode != 0:
        print("\n".join(stages[-10:]), file=sys.stderr)
    return r | {"stages": stages}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="4x20", help="SPINESxLEAFS (default: the bench's 24 nodes)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--tree", action="append", default=[], help="LABEL=CHECKOUT (default: this one)")
    ap.add_argument("--prefix", default="upcpu", help="lab names: PREFIX<label><run>")
    ap.add_argument("--stages", action="store_true", help="print each run's progress lines with their times")
    args = ap.parse_args()
    trees = [t.split("=", 1) for t in args.tree] or [["this", str(ROOT)]]
    spines, leafs = (int(x) for x in args.size.split("x"))
    rows: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        topo = Path(tmp) / "clos.yml"
        topo.write_text(yaml.safe_dump(clos(spines, leafs)))
        for i in range(args.runs):
            for label, tree in trees:
                r = one(Path(tree).resolve(), topo, f"{args.prefix}{label}{i}")
                stages = r.pop("stages")
                rows.setdefault(label, []).append(r)
                print(json.dumps({"tree": label, "run": i + 1, **r}), flush=True)
                if args.stages:
                    print("\n".join(stages))
    for label, rs in rows.items():
        med = {k: round(statistics.median(r[k] for r in rs), 2) for k in rs[0] if k != "rc"}
        print(f"{label}: medians of {len(rs)}: {json.dumps(med)}")
    return 0 if all(r["rc"] == 0 for rs in rows.values() for r in rs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
