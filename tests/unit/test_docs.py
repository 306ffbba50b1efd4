"""The documentation site (issue 27): it builds strictly (no broken link or reference), with the
command reference and the front page generated from the CLI and README.md as it builds, and the
README is a front page."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_reference_has_every_command():
    from twin.cli import main

    page = runpy.run_path(str(ROOT / "scripts" / "docs.py"))["pages"]()["reference/commands.md"]
    for name in main.list_commands(click.Context(main)):
        assert f"## `twin {name}`" in page
    assert "## `twin fault link-loss`" in page and "Usage: twin doctor [OPTIONS]" in page


def test_the_site_builds_strictly(tmp_path):
    mkdocs = Path(sys.executable).with_name("mkdocs")
    res = subprocess.run(
        [str(mkdocs), "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    reference = (tmp_path / "site/reference/commands/index.html").read_text()
    assert "twin doctor" in reference and "Usage: twin fault link-loss" in reference, "generated as it builds"
    assert "A digital twin of an AI-cloud network" in (tmp_path / "site/index.html").read_text(), "README.md"
    assert (tmp_path / "site/doctor/index.html").exists()


def test_the_readme_is_a_front_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 250
    for page in (
        "quickstart",
        "topology",
        "tenants",
        "verify",
        "checks",
        "ci",
        "day2",
        "faults",
        "observability",
        "byon",
        "containerlab",
        "interop",
        "nvue",
        "python",
        "host-settings",
        "performance",
        "limitations",
    ):
        assert f"(docs/{page}.md" in readme, page
        assert (ROOT / "docs" / f"{page}.md").exists(), page
    assert "docs/web.png" in readme and "make twin-up" in readme and "make test" in readme
