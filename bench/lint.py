"""`make bench-lint`: `twin lint` of the largest Clos's configs, as a pre-commit hook or a CI step runs
it (issue 45: under 5 s on the 8 x 248). The 8 x 248 eBGP Clos (bench/run.py's), its NVUE export and
its rendered frr.conf files written as config directories, then `twin lint -t CLOS DIR` run as a command
(`--runs` times each, Python's start and imports included: what a hook costs), with the seconds lint
itself reports. Takes the host's e2e lock (tests/e2e/conftest.py) so other runs do not load the machine
meanwhile; prints a table and a Markdown row for docs/performance.md."""

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
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from run import clos, load1  # noqa: E402  (bench/run.py, beside this file)

from tests.e2e.conftest import host_turn  # noqa: E402
from twin import nvue, topology  # noqa: E402
from twin.config.render import render_lab  # noqa: E402


def write(d: Path, files: dict[str, str], name: str) -> int:
    for node, text in files.items():
        (d / node).mkdir(parents=True)
        (d / node / name).write_text(text)
    return sum(len(t) for t in files.values())


def once(topo: Path, d: Path) -> tuple[float, float, int]:
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "twin.cli", "lint", "-t", str(topo), str(d), "--strict", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=os.environ | {"PYTHONDONTWRITEBYTECODE": ""},
    )
    wall = time.monotonic() - t0
    doc = json.loads(p.stdout)
    if p.returncode != 0:
        raise SystemExit(f"twin lint found something in twin's own configs: {p.stdout[:2000]}")
    return wall, doc["seconds"], len(doc["files"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--spines", type=int, default=8)
    ap.add_argument("--leafs", type=int, default=248)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, host_turn("twin bench-lint"):
        d = Path(tmp)
        topo = d / "clos.yml"
        pool = {"defaults": {"loopback_pool": "10.255.0.0/22"}}
        topo.write_text(yaml.safe_dump(clos(args.spines, args.leafs) | pool))
        fabric = topology.load(topo)
        sizes = {
            "nvue": write(d / "nvue", nvue.export(fabric)[0], nvue.STARTUP),
            "frr": write(
                d / "frr",
                {n: f["frr.conf"] for n, f in render_lab(fabric, "netns").items() if "frr.conf" in f},
                "frr.conf",
            ),
        }
        once(topo, d / "nvue")  # Python's bytecode written once, as on any machine after the first run
        before = load1()
        print(
            f"twin lint of the {args.spines} x {args.leafs} Clos ({len(fabric.nodes)} nodes), {args.runs} runs "
            f"each, load average {before:.1f} on {os.cpu_count()} cores"
        )
        for dialect, size in sizes.items():
            runs = [once(topo, d / dialect) for _ in range(args.runs)]
            walls, own = [r[0] for r in runs], [r[1] for r in runs]
            print(
                f"| {dialect} | {runs[0][2]} files, {size // 1024} KiB | command {statistics.median(walls):.2f} s "
                f"(min {min(walls):.2f}, max {max(walls):.2f}) | lint itself {statistics.median(own):.2f} s |"
            )


if __name__ == "__main__":
    main()
