"""Markdown reports for a CI job summary or a merge-request comment: verdict first, then the
failures with their evidence (what was seen, the commands behind it and their output), then
the tables. `evidence_doc` is the JSON of `--evidence`: every command run on a node for the
verdict, with its raw output, exit code and timing."""

from __future__ import annotations

import shlex
import time
from typing import Any, Iterable, Sequence

from twin.runtime import Evidence, Recorder
from twin.verify.compare import Comparison, show
from twin.verify.result import Check, Report

FAILURES_SHOWN = 40  # failures given in full; the rest are listed in the tables
COMMANDS_SHOWN = 3  # the last commands behind a failure
OUTPUT_LINES = 25  # lines of each command's output in a summary (the evidence file has all)
OUTPUT_CHARS = 2500


def cell(value: Any, limit: int = 200) -> str:
    """A table cell: one line, pipes escaped, cut to `limit`."""
    text = " ".join(str(value).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def table(head: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return out + [""]


def fenced(text: str) -> list[str]:
    lines = text.rstrip("\n").splitlines() or [""]
    cut = lines[:OUTPUT_LINES]
    body = "\n".join(cut)[:OUTPUT_CHARS]
    more = len(lines) - len(cut)
    fence = "````" if "```" in body else "```"
    return [fence, body + (f"\n... {more} more lines (all in the evidence file)" if more > 0 else ""), fence]


def commands(entries: Sequence[Evidence]) -> list[str]:
    """The last commands behind a verdict, in a collapsed block."""
    if not entries:
        return []
    shown = entries[-COMMANDS_SHOWN:]
    out = [
        "<details><summary>evidence: "
        + (f"the last {len(shown)} of " if len(entries) > len(shown) else "")
        + f"{len(entries)} command(s)</summary>",
        "",
    ]
    for e in shown:
        out.append(f"`{e.node}`: `{shlex.join(e.cmd)}` exited {e.rc} in {e.seconds:.2f}s (#{e.seq})")
        out += fenced(e.stdout + (("\n" + e.stderr) if e.stderr.strip() else "")) + [""]
    return out + ["</details>", ""]


def evidence_for(check: Check, rec: Recorder | None) -> list[Evidence]:
    """Commands recorded for a check: a user's check by its label, a derived one by its group
    and the node named in it."""
    if rec is None:
        return []
    if check.group == "checks":
        return rec.of(f"checks: {check.name}")
    words = set(check.name.replace("(", " ").replace(")", " ").split())
    return [e for e in rec.of(check.group) if e.node.split("/")[-1] in words]


def verdict(title: str, passed: bool, detail: str) -> list[str]:
    return [
        f"## {title}: {'PASSED' if passed else 'FAILED'}",
        "",
        f"**{'PASSED' if passed else 'FAILED'}**: {detail}",
        "",
    ]


def failure(check: Check, rec: Recorder | None) -> list[str]:
    out = [f"#### {cell(check.group)}: {cell(check.name)}", "", "> " + cell(check.message or "failed", 2000), ""]
    spec = check.data.get("spec") if check.group == "checks" else None
    if spec:
        out += ["expected: `" + cell(", ".join(f"{k}: {v}" for k, v in spec.items() if k != "name"), 500) + "`", ""]
    return out + commands(evidence_for(check, rec))


def report_md(report: Report, rec: Recorder | None = None, title: str = "") -> str:
    """A `twin verify` report in Markdown."""
    fails = report.failures()
    groups = report.groups()
    detail = (
        (f"{len(fails)} of {len(report.checks)} checks failed" if fails else f"all {len(report.checks)} checks passed")
        + f" in {len(groups)} group(s)"
        + (f", {sum(report.seconds.values()):.1f}s" if report.seconds else "")
        + (f"; {len(rec.entries)} commands in the evidence" if rec is not None else "")
    )
    out = verdict(title or f"twin verify {report.lab}", report.passed, detail)
    if fails:
        out += ["### Failures", ""]
        for c in fails[:FAILURES_SHOWN]:
            out += failure(c, rec)
        if len(fails) > FAILURES_SHOWN:
            out += [f"... and {len(fails) - FAILURES_SHOWN} more failures (below).", ""]
    out += ["### Groups", ""] + table(
        ["group", "checks", "passed", "failed", "seconds"],
        [
            (g, len(cs), sum(c.passed for c in cs), sum(not c.passed for c in cs), f"{report.seconds.get(g, 0):.1f}")
            for g, cs in groups.items()
        ],
    )
    if "checks" in groups:
        out += ["### Your checks", ""] + table(
            ["check", "type", "result", "what was seen"],
            [(c.name, c.data.get("type", ""), "pass" if c.passed else "**FAIL**", c.message) for c in groups["checks"]],
        )
    unexercised = report.extra.get("not_exercised") or []
    if unexercised:
        out += ["### Not exercised by this run", ""] + table(
            ["safeguard", "why"], [(x["safeguard"], x["why"]) for x in unexercised]
        )
    derived = [c for c in fails if c.group != "checks"]
    if derived:
        out += ["### Failed derived checks", ""] + table(
            ["group", "check", "cause"], [(c.group, c.name, c.message) for c in derived]
        )
    return "\n".join(out) + "\n"


def comparison_md(cmp: Comparison, title: str = "") -> str:
    """A baseline comparison in Markdown: what differs and is not allowed, then what is allowed."""
    c = cmp.counts()
    detail = (
        "the lab matches its baseline"
        if not cmp.differences
        else f"{len(cmp.unallowed)} difference(s) not allowed ({c['disappeared']} disappeared, {c['appeared']} "
        f"appeared, {c['changed']} changed), {len(cmp.allowed)} allowed"
    ) + f"; baseline of {cmp.baseline_lab} recorded {cmp.recorded}"
    return (
        "\n".join(verdict(title or f"twin baseline compare {cmp.lab}", cmp.passed, detail) + comparison_tables(cmp))
        + "\n"
    )


def comparison_tables(cmp: Comparison, level: str = "###") -> list[str]:
    head = ["node", "vrf", "what", "key", "change", "before", "after"]
    row = lambda d: (d.node, d.vrf, d.what, d.key, d.change, show(d.before), show(d.after))  # noqa: E731
    out = []
    if cmp.unallowed:
        out += [f"{level} Not allowed", ""] + table(head, [row(d) for d in cmp.unallowed])
    if cmp.allowed:
        out += [f"{level} Allowed", ""] + table(head + ["allowed by"], [(*row(d), d.allowed_by) for d in cmp.allowed])
    return out


def evidence_doc(rec: Recorder, command: str, lab: str, passed: bool | None) -> dict[str, Any]:
    return {
        "format": "twin-evidence/1",
        "command": command,
        "lab": lab,
        "passed": passed,
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commands": rec.to_list(),
    }
