"""A fabric port's route to its link-local network is twin's to add as the port comes up
(`twin.runtime.links.link_local_route`): the kernel's own add can fail on a busy host, and a BGP
unnumbered session without it never opens (seen on 1 of 3,968 ports of an 8 x 248 Clos)."""

from __future__ import annotations

import errno
from contextlib import contextmanager
from socket import AF_INET6

from pyroute2 import NetlinkError

from twin.runtime import links
from twin.topology import load


class FakeIpr:
    def __init__(self, route_error: int = 0):
        self.calls: list[tuple] = []
        self.route_error = route_error

    def link(self, op, **kw):
        self.calls.append(("link", op, kw["ifname"]))

    def link_lookup(self, ifname):
        return [100 + int("".join(c for c in ifname if c.isdigit()) or 0)]

    def route(self, op, **kw):
        self.calls.append(("route", op, kw))
        if self.route_error:
            raise NetlinkError(self.route_error)


def run_bring_up(monkeypatch, node: str, route_error: int = 0) -> FakeIpr:
    fake = FakeIpr(route_error)

    @contextmanager
    def ipr(pid, ns=""):
        yield fake

    monkeypatch.setattr(links.netns, "ipr", ipr)
    links.bring_up(load("topologies/aipod.yml"), node, 4242)
    return fake


def test_each_fabric_port_gets_its_link_local_route_as_the_kernel_makes_it(monkeypatch):
    fabric = load("topologies/aipod.yml")
    dpu = fabric.nodes["dpu1"]
    fake = run_bring_up(monkeypatch, "dpu1")
    routes = [kw for kind, _, kw in fake.calls if kind == "route"]
    assert len(routes) == len(dpu.fabric_ports) and len(dpu.fabric_ports) < len(dpu.ports)  # not its host ports
    for kw in routes:
        assert kw["dst"] == "fe80::/64" and kw["family"] == AF_INET6
        assert kw["proto"] == 2 and kw["priority"] == 256  # the kernel's own: its own add then finds it
    ups = [c[2] for c in fake.calls if c[0] == "link"]
    assert ups == [p.name for p in dpu.ports]  # every port up, its route right after it


def test_a_route_already_there_or_refused_leaves_the_port_as_the_kernel_makes_it(monkeypatch):
    for code in (errno.EEXIST, errno.EACCES):
        fake = run_bring_up(monkeypatch, "spine1", route_error=code)
        assert [c[2] for c in fake.calls if c[0] == "link"] == [
            p.name for p in load("topologies/aipod.yml").nodes["spine1"].ports
        ]
