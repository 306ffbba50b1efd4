"""`twin doctor` on this machine (issue 27): the real probes, the real engine and images.

This project's machine has Docker, bridges, veth pairs and VXLAN, and lacks Linux VRF devices
and the netem qdisc (HELPERS.md, "The machine"): doctor must say so, with what each lack changes,
and exit 0 (nothing twin needs is missing). A kernel that has VRF devices must be told apart by
the same probe `twin up` asks (`twin.runtime.kernel.vrf_devices`)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.e2e.conftest import ROOT
from twin.runtime import kernel

pytestmark = pytest.mark.e2e
TWIN = [sys.executable, "-m", "twin.cli"]


def doctor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(TWIN + ["doctor", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_doctor_reports_this_machine(twin_home):
    t0 = time.monotonic()
    res = doctor("--topology", str(ROOT / "tests/e2e/small.yml"))
    took = time.monotonic() - t0
    assert res.returncode == 0, res.stdout + res.stderr
    text = res.stdout
    assert "Traceback" not in res.stderr and "{'" not in text
    assert kernel.vrf_devices("t-doctor") is False, "this machine's kernel has no VRF devices"
    assert "NO  VRF devices (CONFIG_NET_VRF): tenants run on the netns VRF backend" in text
    assert "NO  the netem qdisc (CONFIG_NET_SCH_NETEM): `twin fault link-loss` drops at random with nftables" in text
    for present in ("Linux bridges", "veth pairs", "VXLAN devices", "nftables NAT", "nftables `log group`"):
        assert f"yes {present}" in text, text
    assert "Docker engine: " in text and "not reachable" not in text
    assert "lab aipod (" in text and "lab small (" in text
    assert "FRR 10." in text, "the node image's FRR is read from the image"
    assert text.rstrip().endswith("ready: twin can run here")
    assert took < 20, f"doctor took {took:.1f} s"


def test_doctor_json(twin_home):
    res = doctor("--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    found = {f["key"]: f for f in doc["features"]}
    assert doc["ok"] is True and doc["problems"] == []
    assert found["vrf"]["present"] is False and "netns VRF backend" in found["vrf"]["means"]
    assert found["netem"]["present"] is False and found["vxlan"]["present"] is True and found["vxlan"]["needed"]
    assert doc["shaping"] in ("tc", "nft") and doc["labs"][0]["backend"] == "netns"
    assert any(i["current"] and i["frr"] for i in doc["images"])
