"""`make bench-nvue`: a blank NVUE fabric configured as automation configures a real one (issue 33).

For each size (4 spines x 4 leafs = 8 switches, then 4 x 12 = 16 switches, a server on every leaf
in tenant red): `twin up` of the blank fabric (`nvue: blank`: NVUE, nothing configured), then one
Ansible run of tests/e2e/ansible/nvue_day0.yml with 8 forks over `twin inventory --format nvue`
(each switch at its management address, port 8765, the persistent ansible.netcommon.httpapi
connection): every switch's day 0 as one NVUE revision. Then `twin wait` and `twin verify`.

The table: each revision's apply (from the PATCH that applies it to the poll that sees it
applied: the module's `ended - started`), the playbook's wall time, the fabric converged how long
after the last apply (`twin wait` returning, as seen from the last apply's end), verify's result.
Targets: every revision applied < 10 s, converged within 30 s of the last apply.
Before issue 33 (revisions one at a time under the lab's lock, each waiting for the whole fabric
to converge) 8 switches took ~9 minutes and nothing converged.
Results also go to bench-results/nvue_fabric.json.
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

ANSIBLE = ROOT / "tests/e2e/ansible"
APPLIED, CONVERGED = 10.0, 30.0  # the targets: s per revision, s from the last apply to converged


def topology(spines: int, leafs: int) -> dict:
    """A blank Clos fabric with a server on every leaf, loopbacks and ASNs pinned (as an inventory has them)."""
    nodes: dict = {f"spine{s:02d}": {"kind": "spine", "loopback": f"10.10.10.{100 + s}"} for s in range(1, spines + 1)}
    nodes |= {
        f"leaf{i:02d}": {"kind": "leaf", "asn": 65100 + i, "loopback": f"10.10.10.{i}"} for i in range(1, leafs + 1)
    }
    nodes |= {f"server{i:02d}": {"kind": "host"} for i in range(1, leafs + 1)}
    links = [
        {"endpoints": [f"spine{s:02d}:swp{i}", f"leaf{i:02d}:swp{50 + s}"]}
        for i in range(1, leafs + 1)
        for s in range(1, spines + 1)
    ]
    links += [{"endpoints": [f"leaf{i:02d}:swp1", f"server{i:02d}:eth1"]} for i in range(1, leafs + 1)]
    return {
        "name": f"nvbench{spines + leafs}",
        "vtep": "leaf",
        "defaults": {"nvue": "blank"},
        "nodes": nodes,
        "links": links,
        "tenants": {
            "red": {
                "l3vni": 4001,
                "segments": {
                    "vlan10": {
                        "subnet": "10.1.10.0/24",
                        "l2vni": 10,
                        "gateway": "10.1.10.1",
                        "mac": "00:00:5e:00:01:01",
                    }
                },
                "attachments": [
                    {"host": f"server{i:02d}", "segment": "vlan10", "address": f"10.1.10.{100 + i}"}
                    for i in range(1, leafs + 1)
                ],
            }
        },
    }


def twin(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "twin.cli", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


def playbook(inventory: Path, tmp: Path, spines: int, leafs: int, forks: int) -> tuple[dict, float]:
    env = {
        **os.environ,
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_HOME": str(tmp / "ah"),
        "ANSIBLE_LOCAL_TEMP": str(tmp / "at"),
        "ANSIBLE_HTTPAPI_PLUGINS": str(ANSIBLE / "httpapi_plugins"),
        "ANSIBLE_LIBRARY": str(ANSIBLE / "library"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_PERSISTENT_COMMAND_TIMEOUT": "300",
    }
    ports = {
        "spine_ports": [f"swp{i}" for i in range(1, leafs + 1)],
        "leaf_ports": [f"swp{50 + s}" for s in range(1, spines + 1)],
    }
    t0 = time.time()
    p = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(inventory),
            "-f",
            str(forks),
            "-e",
            json.dumps(ports),
            str(ANSIBLE / "nvue_day0.yml"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
        timeout=1800,
    )
    doc = json.loads(p.stdout[p.stdout.index("{") :])
    hosts = doc["plays"][0]["tasks"][0]["hosts"]
    if p.returncode != 0:
        raise SystemExit(
            "the playbook failed:\n" + "\n".join(f"  {h}: {r.get('msg')}" for h, r in hosts.items() if r.get("failed"))
        )
    return hosts, time.time() - t0


def one(spines: int, leafs: int, forks: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="nvbench") as d:
        tmp = Path(d)
        f = tmp / "blank.yml"
        f.write_text(yaml.safe_dump(topology(spines, leafs), sort_keys=False))
        name = f"nvbench{spines + leafs}"
        t0 = time.monotonic()
        up = twin("up", str(f), "--name", name)
        if up.returncode != 0:
            raise SystemExit(f"twin up: {up.stdout}{up.stderr}")
        row: dict = {"switches": spines + leafs, "up_s": round(time.monotonic() - t0, 1)}
        try:
            inv = twin("inventory", name, "--format", "nvue", "-o", str(tmp))
            if inv.returncode != 0:
                raise SystemExit(f"twin inventory: {inv.stderr}")
            hosts, wall = playbook(tmp / "nvue.yml", tmp, spines, leafs, forks)
            applies = [r["ended"] - r["started"] for r in hosts.values()]
            last = max(r["ended"] for r in hosts.values())
            w = twin("wait", name)
            row |= {
                "playbook_s": round(wall, 1),
                "apply_max_s": round(max(applies), 1),
                "apply_median_s": round(statistics.median(applies), 1),
                "converged_after_last_apply_s": round(time.time() - last, 1) if w.returncode == 0 else None,
                "wait": w.returncode == 0,
                "verify": twin("verify", name).returncode == 0,
                "service": sorted(r["progress"] for r in hosts.values()),
            }
        finally:
            twin("down", name)
        return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4x4,4x12", help="SPINESxLEAFS,... (default 4x4,4x12: 8 and 16 switches)")
    ap.add_argument("--forks", type=int, default=8)
    args = ap.parse_args()
    rows = []
    with host_turn("twin bench-nvue"):
        for size in args.sizes.split(","):
            s, leafs = (int(x) for x in size.split("x"))
            rows.append(one(s, leafs, args.forks))
    table = Table(title=f"a blank NVUE fabric's day 0 by one playbook ({args.forks} forks)")
    for col in (
        "switches",
        "twin up (s)",
        "playbook (s)",
        "apply max / median (s)",
        "converged after the last apply (s)",
        "wait",
        "verify",
    ):
        table.add_column(col)
    for r in rows:
        conv = r.get("converged_after_last_apply_s")
        table.add_row(
            str(r["switches"]),
            f"{r['up_s']}",
            f"{r.get('playbook_s')}",
            f"{r.get('apply_max_s')} / {r.get('apply_median_s')}"
            + ("" if (r.get("apply_max_s") or 99) < APPLIED else " (target < 10)"),
            f"{conv}" + ("" if conv is not None and conv < CONVERGED else " (target < 30)"),
            "yes" if r.get("wait") else "NO",
            "passed" if r.get("verify") else "FAILED",
        )
    Console().print(table)
    out = ROOT / "bench-results"
    out.mkdir(exist_ok=True)
    (out / "nvue_fabric.json").write_text(json.dumps({"rows": rows, "load": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
