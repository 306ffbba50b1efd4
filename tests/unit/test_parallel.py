"""make test's order: the e2e units of work longest first by their measured seconds, then the unit tests."""

import json
from types import SimpleNamespace

from scripts.e2e_seconds import module_of
from tests import parallel


def items(*ids: str) -> list:
    return [SimpleNamespace(nodeid=i) for i in ids]


def test_the_longest_e2e_unit_first_shared_labs_summed_unmeasured_as_long(monkeypatch, tmp_path):
    seconds = tmp_path / "s.json"
    seconds.write_text(
        json.dumps({"tests/e2e/test_a.py": 10, "tests/e2e/test_b.py": 50, "tests/e2e/test_prove.py": 30})
    )
    monkeypatch.setattr(parallel, "SECONDS", seconds)
    got = items(
        "tests/unit/test_u.py::t",
        "tests/e2e/test_a.py::t1",
        "tests/e2e/test_b.py::t",
        "tests/e2e/test_a.py::t2",
        "tests/e2e/test_prove.py::t",
        "tests/e2e/test_verify.py::t",  # with test_prove, the aipod lab's: 30 + 50 (unmeasured: the longest)
        "tests/e2e/test_new.py::t",
    )
    parallel.e2e_first(got)
    assert [i.nodeid for i in got] == [
        "tests/e2e/test_prove.py::t",
        "tests/e2e/test_verify.py::t",
        "tests/e2e/test_b.py::t",
        "tests/e2e/test_new.py::t",
        "tests/e2e/test_a.py::t1",
        "tests/e2e/test_a.py::t2",
        "tests/unit/test_u.py::t",
    ]


def test_without_measurements_the_collection_order_stands(monkeypatch, tmp_path):
    monkeypatch.setattr(parallel, "SECONDS", tmp_path / "absent.json")
    got = items("tests/unit/test_u.py::t", "tests/e2e/test_b.py::t", "tests/e2e/test_a.py::t")
    parallel.e2e_first(got)
    assert [i.nodeid for i in got] == ["tests/e2e/test_b.py::t", "tests/e2e/test_a.py::t", "tests/unit/test_u.py::t"]


def test_a_junit_classname_names_its_module():
    assert module_of("tests.e2e.test_x") == "tests/e2e/test_x.py"
    assert module_of("tests.e2e.test_x.TestY") == "tests/e2e/test_x.py"
