"""How `make test` runs the suite in parallel (`pytest -n N`, pytest-xdist), used by tests/conftest.py.

- What goes together: a test module is handed out whole, to one worker, which runs its tests in
  their order: its module-scoped fixtures (an e2e module's labs above all) are made once. Modules
  that share a lab (`SHARED_LABS`) are handed out together, as one unit.
- In which order: the e2e modules first (long, mostly waiting on containers and FRR), the longest
  unit of work first (its seconds in the last run measured, `tests/e2e_seconds.json`, written by
  `scripts/e2e_seconds.py` from a run's JUnit report: a long module started last would hold the run's
  end alone; a module not measured yet counts as long), then the unit tests, which fill the end of the
  run; within each, the order pytest collects them in.
- A test marked `alone` (`@pytest.mark.alone`: it measures rates, or wall time where that is the
  point) runs with no other test of the run beside it (`Room`): the other workers finish the test
  they are in and wait. Keep them few and short: each holds the whole run.
- The host's turn (tests/e2e/conftest.py `host_turn`): the run's controller takes it once, when
  a worker has collected an e2e test and before any test is handed out, and sweeps what an earlier
  run left; its workers share that turn and never sweep, so none takes down a sibling's lab.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from contextlib import ExitStack
from pathlib import Path

import pytest

E2E = "tests/e2e/"  # node ids of the end-to-end tests start so (from the rootdir)

# A lab shared across modules (a fixture of tests/e2e/conftest.py) and the modules that use it: they
# run on one worker, one after another. A module that uses the fixture must be listed here.
SHARED_LABS = {
    "aipod": (
        "tests/e2e/test_byon_clone.py",
        "tests/e2e/test_observe.py",
        "tests/e2e/test_prove.py",
        "tests/e2e/test_stream.py",
        "tests/e2e/test_verify.py",
    ),
}
UNIT_OF = {module: lab for lab, modules in SHARED_LABS.items() for module in modules}
HOST_TURN = pytest.StashKey[ExitStack]()
RUN = pytest.StashKey[str]()  # the run's id (xdist's testrunuid), in the controller
ROOM = pytest.StashKey["Room"]()  # a worker's turn among the others (`Room`)


def scheduler(config: pytest.Config, log):
    """xdist's scope scheduling with a module (or the modules sharing a lab) as its unit of work, the
    units in collection order (not xdist's largest-first). (xdist imported here: a run without it,
    serial, needs nothing of this module but its names.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return UNIT_OF.get(module, module)

    config.option.loadscopereorder = False
    return ByModule(config, log)


SECONDS = Path(__file__).parent / "e2e_seconds.json"  # module -> its seconds in a measured run


def e2e_first(items: list[pytest.Item]) -> None:
    """The e2e tests first, their units of work longest first (stable: a module's tests keep their order)."""
    try:
        seconds: dict[str, float] = json.loads(SECONDS.read_text())
    except (OSError, ValueError):
        seconds = {}
    longest = max(seconds.values(), default=0.0)
    unit: dict[str, float] = {}
    for module in {item.nodeid.split("::", 1)[0] for item in items if item.nodeid.startswith(E2E)}:
        key = UNIT_OF.get(module, module)
        unit[key] = unit.get(key, 0.0) + seconds.get(module, longest)

    def order(item: pytest.Item) -> tuple[bool, float]:
        module = item.nodeid.split("::", 1)[0]
        if not module.startswith(E2E):
            return (True, 0.0)
        return (False, -unit[UNIT_OF.get(module, module)])

    items.sort(key=order)


def take_host_turn(config: pytest.Config, ids: list[str]) -> None:
    """In the controller, once: the host's turn held until the run ends (`ended`), and
    what an earlier run left taken down, if the run has e2e tests."""
    if HOST_TURN in config.stash or not any(i.startswith(E2E) for i in ids):
        return
    from tests.e2e.conftest import host_turn, sweep_earlier_runs

    turn = ExitStack()
    config.stash[HOST_TURN] = turn
    turn.enter_context(host_turn())
    old = os.environ.get("TWIN_HOME")
    with tempfile.TemporaryDirectory(prefix="twin-sweep-") as home:
        os.environ["TWIN_HOME"] = home  # as a worker's session has its own
        try:
            sweep_earlier_runs()
        finally:
            if old is None:
                os.environ.pop("TWIN_HOME", None)
            else:
                os.environ["TWIN_HOME"] = old


def ended(config: pytest.Config) -> None:
    """In the controller, at the run's end: the host's turn released, the rooms' files removed."""
    if HOST_TURN in config.stash:
        config.stash[HOST_TURN].close()
    if RUN in config.stash:
        for end in ("gate", "room"):
            Path(tempfile.gettempdir(), f"twin-tests-{config.stash[RUN]}.{end}").unlink(missing_ok=True)


ALONE = "alone"  # the marker of a test that must have the machine to itself


class Room:
    """A worker's turn among the run's workers (`uid`: the run's id): any number of tests at once, but
    a test marked `alone` (one that measures rates or wall time where they are the point) with no
    other test beside it. A readers-writer lock over two files: the gate is taken by every test
    briefly and held by an `alone` test while it waits, so that no other test starts meanwhile;
    each test holds the room shared, an `alone` test exclusively, and keeps it for the next test
    when that one is `alone` too (consecutive `alone` tests wait for the others once)."""

    def __init__(self, uid: str):
        base = Path(tempfile.gettempdir()) / f"twin-tests-{uid}"
        self.gate, self.hall = open(f"{base}.gate", "a"), open(f"{base}.room", "a")
        self.alone = False  # the room held alone, kept from the test before

    def enter(self, alone: bool) -> None:
        if self.alone:
            return
        fcntl.flock(self.gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.hall, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            if not alone:
                fcntl.flock(self.gate, fcntl.LOCK_UN)
        self.alone = alone

    def leave(self, keep: bool) -> None:
        if self.alone and keep:
            return
        fcntl.flock(self.hall, fcntl.LOCK_UN)
        if self.alone:
            fcntl.flock(self.gate, fcntl.LOCK_UN)
        self.alone = False
