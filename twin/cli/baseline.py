"""Behaviour baselines: record what a lab holds, compare the lab with it later."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.table import Table

from twin.base import timeouts
from twin.cli.common import EVIDENCE_HELP, SUMMARY_HELP, err, evidence, main, out, run, write_reports
from twin.lab import Lab
from twin.topology.allow import load_allow
from twin.verify import baseline as B
from twin.verify import labelled
from twin.verify.baseline_file import load_baseline
from twin.verify.compare import Comparison, compare
from twin.verify.markdown import comparison_md, show


@main.group(name="baseline")
def baseline_group() -> None:
    """Record a lab's behaviour (sessions, prefix counts, routes per VRF, VNIs) and compare the lab with it later."""


@baseline_group.command(name="record")
@click.argument("lab")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="The baseline file (JSON).")
@click.option("--evidence", "evidence_file", type=click.Path(dir_okay=False), metavar="FILE.json", help=EVIDENCE_HELP)
@click.pass_context
def record_(cli: click.Context, lab: str, output: str, evidence_file: str | None) -> None:
    """Record LAB's behaviour per node: every BGP session and its state, prefix counts per peer and AFI,
    every VRF's routes with next hops (tenant VRFs too), every VNI with remote VTEPs and MAC/IP counts,
    and on routers of your own configs every OSPF, OSPFv3 and IS-IS adjacency."""

    def record_baseline() -> None:
        ctx = Lab(lab).context()
        with evidence(bool(evidence_file)) as rec, labelled("baseline"), err.status(f"recording the baseline of {lab}"):
            doc = B.record(ctx)
        Path(output).write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")
        write_reports(lab, True, rec, None, evidence_file, str)
        items = B.items(doc)
        kinds = {w: sum(k[2] == w for k in items) for w in ("session", "route", "vni", "adjacency")}
        click.echo(
            f"baseline of {lab} written to {output}: {len(doc['nodes'])} nodes, {kinds['session']} sessions, "
            f"{kinds['route']} routes, {kinds['vni']} VNIs"
            + (f", {kinds['adjacency']} OSPF/IS-IS adjacencies" if kinds["adjacency"] else "")
        )

    run(cli, record_baseline)


@baseline_group.command(name="compare")
@click.argument("lab")
@click.argument("baseline_file", metavar="BASELINE", type=click.Path(dir_okay=False))
@click.option(
    "--allow",
    "allow_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Differences the change intends (YAML: allow: [{node, vrf, what, key, change, reason}]).",
)
@click.option(
    "--settle",
    type=click.FloatRange(0, 600),
    default=timeouts.BASELINE_SETTLE,
    show_default=True,
    help="Seconds to read the lab again while something unallowed differs (counters settling).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--summary", type=click.Path(dir_okay=False), metavar="FILE.md", help=SUMMARY_HELP)
@click.option("--evidence", "evidence_file", type=click.Path(dir_okay=False), metavar="FILE.json", help=EVIDENCE_HELP)
@click.pass_context
def compare_(
    cli: click.Context,
    lab: str,
    baseline_file: str,
    allow_file: str | None,
    settle: float,
    as_json: bool,
    summary: str | None,
    evidence_file: str | None,
) -> None:
    """Compare LAB now with BASELINE: what disappeared, appeared or changed, per node and VRF.
    Exit 1 on any difference the --allow file does not cover."""

    def compare_to_baseline() -> None:
        ctx = Lab(lab).context()
        base = load_baseline(baseline_file)
        rules = load_allow(allow_file) if allow_file else ()
        with evidence(bool(summary or evidence_file)) as rec, err.status(f"comparing {lab} with {baseline_file}"):
            result = compare(ctx, base, rules, settle=settle)
        write_reports(lab, result.passed, rec, summary, evidence_file, lambda: comparison_md(result))
        if as_json:
            click.echo(result.to_json())
        else:
            print_comparison(result)
        sys.exit(0 if result.passed else 1)

    run(cli, compare_to_baseline)


def print_comparison(result: Comparison) -> None:
    if result.differences:
        t = Table(
            title=f"{result.lab} against the baseline of {result.baseline_lab} ({result.recorded})",
            title_justify="left",
        )
        for col in ("node", "vrf", "what", "key", "change", "before", "after", "allowed"):
            t.add_column(col)
        for d in result.differences:
            t.add_row(
                d.node,
                d.vrf,
                d.what,
                d.key,
                d.change if d.allowed_by else f"[red]{d.change}[/red]",
                show(d.before),
                show(d.after),
                d.allowed_by or "[red]no[/red]",
            )
        out.print(t)
    c = result.counts()
    out.print(
        "[green]MATCHES[/green] the baseline"
        + (f" ({len(result.allowed)} allowed differences)" if result.allowed else "")
        if result.passed
        else f"[red]DIFFERS[/red]: {len(result.unallowed)} not allowed ({c['disappeared']} disappeared, "
        f"{c['appeared']} appeared, {c['changed']} changed), {len(result.allowed)} allowed"
    )
