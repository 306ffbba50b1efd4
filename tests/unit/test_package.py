"""twin as a package (issue 34): every file it reads at run time is package data, found through
importlib.resources; the samples by name; `twin --version`, `python -m twin`. The wheel itself is
built, installed and run in tests/e2e/test_default_lab.py."""

from __future__ import annotations

import fnmatch
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import tomllib
from click.testing import CliRunner

from twin import __version__
from twin.cli import main
from twin.lifecycle import doctor, hostlimits
from twin.runtime import images
from twin.topology import samples

ROOT = Path(__file__).resolve().parents[2]
TWIN = ROOT / "twin"


def test_every_file_twin_reads_that_is_no_module_is_package_data():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["twin"]
    data = [
        p.relative_to(TWIN).as_posix()
        for p in TWIN.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    ]
    data += [p.relative_to(TWIN).as_posix() for p in (TWIN / "images").rglob("*.py")]  # run in the image
    assert "images/node/Dockerfile" in data and "topologies/aipod.yml" in data
    left = [
        d for d in data if not any(fnmatch.fnmatch(d, g) or fnmatch.fnmatch(d, g.replace("**/", "")) for g in globs)
    ]
    assert left == [], f"files a wheel would lack: {left}"


def test_the_data_is_found_through_the_package():
    assert images.RECIPES == TWIN / "images"
    assert doctor.DEFAULT_TOPOLOGY == TWIN / "topologies" / "aipod.yml" == samples.path()
    assert hostlimits.SETUP == TWIN / "lifecycle" / "host-setup.sh" and os.access(hostlimits.SETUP, os.X_OK)
    assert samples.names() == ["aipod", "dpu-services", "fabric-4x8", "leaf-vtep", "pod8"]


def test_a_sample_by_name_unless_a_file_of_that_name_is_here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert samples.resolve("aipod") == TWIN / "topologies" / "aipod.yml"
    assert samples.resolve("pod8") == TWIN / "topologies" / "pod8.yml"
    for other in ("nosuch", "./aipod", "aipod.yml", "x/aipod"):
        assert samples.resolve(other) == other, "a path (or an unknown name) stays what the user wrote"
    (tmp_path / "aipod").write_text("name: mine\n")
    assert samples.resolve("aipod") == "aipod", "the user's file wins"


def test_the_build_context_is_the_recipe_as_hashed_without_byte_code(tmp_path, monkeypatch):
    (tmp_path / "base").mkdir()
    node = tmp_path / "node"
    (node / "__pycache__").mkdir(parents=True)
    (tmp_path / "base" / "base.yml").write_text("variant: minbase\n")
    (node / "Dockerfile").write_text("FROM x\n")
    (node / "run").write_text("#!/bin/sh\n")
    (node / "run").chmod(0o755)
    monkeypatch.setattr(images, "RECIPES", tmp_path)
    tag = images.node_tag("trixie")
    (node / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")  # what pip's byte-compiling leaves
    assert images.node_tag("trixie") == tag, "an installer's byte code changes no tag"
    with tarfile.open(fileobj=io.BytesIO(images._context("node").read())) as tar:
        assert {m.name: m.mode for m in tar.getmembers()} == {"Dockerfile": 0o644, "run": 0o755}


def test_version_on_the_command_line_and_as_a_module():
    said = f"twin {__version__} ({TWIN})\n"
    assert __version__ == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert CliRunner().invoke(main, ["--version"], prog_name="twin").output == said
    p = subprocess.run([sys.executable, "-m", "twin", "-V"], capture_output=True, text=True, cwd=ROOT)
    assert (p.returncode, p.stdout) == (0, said)
    p = subprocess.run(
        [sys.executable, "-m", "twin", "validate", "nosuch-lab"], capture_output=True, text=True, cwd=ROOT
    )
    assert p.returncode == 1 and "nosuch-lab: cannot read the topology file" in p.stderr
