"""`make prove`: verify proves itself, and holds still.

Brings up the default lab (aipod) and the 8-DPU pod (pod8) side by side, then:

- `twin verify LAB --json` `--verify-runs` times (20) on each, one after the other: every
  run must pass (a check that fails now and then is a flaky check, a bug);
- `twin verify aipod --prove --json` `--proofs` times (2): every element caught and
  restored each time, and the same verdict (caught, restored) for every element in
  every run (a verdict that changes between runs is a bug);
- on the DPU-services lab (topologies/dpu-services.yml), the proof of its services
  (gateway rules, routes and announcements, every rate limit removed and loosened, every
  congestion point's rule broken three ways) `--service-proofs` times (2), with the same rules.

Prints a table per lab and the proof's coverage by kind, writes everything (with every
outcome of the last proof) to bench-results/prove.json, and exits 1 if any verify failed,
a proof missed or did not restore an element, or two proofs disagreed. The labs are
removed at the end, unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from soak import LABS, run_verify, twin  # noqa: E402  (make soak's labs, command runner and verify round)

from tests.e2e.conftest import host_turn  # noqa: E402  (the host's one lock for e2e, bench and chaos)
from twin.lab import Lab  # noqa: E402


def verify_once(lab: str) -> dict:
    """One `twin verify` (soak's round), with the 1-minute load beside it."""
    return {**run_verify(lab), "load1": os.getloadavg()[0]}


SERVICES = ROOT / "topologies" / "dpu-services.yml"
SERVICE_ELEMENTS = (
    "gateway-rule *",
    "gateway-default *",
    "public-*",
    "internet-*",
    "rate-limit *",
    "rate-limit-loose *",
    "congestion-* *",
)  # 45 there


def prove_once(lab: str, patterns: tuple[str, ...] = ()) -> dict:
    t0 = time.monotonic()
    p = twin("verify", lab, "--prove", "--json", *(a for x in patterns for a in ("--element", x)), timeout=3600)
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        doc = {
            "score": f"no report (exit {p.returncode}): {(p.stderr or p.stdout).strip()[:300]}",
            "outcomes": [],
            "passed": False,
        }
    return {"rc": p.returncode, "seconds": round(time.monotonic() - t0, 1), "load1": os.getloadavg()[0], **doc}


def verdicts(proof: dict) -> dict[str, tuple[bool, bool]]:
    return {o["id"]: (o["caught"], o["restored"]) for o in proof["outcomes"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--verify-runs", type=int, default=20, help="twin verify runs per lab (default 20)")
    ap.add_argument("--proofs", type=int, default=2, help="full proofs of aipod (default 2)")
    ap.add_argument(
        "--service-proofs",
        type=int,
        default=2,
        help="proofs of the DPU-services lab's services (default 2; 0: no services lab)",
    )
    ap.add_argument(
        "--labs", default="aipod,pod8", help=f"which of {', '.join(LABS)} (default both; '': only the services lab)"
    )
    ap.add_argument("--prefix", default="pv", help="lab names are PREFIX-aipod, PREFIX-pod8")
    ap.add_argument("--keep", action="store_true", help="leave the labs up at the end")
    args = ap.parse_args()
    with host_turn("make prove"):  # no e2e suite, bench or chaos run of another checkout meanwhile
        return run(args)


def run(args: argparse.Namespace) -> int:
    console = Console(width=200)
    labs = {name: Lab.load(LABS[name], name=f"{args.prefix}-{name}") for name in args.labs.split(",") if name}
    if args.service_proofs:
        labs["svc"] = Lab.load(SERVICES, name=f"{args.prefix}-svc")
    started = time.time()
    runs: dict[str, list[dict]] = {n: [] for n in labs}
    proofs: list[dict] = []
    service_proofs: list[dict] = []
    try:
        for lab in labs.values():
            console.print(f"[dim]prove: bringing up {lab.name} ...[/dim]")
            lab.up()
        for name, lab in labs.items():
            for i in range(args.verify_runs if name != "svc" else 0):
                r = verify_once(lab.name)
                runs[name].append(r)
                console.print(
                    f"[dim]verify {lab.name} {i + 1}/{args.verify_runs}: {r['seconds']} s, "
                    f"{'; '.join(r['failed'][:2]) or 'passed'}[/dim]"
                )
        if "aipod" in labs:
            for i in range(args.proofs):
                p = prove_once(labs["aipod"].name)
                proofs.append(p)
                console.print(f"[dim]proof {i + 1}/{args.proofs}: {p['score']} in {p['seconds']} s[/dim]")
        for i in range(args.service_proofs):
            p = prove_once(labs["svc"].name, SERVICE_ELEMENTS)
            service_proofs.append(p)
            console.print(f"[dim]services proof {i + 1}/{args.service_proofs}: {p['score']} in {p['seconds']} s[/dim]")
    finally:
        if not args.keep:
            for lab in labs.values():
                lab.down()
    differ = sorted(
        {
            i
            for ps in (proofs, service_proofs)
            for p in ps[1:]
            for i, v in verdicts(p).items()
            if verdicts(ps[0]).get(i) != v
        }
    )
    results = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)) + " UTC",
        "verify": {labs[n].name: runs[n] for n in labs if n != "svc"},
        "proofs": [{k: v for k, v in p.items() if k != "outcomes"} for p in proofs],
        "service_proofs": [{k: v for k, v in p.items() if k != "outcomes"} for p in service_proofs],
        "last_proof": proofs[-1] if proofs else None,
        "last_service_proof": service_proofs[-1] if service_proofs else None,
        "verdicts_differ": differ,
    }
    out = ROOT / "bench-results"
    out.mkdir(exist_ok=True)
    (out / "prove.json").write_text(json.dumps(results, indent=2))
    print_tables(console, results)
    ok = (
        all(not r["failed"] for rs in runs.values() for r in rs)
        and not differ
        and all(p.get("passed") for p in proofs + service_proofs)
    )
    return 0 if ok else 1


def print_tables(console: Console, results: dict) -> None:
    t = Table(title=f"twin verify, repeated (from {results['started']})", title_justify="left")
    for col in ("lab", "runs", "failed", "s min/avg/max", "1-min load min-max", "first failures"):
        t.add_column(col, justify="left" if col in ("lab", "first failures") else "right")
    for lab, rs in results["verify"].items():
        secs, loads = [r["seconds"] for r in rs], [r["load1"] for r in rs]
        first = [f for r in rs for f in r["failed"][:1]][:3]
        t.add_row(
            lab,
            str(len(rs)),
            str(sum(bool(r["failed"]) for r in rs)),
            f"{min(secs)}/{sum(secs) / len(secs):.1f}/{max(secs)}" if secs else "-",
            f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-",
            "\n".join(first) or "-",
        )
    console.print(t)
    for what, key in (("proof", "proofs"), ("services proof", "service_proofs")):
        for i, p in enumerate(results[key], 1):
            console.print(
                f"{what} {i}: {p.get('score')} of {p.get('elements')} elements in {p['seconds']} s "
                f"(1-min load {p['load1']:.1f}){'' if p.get('passed') else ' [red]FAILED[/red]'}"
            )
    console.print("verdicts differ between proofs: " + (", ".join(results["verdicts_differ"]) or "none"))
    for title, key in (
        ("the last proof, by kind of element", "last_proof"),
        ("the last services proof, by kind of element", "last_service_proof"),
    ):
        by_kind(console, title, results[key])


def by_kind(console: Console, title: str, last: dict | None) -> None:
    if last and last.get("outcomes"):
        k = Table(title=title, title_justify="left")
        for col in ("kind", "elements", "caught", "restored", "caught by (first check of the first element)", "s"):
            k.add_column(col, justify="right" if col in ("elements", "caught", "restored", "s") else "left")
        kinds: dict[str, list[dict]] = {}
        for o in last["outcomes"]:
            kinds.setdefault(o["kind"], []).append(o)
        for kind, os_ in kinds.items():
            k.add_row(
                kind,
                str(len(os_)),
                str(sum(o["caught"] for o in os_)),
                str(sum(o["restored"] for o in os_)),
                os_[0]["check"] or "-",
                f"{sum(o['seconds'].get('total', 0) for o in os_):.0f}",
            )
        console.print(k)


if __name__ == "__main__":
    raise SystemExit(main())
