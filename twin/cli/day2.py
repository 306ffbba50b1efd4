"""Day-2 commands: plan, apply, rehearse."""

from __future__ import annotations

import json
import sys

import click

from twin.change import load_change
from twin.change.rehearse import Thresholds, rehearse
from twin.change.summary import rehearsal_md
from twin.cli.common import EVIDENCE_HELP, SUMMARY_HELP, evidence, main, progress, run, write_reports
from twin.cli.lint import STRICT_HELP, quiet, warn
from twin.lab import Lab
from twin.topology.allow import load_allow
from twin.verify.baseline_file import load_baseline

CHANGE_HELP = (
    "CHANGE is an edited topology file, a directory of node configs (<dir>/<node>/frr.conf, or NVUE's "
    "<dir>/<node>/startup.yaml), nv:NODE:FILE (a file of nv commands run on NODE), or a fault: "
    "fault:KEY:TARGET[:ARG] with KEY any of `twin fault`'s commands."
)


@main.command(
    name="plan",
    help=f"Show what CHANGE would do to LAB: topology changes, per-node config diffs, "
    f"FRR reloads and kernel commands.\n\n{CHANGE_HELP}",
)
@click.argument("lab")
@click.argument("change")
@click.option("--json", "as_json", is_flag=True)
@click.option("--strict", is_flag=True, help="Exit 1 when a directory of configs has lint findings (`twin lint`).")
@click.pass_context
def plan_(cli: click.Context, lab: str, change: str, as_json: bool, strict: bool) -> None:
    def show_plan() -> None:
        ctx = Lab(lab).context()
        p = load_change(ctx, change).plan(ctx)
        click.echo(json.dumps(p.as_dict(), indent=2) if as_json else p.text(), nl=as_json)
        sys.exit(1 if strict and p.lint else 0)

    run(cli, show_plan)


@main.command(name="apply")
@click.argument("lab")
@click.argument("change", type=click.Path())
@click.option(
    "--timeout",
    type=float,
    help="Convergence deadline in seconds, from the command's start (default: from lab size, once applied).",
)
@click.option("--no-wait", is_flag=True, help="Return once applied, without waiting for convergence.")
@click.option("--strict", is_flag=True, help=STRICT_HELP)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def apply_(
    cli: click.Context, lab: str, change: str, timeout: float | None, no_wait: bool, strict: bool, as_json: bool
) -> None:
    """Apply CHANGE to the running LAB: FRR reload (no restart), kernel reconciled, then wait for convergence.

    CHANGE is an edited topology file, a directory of node configs (<dir>/<node>/frr.conf, or NVUE's
    <dir>/<node>/startup.yaml), nv:NODE:FILE (a file of nv commands run on NODE), or a fault
    (fault:KEY:TARGET[:ARG], as `twin fault` makes it). A bad change is refused and the lab left
    untouched; one that fails half way is rolled back. A directory of configs is linted against the
    lab's intent first (as `twin lint` does: warnings, errors with --strict)."""

    def apply_change() -> None:
        with progress(lab, f"applying {change}") as say:
            res = Lab(lab).apply(
                change, timeout=timeout, wait=not no_wait, say=say, strict=strict, warn=quiet if strict else warn
            )
        print_applied(lab, change, res.as_dict(), as_json)
        sys.exit(0 if res.converged else 1)

    run(cli, apply_change)


def print_applied(lab: str, change: str, doc: dict, as_json: bool) -> None:
    """What `twin apply` says of an applied change (`Result.as_dict`), here or through a server."""
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"applied {change} to {lab}: " + ("; ".join(doc["changes"]) or "no change"))
    if doc["reloaded"] or doc["restarted"]:
        click.echo(
            f"  FRR reloaded on: {', '.join(doc['reloaded']) or '-'}"
            + (f"; restarted on: {', '.join(doc['restarted'])}" if doc["restarted"] else "")
        )
    for k, v in doc["timings"].items():
        click.echo(f"  {k} after {v:.1f}s")
    if doc["missing"]:
        click.echo(f"  NOT converged; still missing ({len(doc['missing'])}):")
        for m in doc["missing"][:40]:
            click.echo(f"    - {m}")


@main.command(
    name="rehearse",
    help=f"Rehearse CHANGE on LAB with RoCE traffic flowing between all same-tenant "
    f"hosts; report the impact.\n\n{CHANGE_HELP} Exit 0 only if the change applied, "
    "the fabric converged and verified, and every threshold held.",
)
@click.argument("lab")
@click.argument("change")
@click.option(
    "--max-loss", type=int, default=0, show_default=True, help="Packets any one flow may lose (-1: no limit)."
)
@click.option("--max-outage", type=float, help="Longest outage any flow may see, in ms.")
@click.option("--max-reconverge", type=float, help="Seconds from the change until the data plane is whole again.")
@click.option("--rollback", is_flag=True, help="Restore the previous intent (or revert the fault) and verify again.")
@click.option(
    "--noisy-neighbour",
    "noisy",
    metavar="HOST",
    help="HOST floods a peer of its tenant all along (a noisy neighbour); its own flows are not judged.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Write JUnit XML to this file.")
@click.option(
    "--baseline",
    "baseline_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Compare the lab with this baseline (`twin baseline record`) after the change (and the rollback).",
)
@click.option(
    "--allow",
    "allow_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Differences from the baseline the change intends (see `twin baseline compare`).",
)
@click.option("--summary", type=click.Path(dir_okay=False), metavar="FILE.md", help=SUMMARY_HELP)
@click.option("--evidence", "evidence_file", type=click.Path(dir_okay=False), metavar="FILE.json", help=EVIDENCE_HELP)
@click.pass_context
def rehearse_(
    cli: click.Context,
    lab: str,
    change: str,
    max_loss: int,
    max_outage: float | None,
    max_reconverge: float | None,
    rollback: bool,
    noisy: str | None,
    as_json: bool,
    junit: str | None,
    baseline_file: str | None,
    allow_file: str | None,
    summary: str | None,
    evidence_file: str | None,
) -> None:
    def rehearse_change() -> None:
        th = Thresholds(
            max_loss=None if max_loss < 0 else max_loss,
            max_outage=None if max_outage is None else max_outage / 1000.0,
            max_reconverge=max_reconverge,
        )
        base = load_baseline(baseline_file) if baseline_file else None
        rules = load_allow(allow_file) if allow_file else ()
        with evidence(bool(summary or evidence_file)) as rec, progress(lab, f"rehearsing {change}") as say:
            rep = rehearse(
                Lab(lab).context(), change, th, rollback=rollback, say=say, noisy=noisy, baseline=base, allow=rules
            )
        write_reports(lab, rep.passed, rec, summary, evidence_file, lambda: rehearsal_md(rep, rec))
        if junit:
            rep.write_junit(junit)
        click.echo(rep.to_json() if as_json else rep.text(), nl=as_json)
        sys.exit(0 if rep.passed else 1)

    run(cli, rehearse_change)
