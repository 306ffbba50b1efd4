"""The documentation's runnable examples, run as written (issue 27): every ```console block after
a `<!-- runnable lab=NAME -->` comment in docs/*.md, its `$ ` commands in order against a real
lab under a test name, each exiting 0 with the lines the page shows under it in its output."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, leftovers, twin_cli

pytestmark = pytest.mark.e2e
MARK = re.compile(r"^<!-- runnable lab=([a-z0-9-]+) -->\n```console\n(.*?)^```", re.M | re.S)
PREFIX = "t-doc-"


@dataclass
class Step:
    command: str
    shows: list[str] = field(default_factory=list)


@dataclass
class Example:
    page: str
    lab: str
    steps: list[Step]


def examples(docs: Path = ROOT / "docs") -> list[Example]:
    out = []
    for page in sorted(docs.rglob("*.md")):
        for m in MARK.finditer(page.read_text()):
            steps: list[Step] = []
            for line in m.group(2).splitlines():
                if line.startswith("$ "):
                    steps.append(Step(line[2:]))
                elif line.strip() and line.strip() != "..." and steps:
                    steps[-1].shows.append(line.strip())
            out.append(Example(str(page.relative_to(ROOT)), m.group(1), steps))
    return out


def renamed(text: str, lab: str, name: str) -> str:
    """The page's lab name replaced by the test's (not inside a path such as tests/e2e/small.yml)."""
    return re.sub(rf"(?<![\w/.-]){re.escape(lab)}(?![\w.-])", name, text)


def test_the_pages_have_runnable_examples():
    found = examples()
    assert found and all(e.steps and e.steps[0].command.startswith("twin ") for e in found)
    assert any(s.shows for e in found for s in e.steps), "an example shows what its output holds"


@pytest.mark.parametrize("example", examples(), ids=lambda e: f"{e.page}:{e.lab}")
def test_runnable_example(example, runtime, node_image):
    name = (PREFIX + example.lab)[:16]
    try:
        for step in example.steps:
            words = shlex.split(renamed(step.command, example.lab, name))
            assert words[0] == "twin", f"{example.page}: `{step.command}`: runnable examples are twin commands"
            args = words[1:] + (["--name", name, "--image", node_image] if words[1] == "up" else [])
            p = twin_cli(*args)
            said = p.stdout + p.stderr
            assert p.returncode == 0, f"{example.page}: `{step.command}` exited {p.returncode}:\n{said[-2000:]}"
            for line in step.shows:
                want = renamed(line, example.lab, name)
                assert want in said, f"{example.page}: `{step.command}` should show {want!r}; it said:\n{said[-2000:]}"
    finally:
        twin_cli("down", name)
    assert leftovers(runtime, name) == []
