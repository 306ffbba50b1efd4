"""`make bench` (part 2): what watching a lab costs. Brings up the default lab (aipod),
measures a quiet period without a collector, then the same period with one (`twin watch`'s
`Collector`: link stats every second, the RoCE tables every 2 s, FRR every 10 s, NFLOG),
and reports the difference as CPU per node per second of watching (a few alternating
pairs: the median for the collector's process and the lab's containers, the least for
dockerd/containerd, which other labs on the machine load as well).

Counted: this process and its children (netlink, nsenter + nft), the lab's containers (the
vtysh calls and nft run there; from their cgroups), and dockerd/containerd (the docker API
calls, the vtysh execs). Target: the whole collector below 10% of one core for aipod.
Results also go to bench-results/watch.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from run import cpu_seconds, load1, settle  # noqa: E402  (bench/run.py, beside this file)

from twin.lab import Lab  # noqa: E402
from twin.observe.collector import Collector  # noqa: E402

DAEMONS = {"dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2", "runc"}
TARGET_CORE = 0.10


def daemons_cpu() -> float:
    total = 0
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() in DAEMONS:
                f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += sum(int(x) for x in f[11:15])
        except OSError:
            continue
    return total / os.sysconf("SC_CLK_TCK")


def spent(lab: Lab, seconds: float, collector: Collector | None) -> dict[str, float]:
    containers = list(lab.runtime.containers(lab.name).values())
    t, c, d = os.times(), cpu_seconds(containers), daemons_cpu()
    time.sleep(seconds)
    t2, c2, d2 = os.times(), cpu_seconds(containers), daemons_cpu()
    own = (t2.user + t2.system + t2.children_user + t2.children_system) - (
        t.user + t.system + t.children_user + t.children_system
    )
    return {"collector": own, "containers": (c2 or 0) - (c or 0), "daemons": d2 - d}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=20.0, help="length of each period")
    ap.add_argument("--rounds", type=int, default=3, help="quiet/watching period pairs (the median counts)")
    ap.add_argument("--prefix", default="benchw")
    args = ap.parse_args()
    lab = Lab.load(ROOT / "topologies" / "aipod.yml", name=f"{args.prefix}-{os.getpid() % 10000}")
    load_before = load1()
    pairs = []
    try:
        lab.up()
        settle()
        for _ in range(args.rounds):  # other labs on the machine load dockerd too: alternate, take the median
            quiet = spent(lab, args.seconds, None)
            with Collector(lab.context()) as col:
                time.sleep(3)  # the first rounds (installing the counter tables) are not the steady state
                watching = spent(lab, args.seconds, col)
            pairs.append({k: (watching[k] - quiet[k]) / args.seconds for k in watching})
    finally:
        lab.down()
    nodes = len(lab.fabric.nodes)
    # the collector's own process and the lab's containers: the median; dockerd/containerd: the
    # least seen (the collector makes one container listing per 10 s there, no exec; the rest of
    # what they spend is other labs')
    cost = {k: statistics.median(p[k] for p in pairs) for k in ("collector", "containers")}
    cost["daemons"] = max(0.0, min(p["daemons"] for p in pairs))
    core = sum(cost.values())
    result = {
        "lab": "aipod",
        "nodes": nodes,
        "seconds": args.seconds,
        "rounds": pairs,
        "core_total": round(core, 4),
        "core_per_node": round(core / nodes, 5),
        "parts_core": {k: round(v, 4) for k, v in cost.items()},
        "target_core": TARGET_CORE,
        "load_before": load_before,
        "load_after": load1(),
        "ok": core < TARGET_CORE,
    }
    print(
        f"watching aipod ({nodes} nodes), median of {args.rounds} x {args.seconds:.0f}s: {core:.3f} of a core "
        f"({core / nodes * 1000:.1f} ms of CPU per node per second; collector process "
        f"{cost['collector']:.3f}, containers {cost['containers']:.3f}, dockerd/containerd {cost['daemons']:.3f}); "
        f"target < {TARGET_CORE}: {'ok' if result['ok'] else 'NO'} (load {load_before:.1f} -> {load1():.1f})"
    )
    out = ROOT / "bench-results"
    out.mkdir(exist_ok=True)
    (out / "watch.json").write_text(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
