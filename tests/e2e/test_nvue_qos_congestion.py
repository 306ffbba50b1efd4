"""RoCE QoS on every hop under congestion (issue 44, item 2): the default topology (aipod) with a
congestion point on leaf1's port to dpu2 (half the paths dpu1 -> dpu2 cross it: verify steers its
bursts onto it), brought up from its own NVUE export with `qos roce` on every spine, leaf and DPU, spine2
named otherwise by its NVUE (`system hostname spine2-sw`, as operators' files often name a switch).

1. verify's qos and congestion groups pass: every hop of the RoCE path in the same class, and under a
   burst at twice the point's rate, CE marks counted at leaf1:swp4, out of it by RoCE's class (ECN),
   every CNP back at the sender, by the CNP class at every hop of the way back; spine2's bgpd tells its
   peers its NVUE host name (the node's, set before FRR starts);
2. two mistakes, as operators make them: spine1's DSCP map puts 26 in class 0 (`nv`), and leaf1's,
   the congested hop's, too (the NVUE REST API): verify names spine1 (and that no RoCE path crosses
   it with every link up), leaf1 on the path, and leaf1 marking RoCE in a class without ECN;
3. the fix, the day-0 files, rehearsed under RoCE flows: no frame lost (a class change is made in
   place, never a new root qdisc), and the verify after it passes, with the congestion figures (its
   control and lldp groups taking spine2 by either name).
One lab for the module."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest
import requests
import yaml

from tests.e2e.conftest import ROOT, leftovers, nv_apply, twin_cli
from twin import verify
from twin.base import wait
from twin.lab import Lab
from twin.nvue import service as nvue_service

pytestmark = pytest.mark.e2e

NAME = "t-nvqos"
POINT = "leaf1:swp4"
QOS = {"roce": {"enable": "on", "mode": "lossless"}}
RENAMED = "spine2-sw"
WRONG = {"mapping": {"default-global": {"dscp": {"26": {"switch-priority": 0}}}}}


@pytest.fixture(scope="module")
def tmp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("nvqos")


@pytest.fixture(scope="module")
def day0(tmp) -> Path:
    """aipod with the congestion point, exported to NVUE, `qos roce` added to every node's file."""
    doc = yaml.safe_load((ROOT / "topologies/aipod.yml").read_text())
    doc["congestion"] = [{"port": POINT, "above": "5000pps"}]
    (tmp / "aipod.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    p = twin_cli("export", str(tmp / "aipod.yml"), "--format", "nvue", "-o", str(tmp / "cfg"))
    assert p.returncode == 0, p.stderr
    for f in sorted((tmp / "cfg").glob("*/startup.yaml")):
        nv = yaml.safe_load(f.read_text())
        nv[1]["set"]["qos"] = QOS
        if f.parent.name == "spine2":
            nv[1]["set"]["system"]["hostname"] = RENAMED
        f.write_text(yaml.safe_dump(nv, sort_keys=False))
    assert len(list((tmp / "cfg").glob("*/startup.yaml"))) == 6  # 2 spines, 2 leafs, 2 DPUs
    return tmp / "cfg"


@pytest.fixture(scope="module")
def lab(runtime, node_image, tmp, day0):
    p = twin_cli("up", str(tmp / "aipod.yml"), "--name", NAME, "--configs", str(day0), "--image", node_image)
    try:
        assert p.returncode == 0, p.stdout + p.stderr
        yield Lab.open(NAME)
    finally:
        twin_cli("down", NAME)
    assert leftovers(runtime, NAME) == []


def congested(rep: verify.Report) -> verify.Check:
    (c,) = [c for c in rep.checks if c.group == "congestion" and "RoCE QoS under congestion" in c.name]
    return c


@pytest.mark.alone  # congestion: a rate measured, the machine to itself
def test_every_hop_classifies_roce_alike_and_under_congestion_ce_is_counted_and_cnps_return(lab):
    rep = verify.run(lab, only=["qos", "congestion"])
    assert rep.passed, [f"{c.group} {c.name}: {c.message}" for c in rep.failures()]
    (path,) = [c for c in rep.checks if c.name == "path dpu1 - dpu2"]
    assert path.message == (
        "every hop (dpu1, leaf1, leaf2, dpu2) puts RoCE (DSCP 26) in traffic class 3 lossless with ECN, "
        "CNPs (DSCP 48) in 6"
    )
    c = congested(rep)
    assert c.name == f"{POINT} RoCE QoS under congestion (red host1a -> host2a)"
    f = c.data
    assert 0 < f["ce"] <= f["counted"]["ce"], f  # marked at the congested hop, counted there
    assert f["cnps_sent"] > 0 and f["cnps_received"] == f["cnps_sent"], f  # every CNP back at the sender
    assert f"{POINT.replace(':', ' ')}" in f["roce_hops"] and f["roce_class"] == 3, f
    assert "dpu1 pf0vf0" in f["cnp_hops"] and f["cnp_class"] == 6, f  # the last hop to host1a
    (point,) = rep.extra["congestion"]["points"]  # twin's own judgement of the point, steered onto it
    (port,) = [x.port for x in lab.fabric.sessions("leaf1") if x.peer == "spine2"]
    (summary,) = lab.node("leaf1").vtysh_json("show bgp summary json")
    assert summary["ipv4Unicast"]["peers"][port]["hostname"] == RENAMED, "spine2's FRR started with its NVUE name"
    assert point["point"] == POINT and not point["every_path"] and point["ect"]["ce"] > 0, point
    print(
        f"\n{POINT}: {f['ce']} of {f['received']} CE (counted {f['counted']['ce']}), CNPs {f['cnps_received']}/"
        f"{f['cnps_sent']}, RoCE by class 3 at {f['roce_hops']}, CNPs by 6 at {f['cnp_hops']}; {rep.seconds}"
    )


def rest_revision(lab: Lab, node: str, path: str, patch: dict) -> dict:
    """A revision through `node`'s NVUE REST API, as automation makes one: made, patched, applied."""
    rec = nvue_service.require(lab.dir, NAME)
    s = requests.Session()
    s.auth = (nvue_service.USER, nvue_service.password(lab.dir))
    s.verify, s.trust_env = str(nvue_service.root(lab.dir) / "cert.pem"), False
    base = f"https://127.0.0.1:{rec['listeners'][node]['port']}/nvue_v1"
    rid = next(iter(s.post(f"{base}/revision").json()))
    assert s.patch(f"{base}/{path}", params={"rev": rid}, json=patch).status_code == 200
    at = f"{base}/revision/{quote(rid, safe='')}"
    assert s.patch(at, json={"state": "apply", "auto-prompt": {"ays": "ays_yes"}}).status_code == 200
    doc: dict = {}
    wait.until(
        lambda: [] if doc.update(s.get(at).json()) or doc["state"] not in ("apply", "pending") else ["applying"],
        120,
        f"{node}'s revision applied",
        first=0.2,
        cap=1.0,
    )
    return doc


@pytest.mark.alone  # congestion: a rate measured, the machine to itself
def test_a_spine_and_the_congested_hop_with_roce_in_another_class_are_named(lab):
    nv_apply(NAME, "spine1", ("set", "qos", "mapping", "default-global", "dscp", "26", "switch-priority", "0"))
    assert rest_revision(lab, "leaf1", "qos", WRONG)["state"] == "applied"
    rep = verify.run(lab, only=["qos", "congestion"])
    said = {f"{c.group} {c.name}": c.message for c in rep.failures()}
    assert said["qos spine1 classes"] == (
        "RoCE (DSCP 26) in traffic class 0 lossy, CNPs (DSCP 48) in 6; unlike the other 4 NVUE nodes "
        "(RoCE (DSCP 26) in traffic class 3 lossless, CNPs (DSCP 48) in 6); no RoCE path of the topology "
        "crosses spine1 while every link is up"
    ), said
    assert said["qos path dpu1 - dpu2"] == (
        "leaf1 puts RoCE (DSCP 26) in traffic class 0 lossy without ECN, CNPs (DSCP 48) in 6; the path's other "
        "hops RoCE (DSCP 26) in traffic class 3 lossless with ECN, CNPs (DSCP 48) in 6"
    ), said
    assert said[f"congestion {congested(rep).name}"].startswith(
        "leaf1 puts RoCE in traffic class 0, which has no ECN there (qos congestion-control): a switch would not "
        "mark it ("
    ), said
    assert set(said) == {
        "qos spine1 classes",
        "qos leaf1 classes",
        "qos path dpu1 - dpu2",
        f"congestion {congested(rep).name}",
    }, said


@pytest.mark.alone  # the rehearsal's verify drives the congestion point
def test_the_fix_rehearsed_under_roce_flows_loses_nothing_and_verifies_under_congestion(lab, day0):
    p = twin_cli("rehearse", NAME, str(day0), "--json")
    rep = json.loads(p.stdout)
    assert p.returncode == 0, [c for c in rep["verify"]["checks"] if not c["passed"]] or p.stderr
    assert sorted({c.split(":")[0] for c in rep["apply"]["changes"]}) == ["leaf1", "spine1"], rep["apply"]
    assert all(f["lost"] == 0 for f in rep["flows"]), "a class changed in place: no new root qdisc"
    v = rep["verify"]
    assert v["passed"] and {"qos", "congestion", "control", "lldp"} <= {c["group"] for c in v["checks"]}
    (f,) = v["congestion"]["qos"]
    assert 0 < f["ce"] <= f["counted"]["ce"] and 0 < f["cnps_received"] == f["cnps_sent"], f
    print(f"\nrehearsal: timings {rep['timings']}; {f['ce']} CE at {f['point']}, CNPs {f['cnps_received']}")
