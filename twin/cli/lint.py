"""`twin lint`: the user's configs checked against a topology's intent, without Docker; and how
`up`, `plan` and `apply` say what it found."""

from __future__ import annotations

import sys

import click

from twin.base.errors import Problem, TopologyError
from twin.cli.common import err, main, out, run
from twin.config import userconf
from twin.interop import parse_roles
from twin.lab import Lab
from twin.lint import Report

STRICT_HELP = (
    "Your configs' lint findings (`twin lint`: what they declare against the topology's intent) are "
    "errors: nothing is made or changed. By default they are warnings, said first, and the lab's own "
    "verdict (the barrier, `twin verify`) decides."
)


@main.command(name="lint")
@click.argument("paths", nargs=-1, type=click.Path(exists=True), metavar="[DIR|FILE]...")
@click.option(
    "-t",
    "--topology",
    required=True,
    metavar="TOPOLOGY|LAB.clab.yml|AIR.json|AIR.dot",
    help="The topology whose intent the configs are meant for: any file `twin up` takes (or the name "
    "of one twin ships: aipod...); a containerlab file's bound configs are linted too.",
)
@click.option(
    "--role",
    "roles",
    multiple=True,
    metavar="NODE=KIND[,...]",
    help="A containerlab or Air file's nodes of kinds twin does not know, as twin kinds.",
)
@click.option("--strict", is_flag=True, help="Findings are errors: exit 1 on any (a pre-commit hook, a CI step).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Write JUnit XML to this file (a testcase per file).")
@click.pass_context
def lint_(
    cli: click.Context,
    paths: tuple[str, ...],
    topology: str,
    roles: tuple[str, ...],
    strict: bool,
    as_json: bool,
    junit: str | None,
) -> None:
    """Check node configs against TOPOLOGY's intent, without Docker, in seconds: DIR is a config
    directory as `twin up --configs` takes it (DIR/<node>/startup.yaml, DIR/<node>/frr.conf,
    DIR/<node>.conf), FILE one node's file of such a directory (the node is named by its
    directory or its name): a pre-commit hook gives the files it changes.

    Each finding names the file and line, the value, and what the intent needs there and why
    (`dpu1/startup.yaml:146: bridge vlan 20 -> VNI 10202: VLAN 20 carries red's db segment
    (10.1.2.0/24), whose VNI is 10102; 10202 is blue's db`). A file twin cannot read or run on the
    topology is an error. Exit codes: 0 no finding, or warnings only; 1 an error, or (--strict) any
    finding."""

    def lint_configs() -> None:
        report = lint_paths(topology, list(paths), parse_roles(roles))
        if junit:
            report.write_junit(junit, strict)
        if as_json:
            click.echo(report.to_json(strict))
        else:
            for line in report.lines(strict):
                out.print(line, markup=False, highlight=False)
            out.print(report.summary(strict), markup=False, highlight=False)
        sys.exit(0 if report.passed(strict) else 1)

    run(cli, lint_configs)


def lint_paths(topology: str, paths: list[str], roles: dict[str, str]) -> Report:
    """The report of the configs at `paths` (and a containerlab file's bound ones) on `topology`; a
    topology or a file that cannot be read is a problem of the report."""
    try:
        lab = Lab.load(topology, roles=roles)
        configs = lab.configs or userconf.UserConfigs(topology)
        if paths:
            configs = configs.under(userconf.read_paths(paths)) if configs.files else userconf.read_paths(paths)
    except TopologyError as e:
        return Report(topology, sorted({p.file for p in e.problems}), problems=list(e.problems))
    if not configs.files:
        raise TopologyError(
            [
                Problem(
                    topology,
                    "",
                    "nothing to lint: give a config directory or files "
                    "(DIR/<node>/startup.yaml, DIR/<node>/frr.conf, "
                    "DIR/<node>.conf), or a containerlab file that binds them",
                )
            ]
        )
    report = userconf.lint(configs, lab.to_bring_up())
    report.topology = topology
    return report


def quiet(report: Report) -> None:
    """--strict: the findings are said once, as the error."""


def warn(report: Report) -> None:
    """`up`, `plan` and `apply`: the findings as warnings on stderr, before anything is done."""
    for line in report.lines():
        err.print(line, markup=False, highlight=False)
    if report.findings:
        err.print(
            f"twin lint: {len(report.findings)} finding(s) in your configs (warnings: the lab's own verdict "
            "decides; --strict makes them errors)",
            markup=False,
            highlight=False,
        )
