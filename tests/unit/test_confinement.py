"""A confined lab and a shared server's boundary (issue 42) without a lab: what a topology may bind
and run (`twin.topology.confine`), the nodes' seccomp profile (`twin.runtime.hardening`), the
server's answers to holes tried as an ordinary user (the token before the body, deep JSON, bad
archives, a taken name, forwarded addresses, kept files, snapshots, streams), and half-open
connections of one address. What needs a lab is tests/e2e/test_confinement.py."""

from __future__ import annotations

import io
import json
import os
import socket
import tarfile
import time
from pathlib import Path

import pytest

from twin.base.errors import TopologyError
from twin.lifecycle import slowclient
from twin.lifecycle.service import Listener, Service
from twin.runtime import hardening
from twin.server import Core, Limits, Settings, bodies, changes, issue
from twin.server.app import create_app
from twin.server.auth import Throttle
from twin.server.problems import guard_body, hide, scrubbed
from twin.server.serve import MAX_BODY
from twin.topology import Confined, confine
from twin.topology import load as load_topology

ROOT = Path(__file__).resolve().parents[2]
SMALL = (ROOT / "tests/e2e/small.yml").read_text()
HOST = """name: conf
nodes:
  spine1: {kind: spine}
  leaf1: {kind: leaf}
  leaf2: {kind: leaf}
  h1:
    kind: host
    binds: [%s]
    %s
links:
  - [spine1, leaf1]
  - [spine1, leaf2]
  - [leaf1, h1]
"""


def topo(tmp: Path, binds: list[str], extra: str = "") -> Path:
    f = tmp / "lab" / "topology.yml"
    f.parent.mkdir(exist_ok=True)
    f.write_text(HOST % (", ".join(json.dumps(b) for b in binds), extra))
    return f


def refused(f: Path, rules: Confined) -> list[str]:
    with pytest.raises(TopologyError) as e:
        confine(load_topology(f), rules)
    return [f"{p.path}: {p.message}" for p in e.value.problems]


def test_twin_up_confined_holds_a_lab_to_its_topologys_own_directory(tmp_path):
    """`twin up --confined` names no root: Lab.load takes the topology's directory (the file as read)."""
    from twin.lab import Lab

    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "setup.sh").write_text("echo hi\n")
    f = topo(tmp_path, ["setup.sh:/setup.sh"])
    lab = Lab.load(str(f), confined=Confined())
    assert lab.fabric is not None and lab.fabric.confined == Confined(root=str(f.parent.resolve()))
    with pytest.raises(TopologyError) as e:
        Lab.load(str(topo(tmp_path, [f"{tmp_path}:/up"])), confined=Confined())
    assert [p.path for p in e.value.problems] == ["nodes.h1.binds[0]"], [str(p) for p in e.value.problems]


def test_a_confined_lab_binds_only_its_own_files_read_only(tmp_path):
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "setup.sh").write_text("echo hi\n")
    f = topo(tmp_path, ["setup.sh:/setup.sh"])
    fabric = confine(load_topology(f), Confined(root=str(f.parent)))
    (bind,) = fabric.nodes["h1"].binds
    assert bind.read_only and bind.target == "/setup.sh" and fabric.confined == Confined(root=str(f.parent))
    os.symlink("/etc", tmp_path / "lab" / "etc")  # a link that leads out
    for source in ("/", "/var/run/docker.sock", "../", "etc/", str(tmp_path)):
        if source == "/var/run/docker.sock" and not Path(source).exists():
            continue
        f = topo(tmp_path, [f"{source}:/host"])
        (said,) = refused(f, Confined(root=str(f.parent)))
        assert (
            said.startswith("nodes.h1.binds[0]: ")
            and "a confined lab binds only the files that came with "
            "it (its archive's, beside its topology; no link out of them), never a path of the host"
            in said
        )


def test_a_confined_lab_runs_only_the_images_allowed(tmp_path):
    f = topo(tmp_path, [], "image: alpine:3")
    (said,) = refused(f, Confined(root=str(f.parent)))
    assert (
        said == "nodes.h1.image: 'alpine:3' is not an image this twin allows; twin's own node image (no "
        "`image:`) and: none besides twin's"
    )
    assert confine(load_topology(f), Confined(root=str(f.parent), images=("alpine:3",))).nodes["h1"].image == "alpine:3"


def test_the_nodes_seccomp_profile_refuses_mounts_and_new_namespaces_but_not_setns():
    profile = hardening.seccomp_profile()
    denied = {n for r in profile["syscalls"] if r["action"] == "SCMP_ACT_ERRNO" and "args" not in r for n in r["names"]}
    assert {
        "mount",
        "umount2",
        "unshare",
        "pivot_root",
        "fsopen",
        "move_mount",
        "open_tree",
        "init_module",
        "finit_module",
        "kexec_load",
        "open_by_handle_at",
        "bpf",
        "keyctl",
        "ptrace",
        "clone3",
    } <= denied
    assert "setns" not in denied and profile["defaultAction"] == "SCMP_ACT_ALLOW"
    flags = {r["args"][0]["value"] for r in profile["syscalls"] if r["names"] == ["clone"]}
    assert flags == {hardening.CLONE_NEWNS, hardening.CLONE_NEWCGROUP, hardening.CLONE_NEWUSER}
    opts = hardening.container_options(("NET_ADMIN", "SYS_ADMIN", "NET_RAW"))
    assert opts["cgroupns"] == "private" and opts["cap_drop"] == ["MKNOD", "SETFCAP"]
    assert json.loads(opts["security_opt"][0].removeprefix("seccomp=")) == profile


def tar_of(members: list[tuple[str, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members:
            m = tarfile.TarInfo(name)
            if data is None:
                m.type = tarfile.DIRTYPE
                tar.addfile(m)
            else:
                m.size = len(data)
                tar.addfile(m, io.BytesIO(data))
    return buf.getvalue()


@pytest.mark.parametrize(
    "members, says",
    [
        ([("leaf1/frr.conf", b"a"), ("leaf1/frr.conf", b"b")], "archive member 'leaf1/frr.conf' is given twice"),
        (
            [("leaf1", b"a"), ("leaf1/frr.conf", b"b")],
            "archive member 'leaf1/frr.conf': a file of the archive is on its "
            "path (a member is a file and a directory)",
        ),
        (
            [("leaf1/x", None), ("leaf1/x", b"b")],
            "archive member 'leaf1/x' is given twice (or as a file and a directory)",
        ),
        ([("leaf1/" + "n" * 300, b"a")], "a name is at most 255 bytes, a path at most 1024"),
    ],
)
def test_an_archive_member_twice_a_file_on_a_directorys_path_or_too_long_is_refused(tmp_path, members, says):
    with pytest.raises(TopologyError) as e:
        bodies.archive(tmp_path, tar_of(members))
    assert says in str(e.value) and str(tmp_path) not in str(e.value)


def test_no_answer_names_the_servers_directories():
    hide("/srv/twin-state")
    assert (
        scrubbed("/srv/twin-state/sources/0a1b/configs/leaf1/frr.conf:3: x; '/srv/twin-state/s/t'")
        == "frr.conf:3: x; 't'"
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    mp = pytest.MonkeyPatch()
    mp.setenv("TWIN_HOME", str(tmp / "home"))
    core = Core(
        Settings(
            home=tmp / "state", limits=Limits(3, 64, 16 << 30), max_snapshots=2, max_snapshot_bytes=1000, max_streams=2
        )
    )
    svc = Service("serve", create_app(core), [Listener(port=0)], max_body=MAX_BODY, body=guard_body).start()
    yield core, svc.addresses()[0]
    svc.stop()
    core.close()
    mp.undo()


def call(
    url: str,
    method: str,
    path: str,
    token: str | None = None,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict]:
    import urllib.request

    h = {"Content-Type": "application/json", **(headers or {})} if body is not None else dict(headers or {})
    if token is not None:
        h["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url + path, data=body, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def row(core: Core, name: str, owner: str, source: str = "") -> None:
    core.store.run(
        "INSERT INTO labs(name, owner, created, expires, state, source, frr_nodes, memory) "
        "VALUES (?, ?, ?, ?, 'up', ?, 4, 1073741824)",
        name,
        owner,
        time.time(),
        time.time() + 3600,
        source,
    )


def test_the_token_is_checked_before_any_body_is_read(server):
    core, url = server
    core.throttle = Throttle()  # each failure slows the next answer: counted from here
    for path, body in (
        ("/v1/labs/nobody", b"{not json"),
        ("/v1/labs/nobody", b"[" * 100_000 + b"]" * 100_000),
        ("/v1/labs", b'{"topology": "x"}'),
    ):
        status, doc = call(url, "PATCH" if path != "/v1/labs" else "POST", path, "twin_wrong", body)
        assert status == 401 and doc["type"].endswith("/unauthorized"), doc


def test_a_body_nested_deep_is_422_not_a_server_error(server):
    core, url = server
    token = issue(core.store, "deep")[1]
    for path, method in (("/v1/labs", "POST"), ("/v1/labs/x/plan", "POST"), ("/v1/labs/x", "PATCH")):
        status, doc = call(url, method, path, token, b"[" * 100_000 + b"]" * 100_000)
        assert (
            status == 422
            and doc["detail"] == "the JSON body nests deeper than 64 levels; a request of this API nests a few"
        ), doc


def test_a_taken_name_is_answered_alike_to_every_non_owner(server):
    core, url = server
    alice, bob, carl = (issue(core.store, u)[1] for u in ("alice", "bob", "carl"))
    row(core, "alicelab", "alice")
    body = json.dumps({"topology": SMALL, "name": "alicelab"}).encode()
    said = {}
    for who, token in (("bob", bob), ("carl", carl)):
        status, doc = call(url, "POST", "/v1/labs", token, body)
        assert status == 409 and "alice" not in doc["detail"].replace("alicelab", ""), doc
        said[who] = doc["detail"]
    assert said["bob"] == said["carl"] == "the name 'alicelab' is not available on this server; name yours (`name`)"
    status, doc = call(url, "POST", "/v1/labs", alice, body)
    assert status == 409 and doc["detail"] == "you have a lab named 'alicelab'; name the new one (`name`)"


def test_a_host_bind_through_the_api_is_422_and_nothing_is_kept(server, tmp_path):
    core, url = server
    token = issue(core.store, "mallory")[1]
    for bind in ("/:/host", "/var/run/docker.sock:/docker.sock", f"{tmp_path}:/hostdir", "../../:/up"):
        text = HOST % (json.dumps(bind), 'exec: ["touch /hostdir/by-exec"]')
        status, doc = call(url, "POST", "/v1/labs", token, json.dumps({"topology": text, "name": "m1"}).encode())
        assert status == 422 and "a confined lab binds only the files that came with it" in doc["detail"], doc
        assert str(core.settings.home) not in json.dumps(doc)
    status, doc = call(
        url, "POST", "/v1/labs", token, json.dumps({"topology": HOST % ("", "image: alpine:3"), "name": "m1"}).encode()
    )
    assert status == 422 and "'alpine:3' is not an image this twin allows" in doc["detail"], doc
    assert list((core.settings.home / "sources").iterdir()) == [] and not (tmp_path / "by-exec").exists()


def test_snapshots_and_kept_change_files_are_bounded_per_user_with_the_numbers(server, tmp_path):
    core, url = server
    token = issue(core.store, "hoarder")[1]
    row(core, "hoard", "hoarder", str(tmp_path))
    for sid in ("s1", "s2"):
        core.store.run(
            "INSERT INTO snapshots(id, lab, owner, created, size, summary) VALUES (?, ?, ?, ?, ?, '{}')",
            sid,
            "hoard",
            "hoarder",
            time.time(),
            100,
        )
    status, doc = call(url, "POST", "/v1/labs/hoard/snapshots", token, b"")
    assert status == 409 and doc["quota"] == {
        "snapshots": {"limit": 2, "held": 2},
        "snapshot_bytes": {"limit": 1000, "held": 200},
    }, doc
    assert doc["detail"].startswith("hoarder keeps 2 snapshots of 200 bytes; a user keeps at most 2 and 1,000 bytes")
    (tmp_path / "changes" / "old").mkdir(parents=True)
    (tmp_path / "changes" / "old" / "topology.yml").write_bytes(b"x" * 2048)
    with pytest.raises(Exception) as e:
        changes.spec(changes.ChangeBody(topology="name: x"), tmp_path, limit=1024)
    assert getattr(e.value, "status", None) == 409 and e.value.extra["quota"] == {
        "kept_bytes": {"limit": 1024, "held": 2048}
    }


def test_event_streams_are_bounded_per_user(server):
    core, url = server
    token = issue(core.store, "streamer")[1]
    core.streams["streamer"] = 2
    core.store.run(
        "INSERT INTO operations(id, lab, owner, kind, state, created) VALUES ('op1', 'x', 'streamer', "
        "'verify', 'running', ?)",
        time.time(),
    )
    status, doc = call(url, "GET", "/v1/operations/op1/events", token)
    assert status == 429 and doc["limit"] == 2 and "streamer holds 2 event streams open" in doc["detail"], doc
    core.streams["streamer"] = 0
    core.store.run("UPDATE operations SET state = 'failed' WHERE id = 'op1'")


def test_a_forged_x_forwarded_for_is_not_believed(server, caplog):
    core, url = server
    core.throttle = Throttle()
    caplog.set_level("WARNING", "twin.server")
    call(url, "GET", "/v1/me", "twin_forged", headers={"X-Forwarded-For": "203.0.113.9"})
    assert core.throttle.failures("127.0.0.1") >= 1 and core.throttle.failures("203.0.113.9") == 0
    assert "203.0.113.9" not in caplog.text


def test_half_open_connections_of_one_address_never_take_every_slot(tmp_path):
    """More half-open connections than the listener has slots, from one address: the oldest of them
    are closed, and a client that sends its request is answered at once."""
    core = Core(Settings(home=tmp_path / "state"))
    svc = Service(
        "serve", create_app(core), [Listener(port=0)], max_body=MAX_BODY, body=guard_body, concurrency=32
    ).start()
    try:
        port = svc.port(svc.listeners[0])
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
        for s in held:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        t0 = time.monotonic()
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
            assert r.status == 200
        assert time.monotonic() - t0 < 2
        open_ = 0
        for s in held:
            s.settimeout(0.2)
            try:
                open_ += s.recv(1) != b""
            except TimeoutError:
                open_ += 1
            except ConnectionResetError:
                pass
            s.close()
        assert open_ <= slowclient.PER_ADDRESS
    finally:
        svc.stop()
        core.close()
