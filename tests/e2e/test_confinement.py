"""A shared `twin serve` confines every user (issue 42), end to end: a real server process, one
small confined lab for the module (a spine, two leaf VTEPs, a tenant's two hosts), made by an
ordinary user's token from a topology and an archive.

- the lab converges and verifies: FRR up, the tenant's namespaces, its own `exec` run inside h1
  with the archive's script bound read-only (nothing of it on the host);
- the escapes tried from inside a node as the user can (a checks file's `type: exec`): a cgroup
  hierarchy mounted for its release_agent, a new user namespace, the host's disk, sysrq, a device
  node, a kernel module, the Docker socket, the host's network namespace: each fails, and the
  marker the release agent would write on the host never appears;
- a host bind, the Docker socket, an image not allowed: 422 with the reason, nothing made;
- half-open connections beyond the server's slots from one address: other users are answered.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.conftest import leftovers, twin_cli
from tests.e2e.served import Served
from twin.client import ApiError

pytestmark = pytest.mark.e2e

NAME = "t-conf"
MARK = Path("/tmp/twin-t-conf-escaped")  # what a release agent run on the host would write
TOPOLOGY = f"""name: {NAME}
vtep: leaf
nodes:
  spine1: {{kind: spine}}
  leaf1: {{kind: leaf}}
  leaf2: {{kind: leaf}}
  h1:
    kind: host
    binds: ["configs/h1/setup.sh:/setup.sh"]
    exec: ["sh /setup.sh"]
  h2: {{kind: host}}
links:
  - [spine1, leaf1]
  - [spine1, leaf2]
  - endpoints: [leaf1:swp10, h1:eth1]
  - endpoints: [leaf2:swp10, h2:eth1]
tenants:
  red:
    l3vni: 10100
    segments:
      web: {{subnet: 10.1.1.0/24, l2vni: 10101}}
    attachments:
      - {{host: h1, segment: web, address: 10.1.1.11}}
      - {{host: h2, segment: web, address: 10.1.1.12}}
"""
SETUP = b"echo confined > /tmp/by-exec; cat /proc/self/status | grep ^CapEff > /tmp/caps\n"
# each escape, as a shell line run inside leaf1 (an FRR node: CAP_SYS_ADMIN) by the user's checks
ESCAPES = {
    "release_agent": f"mkdir -p /tmp/cg && mount -t cgroup -o rdma cgroup /tmp/cg && echo 1 > "
    f"/tmp/cg/notify_on_release && echo 'touch {MARK}' > /tmp/cg/release_agent",
    "cgroup release_agent in place": "echo /x > /sys/fs/cgroup/memory/release_agent",
    "user namespace": "unshare -UrmC true",
    "host disk": "mknod /tmp/sda b 8 0",
    "sysrq": "echo h > /proc/sysrq-trigger",
    "kernel module": "python3 -c 'import ctypes; l=ctypes.CDLL(None); "
    'raise SystemExit(l.syscall(313, 0, b"", 0) != 0)\'',
    "docker socket": "test -S /var/run/docker.sock",
    "raw memory": "head -c1 /dev/mem",
    "host network namespace": "ip netns attach hostns 1",
}


@pytest.fixture(scope="module")
def served(twin_home, node_image, tmp_path_factory):
    s = Served(tmp_path_factory.mktemp("served") / "state", "--expiry", "1h").start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def user(served):
    return served.token("mallory")


@pytest.fixture(scope="module")
def lab(served, user, runtime, tmp_path_factory):
    MARK.unlink(missing_ok=True)
    d = tmp_path_factory.mktemp("conf")
    (d / "topology.yml").write_text(TOPOLOGY)
    (d / "configs" / "h1").mkdir(parents=True)
    (d / "configs" / "h1" / "setup.sh").write_bytes(SETUP)  # the client sends the directory as an archive
    (d / "configs" / "h2").mkdir()  # two top directories: the server keeps them (it drops a lone one)
    (d / "configs" / "h2" / "notes.txt").write_text("h2 binds nothing\n")
    c = served.client(user)
    try:
        op = c.create(d / "topology.yml", name=NAME, configs=d / "configs", expires_in="1h")
        yield c, op
    finally:
        try:
            c.delete(NAME)
        except ApiError:
            pass
        twin_cli("down", NAME)
        assert leftovers(runtime, NAME) == []


def test_a_confined_lab_converges_verifies_and_runs_its_exec_inside(lab, runtime):
    c, op = lab
    assert op["state"] == "succeeded", op
    res = c.verify(NAME)
    assert res["exit"] == 0 and res["result"]["passed"], json.dumps(res)[:2000]
    h1 = runtime.containers(NAME)["h1"].exec(f"{NAME}/h1")
    assert h1.check(["cat", "/tmp/by-exec"]).stdout.strip() == "confined"  # its exec ran, in h1
    caps = int(h1.check(["cat", "/tmp/caps"]).stdout.split()[-1], 16)
    assert caps & (1 << 21) == 0  # CAP_SYS_ADMIN: not a host's, not twin's worker's
    assert h1.run(["sh", "-c", "echo x > /setup.sh"]).rc != 0  # the archive's file: read-only
    assert not Path("/tmp/by-exec").exists() or Path("/tmp/by-exec").read_text() != "confined\n"


def test_every_escape_from_inside_a_node_fails_and_the_host_is_unchanged(lab, tmp_path):
    c, _ = lab
    f = tmp_path / "escapes.yml"
    f.write_text(
        json.dumps(
            {
                "checks": [
                    {
                        "name": f"escape: {k}",
                        "type": "exec",
                        "node": "leaf1",
                        "regex": "^refused$",
                        "timeout": 5,
                        "command": f"( {v} ) >/dev/null 2>&1 && echo escaped || echo refused",
                    }
                    for k, v in ESCAPES.items()
                ]
            }
        )
    )
    res = c.verify(NAME, checks=[f])
    mine = {x["name"]: x for x in res["result"]["checks"] if x["name"].startswith("escape: ")}
    assert set(mine) == {f"escape: {k}" for k in ESCAPES}, list(mine)
    escaped = [n for n, x in mine.items() if not x["passed"]]
    assert escaped == [] and res["result"]["passed"], (escaped, json.dumps(res["result"])[:3000])
    assert not MARK.exists() and not Path("/tmp/sda").exists()  # nothing on the host changed


@pytest.mark.parametrize(
    "binds, image, says",
    [
        (["/:/host"], None, "a confined lab binds only the files that came with it"),
        (["/var/run/docker.sock:/var/run/docker.sock"], None, "a confined lab binds only the files that came with it"),
        (["../../..:/up"], None, "a confined lab binds only the files that came with it"),
        ([], "alpine:3", "'alpine:3' is not an image this twin allows"),
    ],
)
def test_a_host_bind_or_an_image_not_allowed_is_422_and_nothing_appears(served, user, binds, image, says, runtime):
    text = TOPOLOGY.replace(NAME, "t-conf-x").replace('["configs/h1/setup.sh:/setup.sh"]', json.dumps(binds))
    if image:
        text = text.replace("  h2: {kind: host}", f"  h2: {{kind: host, image: '{image}'}}")
    sources = set((served.state / "sources").iterdir())  # the module's lab's, if it is up
    req = urllib.request.Request(
        served.url + "/v1/labs",
        json.dumps({"topology": text}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {user}", "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=60)
    doc = json.loads(e.value.read())
    assert e.value.code == 422 and says in doc["detail"] + " ".join(doc.get("problems", [])), doc
    assert str(served.state) not in json.dumps(doc)
    assert leftovers(runtime, "t-conf-x") == [] and set((served.state / "sources").iterdir()) == sources


def test_half_open_connections_never_shut_other_users_out(served, user):
    port = int(served.url.rsplit(":", 1)[1])
    other = served.token("other")  # a command of its own (seconds on a busy host): not part of what is timed
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
    try:
        for s in held:
            s.sendall(b"GET /v1/me HTTP/1.1\r\nHost: x\r\n")  # never finished
        t0 = time.monotonic()
        req = urllib.request.Request(served.url + "/v1/me", headers={"Authorization": f"Bearer {other}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200 and json.loads(r.read())["user"] == "other"
        assert time.monotonic() - t0 < 5
    finally:
        for s in held:
            s.close()
