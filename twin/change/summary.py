"""A rehearsal in Markdown (`twin rehearse --summary`): the verdict, each failed criterion with
its evidence, then the tables (criteria, flows, flapped sessions, routes, baseline, verify)."""

from __future__ import annotations

from twin.change.report import Rehearsal
from twin.runtime import Recorder
from twin.verify import markdown as md

FLOWS_SHOWN = 30


def rehearsal_md(rep: Rehearsal, rec: Recorder | None = None) -> str:
    verdicts = rep.verdicts()
    failed = [(c, d) for c, ok, d in verdicts if not ok]
    detail = (
        f"{len(failed)} of {len(verdicts)} criteria failed" if failed else f"all {len(verdicts)} criteria held"
    ) + f"; change {rep.change}"
    out = md.verdict(f"twin rehearse {rep.lab}", rep.passed, detail)
    if failed:
        out += ["### Failures", ""]
        for criterion, d in failed:
            out += [f"#### {md.cell(criterion)}", "", "> " + md.cell(d, 2000), ""]
        for report in (rep.verify, rep.verify_rollback):
            for c in (report.failures() if report else [])[: md.FAILURES_SHOWN]:
                out += md.failure(c, rec)
    out += ["### Criteria", ""] + md.table(
        ["criterion", "result", "detail"], [(c, "pass" if ok else "**FAIL**", d) for c, ok, d in verdicts]
    )
    if rep.timings:
        out += ["### Timeline (s after the change started)", ""] + md.table(
            list(rep.timings), [[f"{v:.2f}" for v in rep.timings.values()]]
        )
    flows = sorted(rep.flows, key=lambda r: (-r.longest_outage_s, -r.lost, r.src, r.dst))[:FLOWS_SHOWN]
    if flows:
        out += [f"### Flows ({len(rep.flows)} at {rep.rate_pps:.0f} pps each; the worst first)", ""] + md.table(
            ["tenant", "from", "to", "sent", "lost", "longest outage (ms)", "judged"],
            [
                (
                    r.tenant or "-",
                    r.src,
                    r.dst,
                    r.sent,
                    r.lost,
                    f"{r.longest_outage_s * 1000:.0f}",
                    "yes" if rep.is_judged(r) else "no (its host left)",
                )
                for r in flows
            ],
        )
    if rep.flapped:
        out += ["### Sessions that flapped", ""] + [f"- {f}" for f in rep.flapped] + [""]
    if rep.routes:
        out += ["### Routes per tenant", ""] + md.table(
            ["tenant", "added", "removed"],
            [
                (t, "<br>".join(ch["added"][:20]) or "-", "<br>".join(ch["removed"][:20]) or "-")
                for t, ch in rep.routes.items()
            ],
        )
    for name, cmp in (("Baseline after the change", rep.baseline), ("Baseline after rollback", rep.baseline_rollback)):
        if cmp is not None:
            out += [f"### {name}", ""] + (
                md.comparison_tables(cmp, "####") if cmp.differences else ["no difference", ""]
            )
    return "\n".join(out) + "\n"
