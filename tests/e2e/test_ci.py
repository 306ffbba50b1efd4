"""docs/ci.md, run as written: the GitHub Actions workflow's steps, taken out of the document,
run in order with their `if:` conditions against a real lab, from a clone of a scratch
repository whose change branch adds tenant green; and the GitLab job runs the same commands."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import ROOT, leftovers

LAB = "t-ck-ci"
DOC = ROOT / "docs" / "ci.md"
pytestmark = pytest.mark.e2e
SKIPPED = "Install twin"  # twin under test is on PATH instead
CHANGE_CHECKS = {
    "checks": [
        {"name": "leaf1 peers with spine1", "type": "bgp_session", "node": "leaf1", "peer": "spine1"},
        {
            "name": "green reaches host2d via dpu2",
            "type": "route",
            "node": "dpu1",
            "tenant": "green",
            "prefix": "10.1.1.12/32",
            "vteps": ["dpu2"],
        },
        {"name": "green web answers", "type": "ping", "from": "host1d", "to": "10.1.1.12"},
        {
            "name": "green cannot reach blue's db",
            "type": "ping",
            "from": "host1d",
            "to": "10.1.2.12",
            "expect": "failure",
        },
        {"name": "RoCE green host1d to host2d", "type": "roce", "from": "host1d", "to": "host2d"},
    ]
}
ALLOW = {
    "allow": [
        {"vrf": "green", "change": "appeared", "reason": "tenant green is new"},
        {"what": "prefixes", "key": "evpn *", "change": "changed", "reason": "EVPN prefix counts follow the tenants"},
    ]
}


def yaml_blocks(text: str) -> list[dict]:
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def workflows() -> tuple[dict, dict]:
    blocks = yaml_blocks(DOC.read_text())
    github = next(b for b in blocks if isinstance(b, dict) and "jobs" in b)
    gitlab = next(b for b in blocks if isinstance(b, dict) and "script" in b.get("twin", {}))
    return github["jobs"]["twin"], gitlab["twin"]


def add_green(topo: dict) -> None:
    topo["nodes"].update({"host1d": {"kind": "host"}, "host2d": {"kind": "host"}})
    topo["links"] += [{"endpoints": ["dpu1:pf0vf3", "host1d:eth1"]}, {"endpoints": ["dpu2:pf0vf3", "host2d:eth1"]}]
    topo["tenants"]["green"] = {
        "l3vni": 10300,
        "segments": {"web": {"subnet": "10.1.1.0/24", "l2vni": 10301, "gateway": "10.1.1.1"}},
        "attachments": [
            {"host": "host1d", "segment": "web", "address": "10.1.1.11"},
            {"host": "host2d", "segment": "web", "address": "10.1.1.12"},
        ],
    }


def scratch_repo(tmp: Path) -> Path:
    """A network team's repository (main: the default fabric; change: tenant green, its checks and
    allow file), cloned as CI checks it out: on the change branch, with origin."""
    src = tmp / "origin"
    src.mkdir()

    def git(*a, cwd=src):
        return subprocess.run(
            ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.org", *a],
            cwd=cwd,
            check=True,
            capture_output=True,
            text=True,
        )

    git("init", "-q", "-b", "main")
    (src / "topologies").mkdir()
    topo = yaml.safe_load((ROOT / "topologies/aipod.yml").read_text())
    (src / "topologies/fabric.yml").write_text(yaml.safe_dump(topo, sort_keys=False))
    git("add", "-A")
    git("commit", "-qm", "the fabric")
    git("checkout", "-qb", "change")
    add_green(topo)
    (src / "topologies/fabric.yml").write_text(yaml.safe_dump(topo, sort_keys=False))
    for path, doc in (("checks/fabric.yml", CHANGE_CHECKS), ("ci/allow.yml", ALLOW)):
        (src / path).parent.mkdir(exist_ok=True)
        (src / path).write_text(yaml.safe_dump(doc, sort_keys=False))
    git("add", "-A")
    git("commit", "-qm", "tenant green")
    work = tmp / "work"
    git("clone", "-q", str(src), str(work), cwd=tmp)
    git("checkout", "-q", "change", cwd=work)
    return work


def test_the_github_workflow_of_docs_ci_runs_as_written(twin_home, node_image, runtime, tmp_path):
    job, _ = workflows()
    env = {k: str(v) for k, v in job["env"].items()} | {"LAB": LAB, "BASE_REF": "main"}
    assert all("${{" not in v for v in env.values()), "every GitHub expression of env is set by the test"
    summary = tmp_path / "step-summary.md"
    env = (
        os.environ
        | env
        | {"GITHUB_STEP_SUMMARY": str(summary), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    )
    work = scratch_repo(tmp_path)
    failed, ran, uploads = False, [], []
    try:
        for step in job["steps"]:
            cond = str(step.get("if", ""))
            if "uses" in step:
                uploads += [step["with"]["path"]] if "upload-artifact" in step["uses"] else []
                continue
            if step["name"] == SKIPPED or failed and not ("always()" in cond or "!cancelled()" in cond):
                continue
            p = subprocess.run(
                ["bash", "-e", "-c", step["run"]], cwd=work, env=env, capture_output=True, text=True, timeout=600
            )
            ran.append((step["name"], p.returncode, p.stdout[-3000:] + p.stderr[-3000:]))
            failed |= p.returncode != 0
    finally:
        subprocess.run([sys.executable, "-m", "twin.cli", "down", LAB], env=env, capture_output=True)
    assert [(n, rc) for n, rc, _ in ran if rc] == [], "\n\n".join(f"{n}:\n{o}" for n, rc, o in ran if rc)
    assert [n for n, _, _ in ran] == [s["name"] for s in job["steps"] if "run" in s and s["name"] != SKIPPED]
    assert leftovers(runtime, LAB) == [], "the workflow tears its lab down"
    out = work / env["OUT"]
    assert uploads == [f"{env['OUT']}/"], "the artifact holds what the steps wrote"
    assert "add tenant green (l3vni 10300, VTEPs dpu1, dpu2)" in json.loads((out / "apply.json").read_text())["changes"]
    suites = {s.get("name"): s for s in ET.parse(out / "verify.xml").getroot()}
    assert {"checks", "control", "traffic", "isolation"} <= set(suites)
    assert all(s.get("failures") == "0" for s in suites.values())
    assert {c.get("name") for c in suites["checks"]} == {c["name"] for c in CHANGE_CHECKS["checks"]}
    verify_md, baseline_md = (out / "verify.md").read_text(), (out / "baseline.md").read_text()
    assert verify_md.startswith(f"## twin verify {LAB}: PASSED")
    assert baseline_md.startswith(f"## twin baseline compare {LAB}: PASSED")
    assert "| dpu1 | green | route | 10.1.1.12/32 | appeared |" in baseline_md and "tenant green is new" in baseline_md
    assert summary.read_text() == verify_md + baseline_md, "both summaries reach the job summary"
    for name in ("verify-evidence.json", "baseline-evidence.json"):
        ev = json.loads((out / name).read_text())
        assert ev["lab"] == LAB and ev["passed"] is True and ev["commands"]
        assert all({"node", "cmd", "rc", "stdout", "stderr", "seconds"} <= set(c) for c in ev["commands"])


def commands(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines if line.strip()]


def test_the_gitlab_job_runs_the_same_commands():
    github, gitlab = workflows()
    runs = [s for s in github["steps"] if "run" in s]
    gh_install = commands(next(s for s in runs if s["name"] == SKIPPED)["run"].splitlines())
    gh = commands(
        line
        for s in runs
        if s["name"] != SKIPPED
        for line in s["run"].splitlines()
        if "GITHUB_STEP_SUMMARY" not in line
    )
    gl = [
        c.removesuffix(" || status=1")
        for c in commands(gitlab["script"] + gitlab["after_script"])
        if c not in ("status=0", "exit $status")
    ]
    assert gl == gh
    assert commands(gitlab["before_script"]) == gh_install
    same = ("TOPOLOGY", "CHECKS", "ALLOW", "OUT", "TWIN_REPO")
    assert {k: gitlab["variables"][k] for k in same} == {k: github["env"][k] for k in same}
    assert gitlab["artifacts"]["paths"] == [f"{github['env']['OUT']}/"]
    assert gitlab["artifacts"]["reports"]["junit"] == f"{github['env']['OUT']}/verify.xml"
