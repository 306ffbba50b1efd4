"""`make bench-compare`: twin and munet bringing up the same eBGP Clos, side by side.

munet 0.17.3 (the namespace emulator under FRR's topotests) with Debian's FRR on the
host, through its own harness (bench/munet/, BGP unnumbered, the same tuned timers),
against twin's default image, runs interleaved (munet, twin, munet, twin ...) so that
the machine's drift hits both. "Converged": munet's harness waits until every leaf has a
route to every other leaf's loopback; twin's barrier waits for more (every session, every
loopback on every node). Prints medians, the ratio twin/munet, twin's CPU-seconds per FRR
node (from the containers' cgroups) and memory per FRR node; results in
bench-results/compare.json. Needs root; installs munet (bench/munet/.venv) and Debian's
`frr` package on the host when missing (it is not started as a service).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
MUNET = ROOT / "bench" / "munet"
sys.path.insert(0, str(ROOT / "bench"))

from run import clos, host_turn, measure, settle  # noqa: E402  (twin's own bench, the same measurement)


def ensure_munet() -> None:
    if not Path("/usr/lib/frr/zebra").exists():
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "frr"],
            check=True,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
    venv = MUNET / ".venv"
    if not (venv / "bin" / "munet").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "munet==0.17.3"], check=True)


def munet_run(spines: int, leafs: int, out: Path) -> dict:
    """One munet bring-up through its harness; its result record (t_conv: seconds to converged)."""
    subprocess.run(
        [
            sys.executable,
            str(MUNET / "bench.py"),
            "--sizes",
            f"{spines}x{leafs}",
            "--runs",
            "1",
            "--unnumbered",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line.strip()]
    return runs[-1]


def twin_run(spines: int, leafs: int, tmp: Path, i: int) -> dict:
    f = tmp / f"clos-{spines}x{leafs}.yml"
    f.write_text(yaml.safe_dump(clos(spines, leafs)))
    return measure(f"clos {spines}x{leafs}", f, f"cmp{i}-{os.getpid() % 1000}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="4x20,4x44", help="comma list of SPINESxLEAFS")
    ap.add_argument("--runs", type=int, default=3, help="runs of each tool per size")
    args = ap.parse_args()
    ensure_munet()
    with host_turn("bench-compare"):  # no e2e suite or chaos run of another checkout meanwhile
        return compare(args)


def compare(args: argparse.Namespace) -> int:
    rows = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for size in args.sizes.split(","):
            spines, leafs = (int(x) for x in size.split("x"))
            mu, tw = [], []
            for i in range(args.runs):
                settle()
                m = munet_run(spines, leafs, tmp / f"munet-{size}-{i}")
                mu.append(m)
                settle()
                tw.append(twin_run(spines, leafs, tmp, i))
                print(
                    f"compare {size} run {i + 1}: munet {m.get('t_conv')} s, twin {tw[-1]['converged_s']} s",
                    file=sys.stderr,
                )
            rows.append(summary(spines, leafs, mu, tw))
    report(rows)
    return 0 if all(r["ratio"] is not None and r["ratio"] <= 0.5 for r in rows) else 1


def summary(spines: int, leafs: int, mu: list[dict], tw: list[dict]) -> dict:
    m = statistics.median(r["t_conv"] for r in mu if r.get("ok"))
    t = statistics.median(r["converged_s"] for r in tw)
    frr = tw[0]["frr_nodes"]
    cpu = [r["cpu_s"] for r in tw if r.get("cpu_s") is not None]
    return {
        "size": f"{spines}x{leafs}",
        "nodes": spines + leafs,
        "munet_s": round(m, 2),
        "twin_s": round(t, 2),
        "ratio": round(t / m, 2) if m else None,
        "twin_cpu_s_per_frr_node": round(statistics.median(cpu) / frr, 2) if cpu else None,
        "twin_mib_per_frr_node": round(statistics.median(r["mem_mib_avg"] for r in tw), 1),
        "munet_runs": [round(r["t_conv"], 2) if r.get("t_conv") is not None else None for r in mu],
        "twin_runs": [r["converged_s"] for r in tw],
    }


def report(rows: list[dict]) -> None:
    t = Table(title="bring-up to converged, side by side (medians; target: twin <= 0.5 x munet)", title_justify="left")
    for col in (
        "Clos",
        "nodes",
        "munet 0.17.3 (s)",
        "twin (s)",
        "twin / munet",
        "twin CPU-s per FRR node",
        "twin MiB per FRR node",
        "runs munet / twin (s)",
    ):
        t.add_column(col)
    for r in rows:
        t.add_row(
            r["size"],
            str(r["nodes"]),
            f"{r['munet_s']:.1f}",
            f"{r['twin_s']:.1f}",
            f"{r['ratio']:.2f}",
            str(r["twin_cpu_s_per_frr_node"]),
            str(r["twin_mib_per_frr_node"]),
            f"{', '.join('-' if x is None else f'{x:.1f}' for x in r['munet_runs'])} / "
            f"{', '.join(f'{x:.1f}' for x in r['twin_runs'])}",
        )
    Console(width=200).print(t)
    out = ROOT / "bench-results"
    out.mkdir(exist_ok=True)
    (out / "compare.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    raise SystemExit(main())
