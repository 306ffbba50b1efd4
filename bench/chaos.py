"""`make chaos`: kill twin at random moments and check that nothing is left behind.

Rounds (default 20; `--kinds` picks which), in a random but seeded order:
- `up` SIGKILLed after a random delay (small lab: from before its directory exists to convergence),
  then `twin down`: no container, host namespace, host veth or lab directory may remain;
- `apply` (a tenant added to the default lab) SIGKILLed after a random delay, then `twin status`
  (it must tell the truth: exit 1 when the lab is half-changed, 0 when it holds its intent)
  and `twin down`: nothing may remain;
- `rehearse` (a spine drained and a host added, under traffic, with --rollback) and `fault`
  (`node-restart` of a leaf: stopped, started, re-wired, configured) on the doors' lab
  (tests/e2e/doors.yml), SIGKILLed mid-way; then `twin status` must tell the truth (and
  say unhealthy whenever a container is not running), the lab's lock must be free (the
  kernel drops it with its holder: `down` is not refused), and `down` leaves nothing;
- `server` (bench/chaos_server.py): `twin serve` SIGKILLed mid-create or mid-apply and started
  again: the operation `failed` (or done), the lab whole or removed, then deleted: nothing left;
- `abuse` (bench/chaos_abuse.py): a user's escapes through the API, 500 half-open connections
  and a quota filled, while another user's lab runs: its GETs timed, its lab and operation whole;
and once, the Docker daemon restarted under a running lab: `twin status` must exit 1 naming the
stopped containers, and `twin down` must still remove everything.

Refuses to run while other twin labs exist (restarting dockerd would stop them), unless --force.
Prints a table (rich) and writes bench-results/chaos.json. Exit 1 if anything was left behind.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from chaos_abuse import round_abuse  # noqa: E402
from chaos_server import round_server  # noqa: E402
from run import with_green  # noqa: E402  (make bench's tenant add: the same change)

from tests.e2e.conftest import host_turn, leftovers  # noqa: E402  (the suite's own "left behind")
from twin.base import wait  # noqa: E402
from twin.runtime import DockerRuntime  # noqa: E402

SMALL = ROOT / "tests/e2e/small.yml"
AIPOD = ROOT / "topologies/aipod.yml"
DOORS = ROOT / "tests/e2e/doors.yml"
KINDS = ("up", "apply", "rehearse", "fault", "server", "abuse")


def twin(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "twin.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
    )


def kill_after(args: list[str], delay: float) -> tuple[float, int | None]:
    """Run `twin ARGS`, SIGKILL it after `delay` s (if still running): (seconds it ran, its exit code or None)."""
    t0 = time.monotonic()
    p = subprocess.Popen(
        [sys.executable, "-m", "twin.cli", *args],
        cwd=ROOT,
        env=os.environ.copy(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        p.wait(timeout=delay)
        return time.monotonic() - t0, p.returncode
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGKILL)
        p.wait()
        return time.monotonic() - t0, None


def stage_of(name: str) -> str:
    f = Path(os.environ["TWIN_HOME"]) / "labs" / name / "state.json"
    try:
        return json.loads(f.read_text()).get("status", "?")
    except (OSError, ValueError):
        return "no state"


def settle(runtime: DockerRuntime, name: str) -> None:
    seen: list[set[str]] = []

    def changing() -> list[str]:
        seen.append(set(runtime.containers(name)))
        return [] if len(seen) > 2 and seen[-1] == seen[-2] == seen[-3] else ["changing"]

    wait.until(changing, 30, "containers settled", first=0.3, cap=0.3)


def round_up(runtime: DockerRuntime, i: int, rng: random.Random) -> dict:
    name = f"chaos-up{i}"
    delay = rng.uniform(0.0, 9.0)
    ran, rc = kill_after(["up", str(SMALL), "--name", name], delay)
    stage = "finished" if rc is not None else stage_of(name)
    settle(runtime, name)
    down = twin("down", name)
    return {
        "round": i,
        "killed": "up",
        "after_s": round(ran, 2),
        "stage": stage,
        "status_rc": None,
        "down_rc": down.returncode,
        "leftovers": leftovers(runtime, name),
    }


def round_apply(runtime: DockerRuntime, i: int, rng: random.Random, change: Path) -> dict:
    name = f"chaos-ap{i}"
    up = twin("up", str(AIPOD), "--name", name)
    if up.returncode:
        return {
            "round": i,
            "killed": "apply",
            "after_s": 0,
            "stage": f"up failed: {up.stderr.strip()[:80]}",
            "status_rc": None,
            "down_rc": twin("down", name).returncode,
            "leftovers": leftovers(runtime, name),
        }
    ran, rc = kill_after(["apply", name, str(change)], rng.uniform(0.2, 5.0))
    stage = "finished" if rc is not None else "killed mid-apply"
    settle(runtime, name)
    status = twin("status", name, "--json")
    healthy = json.loads(status.stdout).get("healthy") if status.stdout.strip().startswith("{") else None
    truthful = (status.returncode == 0) == bool(healthy)
    down = twin("down", name)
    return {
        "round": i,
        "killed": "apply",
        "after_s": round(ran, 2),
        "stage": stage,
        "status_rc": status.returncode,
        "status_truthful": truthful,
        "down_rc": down.returncode,
        "leftovers": leftovers(runtime, name),
    }


def drained(tmp: Path) -> Path:
    """The doors' lab with spine1 drained and a third host: what the rehearse rounds rehearse."""
    import yaml

    doc = yaml.safe_load(DOORS.read_text())
    doc["nodes"]["spine1"]["drain"] = True
    doc["nodes"]["host3"] = {"kind": "host"}
    doc["links"].append({"endpoints": ["leaf1:swp11", "host3:eth1"]})
    doc["tenants"]["red"]["attachments"].append({"host": "host3", "segment": "web"})
    f = tmp / "doors-drained.yml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    return f


def round_writer(runtime: DockerRuntime, i: int, rng: random.Random, kind: str, change: Path) -> dict:
    """`twin rehearse` or `twin fault node-restart` on a fresh doors' lab, SIGKILLed mid-way."""
    name = f"chaos-{kind[:2]}{i}"
    up = twin("up", str(DOORS), "--name", name)
    if up.returncode:
        return {
            "round": i,
            "killed": kind,
            "after_s": 0,
            "stage": f"up failed: {up.stderr.strip()[:80]}",
            "status_rc": None,
            "down_rc": twin("down", name).returncode,
            "leftovers": leftovers(runtime, name),
        }
    args = (
        ["rehearse", name, str(change), "--rollback", "--max-loss", "-1"]
        if kind == "rehearse"
        else ["fault", "node-restart", name, "leaf2"]
    )
    ran, rc = kill_after(args, rng.uniform(0.5, 12.0 if kind == "rehearse" else 6.0))
    stage = "finished" if rc is not None else f"killed mid-{kind}"
    settle(runtime, name)
    status = twin("status", name, "--json")
    healthy = json.loads(status.stdout).get("healthy") if status.stdout.strip().startswith("{") else None
    stopped = [n for n, c in runtime.containers(name).items() if c.status != "running"]
    truthful = (status.returncode == 0) == bool(healthy) and not (stopped and healthy)
    down = twin("down", name)
    return {
        "round": i,
        "killed": kind,
        "after_s": round(ran, 2),
        "stage": stage + (f" ({', '.join(stopped)} not running)" if stopped else ""),
        "status_rc": status.returncode,
        "status_truthful": truthful,
        "down_rc": down.returncode,
        "lock_free": "is busy" not in down.stderr,
        "leftovers": leftovers(runtime, name),
    }


def restart_dockerd() -> None:
    subprocess.run(["pkill", "-TERM", "-x", "dockerd"], check=False)
    wait.until(
        lambda: [] if subprocess.run(["pgrep", "-x", "dockerd"], capture_output=True).returncode else ["up"],
        60,
        "dockerd stopped",
        first=0.2,
        cap=0.5,
    )
    subprocess.run([str(ROOT / "twin/lifecycle/host-setup.sh")], check=True, capture_output=True)


def round_dockerd(runtime: DockerRuntime) -> dict:
    name = "chaos-dockerd"
    up = twin("up", str(SMALL), "--name", name)
    restart_dockerd()
    status = twin("status", name)
    down = twin("down", name)
    return {
        "round": "dockerd",
        "killed": "dockerd restarted under a running lab",
        "after_s": None,
        "stage": "up" if up.returncode == 0 else "up failed",
        "status_rc": status.returncode,
        "status_truthful": status.returncode == 1 and "container exited" in status.stdout,
        "down_rc": down.returncode,
        "leftovers": leftovers(DockerRuntime(), name),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=20261203)
    ap.add_argument("--force", action="store_true", help="run even while other twin labs exist")
    ap.add_argument("--no-dockerd", action="store_true", help="skip the Docker daemon restart")
    ap.add_argument(
        "--kinds",
        default=",".join(KINDS),
        help=f"which SIGKILL rounds, comma-separated (default: all of {', '.join(KINDS)})",
    )
    args = ap.parse_args()
    with host_turn("chaos"):  # the e2e suites of other checkouts (and their manual labs) wait meanwhile
        return run(args)


def run(args: argparse.Namespace) -> int:
    runtime = DockerRuntime()
    others = [lab for lab in runtime.labs() if not lab.startswith("chaos-")]
    if others and not args.force:
        print(
            f"chaos: other twin labs run here ({', '.join(others)}); restarting dockerd would stop them. "
            "--force to run anyway (with --no-dockerd)",
            file=sys.stderr,
        )
        return 2
    rng = random.Random(args.seed)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TWIN_HOME"] = str(Path(tmp) / "home")
        change = Path(tmp) / "green.yml"
        change.write_text(with_green(AIPOD))
        rehearsed = drained(Path(tmp))
        kinds = round_kinds(args, rng)
        for i, kind in enumerate(kinds, 1):
            rows.append(
                round_up(runtime, i, rng)
                if kind == "up"
                else round_apply(runtime, i, rng, change)
                if kind == "apply"
                else round_server(runtime, i, rng, Path(tmp), SMALL, AIPOD, change)
                if kind == "server"
                else round_abuse(runtime, i, Path(tmp), SMALL)
                if kind == "abuse"
                else round_writer(runtime, i, rng, kind, rehearsed)
            )
            print(f"chaos: round {i}/{len(kinds)}: {rows[-1]}", file=sys.stderr)
        if not args.no_dockerd and not (others and args.force):
            rows.append(round_dockerd(runtime))
    report(rows)
    return (
        0
        if all(
            not r["leftovers"] and r["down_rc"] == 0 and r.get("status_truthful", True) and r.get("lock_free", True)
            for r in rows
        )
        else 1
    )


def round_kinds(args: argparse.Namespace, rng: random.Random) -> list[str]:
    """`--rounds` rounds of the `--kinds` asked for: up 2 in 5, the others sharing the rest evenly."""
    wanted = [k for k in args.kinds.split(",") if k]
    unknown = sorted(set(wanted) - set(KINDS))
    if unknown or not wanted:
        raise SystemExit(f"chaos: --kinds {args.kinds!r}: choose among {', '.join(KINDS)}")
    ups = args.rounds * 2 // 5 if "up" in wanted and len(wanted) > 1 else (args.rounds if wanted == ["up"] else 0)
    rest = [k for k in wanted if k != "up"]
    kinds = ["up"] * ups + [rest[i % len(rest)] for i in range(args.rounds - ups)] if rest else ["up"] * ups
    rng.shuffle(kinds)
    return kinds


def report(rows: list[dict]) -> None:
    t = Table(
        title="twin chaos: SIGKILLs of up, apply, rehearse, fault and the server, and a Docker daemon restart",
        title_justify="left",
    )
    for col in ("round", "killed", "after (s)", "stage reached", "status exit (truthful)", "down exit", "leftovers"):
        t.add_column(col)
    for r in rows:
        st = "-" if r["status_rc"] is None else f"{r['status_rc']} ({'yes' if r.get('status_truthful') else 'NO'})"
        t.add_row(
            str(r["round"]),
            r["killed"],
            "-" if r["after_s"] is None else f"{r['after_s']:.2f}",
            r["stage"],
            st,
            str(r["down_rc"]),
            ", ".join(r["leftovers"]) or "none",
        )
    Console(width=200).print(t)
    out = ROOT / "bench-results"
    out.mkdir(exist_ok=True)
    (out / "chaos.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    raise SystemExit(main())
