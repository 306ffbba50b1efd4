"""Checking a running lab: `twin verify` (every check group, or `--prove`) and how its report reads."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Protocol, TypeVar

import click
from rich.markup import escape
from rich.table import Table

from twin import prove, verify
from twin.cli.common import EVIDENCE_HELP, SUMMARY_HELP, err, evidence, main, out, progress, run, write_reports
from twin.lab import Lab
from twin.lifecycle import LabContext
from twin.observe import store
from twin.topology.checks import CheckSet, load_checks, merge
from twin.verify.markdown import report_md


@main.command(name="verify")
@click.argument("lab")
@click.option(
    "--only",
    "only",
    multiple=True,
    metavar="GROUP",
    help=f"Run only these check groups (repeatable): {', '.join(verify.GROUPS)}.",
)
@click.option(
    "--checks",
    "check_files",
    multiple=True,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Also run the checks of this file (repeatable): a checks file, or a topology's checks: section.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Write JUnit XML to this file.")
@click.option("--summary", type=click.Path(dir_okay=False), metavar="FILE.md", help=SUMMARY_HELP)
@click.option("--evidence", "evidence_file", type=click.Path(dir_okay=False), metavar="FILE.json", help=EVIDENCE_HELP)
@click.option(
    "--prove",
    "prove_",
    is_flag=True,
    help="Prove verify: break every element of the lab's intent in turn, check that verify notices, "
    "restore it. Exit 0 only if every one was caught and restored.",
)
@click.option(
    "--element",
    "patterns",
    multiple=True,
    metavar="GLOB",
    help="With --prove: only elements whose id matches (repeatable), e.g. 'port-rule dpu1:*'.",
)
@click.pass_context
def verify_(
    cli: click.Context,
    lab: str,
    only: tuple[str, ...],
    check_files: tuple[str, ...],
    as_json: bool,
    junit: str | None,
    summary: str | None,
    evidence_file: str | None,
    prove_: bool,
    patterns: tuple[str, ...],
) -> None:
    """Verify LAB against its topology (state, RoCE traffic, isolation, zero-trust) and the user's checks
    (its topology's checks: section, and --checks files). Exit 0 only if all pass. With --prove, prove
    that verify notices every element of the lab's intent broken in turn."""

    def verify_lab() -> None:
        ctx = Lab(lab).context()
        if prove_ or patterns:
            proof_(ctx, list(only) or None, list(patterns) or None, as_json, junit)
            return
        sets = [CheckSet(f"the topology of {lab}", tuple(ctx.fabric.checks))]
        sets += [load_checks(f, ctx.fabric) for f in check_files]
        with evidence(bool(summary or evidence_file)) as rec, err.status(f"verifying {lab}"):
            report = verify.run(ctx, only=list(only) or None, checks=merge(sets))
        store.save_verify(ctx.dir, report.to_dict())  # the last result, for `twin web`
        write_reports(lab, report.passed, rec, summary, evidence_file, lambda: report_md(report, rec))
        finish(report, junit, as_json, print_report)

    run(cli, verify_lab)


def proof_(
    ctx: LabContext, only: list[str] | None, patterns: list[str] | None, as_json: bool, junit: str | None
) -> None:
    with progress(ctx.name, "proving verify") as say:
        proof = prove.prove(ctx, patterns, only, say=say)
    finish(proof, junit, as_json, lambda p: print_proof(p.to_dict()))


class Verdict(Protocol):
    """What `verify` and `verify --prove` end with."""

    @property
    def passed(self) -> bool: ...
    def to_json(self) -> str: ...
    def write_junit(self, path: str | Path) -> None: ...


V = TypeVar("V", bound=Verdict)


def finish(result: V, junit: str | None, as_json: bool, show: Callable[[V], None]) -> None:
    """A verdict (a report or a proof) as JUnit, JSON or tables; exit 0 only if it passed."""
    if junit:
        result.write_junit(junit)
    if as_json:
        click.echo(result.to_json())
    else:
        show(result)
    sys.exit(0 if result.passed else 1)


def print_proof(doc: dict) -> None:
    """A proof (`Proof.to_dict`: here, or a server's) as `twin verify --prove` prints it."""
    t = Table(title=f"twin verify {doc['lab']} --prove: every element broken in turn", title_justify="left")
    for col in ("element", "broken by", "caught", "by check", "restored", "s"):
        t.add_column(col, justify="right" if col == "s" else "left", overflow="fold")
    yes, no = "[green]yes[/green]", "[red]NO[/red]"
    for o in doc["outcomes"]:
        t.add_row(
            escape(o["id"]),
            escape(o["broken_by"]),
            yes if o["caught"] else no,
            escape(o["check"] or "-"),
            yes if o["restored"] else no,
            f"{o['seconds'].get('total', 0):.1f}",
        )
    out.print(t)
    for o in doc["outcomes"]:
        if not (o["caught"] and o["restored"]):
            out.print(
                f"[red]{'MISSED' if not o['caught'] else 'NOT RESTORED'}[/red] {escape(o['id'])} "
                f"({escape(o['what'])}): ",
                end="",
            )
            out.print(o["detail"] or "no check of " + ", ".join(o["groups"]) + " failed", markup=False)
    if doc["exempt"]:
        out.print(
            f"{len(doc['exempt'])} rendered settings carry no guarantee in this lab (not proved; --json lists "
            f"them): " + ", ".join(sorted({x["kind"] for x in doc["exempt"]}))
        )
    if doc["aborted"]:
        out.print(f"[red]stopped[/red]: {escape(doc['aborted'])}")
    colour = "green" if doc["passed"] else "red"
    out.print(
        f"[{colour}]{doc['score']}[/{colour}] ({len(doc['outcomes'])} of {doc['elements']} elements, "
        f"{doc['seconds']:.0f} s)"
    )


def print_report(report: verify.Report) -> None:
    iso = report.extra.get("isolation")
    if iso:
        t = Table(title="isolation matrix (rows send, columns receive)", title_justify="left")
        t.add_column("from \\ to")
        for h in iso["hosts"]:
            t.add_column(f"{h}\n{iso['tenants'][h]}", justify="center")
        marks = {
            "ok": "[green]ok[/green]",
            "blocked": "[dim]-[/dim]",
            "LEAK": "[red]LEAK[/red]",
            "LOSS": "[red]LOSS[/red]",
        }
        for s in iso["hosts"]:
            t.add_row(
                f"{s} ({iso['tenants'][s]})",
                *("" if s == d else marks.get(iso["matrix"][s].get(d, ""), "?") for d in iso["hosts"]),
            )
        out.print(t)
    marked = (report.extra.get("traffic") or {}).get("congestion")
    if marked:
        t = Table(
            title=f"traffic: flows marked CE on the way, and the CNPs that answered (at most one per QP per "
            f"{report.extra['traffic']['cnp_interval_us']} us)",
            title_justify="left",
        )
        for col in ("flow", "frames", "CE", "CNPs sent", "received by the sender"):
            t.add_column(col, justify="left" if col == "flow" else "right")
        for c in marked:
            t.add_row(c["flow"], str(c["sent"]), str(c["ce"]), str(c["cnps_sent"]), str(c["cnps_received"]))
        out.print(t)
    perf = report.extra.get("performance") or {}
    if perf.get("limits"):
        print_limits(perf)
    if perf.get("runs"):
        print_performance(perf)
    if (report.extra.get("congestion") or {}).get("points") or (report.extra.get("congestion") or {}).get("qos"):
        print_congestion(report.extra["congestion"])
    t = Table(title=f"twin verify {report.lab}", title_justify="left")
    for col in ("group", "checks", "passed", "failed", "seconds"):
        t.add_column(col, justify="right" if col != "group" else "left")
    for group, checks in report.groups().items():
        failed = sum(not c.passed for c in checks)
        t.add_row(
            group,
            str(len(checks)),
            str(len(checks) - failed),
            f"[red]{failed}[/red]" if failed else "0",
            f"{report.seconds.get(group, 0):.1f}",
        )
    out.print(t)
    mine = report.groups().get("checks", [])
    if mine:
        t = Table(title="your checks", title_justify="left")
        for col in ("check", "type", "result", "what was seen"):
            t.add_column(col)
        for c in mine:
            t.add_row(c.name, c.data.get("type", ""), "pass" if c.passed else "[red]FAIL[/red]", c.message)
        out.print(t)
    for c in report.failures():
        out.print(f"[red]FAIL[/red] {c.group}: {c.name}: ", end="")
        out.print(c.message, markup=False, highlight=False)
    for x in report.extra.get("not_exercised", []):
        out.print(f"[yellow]not exercised[/yellow] {x['safeguard']}: ", end="")
        out.print(x["why"], markup=False, highlight=False)
    for node, paths in (report.extra.get("not emulated") or {}).items():
        out.print(f"not emulated (kept in {node}'s NVUE, not run): {', '.join(paths)}", highlight=False)
    out.print("[green]PASSED[/green]" if report.passed else f"[red]FAILED[/red]: {len(report.failures())} checks")


def print_limits(perf: dict) -> None:
    """Per rate limit, its flood: the limit, what was offered and what arrived, the verdict."""
    rounds = ", ".join(f"{r['vtep']} {r['seconds']} s" for r in perf.get("rounds", []))
    t = Table(
        title=f"performance: every rate limit, each by a flood of its own (held: at most the limit + "
        f"{perf['tolerance']:.0%}; the floods of a VTEP together: {rounds})",
        title_justify="left",
    )
    for col in (
        "limit",
        "on",
        "flood",
        "frame B",
        "limit Mbit/s (fr/s)",
        "offered Mbit/s (fr/s)",
        "delivered Mbit/s (fr/s)",
        "held back",
        "verdict",
    ):
        t.add_column(col, justify="right" if "/s" in col or col in ("frame B", "held back") else "left")
    for f in perf["limits"]:
        verdict = {"held": "[green]held[/green]", "over": "[red]OVER[/red]"}.get(
            f["verdict"], "[yellow]not judged[/yellow]"
        )
        t.add_row(
            f"{f['tenant']} {f['host']} {f['direction']} {f['limit']}",
            f["where"],
            f"{f['src']} -> {f['dst']}",
            str(f["frame_bytes"]),
            f"{f['limit_mbps']} ({f['limit_fps']})",
            f"{f['offered_mbps']} ({f['offered_fps']})",
            f"{f['delivered_mbps']} ({f['delivered_fps']})",
            f"{f['held_back']:.0%}",
            verdict,
        )
    out.print(t)


def print_congestion(cong: dict) -> None:
    """Per congestion point, its three runs: what arrived, marked, and the CNPs that answered; then
    a dialect's part: NVUE's RoCE QoS classes at every hop of the congested path."""
    if cong.get("points"):
        print_points(cong)
    if cong.get("qos"):
        print_congested_classes(cong["qos"])


def print_points(cong: dict) -> None:
    """Per congestion point, its three runs: what arrived, marked, and the CNPs that answered."""
    t = Table(
        title="congestion: every congestion point, by what comes out of it (marks of the ECN-capable burst: at "
        f"least {1 - cong['tolerance']:.0%} of what its rule makes of it)",
        title_justify="left",
    )
    for col in (
        "point",
        "flow",
        "run",
        "sent",
        "received",
        "arrived fr/s",
        "CE (the rule's)",
        "CNPs sent/back/allowed",
    ):
        t.add_column(col, justify="left" if col in ("point", "flow", "run") else "right")
    for p in cong["points"]:
        for key, run_ in (
            ("ect", f"ECN-capable, above {p['above']}"),
            ("plain", "not ECN-capable, above"),
            ("below", "ECN-capable, paced below"),
        ):
            r = p[key]
            t.add_row(
                p["point"] if key == "ect" else "",
                r["flow"] if key == "ect" else "",
                run_,
                str(r["sent"]),
                str(r["received"]),
                str(r["arrived_fps"]),
                f"{r['ce']} ({r['rule_marks']})",
                f"{r['cnps_sent']}/{r['cnps_received']}/{r['cnps_allowed']}",
            )
    out.print(t)


def print_congested_classes(figures: list[dict]) -> None:
    """Per congestion point on a port running NVUE's RoCE QoS: its burst's CE marks, and the classes
    RoCE and its CNPs left every hop by (`twin.nvue.qoscheck`)."""
    t = Table(title="congestion: RoCE QoS at every hop of a congested path (qos roce)", title_justify="left")
    for col in ("point", "flow", "CE (counted there)", "RoCE class: hops", "CNPs sent/back", "CNP class: hops"):
        t.add_column(col, justify="left" if "class" in col or col in ("point", "flow") else "right")
    for f in figures:
        t.add_row(
            f["point"],
            f["flow"],
            f"{f['ce']} ({f['counted'].get('ce', 0)})",
            f"{f['roce_class']}: {', '.join(f['roce_hops'])}",
            f"{f['cnps_sent']}/{f['cnps_received']}",
            f"{f['cnp_class']}: {', '.join(f['cnp_hops'])}",
        )
    out.print(t)


def print_performance(perf: dict) -> None:
    """Per noisy-neighbour run, each tenant's figures: offered, delivered, dropped."""
    t = Table(
        title=f"performance: a noisy neighbour on the same VTEP (rate limits: {perf.get('shaping')})",
        title_justify="left",
    )
    for col in (
        "VTEP",
        "role",
        "tenant",
        "flow",
        "limit",
        "offered Mbit/s (fr/s)",
        "delivered Mbit/s (fr/s)",
        "dropped",
    ):
        t.add_column(col, justify="right" if "/s" in col or col == "dropped" else "left")
    for r in perf["runs"]:
        for role in ("noisy", "victim"):
            f = r[role]
            t.add_row(
                r["vtep"] if role == "noisy" else "",
                role,
                f["tenant"],
                f"{f['src']} -> {f['dst']}",
                f["limit"],
                f"{f['offered_mbps']} ({f['offered_fps']})",
                f"{f['delivered_mbps']} ({f['delivered_fps']})",
                str(f["dropped"]),
            )
    out.print(t)
