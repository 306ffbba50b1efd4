"""The user's checks as files: every type loads, every problem is named with file:line, the
topology's checks: section travels with the Fabric, names are unique across files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twin.base.errors import TopologyError
from twin.topology import load
from twin.topology.checks import CheckSet, load_checks, merge
from twin.topology.model import Fabric

ROOT = Path(__file__).resolve().parents[2]
AIPOD = ROOT / "topologies" / "aipod.yml"
EVERY_TYPE = """\
checks:
  - {name: up, type: bgp_session, node: leaf1, peer: spine1}
  - {name: down, type: bgp_session, node: leaf1, port: swp1, state: idle, afi: evpn}
  - {name: pfx, type: bgp_prefixes, node: leaf1, peer: spine1, min: 1}
  - {name: pfx max, type: bgp_prefixes, node: leaf1, peer: spine1, count: received, max: 9}
  - {name: table, type: bgp_prefixes, node: dpu1, vrf: red, min: 1}
  - {name: route, type: route, node: dpu1, tenant: red, prefix: 10.1.1.12/32, vteps: [dpu2], protocol: bgp}
  - {name: no route, type: route, node: dpu1, vrf: red, prefix: 10.1.2.12/32, expect: absent}
  - {name: ping, type: ping, from: host1a, to: 10.1.1.12}
  - {name: no ping, type: ping, from: dpu1, tenant: red, to: 10.1.2.12, expect: failure, count: 2}
  - {name: roce, type: roce, from: host1a, to: host2a, dscp: 24}
  - {name: no roce, type: roce, from: host1a, to: 10.9.0.1, expect: blocked}
  - {name: json, type: frr_json, node: leaf1, command: show bgp summary json, match: {ipv4Unicast: {}}}
  - {name: exec, type: exec, node: host1a, command: [ip, link], regex: eth1}
  - {name: no exec, type: exec, node: dpu1, command: "dmesg", not_regex: "oom", timeout: 5, window: 2.5}
"""


def test_every_check_type_loads_and_knows_whether_it_is_negative(tmp_path):
    f = tmp_path / "checks.yml"
    f.write_text(EVERY_TYPE)
    cs = load_checks(f, load(AIPOD))
    negatives = {c.name for c in cs.checks if c.negative}
    assert negatives == {"down", "pfx max", "no route", "no ping", "no roce", "no exec"}
    assert [c.type for c in cs.checks][:3] == ["bgp_session", "bgp_session", "bgp_prefixes"]
    assert cs.lines["up"] == 2 and cs.lines["no exec"] == 15
    no_exec = next(c for c in cs.checks if c.name == "no exec")
    assert (no_exec.timeout, no_exec.window) == (5.0, 2.5)


def test_a_bad_checks_file_names_every_problem_with_its_line(golden, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(TopologyError) as e:
        load_checks("tests/golden/checks/bad.yml", load(AIPOD))
    golden(ROOT / "tests" / "golden" / "checks" / "bad.expected", str(e.value) + "\n")
    assert len(e.value.problems) == 14 and all(p.line for p in e.value.problems)


def test_structure_alone_without_a_lab(tmp_path):
    """Without a fabric (collection time in pytest) only the structure is judged."""
    f = tmp_path / "c.yml"
    f.write_text("checks:\n  - {name: a, type: route, node: nosuch, prefix: 10.0.0.0/8}\n")
    assert [c.name for c in load_checks(f).checks] == ["a"]
    with pytest.raises(TopologyError, match=r"c.yml:2: checks\[0\].node: no node named 'nosuch'"):
        load_checks(f, load(AIPOD))


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "the file holds nothing"),
        ("- a\n", "the file holds a list"),
        ("check: []\n", "check: unknown field; a checks file has one key, checks"),
        ("checks: 3\n", "checks: must be a list of checks"),
        ("checks:\n  - {name: a, type: nosuch}\n", "checks[0].type: unknown check type 'nosuch'; types: bgp_session,"),
        ("checks:\n  - {name: a}\n", "checks[0].type: required: the check's type, one of bgp_session"),
        (
            "checks:\n  - {name: a, type: ping, from: host1a, to: 10.0.0.1, count: 1.5}\n",
            "count: a count is a whole number",
        ),
        (
            "checks:\n  - {name: a, type: ping, from: host1a, to: 10.0.0.1, timeout: true}\n",
            "timeout: a timeout is a number",
        ),
        (
            "checks:\n  - {name: a, type: route, node: dpu1, prefix: 10.0.0.0/8, vrf: red, tenant: red}\n",
            "give vrf or tenant, not both",
        ),
        (
            "checks:\n  - {name: a, type: route, node: dpu1, prefix: 10.0.0.0/8, expect: absent, vteps: [dpu2]}\n",
            "an absent route has no next hops",
        ),
        (
            "checks:\n  - {name: a, type: bgp_prefixes, node: leaf1, peer: spine1, min: 5, max: 2}\n",
            "max (2) is below min (5)",
        ),
        (
            "checks:\n  - {name: a, type: bgp_session, node: leaf1, peer: 10.0.0.9, afi: ipv5}\n",
            "afi: must be 'ipv4', 'ipv6' or 'evpn'; got 'ipv5'",
        ),
        (
            "checks:\n  - {name: a, type: exec, node: leaf1, command: ls, regex: '['}\n",
            "regex: not a regular expression",
        ),
        (
            "checks:\n  - {name: a, type: bgp_prefixes, node: dpu1, vrf: red, afi: evpn, min: 1}\n",
            "afi: EVPN sessions live in the default VRF",
        ),
        (
            "checks:\n  - {name: a, type: ping, from: spine1, to: 10.0.0.1, vrf: red}\n",
            "spine1 has no VRF 'red'; its VRFs: default",
        ),
        (
            "checks:\n  - {name: a, type: roce, form: host1a, to: host2a}\n",
            "form: unknown field; allowed: name, type, description, timeout, window, from, to",
        ),
    ],
)
def test_each_problem_says_what_is_allowed(tmp_path, text, message):
    f = tmp_path / "c.yml"
    f.write_text(text)
    with pytest.raises(TopologyError) as e:
        load_checks(f, load(AIPOD))
    assert message in str(e.value), str(e.value)


def test_a_topology_file_gives_its_checks_section(tmp_path):
    topo = tmp_path / "lab.yml"
    topo.write_text(AIPOD.read_text() + EVERY_TYPE)
    fabric = load(topo)
    assert len(fabric.checks) == 14 and fabric.checks[7].from_ == "host1a"
    again = Fabric.model_validate(json.loads(fabric.model_dump_json()))  # as recorded in the lab directory
    assert again.checks == fabric.checks
    assert "checks" not in json.loads(load(AIPOD).model_dump_json()), "a fabric without checks records none"
    assert [c.name for c in load_checks(topo, fabric).checks] == [c.name for c in fabric.checks]


def test_names_are_unique_across_files(tmp_path):
    a, b = tmp_path / "a.yml", tmp_path / "b.yml"
    a.write_text("checks:\n  - {name: x, type: exec, node: leaf1, command: 'true'}\n")
    b.write_text(
        "checks:\n  - {name: y, type: exec, node: leaf1, command: 'true'}\n"
        "  - {name: x, type: exec, node: leaf1, command: 'false'}\n"
    )
    fabric = load(AIPOD)
    assert [c.name for c in merge([load_checks(a, fabric), CheckSet("none")])] == ["x"]
    with pytest.raises(TopologyError) as e:
        merge([load_checks(a, fabric), load_checks(b, fabric)])
    assert f"b.yml:3: checks: the check name 'x' is used in {a}:2 too" in str(e.value)


def test_the_pytest_plugin_makes_one_test_per_check(tmp_path):
    from twin.base.errors import TwinError
    from twin.pytest_plugin import twin_checks

    f = tmp_path / "c.yml"
    f.write_text(EVERY_TYPE)
    (mark,) = twin_checks(f).pytestmark
    assert mark.name == "parametrize" and mark.kwargs["ids"][:3] == ["up", "down", "pfx"] and len(mark.args[1]) == 14
    f.write_text("checks:\n  - {name: a, type: nosuch}\n")
    with pytest.raises(TopologyError, match=r"c.yml:2: checks\[0\].type: unknown check type"):
        twin_checks(f)
    f.write_text("checks: []\n")
    with pytest.raises(TwinError, match="no checks in it"):
        twin_checks(f)


def test_the_topology_readers_limits_speak_of_a_checks_file(tmp_path):
    with pytest.raises(TopologyError, match="cannot read the checks file: No such file"):
        load_checks(tmp_path / "missing.yml")
    f = tmp_path / "two.yml"
    f.write_text("checks: []\n---\nchecks: []\n")
    with pytest.raises(TopologyError, match="two.yml:2: a second YAML document starts here; a checks file holds one"):
        load_checks(f)


def test_verify_asked_of_a_node_that_is_no_host_names_the_hosts():
    """A group of `twin verify` that reads a host's tenant (zero trust's targets, ARP, MTU, ...) asked of
    a node that is no host endpoint: twin's error naming the lab's hosts (it was a TypeError on None)."""
    from twin.base.errors import TwinError
    from twin.verify import zerotrust

    with pytest.raises(TwinError) as e:
        zerotrust.targets(load(ROOT / "topologies/aipod.yml"), "spine1")
    assert (
        str(e.value) == "'spine1' is not a host endpoint of lab aipod; hosts: host1a, host1b, host1c, host2a, "
        "host2b, host2c"
    )
