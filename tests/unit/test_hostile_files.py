"""Hostile files at every front door, golden: each case under tests/golden/hostile/<door>/ is read
the way twin reads that door and must fail with every problem named (file, line or line:column,
what is allowed), the same words every time, never a traceback. Links that lead out of the
directory a user gave (a configs directory, a clone's, a containerlab file's binds) are refused
and named, never followed. The topology's own cases are tests/golden/invalid/ (test_validation).

Cases that cannot live in git (a FIFO, a file above the size limit) are made here in a temporary
directory, as are the CLI checks: `twin validate` of each hostile file exits 1 with one `error:`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from twin import topology
from twin.base.errors import TopologyError, TwinError
from twin.cli import main
from twin.config import userconf
from twin.interop.clone import clone
from twin.lab import Lab
from twin.topology import files
from twin.topology.allow import load_allow
from twin.topology.checks import load_checks
from twin.verify.baseline_file import load_baseline

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = Path("tests/golden/hostile")  # relative: messages name files as a user would
AIPOD = topology.load(ROOT / "topologies/aipod.yml")
AIR_ROLES = {"s1": "spine", "l1": "leaf", "h1": "host", "a": "host"}
DOORS = {  # door -> (its cases: files with one of these suffixes, or "dir" for directories; how twin reads one)
    "containerlab": ((".clab.yml",), lambda p: Lab.load(p)),
    "air-json": ((".json",), lambda p: Lab.load(p, roles=AIR_ROLES)),
    "air-dot": ((".dot",), lambda p: Lab.load(p, roles=AIR_ROLES)),
    "clone": ("dir", lambda p: clone(p, roles={"r1": "spine", "r2": "leaf"})),
    "checks": ((".yml",), lambda p: load_checks(p, AIPOD)),
    "allow": ((".yml",), load_allow),
    "baseline": ((".json",), load_baseline),
    "configs": ("dir", lambda p: userconf.load(p, AIPOD)),
}


def cases() -> list[tuple[str, Path]]:
    out = []
    for door, (kind, _) in DOORS.items():
        for p in sorted((ROOT / HOSTILE / door).iterdir()):
            if (p.is_dir() and kind == "dir" and not p.is_symlink()) or (kind != "dir" and p.name.endswith(kind)):
                out.append((door, HOSTILE / door / p.name))
    return out


CASES = cases()


@pytest.mark.parametrize("door, case", CASES, ids=[f"{d}/{c.name}" for d, c in CASES])
def test_a_hostile_file_fails_with_every_problem_named(door, case, golden, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(TwinError) as e:
        DOORS[door][1](case)
    golden(ROOT / f"{case}.expected", str(e.value) + "\n")


def test_every_door_has_hostile_cases():
    assert {d for d, _ in CASES} == set(DOORS)


def test_links_out_of_a_directory_are_named_and_never_followed(monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(TopologyError) as e:
        userconf.load(HOSTILE / "configs/links", AIPOD)
    text = str(e.value)
    assert (
        "spine1.conf: spine1.conf is a symbolic link (to /etc/hostname), outside the directory: not followed" in text
        and "leaf2 is a symbolic link (to /etc)" in text
    )
    assert "dpu1" not in text, "dpu1/frr.conf links to leaf1/frr.conf, inside the directory: read"


def test_a_link_inside_the_directory_is_followed(tmp_path):
    (tmp_path / "leaf1").mkdir()
    (tmp_path / "leaf1" / "frr.conf").write_text("hostname leaf1\n")
    os.symlink("leaf1/frr.conf", tmp_path / "spine1.conf")
    assert userconf.load(tmp_path, AIPOD).files["spine1"]["frr.conf"] == "hostname leaf1\n"


@pytest.mark.parametrize("fmt", files.FORMATS, ids=lambda f: f.what)
def test_a_file_above_its_formats_limit_is_refused_before_parsing(tmp_path, fmt):
    path = tmp_path / "big"
    with open(path, "wb") as f:
        f.truncate(fmt.max_bytes + 1)  # sparse: no disk, and never read past the limit
    with pytest.raises(TopologyError) as e:
        files.read(path, fmt)
    (p,) = e.value.problems
    assert f"larger than {fmt.limit} ({fmt.max_bytes} bytes), the limit for" in p.message and fmt.what in p.message


def test_a_fifo_in_a_directory_is_refused_and_a_named_one_never_hangs(tmp_path):
    os.mkfifo(tmp_path / "spine1.conf")
    with pytest.raises(TopologyError, match=r"spine1.conf: cannot read the FRR config file: not a regular file"):
        userconf.read_dir(tmp_path)
    os.mkfifo(tmp_path / "t.yml")  # no writer: read as empty, at once
    with pytest.raises(TopologyError, match="holds no topology"):
        topology.load(tmp_path / "t.yml")


def test_a_directory_given_as_a_file_is_named(tmp_path):
    (tmp_path / "x.json").mkdir()
    with pytest.raises(TopologyError, match=r"x.json: cannot read the NVIDIA Air JSON file: it is a directory"):
        Lab.load(tmp_path / "x.json")


VALIDATED = [(d, c) for d, c in CASES if d in ("containerlab", "air-json", "air-dot")] + [
    ("topology", Path("tests/golden/invalid") / n) for n in ("not-utf8.yml", "utf16.yml", "yaml-too-deep.yml")
]


@pytest.mark.parametrize("door, case", VALIDATED, ids=[f"{d}/{c.name}" for d, c in VALIDATED])
def test_twin_validate_of_a_hostile_file_is_one_error_and_no_traceback(door, case, monkeypatch):
    monkeypatch.chdir(ROOT)
    roles = ["--role", ",".join(f"{k}={v}" for k, v in AIR_ROLES.items())] if door.startswith("air") else []
    res = CliRunner().invoke(main, ["validate", str(case), *roles])
    assert res.exit_code == 1 and res.output.startswith("error: ") and "Traceback" not in res.output, res.output
    assert str(case) in res.output and res.exception is None or isinstance(res.exception, SystemExit)
