"""The documentation site (issue 27): its generated pages are what the CLI and the README make
now, it builds strictly (no broken link or reference), and the README is a front page."""
from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_generated_pages_do_not_drift():
    pages = runpy.run_path(str(ROOT / "scripts" / "docs.py"))["pages"]()
    for path, text in pages.items():
        assert path.read_text() == text, f"{path.relative_to(ROOT)} is stale: `make docs` writes it"


def test_the_command_reference_has_every_command():
    from twin.cli import main

    page = (ROOT / "docs/reference/commands.md").read_text()
    for name in main.commands:
        assert f"## `twin {name}`" in page
    assert "## `twin fault link-loss`" in page and "Usage: twin doctor [OPTIONS]" in page


def test_the_site_builds_strictly(tmp_path):
    mkdocs = Path(sys.executable).with_name("mkdocs")
    res = subprocess.run([str(mkdocs), "build", "--strict", "-d", str(tmp_path / "site")], cwd=ROOT,
                         capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (tmp_path / "site/reference/commands/index.html").exists()
    assert (tmp_path / "site/doctor/index.html").exists()


def test_the_readme_is_a_front_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 250
    for page in ("quickstart", "topology", "tenants", "verify", "checks", "ci", "day2", "faults", "observability",
                 "byon", "containerlab", "interop", "nvue", "python", "host-settings", "performance", "limitations"):
        assert f"(docs/{page}.md" in readme, page
        assert (ROOT / "docs" / f"{page}.md").exists(), page
    assert "docs/web.png" in readme and "make twin-up" in readme and "make test" in readme
