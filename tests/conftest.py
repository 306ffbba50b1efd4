import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
PARALLEL_DIST = ("load", "loadscope", "loadgroup")  # what `pytest -n N` may ask for: tests/parallel.py


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden", action="store_true", help="rewrite golden files from the current output instead of comparing"
    )


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") in PARALLEL_DIST:
        from tests.parallel import scheduler

        return scheduler(config, log)
    return None


def pytest_collection_modifyitems(config, items):
    if hasattr(config, "workerinput"):
        from tests.parallel import e2e_first

        e2e_first(items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    from tests.parallel import take_host_turn

    take_host_turn(node.config, ids)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """In a worker, each test (its fixtures' setup and teardown with it) takes its turn in the run's
    room: an `alone` test with no other beside it (tests/parallel.py `Room`)."""
    if not hasattr(item.config, "workerinput"):
        return (yield)
    from tests.parallel import ALONE, ROOM, Room

    if ROOM not in item.config.stash:
        item.config.stash[ROOM] = Room(item.config.workerinput["testrunuid"])
    room, alone = item.config.stash[ROOM], item.get_closest_marker(ALONE) is not None
    room.enter(alone)
    try:
        return (yield)
    finally:
        room.leave(keep=alone and nextitem is not None and nextitem.get_closest_marker(ALONE) is not None)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    from tests.parallel import RUN

    node.config.stash[RUN] = node.workerinput["testrunuid"]


def pytest_unconfigure(config):
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        from tests.parallel import ended

        ended(config)


@pytest.fixture
def golden(request):
    """compare(path, text): assert text equals the golden file (or rewrite it with --update-golden)."""
    update = request.config.getoption("--update-golden") or os.environ.get("TWIN_UPDATE_GOLDEN") == "1"

    def compare(path: Path, text: str) -> None:
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            return
        assert path.exists(), f"golden file {path} is missing; run pytest --update-golden"
        assert text == path.read_text(), f"output differs from golden file {path.relative_to(ROOT)}"

    return compare
