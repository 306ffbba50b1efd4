"""A lab's own images where the engine has them (issue 36). No registry here: the images a lab names
are built locally from twin's base (Docker SDK) and tagged with the lab's names: an "FRR image"
(twin's base + Debian's frr, started by its own docker-start as FRR's images are, leaving a marker),
a host image with a marker file, and one whose command is missing. `twin up` (auto) runs each
node's own image where it is here and twin's node image where it is not, says which, and the lab
converges with twin's wiring and barrier around the image's own FRR; `--images twin` runs twin's
everywhere; `--images own` refuses a missing one before anything is made; an image that does not
start is named with its node, image and last log line, and nothing of the lab is left."""

from __future__ import annotations

import hashlib
import io
import tarfile

import docker
import pytest
import yaml

from tests.e2e.conftest import leftovers, twin_cli
from twin.lab import Lab
from twin.runtime import images

pytestmark = pytest.mark.e2e

FRR = "twin-e2e.invalid/frrouting/frr:v8.4.0"  # present: built below
FRR_ABSENT = "twin-e2e.invalid/frrouting/frr:v10.2.1"  # never built: twin's node image instead
HOST = "twin-e2e.invalid/network-multitool:alpine-extra"
HOST_ABSENT = "twin-e2e.invalid/network-multitool:3.22"
BROKEN = "twin-e2e.invalid/broken:1"

DOCKER_START = """#!/bin/sh
# as FRR's own images start (docker/alpine/docker-start): FRR's files its user's, FRR started, then idle
set -e
chown -R frr:frr /etc/frr
echo "started by the lab's FRR image" > /run/lab-frr-image-started
/usr/lib/frr/frrinit.sh start
exec tail -f /dev/null
"""
FRR_FILE = """FROM {base}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends frr iproute2 \\
    iputils-ping procps && apt-get clean && rm -rf /var/lib/apt/lists/*
COPY docker-start /usr/lib/frr/docker-start
RUN chmod +x /usr/lib/frr/docker-start && echo "the lab's FRR image" > /etc/lab-image
CMD ["/usr/lib/frr/docker-start"]
"""
HOST_FILE = """FROM {frr}
RUN echo "the lab's host image" > /etc/lab-image
CMD ["/bin/sh"]
"""
BROKEN_FILE = """FROM {frr}
CMD ["/usr/lib/lab/start-missing"]
"""


def build(client: docker.DockerClient, dockerfile: str, files: dict[str, str] | None = None) -> str:
    """An image of `dockerfile` (cached by its text), built from a context in memory."""
    tag = "twin-e2e-own:" + hashlib.sha256((dockerfile + repr(files)).encode()).hexdigest()[:12]
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, text in {"Dockerfile": dockerfile, **(files or {})}.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    client.images.build(fileobj=buf, custom_context=True, tag=tag, rm=True, forcerm=True)
    return tag


@pytest.fixture(scope="module")
def lab_images(runtime, node_image):
    """The lab's image names, tagged on images built here from twin's base; untagged afterwards."""
    client = runtime.client
    frr = build(client, FRR_FILE.format(base=images.base_tag()), {"docker-start": DOCKER_START})
    built = {
        FRR: frr,
        HOST: build(client, HOST_FILE.format(frr=frr)),
        BROKEN: build(client, BROKEN_FILE.format(frr=frr)),
    }
    for name, tag in built.items():
        repo, _, version = name.rpartition(":")
        client.images.get(tag).tag(repo, version)
    try:
        yield built
    finally:
        for name in built:
            client.images.remove(name)


ROUTER = """frr defaults datacenter
hostname {name}
!
interface eth2
 ip address {gw}/24
exit
!
router bgp {asn}
 no bgp ebgp-requires-policy
 neighbor eth1 interface remote-as external
 address-family ipv4 unicast
  redistribute connected
 exit-address-family
exit
!
"""


def clab(tmp_path, name: str, nodes: dict) -> str:
    """A containerlab file of two routers (own configs) and two hosts, with the images given."""
    d = tmp_path / name
    for r, (gw, asn) in {"r1": ("10.1.1.1", 65001), "r2": ("10.2.2.1", 65002)}.items():
        (d / r).mkdir(parents=True)
        (d / r / "frr.conf").write_text(ROUTER.format(name=r, gw=gw, asn=asn))
        (d / r / "daemons").write_text("zebra=yes\nbgpd=yes\nvtysh_enable=yes\n")
    hosts = {"h1": ("10.1.1.2", "10.1.1.1"), "h2": ("10.2.2.2", "10.2.2.1")}
    doc = {
        "name": name,
        "topology": {
            "nodes": {
                **{
                    r: {
                        "kind": "linux",
                        "image": nodes[r],
                        "binds": [f"{r}/frr.conf:/etc/frr/frr.conf", f"{r}/daemons:/etc/frr/daemons"],
                    }
                    for r in ("r1", "r2")
                },
                **{
                    h: {
                        "kind": "linux",
                        "image": nodes[h],
                        "exec": [
                            f"ip addr add {ip}/24 dev eth1",
                            "ip link set eth1 up",
                            f"ip route add default via {gw}",
                        ],
                    }
                    for h, (ip, gw) in hosts.items()
                },
            },
            "links": [
                {"endpoints": ["r1:eth1", "r2:eth1"]},
                {"endpoints": ["h1:eth1", "r1:eth2"]},
                {"endpoints": ["h2:eth1", "r2:eth2"]},
            ],
        },
    }
    f = d / f"{name}.clab.yml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(f)


MIXED = {"r1": FRR, "r2": FRR_ABSENT, "h1": HOST, "h2": HOST_ABSENT}


@pytest.fixture(scope="module")
def mixed(lab_images, tmp_path_factory, runtime, node_image):
    name = "t-own-auto"
    p = twin_cli("up", clab(tmp_path_factory.mktemp("own"), "own", MIXED), "--name", name, "--image", node_image)
    try:
        yield name, p
    finally:
        twin_cli("down", name)
    assert leftovers(runtime, name) == []


def ran(runtime, lab: str) -> dict[str, set[str]]:
    return {n: set(h.container.image.tags) for n, h in runtime.containers(lab).items()}


def test_auto_runs_each_own_image_here_and_twins_where_it_is_not(mixed, lab_images, runtime, node_image):
    name, p = mixed
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"note: own image {FRR}: r1" in p.stderr and f"note: own image {HOST}: h1" in p.stderr
    assert (
        f"note: twin's node image instead of {FRR_ABSENT} (r2); {HOST_ABSENT} (h2): not on this engine" in p.stderr
    ), p.stderr
    tags = ran(runtime, name)
    assert FRR in tags["r1"] and HOST in tags["h1"] and node_image in tags["r2"] and node_image in tags["h2"]


def test_the_labs_frr_image_runs_its_own_frr_inside_twins_wiring_and_barrier(mixed):
    name, p = mixed
    assert f"lab {name} is up: 4 nodes, 2 adjacencies of 2 routers up" in p.stdout, p.stdout
    lab = Lab.open(name)
    r1 = lab.node("r1")
    assert r1.run(["cat", "/run/lab-frr-image-started"]).stdout == "started by the lab's FRR image\n"
    assert r1.run(["cat", "/etc/lab-image"]).stdout == "the lab's FRR image\n"
    assert not r1.run(["test", "-e", "/usr/local/bin/twin-node"]).ok  # not twin's image
    assert "FRRouting" in r1.vtysh("show version")
    assert "tail -f /dev/null" in r1.run(["ps", "-eo", "args"]).stdout  # its own start, still there
    assert lab.node("h1").run(["cat", "/etc/lab-image"]).stdout == "the lab's host image\n"
    res = lab.node("h1").run(["ping", "-c2", "-W2", "10.2.2.2"])  # across both routers
    assert res.ok, res.stdout + res.stderr
    st = twin_cli("status", name, "--json")
    assert st.returncode == 0 and '"healthy": true' in st.stdout


def test_images_twin_runs_twins_node_image_everywhere(lab_images, tmp_path, runtime, node_image):
    name = "t-own-twin"
    p = twin_cli(
        "up", clab(tmp_path, "own", MIXED), "--name", name, "--image", node_image, "--images", "twin", "--no-wait"
    )
    try:
        assert p.returncode == 0, p.stderr[-2000:]
        assert (
            f"every node runs twin's node image instead of {FRR} (r1); {FRR_ABSENT} (r2); {HOST} (h1); "
            f"{HOST_ABSENT} (h2) (--images twin)"
        ) in p.stderr
        assert all(node_image in t for t in ran(runtime, name).values())
    finally:
        twin_cli("down", name)
    assert leftovers(runtime, name) == []


def test_images_own_refuses_a_missing_image_before_anything_is_made(lab_images, tmp_path, runtime, node_image):
    name = "t-own-own"
    p = twin_cli("up", clab(tmp_path, "own", MIXED), "--name", name, "--image", node_image, "--images", "own")
    assert p.returncode == 1
    assert (
        f"error: lab '{name}': --images own, but this engine has no {FRR_ABSENT} (r2); {HOST_ABSENT} (h2); "
        "`docker pull IMAGE`"
    ) in p.stderr, p.stderr
    assert leftovers(runtime, name) == []


def test_an_image_that_does_not_start_is_named_and_nothing_is_left(lab_images, tmp_path, runtime, node_image):
    name = "t-own-broken"
    p = twin_cli("up", clab(tmp_path, "own", {**MIXED, "h1": BROKEN}), "--name", name, "--image", node_image)
    assert p.returncode == 1
    assert f"{name}/h1: its image {BROKEN} stopped once started (exit code 127); its last log line: " in p.stderr, (
        p.stderr
    )
    assert "/usr/lib/lab/start-missing" in p.stderr and "Traceback" not in p.stderr
    assert leftovers(runtime, name) == []
