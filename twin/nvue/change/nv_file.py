"""A file of `nv` commands as a change: `twin plan|apply|rehearse LAB nv:NODE:FILE`.

The file is what an engineer would type on NODE (`nv set ...`, `nv unset ...`, `nv config
patch|replace FILE`, `nv config detach`, `nv config apply [-y]`, `#` comments). Its edits are
made in order on the configuration NODE runs (a `detach` drops those since the last
apply), and what the last `nv config apply` would apply is the change: one NVUE change of
NODE (`NvueChange`), through the same stages as a directory of startup.yaml files (a file
without `nv config apply` applies all its edits: `twin apply` is the apply). Edits after the
last apply would stay pending on a switch: they are refused. Reading lines (`nv show`,
`nv config diff|show`) and `nv config save` change nothing and are listed as such in the plan.
"""

from __future__ import annotations

import copy
from pathlib import Path

from twin.base.errors import Problem, TopologyError, TwinError
from twin.lifecycle.context import LabContext
from twin.nvue.change.nvue_change import NvueChange
from twin.nvue.cli import EDITS, Command, commands, edit
from twin.nvue.configs import running
from twin.nvue.load import from_tree

PREFIX = "nv:"
MAX_FILE = 1 << 20


def load(ctx: LabContext, spec: str) -> NvueChange:
    """`nv:NODE:FILE` -> the NVUE change of NODE it makes; TopologyError naming every problem
    with the file and line."""
    node, _, file = spec[len(PREFIX) :].partition(":")
    if not node or not file:
        raise TwinError(f"{spec!r}: give nv:NODE:FILE, e.g. nv:leaf01:day2.nv (a file of nv commands run on NODE)")
    ctx.node(node)
    runs = running(ctx.dir, ctx.fabric, ctx.backend, ctx.shaping, nodes=[node])
    if node not in runs:
        raise TopologyError(
            [
                Problem(
                    file,
                    "",
                    f"{node} runs twin's rendering, not NVUE: `nv` changes the nodes "
                    "a lab brought up from startup.yaml files (`twin up --configs`)",
                )
            ]
        )
    nf = runs[node].file
    tree = _run(_read(file), file, nf.tree)
    out = from_tree(tree, f"{file} ({node})")
    out.header = nf.header
    return NvueChange.of(ctx, file, {node: out})


def _read(file: str) -> bytes:
    p = Path(file)
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_FILE + 1)
    except OSError as e:
        raise TopologyError([Problem(file, "", f"cannot read it: {e.strerror or e}")]) from None
    if len(data) > MAX_FILE:
        raise TopologyError([Problem(file, "", f"larger than {MAX_FILE} bytes: a file of nv commands is far smaller")])
    return data


def _run(data: bytes, file: str, applied: dict) -> dict:
    """The tree the file's last `nv config apply` applies (every problem, with its line)."""
    pending, done = copy.deepcopy(applied), None
    problems: list[Problem] = []
    edited_at: int | None = None
    for line, cmd in commands(data, file):
        try:
            if cmd.verb in EDITS and cmd.verb != "detach":
                pending = edit(pending, cmd, _named(cmd, file) if cmd.file else None)
                edited_at = edited_at or line
            elif cmd.verb == "detach":
                pending, edited_at = copy.deepcopy(done if done is not None else applied), None
            elif cmd.verb == "apply":
                done, edited_at = copy.deepcopy(pending), None
        except (ValueError, TopologyError) as e:
            problems.append(_problem(e, file, line, cmd))
    if edited_at is not None and done is not None and not problems:
        problems.append(
            Problem(
                file,
                "",
                "edits after the last `nv config apply` would stay pending on the "
                "switch: end the file with `nv config apply`",
                edited_at,
            )
        )
    if problems:
        raise TopologyError(problems)
    return pending if done is None else done


def _named(cmd: Command, file: str) -> bytes:
    """The file `nv config patch|replace FILE` names, relative to the command file's directory."""
    p = Path(file).parent / cmd.file
    return _read(str(p))


def _problem(e: Exception, file: str, line: int, cmd: Command) -> Problem:
    if isinstance(e, TopologyError):
        return Problem(
            file, "", f"{cmd}: " + "; ".join(f"{p.path + ': ' if p.path else ''}{p.message}" for p in e.problems), line
        )
    return Problem(file, "", f"{cmd}: {e}", line)
