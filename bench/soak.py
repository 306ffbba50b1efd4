"""`make soak`: labs left up side by side for an hour, mostly idle, checked as a user would.

The default lab (aipod) and the 8-DPU pod (pod8) are brought up beside each other and left
alone for `--minutes` (60). Every `--status-every` seconds (60) each lab gets `twin status`
(its exit code counts: 0 expected) and one round of the convergence barrier's own
judgement, `Lab.missing()` (every session, loopback route, VNI, EVPN type-2/3/5 route the
topology implies, read from the kernels); every `--verify-every` seconds (300, and once at
the start and at the end) `twin verify LAB --json`. Failures are counted with their first
failed checks. The machine's load and the host-wide ARP table are noted each round, since
other people's labs on the same machine load it too.

Prints a table per lab and writes every round to bench-results/soak.json; exits 1 if any
verify, status or barrier round failed. The labs are removed at the end (or on Ctrl-C),
unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from twin.lab import Lab

ROOT = Path(__file__).resolve().parent.parent
LABS = {"aipod": ROOT / "topologies" / "aipod.yml", "pod8": ROOT / "topologies" / "pod8.yml"}
FIRST = 3  # failed checks kept per failed run, for the table (all go to the JSON)


def twin(*args: str, timeout: float) -> subprocess.CompletedProcess:
    """The twin command line of this checkout, as a user runs it (same TWIN_HOME)."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "twin.cli", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
            env=os.environ.copy(),
        )
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(e.cmd, 124, e.stdout or "", f"timed out after {timeout:.0f} s")


def host_sample() -> dict:
    """Load average and the host-wide ARP table (entries against gc_thresh1) right now."""
    stat = Path("/proc/net/stat/arp_cache").read_text().split("\n")
    entries = int(stat[1].split()[0], 16)
    thresh1 = int(Path("/proc/sys/net/ipv4/neigh/default/gc_thresh1").read_text())
    return {
        "load1": os.getloadavg()[0],
        "arp_entries": entries,
        "gc_thresh1": thresh1,
        "containers": len(subprocess.run(["docker", "ps", "-q"], capture_output=True, text=True).stdout.split()),
    }


def run_verify(lab: str) -> dict:
    t0 = time.monotonic()
    p = twin("verify", lab, "--json", timeout=600)
    out = {"kind": "verify", "rc": p.returncode, "seconds": round(time.monotonic() - t0, 1), "failed": []}
    try:
        report = json.loads(p.stdout)
        out["checks"] = len(report["checks"])
        out["failed"] = [f"{c['group']}: {c['name']}: {c['message']}" for c in report["checks"] if not c["passed"]]
    except (json.JSONDecodeError, KeyError, TypeError):
        out["failed"] = [f"no report (exit {p.returncode}): {(p.stderr or p.stdout).strip()[:300]}"]
    return out


def run_status(lab: str) -> dict:
    t0 = time.monotonic()
    p = twin("status", lab, "--json", timeout=120)
    out = {"kind": "status", "rc": p.returncode, "seconds": round(time.monotonic() - t0, 1), "failed": []}
    if p.returncode != 0:
        out["failed"] = [f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[:300]}"]
    return out


def run_barrier(lab: Lab) -> dict:
    t0 = time.monotonic()
    try:
        missing = lab.missing()
    except Exception as e:  # a lab that cannot be read is a failed round, not a crashed soak
        missing = [f"barrier could not read the lab: {e}"]
    return {"kind": "barrier", "rc": 1 if missing else 0, "seconds": round(time.monotonic() - t0, 1), "failed": missing}


def summary(name: str, rounds: list[dict]) -> dict:
    def of(kind: str) -> list[dict]:
        return [r for r in rounds if r["kind"] == kind]

    def first_failures(kind: str) -> list[str]:
        return [
            f"{r['minute']:.0f} min: "
            + "; ".join(r["failed"][:FIRST])
            + (f" (+{len(r['failed']) - FIRST})" if len(r["failed"]) > FIRST else "")
            for r in of(kind)
            if r["rc"] != 0
        ]

    v = of("verify")
    secs = [r["seconds"] for r in v]
    return {
        "lab": name,
        "verify": {
            "runs": len(v),
            "failed": sum(r["rc"] != 0 for r in v),
            "first": first_failures("verify"),
            "seconds_avg": round(sum(secs) / len(secs), 1) if secs else None,
            "seconds_max": max(secs) if secs else None,
        },
        "status": {
            "runs": len(of("status")),
            "failed": sum(r["rc"] != 0 for r in of("status")),
            "first": first_failures("status"),
        },
        "barrier": {
            "runs": len(of("barrier")),
            "failed": sum(r["rc"] != 0 for r in of("barrier")),
            "first": first_failures("barrier"),
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0, help="how long the labs stay up (default 60)")
    ap.add_argument("--verify-every", type=float, default=300.0, metavar="S", help="twin verify period (300 s)")
    ap.add_argument(
        "--status-every", type=float, default=60.0, metavar="S", help="twin status and barrier period (60 s)"
    )
    ap.add_argument("--labs", default="aipod,pod8", help=f"which of {', '.join(LABS)} (default both)")
    ap.add_argument("--prefix", default="soak", help="lab names are PREFIX-aipod, PREFIX-pod8")
    ap.add_argument("--keep", action="store_true", help="leave the labs up at the end")
    args = ap.parse_args()
    console = Console(width=200)
    labs = {name: Lab.load(LABS[name], name=f"{args.prefix}-{name}") for name in args.labs.split(",")}
    rounds: dict[str, list[dict]] = {name: [] for name in labs}
    samples: list[dict] = []
    started = time.time()
    try:
        for lab in labs.values():
            console.print(f"[dim]soak: bringing up {lab.name} ...[/dim]")
            lab.up()
        t0 = time.monotonic()
        tick, end = 0, args.minutes * 60
        while True:
            at = tick * args.status_every
            if at > end + 1e-6:
                break
            time.sleep(max(0.0, t0 + at - time.monotonic()))  # the soak's own schedule: a clock, not a wait
            minute = (time.monotonic() - t0) / 60
            samples.append({"minute": round(minute, 2), **host_sample()})
            verify_now = at % args.verify_every < 1e-6 or at + args.status_every > end + 1e-6
            for name, lab in labs.items():
                todo = [run_status(lab.name), run_barrier(lab)] + ([run_verify(lab.name)] if verify_now else [])
                for r in todo:
                    r["minute"] = round(minute, 2)
                    rounds[name].append(r)
                bad = [f"{r['kind']}: {r['failed'][0]}" for r in todo if r["rc"] != 0]
                console.print(
                    f"[dim]{minute:5.1f} min {lab.name}: "
                    f"{'; '.join(bad) if bad else 'ok'}{' (verified)' if verify_now else ''}[/dim]"
                )
            tick += 1
    finally:
        if not args.keep:
            for lab in labs.values():
                lab.down()
    results = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)) + " UTC",
        "minutes": args.minutes,
        "verify_every_s": args.verify_every,
        "status_every_s": args.status_every,
        "labs": [summary(labs[n].name, rounds[n]) for n in labs],
        "host": samples,
        "rounds": rounds,
    }
    out = ROOT / "bench-results"
    out.mkdir(exist_ok=True)
    (out / "soak.json").write_text(json.dumps(results, indent=2))
    print_table(console, results)
    return 0 if all(s[k]["failed"] == 0 for s in results["labs"] for k in ("verify", "status", "barrier")) else 1


def print_table(console: Console, results: dict) -> None:
    loads = [s["load1"] for s in results["host"]] or [0.0]
    arp = [s["arp_entries"] for s in results["host"]] or [0]
    title = (
        f"twin soak: {results['minutes']:.0f} min from {results['started']}, verify every "
        f"{results['verify_every_s']:.0f} s, status and barrier every {results['status_every_s']:.0f} s; "
        f"load {min(loads):.1f}-{max(loads):.1f}, host ARP table {min(arp)}-{max(arp)} entries "
        f"(gc_thresh1 {results['host'][0]['gc_thresh1'] if results['host'] else '?'})"
    )
    t = Table(title=title, title_justify="left")
    for col in (
        "lab",
        "verify failed/runs",
        "verify s avg/max",
        "status exit != 0 / runs",
        "barrier missing / rounds",
        "first failures",
    ):
        t.add_column(col, justify="left" if col in ("lab", "first failures") else "right")
    for s in results["labs"]:
        first = s["verify"]["first"][:2] + s["status"]["first"][:2] + s["barrier"]["first"][:2]
        t.add_row(
            s["lab"],
            f"{s['verify']['failed']}/{s['verify']['runs']}",
            f"{s['verify']['seconds_avg']}/{s['verify']['seconds_max']}",
            f"{s['status']['failed']}/{s['status']['runs']}",
            f"{s['barrier']['failed']}/{s['barrier']['runs']}",
            "\n".join(first) or "-",
        )
    console.print(t)


if __name__ == "__main__":
    raise SystemExit(main())
