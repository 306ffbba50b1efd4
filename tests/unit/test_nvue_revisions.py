"""An NVUE revision's states race-free (issue 43 item 5): every transition is made under the
revision's lock, so two applies of one revision, an edit during an apply, and an apply during a
node fault each end with one winner and NVUE's answer for the other (409: a revision being
applied, or applied, cannot be changed or applied again; a revision meeting a fault ends
apply_fail naming it), and nothing half-applied. The apply's own work (`Engine._run`: the change
pipeline on a running lab) is held on an event here, so the race is the one that matters: the
states, over the REST API and the engine alike, with the handlers in a thread pool."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from urllib.parse import quote

import pytest
import requests

from tests.unit.test_nvue_api import served  # noqa: F401  (the app over the samples' lab directory)
from tests.unit.test_nvue_change import running_lab
from twin.base import wait
from twin.base.errors import LabStateError
from twin.lifecycle import locks
from twin.nvue import client as client_module
from twin.nvue.api import DONE, State
from twin.nvue.nvued.engine import Engine
from twin.nvue.nvued.revision import Conflict

ADDRESS = {"ip": {"address": {"10.1.10.9/24": {}}}}


class HeldApply:
    """`Engine._run` held until released: what each call saw of its revision's tree, and how many there were."""

    def __init__(self) -> None:
        self.release, self.started, self.trees, self.calls = threading.Event(), threading.Event(), [], 0

    def __call__(self, rev) -> SimpleNamespace:  # in place of the method: called as engine._run(rev)
        self.calls += 1
        self.trees.append(rev.tree)
        self.started.set()
        assert self.release.wait(20), "the test never released the apply"
        return SimpleNamespace(missing=[], timings={"applied": 0.1})


@pytest.fixture
def held(monkeypatch, tmp_path):
    monkeypatch.setenv("TWIN_HOME", str(tmp_path / "home"))  # the lab's lock files: this test's own
    h = HeldApply()
    monkeypatch.setattr(Engine, "_run", h)
    yield h
    h.release.set()


def applies_at_once(at: str, http: requests.Session, n: int = 2) -> list[requests.Response]:
    """`n` PATCHes applying revision `at`, sent at once from sessions of their own (as `n` automations
    would), with `http`'s credentials; the answers, by status."""
    go = threading.Barrier(n)
    sessions = [requests.Session() for _ in range(n)]
    for s in sessions:
        s.auth, s.verify, s.trust_env = http.auth, http.verify, False

    def apply(s: requests.Session) -> requests.Response:
        go.wait()
        return s.patch(at, json={"state": "apply", "auto-prompt": {"ays": "ays_yes"}})

    with ThreadPoolExecutor(n) as pool:
        return sorted(pool.map(apply, sessions), key=lambda r: r.status_code)


def done(engine: Engine, rev) -> None:
    wait.until(
        lambda: [] if rev.state in DONE else [f"revision {rev.id} is {rev.state}"],
        10,
        "the revision done",
        first=0.01,
        cap=0.05,
    )


def test_two_applies_of_one_revision_one_wins_the_others_are_told_it_is_being_applied(held, tmp_path):
    engine = Engine("nvsamples", running_lab(tmp_path).dir)
    rev = engine.create("leaf01")
    engine.edit(
        rev, lambda t: {**t, "interface": {**t["interface"], "vlan10": {**t["interface"]["vlan10"], **ADDRESS}}}
    )
    go = threading.Barrier(8)

    def apply() -> str:
        go.wait()
        try:
            engine.apply(rev, yes=True)
            return "applying"
        except Conflict as e:
            return str(e)

    with ThreadPoolExecutor(8) as pool:
        said = list(pool.map(lambda _: apply(), range(8)))
    assert said.count("applying") == 1, said
    assert all("is being applied: it cannot be changed or applied again" in s for s in said if s != "applying")
    assert held.started.wait(5) and rev.state is State.APPLY
    held.release.set()
    done(engine, rev)
    assert (held.calls, rev.state, rev.issues) == (1, State.APPLIED, []), "applied once"
    with pytest.raises(Conflict, match="is applied: a revision that was applied cannot be modified further"):
        engine.apply(rev, yes=True)


def test_an_edit_during_an_apply_is_refused_and_the_apply_applies_the_tree_it_began_with(held, tmp_path):
    engine = Engine("nvsamples", running_lab(tmp_path).dir)
    rev = engine.create("leaf01")
    engine.edit(rev, lambda t: {**t, "system": {**t["system"], "hostname": "renamed"}})
    began = rev.tree
    engine.apply(rev, yes=True)
    assert held.started.wait(5)
    for change in (lambda t: {**t, "system": {**t["system"], "hostname": "again"}}, lambda t: {}):
        with pytest.raises(Conflict, match="is being applied"):
            engine.edit(rev, change)
    with pytest.raises(Conflict, match="is being applied: it is dropped once it is done"):
        engine.drop(rev)
    held.release.set()
    done(engine, rev)
    assert rev.state is State.APPLIED and held.trees == [began] and rev.tree == began
    assert rev.tree["system"]["hostname"] == "renamed"


def test_over_the_rest_api_two_applies_race_one_200_one_409_and_an_edit_meets_409(held, served):  # noqa: F811
    base, http, _, _ = served
    rid = next(iter(http.post(base["leaf01"] + "/revision").json()))
    at = f"{base['leaf01']}/revision/{quote(rid, safe='')}"
    assert http.patch(base["leaf01"] + "/interface/vlan10", params={"rev": rid}, json=ADDRESS).status_code == 200
    answers = applies_at_once(at, http)
    assert [r.status_code for r in answers] == [200, 409], [r.text for r in answers]
    assert answers[0].json()["state"] == "apply"
    assert answers[1].json()["status"] == 409 and "is being applied" in answers[1].json()["detail"]
    r = http.patch(base["leaf01"] + "/interface/vlan10", params={"rev": rid}, json={"link": {"state": "down"}})
    assert r.status_code == 409 and "is being applied" in r.json()["detail"], r.text
    assert http.delete(at).status_code == 409
    held.release.set()
    wait.until(lambda: [] if http.get(at).json()["state"] == "applied" else ["still applying"], 10, "applied")
    assert held.calls == 1 and "10.1.10.9/24" in held.trees[0]["interface"]["vlan10"]["ip"]["address"]
    assert "link" not in held.trees[0]["interface"]["vlan10"], "the edit that met the apply is not in what it applied"


def test_an_apply_during_a_node_fault_ends_apply_fail_naming_it_and_touches_nothing(monkeypatch, tmp_path):
    """The fault holds the lab (`twin fault` changes it as a whole); the revision's apply, which holds its
    node, is refused at once: apply_fail, naming the fault; the apply's own work never began."""
    monkeypatch.setenv("TWIN_HOME", str(tmp_path / "home"))
    ran = []
    monkeypatch.setattr(Engine, "_run", lambda engine, rev: ran.append(rev.id))
    engine = Engine("nvsamples", running_lab(tmp_path).dir)
    rev = engine.create("leaf01")
    startup = (engine.d / "leaf01" / "startup.yaml").read_text()
    with locks.lock("nvsamples", "twin fault node-stop nvsamples spine01"):
        engine.apply(rev, yes=True)
        done(engine, rev)
    assert rev.state is State.APPLY_FAIL and ran == []
    assert rev.issues == [
        f"lab 'nvsamples' is busy: twin fault node-stop nvsamples spine01 (pid {os.getpid()}, "
        "another thread); wait for it, or stop it first"
    ]
    assert (engine.d / "leaf01" / "startup.yaml").read_text() == startup
    with pytest.raises(Conflict, match="is apply_fail: a revision that was applied cannot be modified further"):
        engine.edit(rev, lambda t: t)


def test_a_fault_during_an_apply_is_refused_naming_the_revision(held, tmp_path):
    engine = Engine("nvsamples", running_lab(tmp_path).dir)
    rev = engine.create("leaf01")
    engine.apply(rev, yes=True)
    assert held.started.wait(5)
    with pytest.raises(LabStateError, match=f"busy: twin nvued: leaf01 revision {rev.id}"):
        with locks.lock("nvsamples", "twin fault node-stop nvsamples spine01"):
            pass
    held.release.set()
    done(engine, rev)
    assert rev.state is State.APPLIED


def test_the_nodes_nv_ends_its_wait_on_the_states_the_service_ends_a_revision_in():
    """`nv` runs in the node on its python3 alone (no twin): its own copy of the done states holds to these."""
    assert set(client_module.DONE) == {s.value for s in DONE}
