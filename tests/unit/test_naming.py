"""What a lab creates on the host is named so that its cleanup takes exactly its own: the
namespaces that hold a stopped node's links (`naming.held_netns`) of one lab never start with
another lab's prefix, whatever the two names, and `twin doctor` never calls them leftovers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from twin.config import held_netns, probe_netns
from twin.runtime import links, netns
from twin.runtime.hostfacts import stray_netns
from twin.topology.names import LAB_NAME

labs = st.from_regex(LAB_NAME, fullmatch=True)
nodes = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,22}[a-z0-9])?", fullmatch=True)


@given(labs, labs, nodes)
def test_a_labs_holding_namespaces_are_its_own(lab, other, node):
    mine = held_netns(lab)
    assert held_netns(lab, node).startswith(mine)
    assert held_netns(other, node).startswith(mine) == (other == lab)
    assert not probe_netns(other).startswith(mine)


def test_doctor_names_a_namespace_no_lab_holds_and_never_a_running_labs_held_links():
    names = ["twin-a.held.leaf1", "twin-ab.held.leaf1", "twin-b-probe", "other", "twin-a-probe"]
    assert stray_netns(names, {"a"}) == ["twin-a-probe", "twin-ab.held.leaf1", "twin-b-probe"]
    assert stray_netns(names, set()) == ["twin-a-probe", "twin-a.held.leaf1", "twin-ab.held.leaf1", "twin-b-probe"]


def test_a_node_takes_back_only_its_own_held_links(monkeypatch):
    """leaf1 started again while leaf10 is stopped: leaf10's holding namespace is not leaf1's."""
    monkeypatch.setattr(netns.named_netns, "listnetns", lambda: [held_netns("lab", "leaf10")])
    monkeypatch.setattr(netns, "open_ipr", lambda path: pytest.fail(f"{path} opened for leaf1"))
    assert links.unpark("lab", "leaf1", 1) == []
