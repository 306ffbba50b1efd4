"""Checking a running lab: verify (every check group) and traffic (one RoCE flow)."""
from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Protocol, TypeVar

import click
from rich.markup import escape
from rich.table import Table

from twin import prove, verify
from twin.base.errors import TwinError
from twin.cli.common import EVIDENCE_HELP, SUMMARY_HELP, err, evidence, main, out, progress, run, write_reports
from twin.lab import Lab
from twin.lifecycle import LabContext
from twin.observe import store
from twin.topology.checks import CheckSet, load_checks, merge
from twin.traffic import dcqcn, flows, wording
from twin.verify.markdown import report_md


@main.command(name="verify")
@click.argument("lab")
@click.option("--only", "only", multiple=True, metavar="GROUP",
              help=f"Run only these check groups (repeatable): {', '.join(verify.GROUPS)}.")
@click.option("--checks", "check_files", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Also run the checks of this file (repeatable): a checks file, or a topology's checks: section.")
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Write JUnit XML to this file.")
@click.option("--summary", type=click.Path(dir_okay=False), metavar="FILE.md", help=SUMMARY_HELP)
@click.option("--evidence", "evidence_file", type=click.Path(dir_okay=False), metavar="FILE.json", help=EVIDENCE_HELP)
@click.option("--prove", "prove_", is_flag=True,
              help="Prove verify: break every element of the lab's intent in turn, check that verify notices, "
                   "restore it. Exit 0 only if every one was caught and restored.")
@click.option("--element", "patterns", multiple=True, metavar="GLOB",
              help="With --prove: only elements whose id matches (repeatable), e.g. 'port-rule dpu1:*'.")
@click.pass_context
def verify_(cli: click.Context, lab: str, only: tuple[str, ...], check_files: tuple[str, ...], as_json: bool,
            junit: str | None, summary: str | None, evidence_file: str | None, prove_: bool,
            patterns: tuple[str, ...]) -> None:
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
        store.save_verify(ctx.dir, report.to_dict())   # the last result, for `twin web`
        write_reports(lab, report.passed, rec, summary, evidence_file, lambda: report_md(report, rec))
        finish(report, junit, as_json, print_report)
    run(cli, verify_lab)


def proof_(ctx: LabContext, only: list[str] | None, patterns: list[str] | None, as_json: bool,
           junit: str | None) -> None:
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
        t.add_row(escape(o["id"]), escape(o["broken_by"]), yes if o["caught"] else no, escape(o["check"] or "-"),
                  yes if o["restored"] else no, f"{o['seconds'].get('total', 0):.1f}")
    out.print(t)
    for o in doc["outcomes"]:
        if not (o["caught"] and o["restored"]):
            out.print(f"[red]{'MISSED' if not o['caught'] else 'NOT RESTORED'}[/red] {escape(o['id'])} "
                      f"({escape(o['what'])}): ", end="")
            out.print(o["detail"] or "no check of " + ", ".join(o["groups"]) + " failed", markup=False)
    if doc["exempt"]:
        out.print(f"{len(doc['exempt'])} rendered settings carry no guarantee in this lab (not proved; --json lists "
                  f"them): " + ", ".join(sorted({x["kind"] for x in doc["exempt"]})))
    if doc["aborted"]:
        out.print(f"[red]stopped[/red]: {escape(doc['aborted'])}")
    colour = "green" if doc["passed"] else "red"
    out.print(f"[{colour}]{doc['score']}[/{colour}] ({len(doc['outcomes'])} of {doc['elements']} elements, "
              f"{doc['seconds']:.0f} s)")


def print_report(report: verify.Report) -> None:
    iso = report.extra.get("isolation")
    if iso:
        t = Table(title="isolation matrix (rows send, columns receive)", title_justify="left")
        t.add_column("from \\ to")
        for h in iso["hosts"]:
            t.add_column(f"{h}\n{iso['tenants'][h]}", justify="center")
        marks = {"ok": "[green]ok[/green]", "blocked": "[dim]-[/dim]", "LEAK": "[red]LEAK[/red]",
                 "LOSS": "[red]LOSS[/red]"}
        for s in iso["hosts"]:
            t.add_row(f"{s} ({iso['tenants'][s]})",
                      *("" if s == d else marks.get(iso["matrix"][s].get(d, ""), "?") for d in iso["hosts"]))
        out.print(t)
    marked = (report.extra.get("traffic") or {}).get("congestion")
    if marked:
        t = Table(title=f"traffic: flows marked CE on the way, and the CNPs that answered (at most one per QP per "
                        f"{report.extra['traffic']['cnp_interval_us']} us)", title_justify="left")
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
    if (report.extra.get("congestion") or {}).get("points"):
        print_congestion(report.extra["congestion"])
    t = Table(title=f"twin verify {report.lab}", title_justify="left")
    for col in ("group", "checks", "passed", "failed", "seconds"):
        t.add_column(col, justify="right" if col != "group" else "left")
    for group, checks in report.groups().items():
        failed = sum(not c.passed for c in checks)
        t.add_row(group, str(len(checks)), str(len(checks) - failed),
                  f"[red]{failed}[/red]" if failed else "0", f"{report.seconds.get(group, 0):.1f}")
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
    t = Table(title=f"performance: every rate limit, each by a flood of its own (held: at most the limit + "
                    f"{perf['tolerance']:.0%}; the floods of a VTEP together: {rounds})", title_justify="left")
    for col in ("limit", "on", "flood", "frame B", "limit Mbit/s (fr/s)", "offered Mbit/s (fr/s)",
                "delivered Mbit/s (fr/s)", "held back", "verdict"):
        t.add_column(col, justify="right" if "/s" in col or col in ("frame B", "held back") else "left")
    for f in perf["limits"]:
        verdict = {"held": "[green]held[/green]",
                   "over": "[red]OVER[/red]"}.get(f["verdict"], "[yellow]not judged[/yellow]")
        t.add_row(f"{f['tenant']} {f['host']} {f['direction']} {f['limit']}", f["where"], f"{f['src']} -> {f['dst']}",
                  str(f["frame_bytes"]), f"{f['limit_mbps']} ({f['limit_fps']})",
                  f"{f['offered_mbps']} ({f['offered_fps']})", f"{f['delivered_mbps']} ({f['delivered_fps']})",
                  f"{f['held_back']:.0%}", verdict)
    out.print(t)


def print_congestion(cong: dict) -> None:
    """Per congestion point, its three runs: what arrived, marked, and the CNPs that answered."""
    t = Table(title="congestion: every congestion point, by what comes out of it (marks of the ECN-capable burst: at "
                    f"least {1 - cong['tolerance']:.0%} of what its rule makes of it)", title_justify="left")
    for col in ("point", "flow", "run", "sent", "received", "arrived fr/s", "CE (the rule's)",
                "CNPs sent/back/allowed"):
        t.add_column(col, justify="left" if col in ("point", "flow", "run") else "right")
    for p in cong["points"]:
        for key, run_ in (("ect", f"ECN-capable, above {p['above']}"), ("plain", "not ECN-capable, above"),
                          ("below", "ECN-capable, paced below")):
            r = p[key]
            t.add_row(p["point"] if key == "ect" else "", r["flow"] if key == "ect" else "", run_, str(r["sent"]),
                      str(r["received"]), str(r["arrived_fps"]), f"{r['ce']} ({r['rule_marks']})",
                      f"{r['cnps_sent']}/{r['cnps_received']}/{r['cnps_allowed']}")
    out.print(t)


def print_performance(perf: dict) -> None:
    """Per noisy-neighbour run, each tenant's figures: offered, delivered, dropped."""
    t = Table(title=f"performance: a noisy neighbour on the same VTEP (rate limits: {perf.get('shaping')})",
              title_justify="left")
    for col in ("VTEP", "role", "tenant", "flow", "limit", "offered Mbit/s (fr/s)", "delivered Mbit/s (fr/s)",
                "dropped"):
        t.add_column(col, justify="right" if "/s" in col or col == "dropped" else "left")
    for r in perf["runs"]:
        for role in ("noisy", "victim"):
            f = r[role]
            t.add_row(r["vtep"] if role == "noisy" else "", role, f["tenant"], f"{f['src']} -> {f['dst']}", f["limit"],
                      f"{f['offered_mbps']} ({f['offered_fps']})", f"{f['delivered_mbps']} ({f['delivered_fps']})",
                      str(f["dropped"]))
    out.print(t)


def _as_named(c: LabContext, typed: str) -> str:
    """A host as the lab names it (`PC1` is pc1); an unknown one stays as typed, to be refused as no host."""
    try:
        return c.node(typed)
    except TwinError:
        return typed


@main.command(name="traffic")
@click.argument("lab")
@click.argument("src")
@click.argument("dst")
@click.option("--count", type=click.IntRange(1, 100000),
              help="Packets (PSNs) in the flow [default: 16; 2000 with --congest].")
@click.option("--payload", default=1024, show_default=True, type=click.IntRange(0, 8900),
              help="Payload bytes per packet.")
@click.option("--dscp", default=26, show_default=True, type=click.IntRange(0, 63))
@click.option("--ecn", default=2, show_default=True, type=click.IntRange(0, 3), help="ECN bits (2 = ECT(0)).")
@click.option("--opcode", default=4, show_default=True, type=click.IntRange(0, 255),
              help="BTH opcode (4 = RC SEND only).")
@click.option("--qp", "dqp", default=0x11, show_default=True, type=click.IntRange(0, 0xFFFFFF), help="Destination QP.")
@click.option("--psn", default=0, show_default=True, type=click.IntRange(0, 0xFFFFFF), help="First PSN.")
@click.option("--sport", default=49152, show_default=True, type=click.IntRange(1, 65535),
              help="UDP source port (ECMP entropy).")
@click.option("--cnp", is_flag=True, help="Send CNPs (congestion notifications) instead of data.")
@click.option("--congest", is_flag=True, help="Send back to back so congestion points on the path mark it (ECN CE); "
                                              "DST answers marks with CNPs (at most one per QP per 50 us); report "
                                              "CE marks, CNPs and what each congestion point counted.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def traffic_(cli: click.Context, lab: str, src: str, dst: str, count: int | None, payload: int, dscp: int, ecn: int,
             opcode: int, dqp: int, psn: int, sport: int, cnp: bool, congest: bool, as_json: bool) -> None:
    """Send one RoCEv2 flow from host SRC to host DST's address and report what arrived where."""
    def send_traffic() -> None:
        nonlocal src, dst
        ctx = Lab(lab).context()
        src, dst = (_as_named(ctx, h) for h in (src, dst))
        for h in (src, dst):
            if not ctx.fabric.attachment_of(h):
                raise TwinError(f"{h!r} is not a host endpoint of {lab}; hosts: {', '.join(flows.hosts(ctx.fabric))}")
        f = flows.flow(ctx.fabric, src, dst, 1, count=count or (2000 if congest else 16), payload=payload, dscp=dscp,
                       ecn=ecn, opcode=opcode, dqp=dqp, psn=psn, sport=sport, cnp=cnp)
        same = flows.same_tenant(ctx.fabric, src, dst)
        before = dcqcn.congestion_counters(ctx) if congest else {}
        r = flows.run(ctx, [f], {1: same}, cnps=congest)[1]
        points = dcqcn.delta(before, dcqcn.congestion_counters(ctx)) if congest else {}
        doc = {k: v for k, v in asdict(r).items() if k not in ("flow", "ce_times", "times")} | {
            "expected": "deliver" if same else "never"}
        if congest:
            doc |= {"cnps_allowed": dcqcn.expected_cnps(r.ce_times), "cnp_interval_us": dcqcn.CNP_INTERVAL_NS // 1000,
                    "congestion_points": points}
        if as_json:
            click.echo(json.dumps(doc, indent=2))
        else:
            out.print(wording.flow_line(ctx.fabric, r, same), markup=False)
            if congest:
                marked = "; ".join(f"{p} marked {n['ce']} of {n['ect']} ECN-capable frames" for p, n in points.items())
                out.print(f"congestion: {r.ce} arrived marked CE; CNPs sent {r.cnps_sent} (the pacing rule, one per "
                          f"QP per {dcqcn.CNP_INTERVAL_NS // 1000} us, allows {doc['cnps_allowed']}), received by "
                          f"{src} {r.cnps_received}; " + (marked or "the lab has no congestion point"))
        ok = r.delivered if same else not r.seen_at or all(
            flows.same_tenant(ctx.fabric, src, h) for h in r.seen_at) and r.received == 0
        sys.exit(0 if ok else 1)
    run(cli, send_traffic)
