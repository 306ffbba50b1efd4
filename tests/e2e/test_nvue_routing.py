"""NVUE's OSPF and static routes run and judged (issue 44): the small lab whose switches all run their
NVUE export (tests/e2e/nvue/policy.yml), changed with `nv` in the nodes as an operator would. OSPF on
the spine1-leaf1 link in area 0 on one end and area 1 on the other, and a static route on leaf1 to a
next hop nothing reaches, are named by verify's `protocols` group (both areas; the unreachable next
hop) and by `nv show`; fixed (area 0 on both ends, the next hop spine1's loopback), both pass: the
adjacency Full, the route installed. A management VRF's static route on leaf2 is the kernel's, in its
management namespace, and judged there. Then the link unnumbered, as Cumulus's OSPF underlays run (each
port at its loopback's /32, point-to-point, OSPF in area 0 by the interface's own `router ospf`): a hello
of 5 s on spine1 and NVUE's 10 s on leaf1 are named with both values, the fix passes; those settings are
ospfd's alone (FRR 10.3's zebra -n aborts on an interface block: zebra keeps its PID throughout), and
`--prove` takes leaf1's area away and puts it back. One lab for the module; verify's group is called
directly.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.e2e.conftest import ROOT, nv_apply, nv_in, nvue_export_lab, twin_cli
from twin import verify
from twin.base import timeouts, wait
from twin.lab import Lab

pytestmark = pytest.mark.e2e

NAME = "t-nvue-routing"
TOPOLOGY = ROOT / "tests/e2e/nvue/policy.yml"
OSPF = ("vrf", "default", "router", "ospf")
STATIC = ("vrf", "default", "router", "static", "192.0.2.0/24")
LINK = "ospf leaf1 swp51 - spine1 swp1"


@pytest.fixture(scope="module")
def lab(runtime, node_image, tmp_path_factory):
    with nvue_export_lab(runtime, node_image, tmp_path_factory.mktemp("nvue-routing"), TOPOLOGY, NAME) as lab:
        yield lab


def nv(node: str, *words: str) -> subprocess.CompletedProcess:
    return nv_in(NAME, node, *words)


def apply(node: str, *changes: tuple[str, ...]) -> None:
    nv_apply(NAME, node, *changes)


def settled(lab: Lab, want: set[str]) -> dict[str, str]:
    """The protocols group's failures once they are `want` (an adjacency is Full once the broadcast
    link's wait, its dead interval of 40 s, elected a designated router)."""
    got: dict[str, str] = {}

    def probe() -> list[str]:
        got.clear()
        got.update({c.name: c.message for c in verify.run(lab, only=["protocols"]).failures()})
        return [] if set(got) == want else [f"failing {sorted(got)}, expected {sorted(want)}: {got}"]

    wait.until(probe, timeouts.PROTOCOLS_UP + timeouts.OSPF_WAIT, "verify's protocols group", first=1.0, cap=3.0)
    return got


def test_an_area_mismatch_and_an_unreachable_next_hop_are_named_and_their_fix_passes(lab):
    assert settled(lab, set()) == {}, "the export verifies as it is"
    gw = lab.fabric.mgmt.gateway  # the management VRF's route: the kernel's, in the node's management namespace
    apply("leaf2", ("set", "vrf", "mgmt", "router", "static", "198.18.0.0/15", "via", gw))
    shown = lab.node("leaf2").check(["nsenter", "--net=/run/twin/mgmt", "ip", "route"]).stdout
    assert f"198.18.0.0/15 via {gw} dev eth0" in shown, shown
    apply(
        "spine1",
        ("set", "interface", "swp1", "ip", "address", "10.0.1.1/31"),
        ("set", *OSPF, "router-id", "10.255.0.1"),
        ("set", *OSPF, "area", "0", "network", "10.0.1.0/31"),
    )
    apply(
        "leaf1",
        ("set", "interface", "swp51", "ip", "address", "10.0.1.0/31"),
        ("set", *OSPF, "router-id", "10.255.0.2"),
        ("set", *OSPF, "area", "1", "network", "10.0.1.0/31"),
        ("set", *STATIC, "via", "10.99.99.1"),
    )
    frr = lab.node("leaf1").check(["vtysh", "-c", "show running-config"]).stdout
    assert "router ospf\n ospf router-id 10.255.0.2\n network 10.0.1.0/31 area 0.0.0.1\n" in frr
    assert "ip route 192.0.2.0/24 10.99.99.1\n" in frr
    got = settled(lab, {LINK, "static routes leaf1"})
    assert got[LINK] == (
        "leaf1 swp51 - spine1 swp1: no adjacency: area 0.0.0.1 on leaf1 swp51, 0.0.0.0 on spine1 "
        "swp1 (OSPF forms none unless they match)"
    ), got
    assert got["static routes leaf1"] == (
        "192.0.2.0/24 via 10.99.99.1: inactive: its next hop 10.99.99.1 is "
        "unreachable (VRF default has no route to it), so zebra installs nothing"
    )
    shown = json.loads(nv("leaf1", "show", *STATIC[:-1], "-o", "json").stdout)
    assert shown["192.0.2.0/24"]["via"]["10.99.99.1"]["state"] == "inactive", shown

    apply(
        "leaf1",
        ("unset", *OSPF, "area", "1"),
        ("set", *OSPF, "area", "0", "network", "10.0.1.0/31"),
        ("unset", *STATIC, "via", "10.99.99.1"),
        ("set", *STATIC, "via", "10.255.0.1"),
    )
    assert settled(lab, set()) == {}
    report = verify.run(lab, only=["protocols"])
    assert {c.name for c in report.checks if c.group == "protocols"} == {
        LINK,
        "static routes leaf1",
        "static routes leaf2",
    }
    ospf = json.loads(nv("leaf1", "show", *OSPF, "-o", "json").stdout)
    assert (
        ospf["neighbor"]["10.255.0.1"]["state"].startswith("Full") and ospf["interface"]["swp51"]["area"] == "0.0.0.0"
    ), ospf
    port = json.loads(nv("spine1", "show", "interface", "swp1", "router", "ospf", "-o", "json").stdout)
    assert port["area"] == "0.0.0.0" and port["network-type"] == "broadcast", port
    route = lab.node("leaf1").check(["vtysh", "-c", "show ip route 192.0.2.0/24 json"]).stdout
    assert '"protocol":"static"' in route.replace(" ", "") and '"installed":true' in route.replace(" ", "")


@pytest.mark.prove  # a slow proof: `make prove` runs it, `make test` does not
def test_the_proof_takes_the_networks_and_static_routes_away_and_verify_names_each(lab):
    """`--prove` elements of the OSPF networks that put a judged link in OSPF and of the static routes (issue
    44), as the test before left them: taken away in FRR, named by the protocols group, put back by a reload
    of the file the node runs (the adjacency Full again after the broadcast link's wait)."""
    p = twin_cli(
        "verify", NAME, "--prove", "--element", "ospf-network *", "--element", "static *", "--json", timeout=600
    )
    proof = json.loads(p.stdout)
    by = {o["id"]: o for o in proof["outcomes"]}
    assert p.returncode == 0 and proof["caught"] == proof["proved"] == 3, p.stdout[-3000:] + p.stderr
    assert set(by) == {
        "ospf-network leaf1 10.0.1.0/31",
        "ospf-network spine1 10.0.1.0/31",
        "static leaf1 192.0.2.0/24 10.255.0.1",
    }, by
    assert all(o["caught"] and o["restored"] for o in by.values()), by
    assert by["ospf-network spine1 10.0.1.0/31"]["check"] == f"protocols: {LINK}"
    assert by["static leaf1 192.0.2.0/24 10.255.0.1"]["check"] == "protocols: static routes leaf1"


def pid_of(daemon: str, node: str) -> str:
    return twin_cli("exec", NAME, node, "--", "cat", f"/var/run/frr/{daemon}.pid").stdout.strip()


def test_an_unnumbered_links_interface_ospf_runs_in_ospfd_and_a_hello_mismatch_is_named(lab):
    """`interface.<name>.router.ospf` set and changed on running nodes (issue 44), as the tests before left
    the link (or from any state: OSPF's networks are taken away first)."""
    zebra = {n: pid_of("zebra", n) for n in ("spine1", "leaf1")}
    port = ("interface", "swp1", "router", "ospf")
    apply(
        "spine1",
        ("unset", *OSPF),
        ("unset", "interface", "swp1", "ip", "address"),
        ("set", "interface", "swp1", "ip", "address", "10.255.0.1/32"),  # unnumbered: the loopback's address
        ("set", *port, "area", "0"),
        ("set", *port, "network-type", "point-to-point"),
        ("set", *port, "timers", "hello-interval", "5"),
        ("set", "interface", "lo", "router", "ospf", "area", "0"),
        ("set", *OSPF, "router-id", "10.255.0.1"),
    )
    port = ("interface", "swp51", "router", "ospf")
    apply(
        "leaf1",
        ("unset", *OSPF),
        ("unset", "interface", "swp51", "ip", "address"),
        ("set", "interface", "swp51", "ip", "address", "10.255.0.2/32"),
        ("set", *port, "area", "0"),
        ("set", *port, "network-type", "point-to-point"),  # NVUE's hello of 10 s: the mistake
        ("set", "interface", "lo", "router", "ospf", "area", "0"),
        ("set", *OSPF, "router-id", "10.255.0.2"),
    )
    shown = lab.node("leaf1").check(["vtysh", "-d", "ospfd", "-c", "show running-config"]).stdout
    assert "interface swp51\n ip ospf area 0.0.0.0\n ip ospf network point-to-point\nexit\n" in shown, shown
    assert "\ninterface " not in lab.node("leaf1").check(["cat", "/etc/frr/frr.conf"]).stdout
    got = settled(lab, {LINK})
    assert got[LINK] == (
        "leaf1 swp51 - spine1 swp1: no adjacency: hello 10 s on leaf1 swp51, 5 s on spine1 swp1; dead 40 s on "
        "leaf1 swp51, 20 s on spine1 swp1 (OSPF forms none unless they match)"
    ), got

    apply("leaf1", ("set", *port, "timers", "hello-interval", "5"))
    assert settled(lab, set()) == {}
    shown = json.loads(nv("leaf1", "show", "interface", "swp51", "router", "ospf", "-o", "json").stdout)
    assert (shown["network-type"], shown["timers"]["hello-interval"], shown["state"]) == (
        "point-to-point",
        5,
        "Point-To-Point",
    ), shown

    def learned() -> list[str]:  # spine1's loopback by OSPF over the unnumbered port, once SPF has run
        routes = json.loads(lab.node("leaf1").check(["vtysh", "-c", "show ip route ospf json"]).stdout)
        hops = [h.get("interfaceName") for e in routes.get("10.255.0.1/32", []) for h in e.get("nexthops", [])]
        return [] if hops == ["swp51"] else [f"10.255.0.1/32 by OSPF via swp51 (leaf1 has {routes})"]

    wait.until(learned, timeouts.PROTOCOLS_UP, "leaf1's OSPF route to spine1's loopback", first=0.2, cap=1.0)
    assert {n: pid_of("zebra", n) for n in zebra} == zebra, "zebra -n never sent an interface block"

    p = twin_cli("verify", NAME, "--prove", "--element", "ospf-interface leaf1 *", "--json", timeout=300)
    proof = json.loads(p.stdout)
    (o,) = proof["outcomes"]
    assert p.returncode == 0 and o["caught"] and o["restored"], p.stdout[-3000:] + p.stderr
    assert (o["id"], o["check"]) == ("ospf-interface leaf1 swp51", f"protocols: {LINK}")
