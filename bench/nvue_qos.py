"""`make bench-nvue-qos`: aipod from its own NVUE export, as it is and with RoCE QoS and an ACL on every
port (issue 44: bring-up and verify within 10 % of the plain export's).

Both variants are the same lab (topologies/aipod.yml, every node running its NVUE export); the second
adds to every node `qos roce` (lossless: the DSCP map, PFC priorities, ECN marking, the CNP class) and an
ipv4 ACL (`GUARD`: telnet denied, the rest permitted, so every intended flow passes) bound inbound on
every port. Runs are interleaved (plain, QoS+ACL, plain, ...) so the host's load meets both
alike. Each run: `twin up` (its own timings: containers, converged), `twin verify` (every group; it must
pass, the `acl` and `qos` groups included), `twin down`. The table gives the medians and the ratio;
the exit status is 1 when a ratio passes 1.10 or a verify fails. Results also go to
bench-results/nvue_qos.json.
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
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import host_turn  # noqa: E402  (the host's one lock for e2e, bench and chaos)

TOPOLOGY = ROOT / "topologies/aipod.yml"
NAME = "bnvqos"
TARGET = 1.10
GUARD = {
    "type": "ipv4",
    "rule": {
        "10": {"match": {"ip": {"protocol": "tcp", "dest-port": {"23": {}}}}, "action": {"deny": {}}},
        "20": {"action": {"permit": {}}},
    },
}
PORTS = ("swp",)  # the interface types an ACL is bound on: every port, as measured (an SVI's runs too, on its bridge)


def twin(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "twin.cli", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


def with_qos_and_acls(plain: Path, out: Path) -> int:
    """`plain`'s startup.yaml files with RoCE QoS and GUARD on every port, into `out`; the
    number of bindings made."""
    bound = 0
    for f in sorted(plain.glob("*/startup.yaml")):
        doc = yaml.safe_load(f.read_text())
        s = doc[-1]["set"]
        s["qos"] = {"roce": {"enable": "on", "mode": "lossless"}}
        s["acl"] = {"GUARD": GUARD}
        for port in s.get("interface", {}).values():
            if port.get("type") in PORTS:
                port["acl"] = {"GUARD": {"inbound": {}}}
                bound += 1
        (out / f.parent.name).mkdir(parents=True)
        (out / f.parent.name / "startup.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return bound


def one(configs: Path, variant: str) -> dict:
    t0 = time.monotonic()
    up = twin("up", str(TOPOLOGY), "--name", NAME, "--configs", str(configs), "--json")
    wall = time.monotonic() - t0
    try:
        if up.returncode != 0:
            raise SystemExit(f"twin up ({variant}) failed:\n{up.stdout[-3000:]}{up.stderr[-3000:]}")
        doc = json.loads(up.stdout)
        t1 = time.monotonic()
        v = twin("verify", NAME, "--json")
        verified = time.monotonic() - t1
        rep = json.loads(v.stdout) if v.stdout.strip().startswith("{") else {}
        groups = sorted({c["group"] for c in rep.get("checks", [])})
        failed = [f"{c['group']} {c['name']}: {c['message']}" for c in rep.get("checks", []) if not c["passed"]]
        return {
            "variant": variant,
            "up_s": round(wall, 1),
            "containers_s": round(doc["timings"]["containers"], 1),
            "converged_s": round(doc["timings"]["converged"], 1),
            "verify_s": round(verified, 1),
            "verify": v.returncode == 0,
            "checks": len(rep.get("checks", [])),
            "groups": groups,
            "group_s": {g: round(s, 2) for g, s in rep.get("seconds", {}).items()},
            "failed": failed[:10],
            "load": round(os.getloadavg()[0], 1),
        }
    finally:
        twin("down", NAME)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="runs of each variant, interleaved (default 3)")
    args = ap.parse_args()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bnvqos") as d, host_turn("twin bench-nvue-qos"):
        plain, qos = Path(d) / "plain", Path(d) / "qos"
        ex = twin("export", str(TOPOLOGY), "--format", "nvue", "-o", str(plain))
        if ex.returncode != 0:
            raise SystemExit(f"twin export: {ex.stderr}")
        bound = with_qos_and_acls(plain, qos)
        for _ in range(args.runs):
            rows.append(one(plain, "plain"))
            rows.append(one(qos, "qos+acl"))
    med = {
        v: {k: statistics.median(r[k] for r in rows if r["variant"] == v) for k in ("up_s", "converged_s", "verify_s")}
        for v in ("plain", "qos+acl")
    }
    ratio = {k: med["qos+acl"][k] / med["plain"][k] for k in med["plain"]}
    t = Table(
        title=f"aipod from its NVUE export, plain and with RoCE QoS + an ACL on {bound} ports "
        f"({args.runs} runs each, interleaved; target: within {TARGET - 1:.0%})",
        title_justify="left",
    )
    for col in ("variant", "twin up (s)", "containers (s)", "converged (s)", "verify (s)", "checks", "verify", "load"):
        t.add_column(col)
    for r in rows:
        t.add_row(
            r["variant"],
            str(r["up_s"]),
            str(r["containers_s"]),
            str(r["converged_s"]),
            str(r["verify_s"]),
            str(r["checks"]),
            "passed" if r["verify"] else "FAILED: " + "; ".join(r["failed"]),
            str(r["load"]),
        )
    Console(width=160).print(t)
    m = Table(title="medians", title_justify="left")
    for col in ("", "plain (s)", "qos+acl (s)", "ratio"):
        m.add_column(col)
    for k, label in (("up_s", "twin up"), ("converged_s", "converged"), ("verify_s", "verify")):
        m.add_row(
            label,
            f"{med['plain'][k]:.1f}",
            f"{med['qos+acl'][k]:.1f}",
            f"{ratio[k]:.2f}" + ("" if ratio[k] <= TARGET else f" (target <= {TARGET})"),
        )
    t = m
    Console(width=160).print(t)
    out = ROOT / "bench-results"
    out.mkdir(exist_ok=True)
    (out / "nvue_qos.json").write_text(json.dumps({"rows": rows, "medians": med, "ratio": ratio}, indent=1))
    return 0 if all(r["verify"] for r in rows) and all(x <= TARGET for x in ratio.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
