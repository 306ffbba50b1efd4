"""The CLI loads a command's module only when that command runs (issue 46: bring-up at half of munet's
time; `import twin.cli` cost 1.4 CPU-s on every command): `twin --help` lists every command with its
short help from `twin.cli.COMMANDS` and imports none of them, nor Docker's SDK, pyroute2 or pydantic."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from twin.cli import COMMANDS, main
from twin.cli.common import short_help

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("twin.cli.", "twin.lab", "twin.runtime", "twin.nvue", "docker", "pyroute2", "pydantic", "jinja2", "paramiko")


def all_loaded() -> dict[str, click.Command]:
    for module, _ in COMMANDS.values():
        importlib.import_module(module)
    return dict(main.commands)


def test_the_table_names_every_command_its_module_and_its_short_help():
    commands = all_loaded()
    assert sorted(commands) == sorted(COMMANDS), "twin.cli.COMMANDS lists every command main has, and no other"
    for name, cmd in commands.items():
        module, text = COMMANDS[name]
        assert cmd.callback is not None and cmd.callback.__module__ == module, f"{name}: registered by {module}"
        assert text == cmd.get_short_help_str(10**6), f"{name}: its short help in twin.cli.COMMANDS is its help's"
        for limit in (20, 45, 60, 80, 120):
            assert short_help(text, limit) == cmd.get_short_help_str(limit), f"{name}: cut at {limit} as click cuts it"


def loads(args: list[str]) -> tuple[str, list[str]]:
    """What `twin ARGS` prints in a fresh interpreter, and which of the `HEAVY` modules it imported."""
    probe = (
        "import sys\n"
        "from twin.cli import main\n"
        f"try:\n    main({args!r}, prog_name='twin')\nexcept SystemExit:\n    pass\n"
        f"print('LOADED', ','.join(sorted(m for m in sys.modules if m.startswith({HEAVY!r}))))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"},
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    out, _, loaded = res.stdout.rpartition("LOADED ")
    return out, loaded.strip().split(",")


def test_help_lists_every_command_and_loads_none():
    out, loaded = loads(["--help"])
    assert loaded == ["twin.cli.common"], f"`twin --help` imported {loaded}"
    for name in COMMANDS:
        assert f"\n  {name} " in out, f"`twin --help` lists {name}"


def test_help_reads_as_with_every_command_loaded():
    lazy = CliRunner().invoke(main, ["--help"], terminal_width=100).output
    commands = all_loaded()
    ctx = click.Context(main, info_name="twin", terminal_width=100)
    formatter = ctx.make_formatter()
    limit = formatter.width - 6 - max(len(n) for n in commands)
    for name, cmd in commands.items():
        line = f"  {name}{' ' * (max(len(n) for n in commands) - len(name) + 2)}{cmd.get_short_help_str(limit)}"
        assert line in lazy.splitlines(), f"{name}'s line as click writes it for a loaded command"


@pytest.mark.parametrize("name", ["validate", "fault", "status"])
def test_a_command_loads_its_own_module_only(name):
    out, loaded = loads([name, "--help"])
    assert f"Usage: twin {name}" in out
    module = COMMANDS[name][0]
    assert module in loaded
    assert not {"twin.cli.observe", "twin.cli.server", "twin.cli.traffic"} & set(loaded) - {module}


def test_a_command_runs_after_it_is_loaded():
    res = CliRunner().invoke(main, ["validate", "--help"], prog_name="twin")
    assert res.exit_code == 0 and "Usage: twin validate" in res.output, res.output
