"""Every command of the CLI, given bad input, answers with one clear line and a non-zero exit:
never a Python traceback, never a path outside twin's own touched."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tests.e2e.conftest import ROOT
from twin.cli import main

pytestmark = pytest.mark.e2e

BAD_LABS = ["", ".", "..", "../..", "/tmp", "a/b", "UPPER", "x" * 40, "lab\n", "-v", "nul\x00x"]


def commands_with_a_lab(lab: str, tmp) -> list[list[str]]:
    return [
        ["down", lab],
        ["status", lab],
        ["status", lab, "--json"],
        ["verify", lab],
        ["traffic", lab, "h1", "h2"],
        ["plan", lab, str(tmp)],
        ["apply", lab, str(tmp)],
        ["rehearse", lab, "fault:link-down:a:b"],
        ["exec", lab, "n", "--", "true"],
        ["inventory", lab],
        ["fault", "link-down", lab, "a:b"],
        ["fault", "node-stop", lab, "n"],
        ["fault", "link-loss", lab, "a:b", "50"],
        ["verify", lab, "--checks", str(tmp / "checks.yml")],
        ["baseline", "record", lab, "-o", str(tmp / "b.json")],
        ["baseline", "compare", lab, str(tmp / "b.json")],
    ]


def invoke(args: list[str]):
    return CliRunner().invoke(main, args, catch_exceptions=True)


def assert_clean(res, args) -> None:
    shown = f"twin {' '.join(map(repr, args))} -> {res.exit_code}:\n{res.output}"
    assert res.exit_code in (1, 2), shown
    assert "Traceback" not in res.output, shown
    assert res.exception is None or isinstance(res.exception, SystemExit), f"{shown}\n{res.exception!r}"


@pytest.mark.parametrize("lab", BAD_LABS)
def test_bad_lab_names_are_one_line_errors_everywhere(lab, tmp_path, twin_home):
    for args in commands_with_a_lab(lab, tmp_path):
        res = invoke(args)
        assert_clean(res, args)
        if args[0] not in ("traffic", "fault", "rehearse") and lab not in ("-v",):
            assert (
                "lab name" in res.output
                and "is not allowed" in res.output
                or "No such option" in res.output
                or "Usage:" in res.output
            ), args


def test_labs_that_do_not_exist_are_named(tmp_path, twin_home):
    for args in commands_with_a_lab("t-nolab", tmp_path):
        res = invoke(args)
        if args[0] == "down":  # idempotent: nothing to remove is not an error
            assert res.exit_code == 0 and "nothing left to remove" in res.output
            continue
        assert_clean(res, args)
        assert "no lab named 't-nolab'" in res.output, (args, res.output)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\xff\xfe\x00n\x00a",
        b"\x00\x01\x02garbage",
        b"- just\n- a list\n",
        b"name: x\nnodes: [1, 2]\n",
        b"a: &a [*a]\n",
    ],
)
def test_bad_topology_files_are_refused_with_the_file_named(content, tmp_path, twin_home):
    f = tmp_path / "bad.yml"
    f.write_bytes(content)
    for args in (["up", str(f)], ["up", str(tmp_path)], ["up", str(tmp_path / "missing.yml")]):
        res = invoke(args)
        assert_clean(res, args)
        assert str(tmp_path) in res.output or "does not exist" in res.output or "is a directory" in res.output, (
            res.output
        )


def test_bad_options_and_fault_arguments(tmp_path, twin_home):
    for args in (
        ["up", str(ROOT / "topologies/aipod.yml"), "--name", "../etc"],
        ["up", str(ROOT / "topologies/aipod.yml"), "--timeout", "soon"],
        ["fault", "link-loss", "t-nolab", "a:b", "500"],
        ["fault", "no-such-fault"],
        ["traffic", "t-nolab", "a", "b", "--dscp", "99"],
        ["image", "build", "--suite", "../x"],
    ):
        res = invoke(args)
        assert_clean(res, args)
