"""The user's configs checked against the topology's intent (issue 45), against real bring-ups.

Every mistake class an operator makes in the default lab's NVUE files (tests/lintcases.py) is
named by `twin lint` alone, without Docker, with its file and line (a test each, ~2 s, with
DOCKER_HOST pointing nowhere). The dynamic side takes two bring-ups, five mistakes each, placed
on nodes where their effects stay apart (a bring-up of the default lab costs 10-35 s here, and
each of these runs to its deadline):

- the underlay and EVPN: spine1 with leaf1's ASN, leaf2 without its neighbor to dpu1, spine2's
  loopback not advertised, dpu1's red db VLAN mapped to blue's db VNI, EVPN off on dpu2;
- the VTEPs' tenants: dpu1's red web host in blue's web VLAN, dpu1's red db SVI in blue's VRF,
  dpu1 without multipath relax (ECMP off), dpu2's L3VNIs swapped, dpu2's VTEP source wrong.

Each `twin up` says every finding first (file, line, value), before a container starts, then
fails at the barrier, its missing items listed without -v by node and kind (issue 45's item 1), the
same groups in --json; the lab is kept (--keep-on-failure) and `twin verify` names each mistake's
finding as the cause of a failing check (`see FILE:LINE`); ECMP off shows at the barrier (a loopback route over one port
of two), not in a control check: the data-plane checks that see it need the tenants whole.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from tests.lintcases import AIPOD, GOLDEN, NVUE, node_of, write_dir

pytestmark = pytest.mark.e2e

UNDERLAY = ["spine-asn", "missing-neighbor", "loopback-not-advertised", "vlan-vni", "evpn-off"]
TENANTS = ["access-vlan", "svi-vrf", "ecmp-off", "l3vni-swap", "vtep-source"]
# what the barrier says of each (twin up -v), where it names the mistake's own effect
BARRIER = {
    "spine-asn": r"spine1: BGP session on swp1 to leaf1",
    "missing-neighbor": r"leaf2: BGP session on swp3 to dpu1 is not configured \(FRR has no neighbor swp3\)",
    "loopback-not-advertised": r"no route to spine2's loopback 10\.255\.0\.2/32",
    "ecmp-off": r"dpu1: route to dpu2's loopback 10\.255\.0\.6/32 over p[01], not yet over p0, p1",
}


# the group (node, kind) each of those is listed under (twin.base.missing)
GROUP = {
    "spine-asn": ("spine1", "sessions"),
    "missing-neighbor": ("leaf2", "sessions"),
    "loopback-not-advertised": ("dpu1", "loopback routes"),
    "ecmp-off": ("dpu1", "loopback routes"),
}


def findings(d: Path, mistake: str) -> list[str]:
    """What twin lint says of a mistake (its golden findings), with the directory's paths."""
    return [f"{d}/{line}" for line in (GOLDEN / "nvue" / mistake / "findings.txt").read_text().splitlines()]


@pytest.mark.parametrize("mistake", [m.name for m in NVUE])
def test_twin_lint_alone_names_each_mistake_without_docker(mistake, tmp_path):
    d = write_dir(tmp_path / "configs", "nvue", [mistake])
    env = os.environ | {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    p = subprocess.run(
        [sys.executable, "-m", "twin.cli", "lint", "-t", str(AIPOD), str(d), "--strict"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert p.returncode == 1, p.stdout + p.stderr
    assert [ln.removeprefix("error: ") for ln in p.stdout.splitlines() if ln.startswith("error: ")] == findings(
        d, mistake
    )
    assert p.stdout.splitlines()[-1].startswith(f"twin lint: {len(findings(d, mistake))} finding")


def up_fails_naming(tmp_path: Path, name: str, mistakes: list[str], image: str) -> tuple[Path, str]:
    d = write_dir(tmp_path / "configs", "nvue", mistakes)
    p = twin_cli(
        "up",
        str(AIPOD),
        "--name",
        name,
        "--configs",
        str(d),
        "--image",
        image,
        "--timeout",
        "45",
        "--keep-on-failure",
        "--json",
        timeout=300,
    )
    assert p.returncode == 1, p.stdout + p.stderr
    err = p.stderr
    assert "convergence (BGP sessions, loopback routes, VNIs and EVPN type-2/3/5 routes) not reached" in err
    start = err.index("starting 12 containers")
    for m in mistakes:
        for f in findings(d, m):
            assert f"warning: {f}" in err and err.index(f"warning: {f}") < start, (m, err[:3000])
        if m in BARRIER:  # without -v: the missing items by node and kind, under their group's title
            title = ", ".join(GROUP[m])  # listed in full (a dozen items), or counted on the last line
            counted = re.search(rf"\.\.\. and \d+ more groups?: .*{title} \d", err)
            assert f"  {title} (" in err or counted, (m, err[-3000:])
    assert "(-v for details)" not in err
    doc = json.loads(p.stdout)  # --json: the same groups, every item
    assert (doc["status"], doc["kept"], doc["missing_count"]) == (
        "failed",
        True,
        sum(g["count"] for g in doc["missing"]),
    ), doc
    for m in BARRIER:
        if m in mistakes:
            node, kind = GROUP[m]
            items = [i for g in doc["missing"] if (g["node"], g["kind"]) == (node, kind) for i in g["items"]]
            assert any(re.search(BARRIER[m], i) for i in items), (m, doc["missing"])
    return d, err


def verify_names(name: str, d: Path, mistakes: list[str]) -> None:
    p = twin_cli("verify", name, "--only", "control", "--json", timeout=300)
    assert p.returncode == 1
    failed = [c for c in json.loads(p.stdout)["checks"] if not c["passed"]]
    for m in mistakes:
        node = node_of("nvue", m)
        lines = [int(x.split(":")[1]) for x in (GOLDEN / "nvue" / m / "findings.txt").read_text().splitlines()]
        see = [f"see {d}/{node}/startup.yaml:{line} " for line in lines]
        named = [c["name"] for c in failed if any(s in c["message"] for s in see)]
        assert named, (m, see, [(c["name"], c["message"][-300:]) for c in failed])


@pytest.mark.parametrize("group", ["underlay", "tenants"])
def test_up_says_every_finding_first_fails_and_verify_names_the_cause(group, tmp_path, runtime, node_image):
    name, mistakes = f"t-lint-{group[:4]}", UNDERLAY if group == "underlay" else TENANTS
    try:
        d, _ = up_fails_naming(tmp_path, name, mistakes, node_image)
        verify_names(name, d, [m for m in mistakes if m != "ecmp-off"])
    finally:
        twin_cli("down", name)
    assert leftovers(runtime, name) == []
