"""`twin --server URL COMMAND`: up, down, status, list, verify, apply, plan, rehearse and snapshot
run on a twin server (`twin serve`) instead of this host's engine, with a token only
(TWIN_TOKEN, or ~/.config/twin/token): no root, no Docker. What they print and their exit codes
are the local commands' (the server's result is what the CLI's --json prints); progress goes to
stderr as the operation's events arrive, as the local commands show theirs (a status line on a
terminal, plain lines off one: each event's stage is the server's).
"""

from __future__ import annotations

import json
import sys

import click

from twin import prove
from twin.base.errors import TwinError
from twin.cli.checks import finish, print_proof, print_report
from twin.cli.common import TwinGroup, err, out, progress, run
from twin.cli.day2 import print_applied
from twin.cli.lab import print_status
from twin.cli.upreport import print_up
from twin.client import ApiError, Client
from twin.lifecycle import LabStatus
from twin.verify.result import Check, Report


def client(cli: click.Context) -> Client:
    return Client(cli.find_root().params["server"])


def _result(op: dict) -> dict:
    """An operation's result, or its error as twin's own (one line, every problem with -v)."""
    if op["state"] == "failed":
        problem = op.get("error") or {}
        raise ApiError(int(problem.get("status") or 500), problem)
    return op.get("result") or {}


@click.command(name="up")
@click.argument("topology", required=False, type=click.Path(dir_okay=False, exists=True))
@click.option("--configs", type=click.Path(file_okay=False, exists=True), metavar="DIR")
@click.option("--snapshot", help="A snapshot's id: a lab that runs what it kept (give --name).")
@click.option("--name")
@click.option("--timeout", type=float)
@click.option("--vrf-backend", type=click.Choice(["netns", "device"]))
@click.option("--expires", "expires_in", metavar="DURATION", help="Its lifetime on the server, e.g. 2h.")
@click.pass_context
def up(
    cli: click.Context,
    topology: str | None,
    configs: str | None,
    snapshot: str | None,
    name: str | None,
    timeout: float | None,
    vrf_backend: str | None,
    expires_in: str | None,
) -> None:
    """Bring a lab up on the server from TOPOLOGY (or --snapshot) and wait until it has converged."""

    def bring_up() -> None:
        if (topology is None) == (snapshot is None):
            raise TwinError("give TOPOLOGY or --snapshot ID")
        with progress(name or str(topology or snapshot), "starting on the server") as say:
            op = client(cli).create(topology, name, configs, snapshot, expires_in, timeout, vrf_backend, say=say)
        doc = _result(op)
        for note in doc.get("notes", []):
            err.print(f"note: {note}")
        print_up(doc)

    run(cli, bring_up)


@click.command(name="down")
@click.argument("lab")
@click.pass_context
def down(cli: click.Context, lab: str) -> None:
    """Remove LAB from the server."""

    def tear_down() -> None:
        removed = _result(client(cli).delete(lab))["removed"]
        out.print(
            f"lab [bold]{lab}[/bold]: removed {len(removed)} containers"
            if removed
            else f"lab [bold]{lab}[/bold]: nothing left to remove"
        )

    run(cli, tear_down)


@click.command(name="status")
@click.argument("lab")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def status(cli: click.Context, lab: str, as_json: bool) -> None:
    """LAB on the server against its intent; exit 1 if anything is missing."""

    def show_status() -> None:
        doc = client(cli).lab(lab)
        st = doc.get("status")
        if st is None:
            raise TwinError(
                f"lab {lab!r} is {doc['state']} on the server" + (f": {doc['error']}" if doc.get("error") else "")
            )
        if as_json:
            click.echo(json.dumps(st, indent=2))
        else:
            print_status(LabStatus.from_dict(st))
        sys.exit(0 if st["healthy"] else 1)

    run(cli, show_status)


@click.command(name="list")
@click.pass_context
def list_(cli: click.Context) -> None:
    """Your labs on the server, with their expiry."""

    def list_labs() -> None:
        from rich.table import Table

        t = Table(title_justify="left")
        for col in ("lab", "state", "FRR nodes", "expires in"):
            t.add_column(col)
        rows = client(cli).labs()
        for r in rows:
            t.add_row(r["name"], r["state"], str(r["frr_nodes"]), f"{r['expires_in'] // 60:.0f} min")
        out.print(t if rows else "no labs")

    run(cli, list_labs)


@click.command(name="verify")
@click.argument("lab")
@click.option("--only", "only", multiple=True, metavar="GROUP")
@click.option("--checks", "check_files", multiple=True, type=click.Path(dir_okay=False, exists=True))
@click.option("--json", "as_json", is_flag=True)
@click.option("--junit", type=click.Path(dir_okay=False))
@click.option("--prove", "prove_", is_flag=True)
@click.option("--element", "patterns", multiple=True, metavar="GLOB")
@click.pass_context
def verify(
    cli: click.Context,
    lab: str,
    only: tuple[str, ...],
    check_files: tuple[str, ...],
    as_json: bool,
    junit: str | None,
    prove_: bool,
    patterns: tuple[str, ...],
) -> None:
    """Verify LAB on the server (as `twin verify`); exit 0 only if all pass."""

    def verify_lab() -> None:
        first = "proving verify on the server" if prove_ or patterns else "verifying on the server"
        with progress(lab, first) as say:
            op = client(cli).verify(lab, list(only), list(check_files), prove_, list(patterns), say=say)
        doc = _result(op)
        if prove_ or patterns:  # as `twin verify --prove` prints its proof
            if junit:
                prove.write_junit(doc, junit)
            if as_json:
                click.echo(json.dumps(doc, indent=2))
            else:
                print_proof(doc)
            sys.exit(0 if doc["passed"] else 1)
        extra = {k: v for k, v in doc.items() if k not in ("lab", "passed", "seconds", "checks")}
        report = Report(doc["lab"], [Check(**c) for c in doc["checks"]], doc.get("seconds") or {}, extra)
        finish(report, junit, as_json, print_report)

    run(cli, verify_lab)


@click.command(name="apply")
@click.argument("lab")
@click.argument("change")
@click.option("--timeout", type=float)
@click.option("--no-wait", is_flag=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def apply(cli: click.Context, lab: str, change: str, timeout: float | None, no_wait: bool, as_json: bool) -> None:
    """Apply CHANGE to LAB on the server (as `twin apply`)."""

    def apply_change() -> None:
        with progress(lab, f"applying {change} on the server") as say:
            op = client(cli).apply(lab, change, timeout, no_wait, say=say)
        doc = _result(op)
        print_applied(lab, change, doc, as_json)
        sys.exit(0 if doc["converged"] else 1)

    run(cli, apply_change)


@click.command(name="plan")
@click.argument("lab")
@click.argument("change")
@click.pass_context
def plan(cli: click.Context, lab: str, change: str) -> None:
    """What CHANGE would do to LAB on the server (as `twin plan --json`)."""
    run(cli, lambda: click.echo(json.dumps(client(cli).plan(lab, change), indent=2)))


@click.command(name="rehearse")
@click.argument("lab")
@click.argument("change")
@click.option("--max-loss", type=int, default=0, show_default=True)
@click.option("--max-outage", type=float, help="In ms.")
@click.option("--max-reconverge", type=float)
@click.option("--rollback", is_flag=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def rehearse(
    cli: click.Context,
    lab: str,
    change: str,
    max_loss: int,
    max_outage: float | None,
    max_reconverge: float | None,
    rollback: bool,
    as_json: bool,
) -> None:
    """Rehearse CHANGE on LAB on the server (as `twin rehearse`)."""

    def rehearse_change() -> None:
        with progress(lab, f"rehearsing {change} on the server") as say:
            op = client(cli).rehearse(
                lab,
                change,
                say=say,
                max_loss=max_loss,
                max_outage_ms=max_outage,
                max_reconverge=max_reconverge,
                rollback=rollback,
            )
        doc = _result(op)
        text = doc.pop("text", "")
        click.echo(json.dumps(doc, indent=2) if as_json else text, nl=as_json)
        sys.exit(0 if doc["passed"] else 1)

    run(cli, rehearse_change)


@click.command(name="snapshot")
@click.argument("lab")
@click.pass_context
def snapshot(cli: click.Context, lab: str) -> None:
    """Snapshot what LAB runs now on the server; `twin --server URL up --snapshot ID --name NEW` brings it back."""

    def take() -> None:
        doc = _result(client(cli).snapshot(lab))
        out.print(
            f"snapshot {doc['snapshot']} of {lab}: {doc['nodes']} nodes, {doc['user_files']} files of yours, "
            f"{doc['size']} bytes; {doc['not_kept']}",
            highlight=False,
        )

    run(cli, take)


TwinGroup.remote.update(
    {c.name: c for c in (up, down, status, list_, verify, apply, plan, rehearse, snapshot) if c.name}
)
