"""A node is not trusted with its tenant namespaces (issue 34): a link or a bind planted at a node's
/run/netns/<vrf> never leads twin outside the node. Each case plants one in a running VTEP (what a
hostile node can do itself: a link, a bind of its own namespace or of another tenant's; and, with
the host's hand, a bind of another node's or of the host's namespace), shows the hazard is real
(followed from the host the path IS that namespace), runs `twin fault link-down` on the tenant's
port (a netlink write in that namespace) and finds it refused, the node named, and nothing outside
changed: the host's links and sysctls, the other node's port. Undone, the same fault works."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
import yaml
from pyroute2 import IPRoute

from tests.e2e.conftest import twin_cli
from twin.runtime import mgmt
from twin.runtime.exec import NodeExec
from twin.runtime.netns import netns_path, tenant_netns_path

pytestmark = pytest.mark.e2e
NAME = "t-nsguard"
TOPOLOGY = f"""name: {NAME}
vtep: leaf
nodes:
  spine1: {{kind: spine}}
  leaf1: {{kind: leaf}}
  leaf2: {{kind: leaf}}
  host1a: {{kind: host}}
  host1b: {{kind: host}}
  host2a: {{kind: host}}
links:
  - [spine1, leaf1]
  - [spine1, leaf2]
  - endpoints: [leaf1:swp10, host1a:eth1]
  - endpoints: [leaf1:swp11, host1b:eth1]
  - endpoints: [leaf2:swp10, host2a:eth1]
tenants:
  red:
    l3vni: 10100
    segments: {{web: {{subnet: 10.1.1.0/24, l2vni: 10101}}}}
    attachments:
      - {{host: host1a, segment: web, address: 10.1.1.11}}
      - {{host: host2a, segment: web, address: 10.1.1.12}}
  blue:
    l3vni: 10200
    segments: {{web: {{subnet: 10.1.1.0/24, l2vni: 10201}}}}
    attachments:
      - {{host: host1b, segment: web, address: 10.1.1.11}}
"""
SYSCTLS = (
    "net/ipv4/ip_forward",
    "net/ipv4/conf/all/forwarding",
    "net/ipv6/conf/all/forwarding",
    "net/ipv4/conf/all/rp_filter",
    "net/ipv4/conf/default/arp_announce",
)


@pytest.fixture(scope="module")
def lab(make_lab, tmp_path_factory):
    path = tmp_path_factory.mktemp("nsguard") / "t.yml"
    path.write_text(TOPOLOGY)
    lab = make_lab(path, NAME)
    yield lab
    lab.down()


def host_view() -> tuple[dict[str, tuple[int, int]], dict[str, str]]:
    """The host namespace's own links (flags, MTU; not Docker's veths and bridges nor other labs'
    management links, which other labs change meanwhile) and a few of its sysctls."""
    mine = {mgmt.bridge_name(NAME), *(mgmt.port_name(NAME, n) for n in yaml.safe_load(TOPOLOGY)["nodes"])}
    with IPRoute() as ipr:
        links = {
            link.get("ifname"): (link["flags"], link.get("mtu"))
            for link in ipr.get_links()
            if not link.get("ifname").startswith(("veth", "br-", "docker"))
            and (link.get("ifname") in mine or not re.fullmatch(r"(twm|tm)[0-9a-f]{8}", link.get("ifname")))
        }
    return links, {k: Path("/proc/sys", k).read_text() for k in SYSCTLS}


def port_flags(pid: int, ns: str, port: str) -> int:
    with IPRoute(netns=tenant_netns_path(pid, ns) if ns else netns_path(pid), flags=0) as ipr:
        return ipr.link("get", ifname=port)[0]["flags"]


@dataclass(frozen=True)
class Plant:
    how: Callable[[NodeExec, int], object]  # (leaf1's exec, leaf2's pid): plant it
    leads_to: Callable[[int, int], str]  # (leaf1's pid, leaf2's pid): the namespace file it leads to
    undo: str  # in leaf1
    said: str  # what twin says it found


def link(target: str) -> Callable[[NodeExec, int], object]:
    """The node's hand: /run/netns/red a symbolic link (a directory with one bound over /run/netns)."""
    return lambda ex, other: ex.check(
        [
            "sh",
            "-ec",
            f"mkdir -p /tmp/evil && ln -sfn {target.format(other=other)} "
            "/tmp/evil/red && mount --bind /tmp/evil /run/netns",
        ]
    )


def bind(source: str) -> Callable[[NodeExec, int], object]:
    """The node's hand: namespace file `source` (the node's own path) bound over /run/netns/red."""
    return lambda ex, other: ex.check(["mount", "--bind", source, "/run/netns/red"])


def bind_by_host(source: Callable[[int], str]) -> Callable[[NodeExec, int], object]:
    """The host's hand: namespace file `source(other)` (a host path) bound over the node's /run/netns/red."""

    def plant(ex: NodeExec, other: int) -> None:
        fd = os.open(source(other), os.O_RDONLY)
        try:
            subprocess.run(
                [
                    "nsenter",
                    "-t",
                    str(ex.pid),
                    "-m",
                    "-p",
                    "--",
                    "mount",
                    "--no-canonicalize",
                    "--bind",
                    f"/proc/self/fd/{fd}",
                    "/run/netns/red",
                ],
                pass_fds=[fd],
                check=True,
                capture_output=True,
            )
        finally:
            os.close(fd)

    return plant


HOST_NS = "/proc/self/ns/net"  # followed by any host process: the host's namespace
CASES = {
    "a link to the host's namespace": Plant(
        link(HOST_NS),
        lambda me, other: HOST_NS,
        "umount /run/netns",
        "run/netns/red is a symbolic link (to /proc/self/ns/net)",
    ),
    "a link to another node's namespace": Plant(
        link("/proc/{other}/ns/net"),
        lambda me, other: netns_path(other),
        "umount /run/netns",
        "run/netns/red is a symbolic link (to /proc/",
    ),
    "a bind of the node's own namespace": Plant(
        bind("/proc/1/ns/net"),
        lambda me, other: netns_path(me),
        "umount /run/netns/red",
        "/run/netns/red is the node's own network namespace, not tenant red's",
    ),
    "a bind of another tenant's namespace": Plant(
        bind("/run/netns/blue"),
        lambda me, other: tenant_netns_path(me, "blue"),
        "umount /run/netns/red",
        "/run/netns/red is the same namespace as /run/netns/blue in the node (another tenant's)",
    ),
    "a bind of another node's tenant namespace": Plant(
        bind_by_host(lambda other: tenant_netns_path(other, "red")),
        lambda me, other: tenant_netns_path(other, "red"),
        "umount /run/netns/red",
        "/run/netns/red is a namespace mounted outside the node too: at /run/netns/red in ",
    ),
    "a bind of another node's own namespace": Plant(
        bind_by_host(netns_path),
        lambda me, other: netns_path(other),
        "umount /run/netns/red",
        "/run/netns/red is the network namespace of another container",
    ),
    "a bind of the host's namespace": Plant(
        bind_by_host(lambda other: HOST_NS),
        lambda me, other: HOST_NS,
        "umount /run/netns/red",
        "/run/netns/red is the host's network namespace",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_planted_namespace_is_refused_and_nothing_outside_changes(lab, case):
    plant = CASES[case]
    leaf1, other = lab.node("leaf1"), lab.pids()["leaf2"]
    before, theirs = host_view(), port_flags(other, "red", "swp10")
    assert theirs & 1, "leaf2's own port in tenant red is up"
    target = os.stat(plant.leads_to(leaf1.pid, other)).st_ino
    plant.how(leaf1, other)
    try:
        assert os.stat(tenant_netns_path(leaf1.pid, "red")).st_ino == target, (
            "followed from the host, the node's /run/netns/red is that namespace: the hazard is real"
        )
        p = twin_cli("fault", "link-down", NAME, "leaf1:swp10")
        assert p.returncode == 1, p.stdout + p.stderr
        assert p.stderr.startswith(f"error: node {NAME}/leaf1: /run/netns/red") and plant.said in p.stderr, p.stderr
        assert "not followed" in p.stderr or "not used (a node is not trusted)" in p.stderr
        if case == "a bind of another tenant's namespace":  # a reader refuses as a writer does
            st = twin_cli("status", NAME)
            assert st.returncode == 1 and plant.said in st.stderr
        assert port_flags(other, "red", "swp10") == theirs, "the other node's port is untouched"
        after = host_view()
        assert after[1] == before[1], "the host's sysctls are untouched"
        assert {n: f for n, f in after[0].items() if n in before[0]} == {
            n: f for n, f in before[0].items() if n in after[0]
        }, "the host's links are untouched"
        assert not {"swp10", "vxlan10100", "br10100"} & set(after[0]), "nothing of the tenant's made on the host"
    finally:
        leaf1.check(["sh", "-c", plant.undo])
    assert twin_cli("fault", "link-down", NAME, "leaf1:swp10").returncode == 0, "undone, the node's own works"
    assert not port_flags(leaf1.pid, "red", "swp10") & 1
    twin_cli("fault", "link-up", NAME, "leaf1:swp10", check=True)
    assert port_flags(leaf1.pid, "red", "swp10") & 1
