"""The pytest plugin, used as a user would: marker + twin_lab/twin_node + assert_frr_json.

The lab is named by the marker, brought up by the plugin's module-scoped
`twin_lab` fixture and removed by it after this module.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.e2e.conftest import leftovers
from twin.pytest_plugin import assert_frr_json

LAB = "t-h1-plugin"
# twin_home (session, from conftest) is set up before the module-scoped twin_lab
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.usefixtures("twin_home"),
    pytest.mark.twin_topology("small.yml", name=LAB, timeout=120),
]


@pytest.fixture(scope="module", autouse=True)
def nothing_left_after_the_module(runtime):
    """Set up before the plugin's twin_lab, so torn down after it: the lab must be gone."""
    yield
    assert leftovers(runtime, LAB) == []


def test_plugin_is_registered(pytestconfig):
    assert pytestconfig.pluginmanager.hasplugin("twin")


def test_twin_lab_is_up_with_the_marked_topology(twin_lab, runtime):
    assert twin_lab.name == LAB
    assert twin_lab.fabric.source.endswith("small.yml")
    assert set(runtime.containers(LAB)) == {"spine1", "leaf1", "leaf2", "dpu1", "host1"}
    assert twin_lab.missing() == []


def test_assert_frr_json_passes_on_the_intended_state(twin_lab, twin_node):
    doc = assert_frr_json(
        twin_node("leaf1"),
        "show bgp summary json",
        {
            "ipv4Unicast": {
                "peers": {
                    "swp1": {"state": "Established", "hostname": "spine1"},
                    "swp2": {"state": "Established", "hostname": "dpu1"},
                }
            }
        },
        timeout=30,
    )
    assert doc["ipv4Unicast"]["as"] == twin_lab.fabric.nodes["leaf1"].asn  # it returns the matched document


def test_assert_frr_json_fails_listing_every_difference(twin_node):
    with pytest.raises(AssertionError) as failed:
        assert_frr_json(
            twin_node("spine1"),
            "show bgp summary json",
            {
                "ipv4Unicast": {
                    "peers": {
                        "swp1": {"state": "Established", "hostname": "leaf9"},  # wrong peer
                        "swp7": {"state": "Established"},  # no such session
                    }
                }
            },
        )
    msg = str(failed.value)
    assert "spine1" in msg and "show bgp summary json" in msg and "2 differences" in msg
    assert ".ipv4Unicast.peers.swp1.hostname: expected 'leaf9', got 'leaf1'" in msg
    assert ".ipv4Unicast.peers.swp7: missing" in msg


def test_assert_frr_json_retries_until_its_deadline(twin_node):
    """A state that never comes: the assertion waits `timeout`, then lists what differs."""
    with pytest.raises(AssertionError, match=r"after 3s \(1 difference\):\n  .*routerId: expected '192.0.2.1'"):
        assert_frr_json(
            twin_node("dpu1"), "show bgp summary json", {"ipv4Unicast": {"routerId": "192.0.2.1"}}, timeout=3
        )


def test_assert_frr_json_reports_a_failing_vtysh(twin_node):
    with pytest.raises(AssertionError, match="vtysh failed"):
        assert_frr_json(twin_node("leaf2"), "show no-such-thing json", {})


def test_a_module_without_topology_gets_a_clear_error(tmp_path):
    """No marker, no ini option: a usage error naming both ways; nothing is created."""
    (tmp_path / "test_x.py").write_text(
        textwrap.dedent("""
        def test_x(twin_lab):
            pass
    """)
    )
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert p.returncode != 0
    assert "names no topology" in p.stdout + p.stderr and "twin_topology" in p.stdout + p.stderr
