"""NVUE's MTUs and ACLs run and judged (issue 44, the kernel half): NVIDIA's sample startup.yaml
files with two mistakes in leaf01's, an uplink at `link.mtu 1500` in a fabric of 9000 and an inbound
ACL on server01's port that denies RoCEv2 to server03. The lab comes up (NVUE takes both), and
`twin verify` names each: the short link's end with the MTU it needs, the ACL's rule with its frames
dropped and counted (`nv show acl` counts them too). The samples applied again (`twin apply`) pass.
One lab for the module."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from twin import verify
from twin.lab import Lab

pytestmark = pytest.mark.e2e

NAME = "t-nvue-krn"
TOPOLOGY = ROOT / "tests/e2e/nvue/samples.yml"
SAMPLES = ROOT / "tests/golden/interop/nvue/samples"
ACL = {
    "BLOCK": {
        "type": "ipv4",
        "rule": {
            "10": {
                "match": {"ip": {"protocol": "udp", "dest-ip": "10.1.10.103/32", "dest-port": {"4791": {}}}},
                "action": {"deny": {}},
            },
            "20": {"action": {"permit": {}}},
        },
    }
}


def with_qos(tmp: Path, name: str) -> Path:
    """The samples with RoCE QoS (lossless) on leaf01 and dpu1."""
    shutil.copytree(SAMPLES, tmp / name)
    for node in ("leaf01", "dpu1"):
        f = tmp / name / node / "startup.yaml"
        doc = yaml.safe_load(f.read_text())
        doc[1]["set"]["qos"] = {"roce": {"enable": "on", "mode": "lossless"}}
        f.write_text(yaml.safe_dump(doc, sort_keys=False))
    return tmp / name


def mistaken(tmp: Path) -> Path:
    """The samples with QoS, leaf01's with its uplink swp51 at MTU 1500, ACL BLOCK inbound on swp1
    (server01), and RoCE's DSCP 26 mapped to switch priority 0 (dpu1 keeps 3)."""
    cfg = with_qos(tmp, "cfg")
    f = cfg / "leaf01/startup.yaml"
    doc = yaml.safe_load(f.read_text())
    s = doc[1]["set"]
    s["interface"]["swp51"].setdefault("link", {})["mtu"] = 1500
    s["interface"]["swp1"]["acl"] = {"BLOCK": {"inbound": {}}}
    s["acl"] = ACL
    s["qos"]["mapping"] = {"default-global": {"dscp": {"26": {"switch-priority": 0}}}}
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    return cfg


@pytest.fixture(scope="module")
def tmp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("nvkrn")


@pytest.fixture(scope="module")
def lab(runtime, node_image, tmp):
    cfg = mistaken(tmp)
    p = twin_cli("up", str(TOPOLOGY), "--name", NAME, "--configs", str(cfg), "--image", node_image, "--no-wait")
    try:
        assert p.returncode == 0, p.stdout + p.stderr
        assert twin_cli("wait", NAME).returncode == 0
        yield Lab.open(NAME)
    finally:
        twin_cli("down", NAME)
    assert leftovers(runtime, NAME) == []


def test_mistakes_named_then_fixed(lab, tmp):
    rep = verify.run(lab, only=["mtu", "acl", "qos"])
    said = {f"{c.group} {c.name}: {c.message}" for c in rep.failures()}
    assert any("leaf01 swp51 mtu 1500 < 9000 needed by the topology's MTU of this link" in s for s in said), said
    lost = [s for s in said if s.startswith("mtu red ") and "lost" in s and "leaf01 swp51 mtu 1500" in s]
    assert lost, said
    acl = [s for s in said if s.startswith("acl leaf01 swp1 inbound acl BLOCK rule 10")]
    assert (
        len(acl) == 1
        and "drops server01 -> server03, which the topology says must pass: 4/4 frames of "
        "server01 -> server03 dropped, counted "
        in acl[0]
    ), said
    assert int(acl[0].rsplit("counted ", 1)[1]) >= 4, "the mtu group's frames may be counted too"
    assert any(
        s.startswith("qos leaf01 classes: RoCE (DSCP 26) in traffic class 0 lossy")
        and "unlike dpu1 (RoCE (DSCP 26) in traffic class 3 lossless" in s
        for s in said
    ), said
    assert [c.message for c in rep.checks if c.name == "dpu1 RoCE class"][0].startswith(
        "RoCE frames (DSCP 26) of server03 -> server01 left p0, p1 by traffic class 3"
    )
    shown = twin_cli("exec", NAME, "leaf01", "--", "nv", "show", "interface", "swp1", "acl", "-o", "json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert json.loads(shown.stdout)["BLOCK"]["inbound"]["rule"]["10"]["packets"] >= 4
    qos = twin_cli("exec", NAME, "dpu1", "--", "nv", "show", "qos", "-o", "json")
    assert qos.returncode == 0 and json.loads(qos.stdout)["roce"] == {"enable": "on", "mode": "lossless"}, qos
    p = twin_cli("apply", NAME, str(with_qos(tmp, "fixed")))
    assert p.returncode == 0, p.stdout + p.stderr
    rep = verify.run(lab, only=["mtu", "acl", "qos", "traffic"])
    assert rep.passed, rep.failures()
    assert {c.group for c in rep.checks} == {"mtu", "qos", "traffic"}  # no ACL left to judge
