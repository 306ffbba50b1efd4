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
ACL = {"BLOCK": {"type": "ipv4", "rule": {
    "10": {"match": {"ip": {"protocol": "udp", "dest-ip": "10.1.10.103/32", "dest-port": {"4791": {}}}},
           "action": {"deny": {}}},
    "20": {"action": {"permit": {}}}}}}


def mistaken(tmp: Path) -> Path:
    """The samples, leaf01's with its uplink swp51 at MTU 1500 and ACL BLOCK inbound on swp1 (server01)."""
    shutil.copytree(SAMPLES, tmp / "cfg")
    f = tmp / "cfg/leaf01/startup.yaml"
    doc = yaml.safe_load(f.read_text())
    s = doc[1]["set"]
    s["interface"]["swp51"].setdefault("link", {})["mtu"] = 1500
    s["interface"]["swp1"]["acl"] = {"BLOCK": {"inbound": {}}}
    s["acl"] = ACL
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    return tmp / "cfg"


@pytest.fixture(scope="module")
def lab(runtime, node_image, tmp_path_factory):
    cfg = mistaken(tmp_path_factory.mktemp("nvkrn"))
    p = twin_cli("up", str(TOPOLOGY), "--name", NAME, "--configs", str(cfg), "--image", node_image, "--no-wait")
    try:
        assert p.returncode == 0, p.stdout + p.stderr
        assert twin_cli("wait", NAME).returncode == 0
        yield Lab.open(NAME)
    finally:
        twin_cli("down", NAME)
    assert leftovers(runtime, NAME) == []


def test_mistakes_named_then_fixed(lab):
    rep = verify.run(lab, only=["mtu", "acl"])
    said = {f"{c.group} {c.name}: {c.message}" for c in rep.failures()}
    assert any("leaf01 swp51 mtu 1500 < 9000 needed by the topology's MTU of this link" in s for s in said), said
    lost = [s for s in said if s.startswith("mtu red ") and "lost" in s and "leaf01 swp51 mtu 1500" in s]
    assert lost, said
    acl = [s for s in said if s.startswith("acl leaf01 swp1 inbound acl BLOCK rule 10")]
    assert len(acl) == 1 and "drops server01 -> server03" in acl[0] and "4/4 frames of server01 -> server03 " \
        "dropped, counted 4" in acl[0], said
    shown = twin_cli("exec", NAME, "leaf01", "--", "nv", "show", "interface", "swp1", "acl", "-o", "json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert json.loads(shown.stdout)["BLOCK"]["inbound"]["rule"]["10"]["packets"] >= 4
    p = twin_cli("apply", NAME, str(SAMPLES))
    assert p.returncode == 0, p.stdout + p.stderr
    rep = verify.run(lab, only=["mtu", "acl", "traffic"])
    assert rep.passed, rep.failures()
    assert {c.group for c in rep.checks} == {"mtu", "traffic"}     # no ACL left to judge
