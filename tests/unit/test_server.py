"""`twin serve` without a lab: the API served for real (uvicorn on 127.0.0.1, twin's guard) against
its SQLite state; tokens and the authorization matrix, quotas, expiry limits, Idempotency-Key,
bad bodies (every one answered as problem JSON, never a traceback), the docs and the page served
offline, and the API fuzzed from its own OpenAPI description with no server error. What needs a
running lab (create, apply, snapshot restore, expiry removal, a killed server) is
tests/e2e/test_server.py."""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import tarfile
import time
import urllib.request
import zipfile
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from twin.base import wait
from twin.base.errors import TopologyError
from twin.base.stages import Said
from twin.cli import main
from twin.client import ApiError, Client, change_body
from twin.lifecycle.service import Listener, Service
from twin.server import Core, Limits, Principal, Settings, allowlist, auth, bodies, issue
from twin.server.app import create_app
from twin.server.problems import ApiProblem, guard_body
from twin.server.serve import MAX_BODY

ROOT = Path(__file__).resolve().parents[2]
SMALL = (ROOT / "tests/e2e/small.yml").read_text()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    mp = pytest.MonkeyPatch()
    mp.setenv("TWIN_HOME", str(tmp / "home"))
    core = Core(Settings(home=tmp / "state", limits=Limits(2, 64, 16 << 30), expiry=3600, max_expiry=7200))
    svc = Service("serve", create_app(core), [Listener(port=0)], max_body=MAX_BODY, body=guard_body).start()
    yield core, svc.addresses()[0]
    svc.stop()
    core.close()
    mp.undo()


def user(core: Core, name: str, admin: bool = False, expires: float | None = None) -> str:
    return issue(core.store, name, admin, expires)[1]


def lab_row(core: Core, name: str, owner: str, state: str = "up", expires: float = 3600) -> None:
    """A lab in the server's records that is not on the host (what the matrix needs: no Docker)."""
    core.store.run(
        "INSERT INTO labs(name, owner, created, expires, state, source, frr_nodes, memory) "
        "VALUES (?, ?, ?, ?, ?, '', 4, 1073741824)",
        name,
        owner,
        time.time(),
        time.time() + expires,
        state,
    )


def call(
    url: str,
    method: str,
    path: str,
    token: str | None = None,
    body: bytes | None = None,
    kind: str = "application/json",
) -> tuple[int, dict, dict]:
    headers = {"Content-Type": kind} if body is not None else {}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url + path, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def is_problem(doc: dict, status: int) -> bool:
    return {"type", "title", "status", "detail"} <= set(doc) and doc["status"] == status


def test_tokens_are_shown_once_stored_hashed_revocable_and_expire(server):
    core, url = server
    tid, token = issue(core.store, "erin")
    assert token.startswith("twin_") and len(token) > 40
    # the database's every row, read through a connection of SQLite's own (a plain open and close of
    # the file here would drop this process's locks on it, which the operations' workers rely on)
    with closing(sqlite3.connect(core.store.path)) as db:
        assert token not in "\n".join(db.iterdump())
    assert core.store.token_by_hash(auth.digest(token))["id"] == tid
    assert call(url, "GET", "/v1/me", token)[2]["user"] == "erin"
    assert core.store.revoke(tid)
    status, headers, doc = call(url, "GET", "/v1/me", token)
    assert status == 401 and is_problem(doc, 401) and doc["detail"] == f"token {tid} was revoked"
    assert headers["www-authenticate"].startswith("Bearer")
    old = user(core, "erin", expires=0.2)
    time.sleep(0.3)
    status, _, doc = call(url, "GET", "/v1/me", old)
    assert status == 401 and doc["detail"].endswith("expired")


def test_failed_authentication_is_counted_and_slowed(server):
    core, url = server
    before = core.throttle.total
    took = []
    for token in (None, "twin_nope", "twin_nope"):
        t0 = time.monotonic()
        status, _, doc = call(url, "GET", "/v1/labs", token)
        took.append(time.monotonic() - t0)
        assert status == 401 and is_problem(doc, 401)
    assert core.throttle.total - before == 3
    figures = call(url, "GET", "/v1/server", user(core, "figures", admin=True))[2]
    assert figures["failed_authentications"] >= 3
    assert call(url, "GET", "/v1/server", user(core, "not-admin"))[0] == 403
    assert took[2] > took[0] and took[2] >= 0.2  # each failure of an address waits longer
    assert call(url, "GET", "/v1/labs", "Basic x")[0] == 401


def test_another_users_lab_is_404_for_every_verb(server):
    core, url = server
    alice, bob, admin = user(core, "alice"), user(core, "bob"), user(core, "root-admin", admin=True)
    lab_row(core, "bobs-lab", "bob", state="creating")
    change = json.dumps({"fault": {"fault": "link-down", "target": "leaf1:swp1"}}).encode()
    verbs = [
        ("GET", "/v1/labs/bobs-lab", None),
        ("PATCH", "/v1/labs/bobs-lab", b'{"expires_in": "1h"}'),
        ("DELETE", "/v1/labs/bobs-lab", None),
        ("POST", "/v1/labs/bobs-lab/snapshots", None),
        ("POST", "/v1/labs/bobs-lab/exec", b'{"node": "leaf1", "command": ["ip", "link"]}'),
        ("POST", "/v1/labs/bobs-lab/apply", change),
        ("POST", "/v1/labs/bobs-lab/plan", change),
        ("POST", "/v1/labs/bobs-lab/verify", b"{}"),
        ("POST", "/v1/labs/bobs-lab/baseline", None),
        ("POST", "/v1/labs/bobs-lab/faults", b'{"fault": "link-down", "target": "leaf1:swp1"}'),
        ("GET", "/v1/labs/bobs-lab/events", None),
        ("GET", "/v1/labs/bobs-lab/metrics", None),
        ("GET", "/v1/labs/bobs-lab/nvue/leaf1/revision", None),
    ]
    for method, path, body in verbs:
        status, _, doc = call(url, method, path, alice, body)
        assert status == 404 and doc["detail"].startswith("no lab named 'bobs-lab' of yours"), (method, path, doc)
    assert [r["name"] for r in call(url, "GET", "/v1/labs", alice)[2]["labs"]] == []
    assert call(url, "GET", "/v1/labs/bobs-lab", bob)[2]["owner"] == "bob"
    assert call(url, "GET", "/v1/labs/bobs-lab", admin)[0] == 200
    assert "bobs-lab" in [r["name"] for r in call(url, "GET", "/v1/labs?all=true", admin)[2]["labs"]]
    assert call(url, "GET", "/v1/labs?all=true", alice)[2]["labs"] == []  # all= is an admin's
    status, _, doc = call(url, "POST", "/v1/labs/bobs-lab/exec", bob, b'{"node": "leaf1", "command": ["ip", "link"]}')
    assert status == 409 and "is creating, not up" in doc["detail"]


def test_a_create_past_the_quota_is_409_with_the_numbers(server):
    core, url = server
    token = user(core, "carol")
    core.store.set_limits("carol", 1, None, None)
    lab_row(core, "carols-first", "carol")
    body = json.dumps({"topology": SMALL, "name": "carols-second"}).encode()
    status, _, doc = call(url, "POST", "/v1/labs", token, body)
    assert status == 409 and is_problem(doc, 409) and doc["type"].endswith("/quota")
    assert doc["quota"] == {"labs": {"limit": 1, "held": 1, "asked": 1}}
    assert "labs: 1 held + 1 asked > 1" in doc["detail"]
    core.store.set_limits("carol", 5, 6, None)  # small.yml has 4 FRR nodes; carol holds 4 already
    status, _, doc = call(url, "POST", "/v1/labs", token, body)
    assert status == 409 and doc["quota"] == {"frr_nodes": {"limit": 6, "held": 4, "asked": 4}}
    assert core.store.lab("carols-second") is None and list((core.settings.home / "sources").iterdir()) == []


@pytest.mark.parametrize(
    "body, kind, status, says",
    [
        (b"{not json", "application/json", 422, "the body is not a lab"),
        (
            b'{"topology": "name: x\\nnodes: {a: {kind: spine}}\\nbogus: 1\\n"}',
            "application/json",
            422,
            "topology.yml:3: bogus: unknown field",
        ),
        (b'{"topology": "x", "snapshot": "y"}', "application/json", 422, "give either a topology or a snapshot"),
        (b'{"topology": "x", "wat": 1}', "application/json", 422, "the body is not a lab"),
        (
            b'{"topology": "name: x", "configs": {"../etc": {"frr.conf": "x"}}}',
            "application/json",
            422,
            "not a node name",
        ),
        (b"name: x", "text/plain", 415, "application/json or multipart/form-data"),
    ],
)
def test_a_bad_create_is_answered_with_every_problem_and_leaves_nothing(server, body, kind, status, says):
    core, url = server
    code, _, doc = call(url, "POST", "/v1/labs", user(core, "dora"), body, kind)
    assert code == status and is_problem(doc, status)
    assert says in doc["detail"] + " ".join(doc.get("problems", [])), doc
    assert list((core.settings.home / "sources").iterdir()) == []


def test_a_body_too_large_is_413_and_an_unknown_path_404_as_problems(server):
    core, url = server
    token = user(core, "ed")
    lab_row(core, "eds-lab", "ed")
    status, _, doc = call(url, "PATCH", "/v1/labs/eds-lab/nvue/leaf1/interface", token, b"{}" * (1 << 20))
    assert status == 413 and is_problem(doc, 413) and "at most 1048576 bytes" in doc["detail"]
    status, _, doc = call(url, "GET", "/v1/nothing", token)
    assert status == 404 and is_problem(doc, 404) and "/docs lists the API" in doc["detail"]


def test_expiry_is_extended_up_to_the_maximum(server):
    core, url = server
    token = user(core, "fay")
    lab_row(core, "fays-lab", "fay")
    status, _, doc = call(url, "PATCH", "/v1/labs/fays-lab", token, b'{"expires_in": "3h"}')
    assert status == 422 and "at most 2h from now" in doc["detail"] and doc["max_seconds"] == 7200
    status, _, doc = call(url, "PATCH", "/v1/labs/fays-lab", token, b'{"expires_in": "90m"}')
    assert status == 200 and 5390 <= doc["expires_in"] <= 5400
    assert call(url, "PATCH", "/v1/labs/fays-lab", token, b'{"expires_in": "soon"}')[0] == 422


def test_a_retry_with_the_same_idempotency_key_gets_the_same_operation(server):
    core, url = server
    c = Client(url, user(core, "gus"))
    lab_row(core, "gus-a", "gus")
    lab_row(core, "gus-b", "gus")
    first = c.request("POST", "/v1/labs/gus-a/snapshots", headers={"Idempotency-Key": "k1"})
    again = c.request("POST", "/v1/labs/gus-a/snapshots", headers={"Idempotency-Key": "k1"})
    assert first["operation"] == again["operation"]
    with pytest.raises(ApiError) as e:
        c.request("POST", "/v1/labs/gus-b/snapshots", headers={"Idempotency-Key": "k1"})
    assert e.value.status == 422 and "was used for another request" in e.value.detail
    done = c.wait(first)  # the lab is only a record here: the operation fails, saying why
    assert done["state"] == "failed" and done["exit"] == 1
    assert "has no recorded state to snapshot" in done["error"]["detail"]
    events = call(url, "GET", f"/v1/operations/{first['operation']}/events?follow=false", c.token)[2]["events"]
    assert [e["text"] for e in events][0] == "running" and events[-1]["text"].startswith("failed: ")


def waits_to_be_killed(home, say):
    """An operation's work (in its worker process) that says where it is, then waits."""
    say(Said("waiting to be killed: pid " + str(os.getpid()), "waiting"))
    time.sleep(5)


def test_an_operation_runs_in_a_worker_whose_death_fails_it(server):
    """The work runs in a process of its own; its progress is twin.base.stages' Steps (stage and text, in
    the operation and its events); a worker killed mid-operation fails it, saying so."""
    core, url = server
    c = Client(url, user(core, "kim"))
    lab_row(core, "kims-lab", "kim")
    op, _ = core.ops.start(Principal("kim", False, "-"), "kims-lab", "verify", waits_to_be_killed)
    doc = wait_for(lambda: c.operation(op["id"]), lambda d: d["stage"] == "waiting")
    pid = int(doc["progress"].rsplit(" ", 1)[1])
    assert doc["state"] == "running" and pid != os.getpid() and core.store.operation(op["id"])["worker"] == pid
    events = c.request("GET", f"/v1/operations/{op['id']}/events?follow=false")["events"]
    assert [(e["kind"], e["stage"]) for e in events] == [("state", ""), ("progress", "waiting")]
    os.kill(pid, signal.SIGKILL)
    doc = wait_for(lambda: c.operation(op["id"]), lambda d: d["state"] == "failed")
    assert doc["error"]["detail"] == (
        "the operation's worker process ended before it did (signal 9); the lab was only read, and is as it was"
    )
    assert c.request("GET", f"/v1/operations/{op['id']}/events?follow=false")["events"][-1]["text"].startswith(
        "failed: the operation's worker process ended"
    )


def wait_for(get, done, timeout: float = 30):
    """get() once done(get()) holds (within `timeout`)."""
    seen = {}

    def probe() -> list[str]:
        seen["doc"] = get()
        return [] if done(seen["doc"]) else [str(seen["doc"])[:300]]

    wait.until(probe, timeout, "the operation's state", first=0.05, cap=0.2)
    return seen["doc"]


def test_the_docs_and_the_page_are_served_without_a_cdn(server):
    _, url = server
    with urllib.request.urlopen(url + "/openapi.json") as r:
        doc = json.loads(r.read())
    assert {
        "/v1/labs",
        "/v1/operations/{oid}",
        "/v1/operations/{oid}/events",
        "/v1/labs/{name}/snapshots",
        "/v1/labs/{name}/rehearse",
    } <= set(doc["paths"])
    for page in ("/docs", "/", "/labs.js"):
        with urllib.request.urlopen(url + page) as r:
            text = r.read().decode()
        assert "http://" not in text.replace("http://127.0.0.1", "") and "https://" not in text, page
    assert "/v1/labs/{name}/apply" in urllib.request.urlopen(url + "/docs").read().decode()


def test_the_page_signs_in_with_a_cookie_for_gets_only(server):
    core, url = server
    token = user(core, "hal")
    req = urllib.request.Request(
        url + "/session",
        data=json.dumps({"token": token}).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req) as r:
        cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    jar = cookie.split(";")[0]
    with urllib.request.urlopen(urllib.request.Request(url + "/v1/labs", headers={"Cookie": jar})) as r:
        assert json.loads(r.read())["user"] == "hal"
    post = urllib.request.Request(
        url + "/v1/labs", data=b"{}", method="POST", headers={"Cookie": jar, "Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(post)
    assert e.value.code == 401


def tar_of(members: list[tarfile.TarInfo], data: bytes = b"hostname x\n") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for m in members:
            tar.addfile(m, io.BytesIO(data) if m.isfile() else None)
    return buf.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, size: int = 11, link: str = "") -> tarfile.TarInfo:
    m = tarfile.TarInfo(name)
    m.type, m.size, m.linkname = kind, size if kind == tarfile.REGTYPE else 0, link
    return m


@pytest.mark.parametrize(
    "members, says",
    [
        ([member("../evil/frr.conf")], "leads outside the archive"),
        ([member("/etc/frr.conf")], "leads outside the archive"),
        ([member("leaf1/frr.conf", tarfile.SYMTYPE, link="/etc/shadow")], "is a link"),
        ([member("leaf1/frr.conf", tarfile.LNKTYPE, link="leaf1/x")], "is a link"),
        ([member("leaf1/fifo", tarfile.FIFOTYPE)], "is not a regular file"),
    ],
)
def test_an_archive_member_outside_or_a_link_is_refused(tmp_path, members, says):
    with pytest.raises(TopologyError) as e:
        bodies.archive(tmp_path, tar_of(members))
    assert says in str(e.value)


def test_an_archive_is_bounded_as_it_unpacks_and_its_top_directory_dropped(tmp_path):
    big = io.BytesIO()
    with zipfile.ZipFile(big, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(9):
            z.writestr(f"n{i}/frr.conf", b"\0" * (bodies.MAX_MEMBER - 1))
    assert len(big.getvalue()) < 1 << 20  # small, and unpacks to 36 MiB
    (tmp_path / "a").mkdir()
    with pytest.raises(TopologyError) as e:
        bodies.archive(tmp_path / "a", big.getvalue())
    assert "unpacks to more than" in str(e.value)
    d = tmp_path / "b"
    d.mkdir()
    out = bodies.archive(d, tar_of([member("configs/leaf1/frr.conf"), member("configs/leaf2.conf")]))
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == ["leaf1/frr.conf", "leaf2.conf"]
    d = tmp_path / "c"
    d.mkdir()
    out = bodies.archive(d, tar_of([member("leaf1/frr.conf")]))
    assert (out / "leaf1" / "frr.conf").read_text() == "hostname x\n"  # one node's directory stays one


@pytest.mark.parametrize(
    "argv, ok",
    [
        (["vtysh", "-c", "show bgp summary json"], True),
        (["vtysh", "-c", "configure terminal"], False),
        (["nv", "show", "interface"], True),
        (["nv", "set", "interface", "swp1"], False),
        (["ip", "-j", "route", "show"], True),
        (["ip", "netns", "exec", "x", "sh"], False),
        (["ip", "-batch", "f"], False),
        (["ping", "-c", "3", "-W", "1", "10.1.10.101"], True),
        (["ping", "-c", "1000", "10.0.0.1"], False),
        (["ping", "-c", "1", "-f", "10.0.0.1"], False),
        (["sh", "-c", "id"], False),
        (["ip", "link\n"], False),
    ],
)
def test_exec_runs_only_what_the_allow_list_takes(argv, ok):
    if ok:
        assert allowlist.check(argv) == argv
    else:
        with pytest.raises(ApiProblem) as e:
            allowlist.check(argv)
        assert e.value.status == 403 and "exec runs only:" in e.value.detail


def test_a_change_as_the_command_line_names_it_becomes_the_apis_body(tmp_path):
    assert change_body("fault:link-loss:leaf1:swp1:10%") == {
        "fault": {"fault": "link-loss", "target": "leaf1:swp1", "args": ["10%"]}
    }
    assert change_body("fault:daemon-kill:leaf1:bgpd")["fault"]["target"] == "leaf1:bgpd"  # rejoined as given
    (tmp_path / "c" / "leaf1").mkdir(parents=True)
    (tmp_path / "c" / "leaf1" / "frr.conf").write_text("x\n")
    (tmp_path / "c" / "leaf2.conf").write_text("y\n")
    assert change_body(str(tmp_path / "c")) == {"configs": {"leaf1": {"frr.conf": "x\n"}, "leaf2": {"frr.conf": "y\n"}}}
    (tmp_path / "d.nv").write_text("nv set x\n")
    assert change_body(f"nv:leaf1:{tmp_path / 'd.nv'}") == {"nv": {"node": "leaf1", "commands": "nv set x\n"}}


def test_token_commands_make_list_and_revoke(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_HOME", str(tmp_path))
    run = CliRunner()
    made = run.invoke(main, ["serve", "token", "create", "ivy", "--expires", "1h"])
    assert made.exit_code == 0 and made.stdout.strip().startswith("twin_"), made.output
    listed = run.invoke(main, ["serve", "token", "list"])
    tid = next(line.split()[1] for line in listed.stdout.splitlines() if "ivy" in line)
    assert run.invoke(main, ["serve", "token", "revoke", tid]).exit_code == 0
    again = run.invoke(main, ["serve", "token", "revoke", tid])
    assert again.exit_code == 1 and "no token" in again.stderr
    bad = run.invoke(main, ["serve", "token", "create", "Not A User"])
    assert bad.exit_code == 1 and "a user name is 1-32 characters" in bad.stderr
    remote = run.invoke(
        main, ["--server", "http://127.0.0.1:1", "fault", "link-down", "x", "y"], env={"TWIN_TOKEN": "t"}
    )
    assert remote.exit_code == 1 and "does not run through a server" in remote.stderr


def test_the_api_fuzzed_from_its_openapi_has_no_server_error(server):
    """schemathesis generates requests for every operation from /openapi.json; none may be a 5xx
    (a user whose quota is no lab: a create that gets through validation is refused, not made)."""
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, given, settings

    core, url = server
    token = user(core, "fuzz")
    core.store.set_limits("fuzz", 0, 0, 0)
    schema = schemathesis.openapi.from_url(url + "/openapi.json")
    failures, calls = [], []
    for result in schema.get_all_operations():
        op = result.ok()

        @settings(
            max_examples=int(os.environ.get("TWIN_FUZZ_EXAMPLES", "12")),
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=op.as_strategy())
        def fuzz(case):
            r = case.call(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
            calls.append(case.operation.label)
            if r.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path}: {r.status_code} {r.text[:200]}")
            elif r.status_code >= 400:
                assert {"type", "title", "status", "detail"} <= set(r.json()), r.text[:200]

        fuzz()
    assert failures == []
    assert len(set(calls)) >= 24 and len(calls) > 150, (len(set(calls)), len(calls))


def test_tls_with_a_certificate_and_every_request_logged_with_its_user(tmp_path, caplog):
    from twin.nvue import service as nvue_service

    (tmp_path / "lab").mkdir()
    cert, key = nvue_service.certificate(tmp_path / "lab", "tls")  # a self-signed one for 127.0.0.1
    core = Core(Settings(home=tmp_path / "state"))
    svc = Service(
        "serve", create_app(core), [Listener(port=0, certfile=str(cert), keyfile=str(key))], body=guard_body
    ).start()
    try:
        url = svc.addresses()[0]
        assert url.startswith("https://127.0.0.1:")
        caplog.set_level("INFO", logger="twin.server.access")
        c = Client(url, user(core, "tls-user"), cafile=str(cert))
        assert c.request("GET", "/v1/me")["user"] == "tls-user"
        with pytest.raises(ApiError):
            c.lab("nothing-here")
        lines = [r.getMessage() for r in caplog.records if r.name == "twin.server.access"]
        assert any(line.startswith("tls-user GET /v1/me 200 ") for line in lines), lines
        assert any(line.startswith("tls-user GET /v1/labs/nothing-here") and " 404 " in line for line in lines)
    finally:
        svc.stop()
        core.close()


def test_a_status_document_is_the_status_it_was_made_from():
    """`twin --server status` prints what the server's `twin status --json` says, as the local command does."""
    from twin.lifecycle import LabStatus
    from twin.lifecycle.status import NodeStatus, TenantStatus, VtepStatus

    vtep = VtepStatus(True, [10], [20], {"type2": 1, "type3": 2}, {"type2": 1, "type3": 3})
    st = LabStatus(
        "x",
        "up",
        "/d",
        "t.yml",
        "img",
        {"r1": "frr:10"},
        "netns",
        "tc",
        {"converged": 1.5},
        [
            NodeStatus("leaf1", "leaf", "running", 65101, "10.0.0.1", 2, 1, ["swp1"]),
            NodeStatus("h1", "host", "running"),
        ],
        [
            TenantStatus("red", "red", 4001, [{"l2vni": 10, "segment": "s"}], [], {"leaf1": vtep}),
            TenantStatus("blue", "blue", 4002, [], [], {"leaf1": VtepStatus(reachable=False)}),
        ],
        ["spine1: no route"],
        changing="twin apply (pid 7)",
    )
    again = LabStatus.from_dict(json.loads(json.dumps(st.to_dict())))
    assert again.to_dict() == st.to_dict() and again.problems() == st.problems() and not again.healthy
