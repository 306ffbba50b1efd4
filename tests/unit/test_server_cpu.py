"""The server's CPU priority (twin.server.cpu): its session's weight raised only where the kernel
weighs sessions as one and the server leads its own; said when it cannot be."""

from __future__ import annotations

import os

import pytest

from twin.server import cpu


@pytest.fixture
def autogroup(tmp_path, monkeypatch):
    """A kernel that groups sessions, its /proc/self/autogroup a file here; nice steps recorded."""
    group = tmp_path / "autogroup"
    group.write_text("/autogroup-7 nice 0\n")
    monkeypatch.setattr(cpu, "AUTOGROUP", group)
    monkeypatch.setattr(cpu, "grouped", lambda: True)
    steps: list[int] = []
    monkeypatch.setattr(os, "nice", lambda n: steps.append(n) or 0)
    return group, steps


def test_a_session_leader_raises_its_sessions_weight(autogroup, monkeypatch):
    group, steps = autogroup
    monkeypatch.setattr(os, "getsid", lambda pid: 4242)
    monkeypatch.setattr(os, "getpid", lambda: 4242)
    assert cpu.ahead(5) == []
    assert steps == [-5] and group.read_text() == "-5"


def test_a_server_in_a_terminals_session_leaves_its_weight_and_says_so(autogroup, monkeypatch):
    group, steps = autogroup
    monkeypatch.setattr(os, "getsid", lambda pid: 1000)
    monkeypatch.setattr(os, "getpid", lambda: 4242)
    said = cpu.ahead(5)
    assert steps == [-5] and group.read_text() == "/autogroup-7 nice 0\n"
    assert len(said) == 1 and "terminal's" in said[0] and "setsid" in said[0]


def test_without_root_both_are_said(tmp_path, monkeypatch):
    def refused(n: int) -> int:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "nice", refused)
    monkeypatch.setattr(cpu, "AUTOGROUP", tmp_path / "gone" / "autogroup")  # a write that fails
    monkeypatch.setattr(cpu, "grouped", lambda: True)
    monkeypatch.setattr(os, "getsid", lambda pid: 4242)
    monkeypatch.setattr(os, "getpid", lambda: 4242)
    said = cpu.ahead(5)
    assert len(said) == 2 and said[0].startswith("its CPU priority (nice -5)")
    assert said[1].startswith("its session's CPU weight (autogroup nice -5): No such file")


def test_where_sessions_are_not_grouped_only_the_nice_value_moves(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu, "AUTOGROUP", tmp_path / "absent")
    steps: list[int] = []
    monkeypatch.setattr(os, "nice", lambda n: steps.append(n) or 0)
    assert not cpu.grouped()
    assert cpu.ahead(5) == [] and steps == [-5]
