"""Shell completion (issue 27): lab names from $TWIN_HOME, node names of the lab typed before
them, ports after NODE:, through click's own completion protocol."""

from __future__ import annotations

from pathlib import Path

from click.shell_completion import ShellComplete

from twin.cli import completion, main
from twin.lifecycle import state
from twin.topology import load

ROOT = Path(__file__).resolve().parents[2]


def lab_here(tmp_path, monkeypatch, name="aipod"):
    monkeypatch.setenv("TWIN_HOME", str(tmp_path))
    monkeypatch.setattr(completion, "docker_labs", lambda: [])
    fabric = load(ROOT / "topologies/aipod.yml", name=name)
    state.save(state.labdir(name), state.LabState(name=name, topology="aipod.yml", image="x"), fabric)


def complete(args: list[str], incomplete: str) -> list[str]:
    return [c.value for c in ShellComplete(main, {}, "twin", "_TWIN_COMPLETE").get_completions(args, incomplete)]


def test_labs_and_nodes_complete(tmp_path, monkeypatch):
    lab_here(tmp_path, monkeypatch)
    lab_here(tmp_path, monkeypatch, "aipod2")
    assert completion.lab_names("aip") == ["aipod", "aipod2"]
    assert complete(["exec"], "ai") == ["aipod", "aipod2"]
    assert complete(["exec", "aipod"], "lea") == ["leaf1", "leaf2"]
    assert complete(["exec", "aipod"], "LEA") == ["leaf1", "leaf2"], "typed as the user writes it"
    assert complete(["traffic", "aipod", "host1a"], "host2") == ["host2a", "host2b", "host2c"]
    assert complete(["fault", "link-down", "aipod"], "leaf1:sw") == [
        "leaf1:swp1",
        "leaf1:swp2",
        "leaf1:swp3",
        "leaf1:swp4",
    ]
    assert complete(["fault", "node-stop", "aipod"], "spi") == ["spine1", "spine2"]
    assert complete(["status"], "aipod2") == ["aipod2"]


def test_labs_with_containers_here_complete_too(tmp_path, monkeypatch):
    lab_here(tmp_path, monkeypatch)
    monkeypatch.setattr(completion, "docker_labs", lambda: ["aipod", "aired"])
    assert complete(["status"], "ai") == ["aipod", "aired"]


def test_commands_complete_and_an_unknown_lab_completes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_HOME", str(tmp_path))
    monkeypatch.setattr(completion, "docker_labs", lambda: [])
    assert "doctor" in complete([], "do") and "down" in complete([], "do")
    assert complete(["exec", "nolab"], "le") == []
    assert complete(["exec"], "") == []
