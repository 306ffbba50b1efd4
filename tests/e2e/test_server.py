"""`twin serve` end to end (issue 37): a real server process, real labs, driven through the API
and `twin --server URL` with tokens only.

One lab for the module: NVIDIA's NVUE samples (tests/e2e/nvue/samples.yml, leaf01 and dpu1 from
their startup.yaml files), made through the API from the topology and its configs as an archive.
On it: status and verify through the server as the local commands print them, the authorization
matrix on a running lab (another user's token sees nothing; exec only what the allow-list takes),
the lab's NVUE API, events and metrics behind the token; a rehearsal under RoCE flows between the
tenants' host pairs and a proof of two elements, printed by `twin --server` as the local commands
print them, their progress as stages; the pytest plugin's `twin_remote_lab` in a user's test
module (its own small lab, made and removed through the server); then a `twin apply` (a server cabled) and
an NVUE change (nv commands, saved through the proxied NVUE API), a snapshot, and a lab made from
it that passes the same `twin verify` as the original; that copy removed by the server when it
expires; and the server SIGKILLed mid-create and mid-apply, back with those operations failed
and the labs whole or removed.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
import time
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import PROGRESS, ROOT, chromium, leftovers, twin_cli
from tests.e2e.served import Served
from twin.base import wait
from twin.client import ApiError
from twin.lab import Lab
from twin.lifecycle import locks
from twin.nvue import service as nvue_service
from twin.server import cpu

pytestmark = pytest.mark.e2e

NAME, COPY, KILLED, PLUGIN = "t-srv", "t-srv-copy", "t-srv-k", "t-srv-plugin"
TOPOLOGY = ROOT / "tests/e2e/nvue/samples.yml"
CABLED = ROOT / "tests/e2e/nvue/samples-cabled.yml"
SAMPLES = ROOT / "tests/golden/interop/nvue/samples"
DAY2 = ROOT / "tests/e2e/nvue/day2.nv"
SMALL = ROOT / "tests/e2e/small.yml"
REHEARSED = "fault:link-down:spine01:swp1"  # leaf01's uplink to spine01: its flows go by spine02 meanwhile
PROVED = ["session dpu1:p0", "loopback spine02"]  # dpu1-spine01, its end farther from the spines


@pytest.fixture(scope="module")
def served(twin_home, node_image, tmp_path_factory):
    s = Served(
        tmp_path_factory.mktemp("served") / "state", "--reap-every", "1", "--expiry", "1h", "--max-expiry", "2h"
    ).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def owner(served):
    return served.token("owner")


@pytest.fixture(scope="module")
def lab(served, owner, runtime):
    c = served.client(owner)
    said: list[str] = []
    try:
        t0 = time.monotonic()
        op = c.create(TOPOLOGY, name=NAME, configs=SAMPLES, expires_in="1h", say=said.append)
        print(f"create through the API to converged: {time.monotonic() - t0:.1f}s")
        yield op, said
    finally:
        for name in (NAME, COPY, KILLED, PLUGIN):
            remove(served.client(owner), name)
            assert leftovers(runtime, name) == []


def remove(c, name: str) -> None:
    """Lab `name` deleted through the server (once what runs on it is done), else by `twin down`."""

    def deleted() -> list[str]:
        try:
            c.delete(name)
        except ApiError as e:
            if e.status == 409:
                return [e.detail]
        return []

    try:
        wait.until(deleted, 300, f"{name} deleted", first=1.0, cap=2.0)
    finally:
        twin_cli("down", name)


def cli(served: Served, token: str, *args: str) -> subprocess.CompletedProcess:
    """`twin --server URL ...` with a token, as a CI job runs it (TWIN_SERVER, TWIN_TOKEN; a wide log)."""
    env = {**os.environ, "TWIN_TOKEN": token, "TWIN_SERVER": served.url, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "twin.cli", *args], capture_output=True, text=True, timeout=600, env=env, cwd=ROOT
    )


def test_a_lab_made_through_the_api_from_an_archive_converges(served, owner, lab):
    op, said = lab
    assert op["state"] == "succeeded" and op["exit"] == 0, op
    assert op["result"]["nodes"] == 8 and op["result"]["sessions"] > 0 and op["result"]["configs_nodes"] == 2
    assert any(line.startswith("waiting for ") for line in said), said  # progress, as twin up says it
    c = served.client(owner)
    events = c.request("GET", f"/v1/operations/{op['id']}/events?follow=false")["events"]
    steps = [(e["stage"], e["text"]) for e in events if e["kind"] == "progress"]
    assert steps == [(s.stage, str(s)) for s in said]  # the stream the client followed is the record
    firsts = list(dict.fromkeys(stage for stage, _ in steps))  # twin up's stages, in the order they came
    wiring = next(s for s in firsts if s.startswith("starting 8 containers, wiring "))
    starting = [i for i, s in enumerate(firsts) if s in ("containers", "links", "configs")]  # Said's stages
    assert starting and firsts.index(wiring) < starting[0] < min(
        i for i, s in enumerate(firsts) if s.startswith("waiting for ")
    ), firsts
    assert all(stage in ("containers", "links", "configs") for stage, text in steps if text.startswith("starting: "))
    assert all(stage == "converging" for stage, text in steps if text.startswith("converging: "))
    shown = c.operation(op["id"])
    assert (shown["stage"], shown["progress"]) == steps[-1]
    st = cli(served, owner, "status", NAME)
    assert st.returncode == 0 and "healthy: the lab holds its intent" in st.stdout, st.stdout + st.stderr
    local = twin_cli("status", NAME)  # the same lab, the same words, on the host
    assert local.returncode == 0 and local.stdout.splitlines()[-1] == st.stdout.splitlines()[-1]


def test_the_server_is_ahead_of_its_operations_work(served, owner, lab):
    """The server (a service: a session of its own) 5 nice steps up, its session's weight as much
    where the kernel weighs sessions as one; an operation's worker in a session of its own, 5 steps
    below the server (the run of `make bench-server` shows what it is for)."""
    server = served.proc.pid
    assert os.getsid(server) == server
    assert os.getpriority(os.PRIO_PROCESS, server) == max(-20, os.getpriority(os.PRIO_PROCESS, 0) - 5)
    grouped = cpu.grouped()
    if grouped:
        assert Path(f"/proc/{server}/autogroup").read_text().split()[-1] == "-5"
    assert "not ahead of its operations' work" not in served.log.read_text()
    c = served.client(owner)
    oid = c.verify(NAME, wait=False)["operation"]
    db = sqlite3.connect(f"file:{served.state / 'state.db'}?mode=ro", uri=True)

    def running_worker() -> list[str]:
        row = db.execute("SELECT worker FROM operations WHERE id = ? AND state = 'running'", (oid,)).fetchone()
        if row and row[0]:
            found.append(row[0])
        return [] if found else [f"operation {oid} running in its worker"]

    found: list[int] = []
    try:
        wait.until(running_worker, 60, "the verify's worker", first=0.02, cap=0.05)
        pid = found[0]
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        assert int(stat[3]) == pid and int(stat[3]) != os.getsid(server)  # its own session (field 6)
        assert int(stat[16]) == os.getpriority(os.PRIO_PROCESS, server) + 5  # nice (field 19)
        if grouped:
            assert (
                Path(f"/proc/{pid}/autogroup").read_text().split()[0]
                != Path(f"/proc/{server}/autogroup").read_text().split()[0]
            )
    finally:
        db.close()
        assert c.wait({"operation": oid})["state"] == "succeeded"


def test_another_user_sees_nothing_and_exec_runs_only_the_allow_list(served, owner, lab):
    other = served.client(served.token("other"))
    for call in (
        lambda: other.lab(NAME),
        lambda: other.exec(NAME, "leaf01", ["ip", "link"]),
        lambda: other.delete(NAME),
        lambda: other.apply(NAME, "fault:link-down:leaf01:swp51"),
        lambda: other.snapshot(NAME),
        lambda: other.verify(NAME),
    ):
        with pytest.raises(ApiError) as e:
            call()
        assert e.value.status == 404, e.value.problem
    mine = served.client(owner)
    res = mine.exec(NAME, "leaf01", ["vtysh", "-c", "show bgp summary json"])
    assert res["rc"] == 0 and '"state":"Established"' in res["stdout"].replace(" ", "")
    with pytest.raises(ApiError) as e:
        mine.exec(NAME, "leaf01", ["vtysh", "-c", "configure terminal"])
    assert e.value.status == 403
    assert mine.lab(NAME)["state"] == "up"


def test_a_lab_a_twin_command_changes_on_the_host_is_busy_for_the_api(served, owner, lab):
    with locks.lock(NAME, "twin apply"):  # what `twin apply` on the host holds while it works
        with pytest.raises(ApiError) as e:
            served.client(owner).apply(NAME, "fault:link-down:leaf01:swp1")
    assert e.value.status == 409 and "twin apply (pid" in e.value.detail and "holds its lock" in e.value.detail


def test_the_labs_nvue_api_events_and_metrics_are_behind_the_token(served, owner, lab):
    c = served.client(owner)
    doc = c.request("GET", f"/v1/labs/{NAME}/nvue/leaf01/interface?rev=applied")
    assert "swp51" in doc and "vlan10" in doc
    with urllib.request.urlopen(
        urllib.request.Request(f"{served.url}/v1/labs/{NAME}/metrics", headers={"Authorization": f"Bearer {owner}"})
    ) as r:
        text = r.read().decode()
    assert "twin_" in text and 'lab="t-srv"' in text
    assert isinstance(c.request("GET", f"/v1/labs/{NAME}/events?since=3600")["events"], list)
    with pytest.raises(ApiError) as e:
        c.request("GET", f"/v1/labs/{NAME}/nvue/spine09/interface")
    assert e.value.status == 404 and "nodes with one:" in e.value.detail


def test_the_page_lists_the_users_labs_with_their_expiry_and_opens_a_labs_page(served, owner, lab):
    with chromium() as browser:
        browser.get(served.url + "/")
        wait.until(
            lambda: [] if browser.find_element("id", "signin").is_displayed() else ["no sign-in"],
            10,
            "the sign-in form",
        )
        browser.find_element("id", "token").send_keys(owner)
        browser.find_element("css selector", "#signin-form button").click()
        wait.until(
            lambda: [] if NAME in browser.find_element("id", "labs").text else ["not listed"], 10, f"{NAME} listed"
        )
        row = browser.find_element("id", "labs").text
        assert re.search(rf"{NAME} up 4 .* \(in [45]\d min\)", row), row  # expires in 1h: minutes left
        browser.find_element("link text", NAME).click()
        wait.until(
            lambda: (
                []
                if "healthy: the lab holds its intent" in browser.find_element("id", "lab-status").text
                else ["no status"]
            ),
            30,
            f"{NAME}'s page with its status",
        )
        assert "create" in browser.find_element("id", "lab-ops").text


def last_operation(served: Served, token: str, lab: str) -> tuple[dict, list[dict]]:
    """The lab's latest operation, and its progress events."""
    c = served.client(token)
    (op,) = c.request("GET", f"/v1/operations?lab={lab}&limit=1")["operations"]
    events = c.request("GET", f"/v1/operations/{op['id']}/events?follow=false")["events"]
    return op, [e for e in events if e["kind"] == "progress"]


def test_a_rehearsal_through_the_server_prints_the_local_report(served, owner, lab):
    """`twin --server rehearse` with RoCE flows between the tenants' host pairs: what `twin rehearse`
    prints (the operation's result is what its --json prints), its progress as stages; rolled back."""
    p = cli(served, owner, "rehearse", NAME, REHEARSED, "--max-loss", "-1", "--rollback")
    op, steps = last_operation(served, owner, NAME)
    assert op["kind"] == "rehearse" and op["state"] == "succeeded", op
    doc = op["result"]
    assert p.stdout == doc["text"] and p.returncode == op["exit"] == 0, p.stdout + p.stderr
    assert p.stdout.startswith(f"rehearsal of {REHEARSED} on lab {NAME}: PASSED\n")
    flows = doc["flows"]
    assert {frozenset((f["src"], f["dst"])) for f in flows} == {
        frozenset(("server01", "server03")),
        frozenset(("server02", "server04")),
    }
    assert all(f["sent"] > 0 and f["received"] > 0 and f["judged"] for f in flows), flows
    assert doc["verify"]["passed"] and doc["verify_rollback"]["passed"] and all(v["passed"] for v in doc["verdicts"])
    assert [s["stage"] for s in steps][0] == "snapshot of the operational state" and steps[-1]["text"] == (
        "verifying after rollback"
    )
    assert all(s["stage"] for s in steps)
    assert any(PROGRESS.match(line) and line.endswith("rolling back") for line in p.stderr.splitlines()), p.stderr
    assert served.client(owner).lab(NAME)["status"]["healthy"]


def test_verify_prove_through_the_server_prints_the_local_proof(served, owner, lab, tmp_path):
    """`twin --server verify --prove`: the proof's table, misses and score as `twin verify --prove`
    prints them (and its JUnit), each element broken and restored by the server."""
    junit = tmp_path / "prove.xml"
    p = cli(
        served, owner, "verify", NAME, "--prove", *(a for e in PROVED for a in ("--element", e)), "--junit", str(junit)
    )
    op, steps = last_operation(served, owner, NAME)
    assert op["kind"] == "prove" and op["state"] == "succeeded", op
    doc = op["result"]
    assert p.returncode == op["exit"] == 0 and doc["passed"] and doc["score"] == "caught 2 of 2", p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == f"twin verify {NAME} --prove: every element broken in turn"
    for o in doc["outcomes"]:
        (row,) = [line for line in lines if f" {o['id']} " in line]
        assert re.search(rf"│ yes +│ {re.escape(o['check'])} +│ yes +│ +\d+\.\d │$", row), row
    assert re.fullmatch(rf"caught 2 of 2 \(2 of {doc['elements']} elements, \d+ s\)", lines[-1]), lines[-1]
    assert sorted(o["id"] for o in doc["outcomes"]) == sorted(PROVED)
    assert len(steps) == 2 and all(
        s["text"].startswith(f"[{i}/2] {o['id']}: ") and s["stage"] == s["text"]
        for i, (s, o) in enumerate(zip(steps, doc["outcomes"]), 1)
    ), steps
    suites = ET.parse(junit).getroot()
    assert suites.get("tests") == "2" and suites.get("failures") == "0"
    assert served.client(owner).lab(NAME)["status"]["healthy"]


def test_the_pytest_plugins_remote_lab_is_made_and_removed_through_the_server(served, runtime, tmp_path):
    """A user's test module on `twin_remote_lab` (the ini option `twin_server`, a token only): its lab
    made on the server, a node's FRR JSON asserted through exec, verify run by the server, the lab
    removed after the module."""
    token = served.token("plugin-user")
    (tmp_path / "pytest.ini").write_text(f"[pytest]\ntwin_server = {served.url}\n")
    (tmp_path / "test_remote.py").write_text(
        textwrap.dedent(f"""
        import pytest
        from twin.pytest_plugin import assert_frr_json

        pytestmark = pytest.mark.twin_topology({str(SMALL)!r}, name={PLUGIN!r})

        def test_the_lab_is_made_on_the_server(twin_remote_lab):
            assert twin_remote_lab.name == {PLUGIN!r} and twin_remote_lab.created["result"]["nodes"] == 5

        def test_a_nodes_frr_json_through_exec(twin_remote_lab):
            peer = {{"state": "Established", "hostname": "spine1"}}
            assert_frr_json(twin_remote_lab.node("leaf1"), "show bgp summary json",
                            {{"ipv4Unicast": {{"peers": {{"swp1": peer}}}}}}, timeout=30)

        def test_a_difference_is_named_with_the_server(twin_remote_lab):
            with pytest.raises(AssertionError) as e:
                assert_frr_json(twin_remote_lab.node("spine1"), "show bgp summary json",
                                {{"ipv4Unicast": {{"routerId": "192.0.2.1"}}}})
            assert "{PLUGIN}/spine1 (on {served.url})" in str(e.value) and "routerId: expected" in str(e.value)

        def test_verify_is_run_by_the_server(twin_remote_lab):
            assert twin_remote_lab.verify(only=["control"])["passed"]
    """)
    )
    env = {k: v for k, v in os.environ.items() if k != "TWIN_SERVER"}
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_remote.py"],
        cwd=tmp_path,
        env={**env, "TWIN_TOKEN": token},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0 and "4 passed" in p.stdout, p.stdout[-3000:] + p.stderr[-2000:]
    c = served.client(token)
    with pytest.raises(ApiError) as e:
        c.lab(PLUGIN)
    assert e.value.status == 404 and leftovers(runtime, PLUGIN) == []
    ops = c.request("GET", f"/v1/operations?lab={PLUGIN}")["operations"]
    assert [(o["kind"], o["state"]) for o in ops] == [
        ("delete", "succeeded"),
        ("verify", "succeeded"),
        ("create", "succeeded"),
    ]


def test_a_snapshot_after_an_nvue_change_and_an_apply_passes_the_same_verify(served, owner, lab, tmp_path):
    applied = cli(served, owner, "apply", NAME, str(CABLED), "--no-wait")  # server05 cabled to leaf01:swp3
    assert applied.returncode == 0 and "applied" in applied.stdout, applied.stdout + applied.stderr
    nv = tmp_path / "day2.nv"
    nv.write_text(
        "".join(
            line + "\n" for line in DAY2.read_text().splitlines() if line.startswith("nv set") and "swp5-8" not in line
        )
        + "nv config apply -y\n"
    )
    changed = cli(served, owner, "apply", NAME, f"nv:leaf01:{nv}")
    assert changed.returncode == 0, changed.stdout + changed.stderr
    c = served.client(owner)
    assert c.request("PATCH", f"/v1/labs/{NAME}/nvue/leaf01/revision/applied", {"state": "save"}) is not None
    original = cli(served, owner, "verify", NAME, "--json")
    assert original.returncode == 0, original.stdout[-3000:] + original.stderr
    checks = sorted(ch["name"] for ch in json.loads(original.stdout)["checks"])
    assert any("server05" in name for name in checks)
    snap = cli(served, owner, "snapshot", NAME)
    assert snap.returncode == 0 and "running memory is not kept" in snap.stdout, snap.stdout + snap.stderr
    sid = snap.stdout.split()[1]
    t0 = time.monotonic()
    up = cli(served, owner, "up", "--snapshot", sid, "--name", COPY)
    assert up.returncode == 0 and f"lab {COPY} is up" in up.stdout, up.stdout + up.stderr
    # the server's progress, streamed: its stages (the wiring's own "starting: N/M containers running" only
    # comes when that stage lasts past timeouts.WIRING_SAY)
    said = [line.split("] ", 1)[1] for line in up.stderr.splitlines() if PROGRESS.match(line)]
    assert f"{COPY}: create: containers, links, each node configured" in said, up.stderr
    assert f"{COPY}: converge: the barrier" in said, up.stderr
    print(f"a lab from the snapshot, converged: {time.monotonic() - t0:.1f}s")
    copy = cli(served, owner, "verify", COPY, "--json")
    assert copy.returncode == 0, copy.stdout[-3000:] + copy.stderr
    assert sorted(ch["name"] for ch in json.loads(copy.stdout)["checks"]) == checks
    assert "vlan30" in (Lab(COPY).dir / "leaf01" / "startup.yaml").read_text()
    assert "vlan30" in nvue_service.saved(Lab(COPY).dir, "leaf01").read_text()  # what nv config save saved


def test_a_lab_past_its_expiry_is_removed_by_the_server(served, owner, lab, runtime):
    c = served.client(owner)
    assert c.lab(COPY, status=False)["state"] == "up"
    c.extend(COPY, 1)

    def gone() -> list[str]:
        try:
            return [f"lab {COPY} is {c.lab(COPY, status=False)['state']}"]
        except ApiError as e:
            return [] if e.status == 404 else [e.detail]

    wait.until(gone, 60, f"the server to remove {COPY}", first=0.5, cap=1.0)
    assert leftovers(runtime, COPY) == []
    ops = c.request("GET", f"/v1/operations?lab={COPY}")["operations"]
    assert ops[0]["kind"] == "expire" and ops[0]["state"] == "succeeded"
    assert ops[0]["result"]["reason"].startswith("expired at ")


def _killed_during(served: Served, token: str, start, during: str) -> dict:
    """Start an operation, SIGKILL the server once its progress says `during` ("": at its first progress
    line), and start the server again: the operation as it was started."""
    started = start()
    oid = started["operation"]
    c = served.client(token)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        events = c.request("GET", f"/v1/operations/{oid}/events?follow=false")["events"]
        if any(during in e["text"] for e in events if e["kind"] == "progress"):
            break
        assert c.operation(oid)["state"] in ("pending", "running"), c.operation(oid)  # it must not end first
        time.sleep(0.1)
    served.kill()
    served.start()
    return started


def test_a_server_killed_mid_create_and_mid_apply_comes_back_with_them_failed(served, owner, lab, runtime, tmp_path):
    c = served.client(owner)
    started = _killed_during(served, owner, lambda: c.create(SMALL, name=KILLED, wait=False), "starting 5 containers")
    c = served.client(owner)
    op = c.operation(started["operation"])
    assert op["state"] == "failed" and "the server stopped during this operation" in op["error"]["detail"]
    assert "removed" in op["error"]["detail"]
    with pytest.raises(ApiError):
        c.lab(KILLED)
    assert leftovers(runtime, KILLED) == []
    doc = yaml.safe_load(CABLED.read_text())  # the lab as it runs, and a sixth server beside the fifth
    doc["nodes"]["server06"] = {"kind": "host"}
    doc["links"].append({"endpoints": ["leaf01:swp4", "server06:eth1"]})
    doc["tenants"]["red"]["attachments"].append({"host": "server06", "segment": "vlan30", "address": "10.1.30.106"})
    more = tmp_path / "samples-more.yml"
    more.write_text(yaml.safe_dump(doc, sort_keys=False))
    started = _killed_during(served, owner, lambda: c.apply(NAME, str(more), wait=False), "host endpoint")
    op = served.client(owner).operation(started["operation"])
    assert op["state"] == "failed" and "the server stopped during this operation" in op["error"]["detail"]
    try:  # whole (kept: healthy) or removed, never half made
        doc = served.client(owner).lab(NAME)
        assert doc["state"] == "up" and doc["status"]["healthy"], doc
    except ApiError as e:
        assert e.status == 404 and leftovers(runtime, NAME) == []
