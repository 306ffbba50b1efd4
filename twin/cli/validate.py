"""`twin validate`: a topology checked, rendered and sized against this host, with nothing created."""

from __future__ import annotations

import json
import sys

import click

from twin import host
from twin.base.errors import TopologyError, TwinError
from twin.cli.common import err, main, out, run
from twin.cli.lab import VRF_BACKEND_HELP
from twin.config import userconf
from twin.config.backend import CHOICES, NAMES, wanted
from twin.config.render import render_lab
from twin.interop import doors, parse_roles
from twin.lab import Lab
from twin.lifecycle.vrfbackend import Choice
from twin.topology import ValidationReport, samples
from twin.topology import validate as topology_validate


@main.command()
@click.argument("topology", type=click.Path(dir_okay=False), metavar="TOPOLOGY|LAB.clab.yml|AIR.json|AIR.dot")
@click.option(
    "--configs",
    type=click.Path(file_okay=False, exists=True),
    metavar="DIR",
    help="Your own FRR configs too (as `twin up --configs` takes them): matched to the topology's "
    "nodes and read by FRR (vtysh --dryrun, in a throwaway container of the node image).",
)
@click.option(
    "--role",
    "roles",
    multiple=True,
    metavar="NODE=KIND[,...]",
    help="A containerlab or Air file's nodes of kinds twin cannot run or does not know, as twin kinds.",
)
@click.option("--name", help="Lab name to check too (default: the topology's name).")
@click.option("--vrf-backend", type=click.Choice(list(CHOICES)), help=VRF_BACKEND_HELP)
@click.option("--timeout", type=float, help="The deadline `twin up --timeout` would get (default: from lab size).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def validate(
    cli: click.Context,
    topology: str,
    configs: str | None,
    roles: tuple[str, ...],
    name: str | None,
    vrf_backend: str | None,
    timeout: float | None,
    as_json: bool,
) -> None:
    """Validate and render TOPOLOGY without creating anything, and say which VRF backend it would
    run on (and why), what it would take of this host's limits and CPU, and the BGP timers it
    would get here. Exit 0 if it is valid (and fits), 1 if not: for CI. TOPOLOGY is any file
    `twin up` takes: a twin topology, a containerlab topology, an NVIDIA Air .json or .dot.

    With --configs (or a containerlab file's bound configs), FRR's own check of every file
    too: a refused line is named with its file:line."""

    def validate_topology() -> None:
        report, choice = _validation(topology, name, parse_roles(roles), configs, vrf_backend)
        doc = report.to_dict()
        if not report.valid or report.fabric is None or choice is None:  # (valid: a fabric, and its backend)
            if as_json:
                click.echo(json.dumps(doc, indent=2))
                sys.exit(1)
            raise TopologyError(list(report.problems))
        files = render_lab(report.fabric, choice.backend)
        doc["vrf_backend"] = {"backend": NAMES[choice.backend], "why": choice.why, "vrf_devices": choice.vrf_devices}
        if choice.warnings:
            doc["vrf_backend"]["warnings"] = list(choice.warnings)
        doc["rendered"] = {n: sorted(f) for n, f in files.items()}
        doc["host"] = host.figures(report.fabric, timeout)
        if as_json:
            click.echo(json.dumps(doc, indent=2))
        else:
            sm, taken = doc["summary"], doc["host"]
            out.print(
                f"{topology}: valid: "
                + ", ".join(f"{v} {k}" for k, v in sm["nodes"].items())
                + f"; {sm['links']} links, {sm['sessions']} BGP sessions, {sm['tenants']} tenants on "
                f"{sm['vteps']} VTEPs; rendered {sum(map(len, doc['rendered'].values()))} files"
            )
            out.print(f"VRF backend: {choice}", highlight=False)
            for w in choice.warnings:
                err.print(f"warning: {w}", highlight=False)
            tables = taken["short"][: len(taken["short"]) - (not taken["cpu"]["fits"])]
            out.print(
                "host: needs "
                + ", ".join(f"{k} {v}" for k, v in taken["needs"].items())
                + (
                    "; fits this host's kernel tables"
                    if not tables
                    else "; SHORT: " + "; ".join(tables) + f"; {taken['fix']}"
                ),
                highlight=False,
            )
            out.print(("cpu: " if taken["cpu"]["fits"] else "cpu: SHORT: ") + taken["cpu_text"], highlight=False)
        sys.exit(0 if not doc["host"]["short"] else 1)

    run(cli, validate_topology)


def _validation(
    topology: str, name: str | None, roles: dict, configs: str | None, vrf_backend: str | None
) -> tuple[ValidationReport, Choice | None]:
    """The topology's report, with the problems of the user's configs (and FRR's word on them) added,
    and the VRF backend `up` would run it on (None when it is invalid)."""
    topology = str(samples.resolve(topology))
    try:
        lab = Lab.load(topology, name=name, configs=configs, roles=roles)
    except TopologyError as e:
        if doors.door(topology) == doors.TWIN and not roles and configs is None:
            return topology_validate(topology, name), None  # the file's own report (a broken file)
        return ValidationReport(topology, None, tuple(e.problems)), None
    try:
        choice = lab.vrf_backend(vrf_backend)
    except TopologyError as e:
        return ValidationReport(topology, lab.loaded, tuple(e.problems)), None
    except TwinError as e:  # the kernel could not be asked (not root): said, not judged
        backend, why = wanted(lab.to_bring_up(), vrf_backend)
        choice = Choice(backend, f"{why}; {e}", None)
    return _configs_validation(topology, lab), choice


def _configs_validation(topology: str, lab: Lab) -> ValidationReport:
    if lab.configs is None:
        return ValidationReport(topology, lab.loaded)
    problems = userconf.check(lab.configs, lab.to_bring_up()) or host.check_configs(lab)
    return ValidationReport(topology, lab.loaded, tuple(problems))
