"""The report of a rehearsal: thresholds, verdicts, and the report as text, JSON and JUnit."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twin.base import junit
from twin.traffic.results import StreamResult
from twin.verify.compare import Comparison
from twin.verify.result import Report

NOISY_TOLERANCE = 0.05  # the noisy neighbour's delivered rate may exceed its limit by this share


@dataclass
class Thresholds:
    max_loss: int | None = 0  # packets any one flow may lose
    max_outage: float | None = None  # s, the longest outage of any flow
    max_reconverge: float | None = None  # s, change to data plane whole again


@dataclass
class Rehearsal:
    lab: str
    change: str
    flows: list[StreamResult] = field(default_factory=list)
    rate_pps: float = 0.0
    flapped: list[str] = field(default_factory=list)
    routes: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)  # s after the change started
    apply: dict | None = None
    error: str = ""
    missing: list[str] = field(default_factory=list)  # not converged to the intent
    verify: Report | None = None
    verify_rollback: Report | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    hosts_out: list[str] = field(default_factory=list)  # hosts the change took away
    noisy_host: str | None = None  # a noisy neighbour flooded from here ...
    noisy: dict | None = None  # ... with these figures (offered, delivered...)
    events: list[dict] = field(default_factory=list)  # `twin events` of the change window
    baseline: Comparison | None = None  # the lab after the change vs a baseline
    baseline_rollback: Comparison | None = None  # ... and after the rollback

    def is_judged(self, r: StreamResult) -> bool:
        """A flow counts unless the change took one of its hosts away, or it left the noisy neighbour."""
        return r.src not in self.hosts_out and r.dst not in self.hosts_out and r.src != self.noisy_host

    @property
    def judged(self) -> list[StreamResult]:
        return [r for r in self.flows if self.is_judged(r)]

    def verdicts(self) -> list[tuple[str, bool, str]]:
        """(criterion, passed, detail) for each thing the rehearsal is judged on."""
        out = [("change applied", not self.error, self.error or self.change)]
        if self.missing or "converged" in self.timings:
            out.append(
                (
                    "converged to the intent",
                    not self.missing,
                    f"{len(self.missing)} missing, e.g. {self.missing[0]}"
                    if self.missing
                    else f"after {self.timings['converged']:.1f}s",
                )
            )
        th = self.thresholds
        worst_loss = max((r.lost for r in self.judged), default=0)
        worst_out = max((r.longest_outage_s for r in self.judged), default=0.0)
        if th.max_loss is not None:
            out.append(
                (f"loss per flow <= {th.max_loss} packets", worst_loss <= th.max_loss, f"worst flow lost {worst_loss}")
            )
        if th.max_outage is not None:
            out.append(
                (
                    f"longest outage <= {th.max_outage * 1000:.0f} ms",
                    worst_out <= th.max_outage,
                    f"longest {worst_out * 1000:.0f} ms",
                )
            )
        if th.max_reconverge is not None:
            rc = self.timings.get("data_plane_whole")
            out.append(
                (
                    f"reconverged within {th.max_reconverge:g}s",
                    rc is not None and rc <= th.max_reconverge,
                    "never" if rc is None else f"{rc:.1f}s",
                )
            )
        if self.noisy is not None and self.noisy.get("limit_fps"):
            n, cap = self.noisy, self.noisy["limit_fps"]
            out.append(
                (
                    f"noisy neighbour {n['src']} held to its limit ({n['limit']})",
                    n["delivered_fps"] <= cap * (1 + NOISY_TOLERANCE),
                    f"delivered {n['delivered_fps']} of {n['offered_fps']} frames/s offered, limit {cap}",
                )
            )
        if self.verify is not None:
            out.append(
                (
                    "verify after the change",
                    self.verify.passed,
                    f"{len(self.verify.failures())} failed of {len(self.verify.checks)}",
                )
            )
        if self.verify_rollback is not None:
            out.append(
                (
                    "verify after rollback",
                    self.verify_rollback.passed,
                    f"{len(self.verify_rollback.failures())} failed of {len(self.verify_rollback.checks)}",
                )
            )
        for name, cmp in (
            ("baseline after the change", self.baseline),
            ("baseline after rollback", self.baseline_rollback),
        ):
            if cmp is not None:
                out.append(
                    (
                        f"{name}: no difference not allowed",
                        cmp.passed,
                        f"{len(cmp.unallowed)} not allowed, e.g. {cmp.unallowed[0].line()}"
                        if cmp.unallowed
                        else f"{len(cmp.allowed)} allowed difference(s)",
                    )
                )
        return out

    @property
    def passed(self) -> bool:
        return all(ok for _, ok, _ in self.verdicts())

    def to_dict(self) -> dict[str, Any]:
        return {
            "lab": self.lab,
            "change": self.change,
            "passed": self.passed,
            "error": self.error,
            "verdicts": [{"criterion": c, "passed": ok, "detail": d} for c, ok, d in self.verdicts()],
            "timings": self.timings,
            "rate_pps_per_flow": round(self.rate_pps, 1),
            "flows": [
                {
                    "src": r.src,
                    "dst": r.dst,
                    "tenant": r.tenant,
                    "sent": r.sent,
                    "received": r.received,
                    "lost": r.lost,
                    "longest_outage_ms": round(r.longest_outage_s * 1000, 1),
                    "outages_s": [[round(a, 3), round(b, 3)] for a, b in r.outages],
                    "duplicates": r.duplicates,
                    "reordered": r.reordered,
                    "judged": self.is_judged(r),
                }
                for r in self.flows
            ],
            "flapped_sessions": self.flapped,
            "routes": self.routes,
            "missing": self.missing,
            "noisy": self.noisy,
            "apply": self.apply,
            "events": self.events,
            "verify": self.verify.to_dict() if self.verify else None,
            "verify_rollback": self.verify_rollback.to_dict() if self.verify_rollback else None,
            "baseline": self.baseline.to_dict() if self.baseline else None,
            "baseline_rollback": self.baseline_rollback.to_dict() if self.baseline_rollback else None,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)

    def text(self) -> str:
        lines = [f"rehearsal of {self.change} on lab {self.lab}: {'PASSED' if self.passed else 'FAILED'}"]
        t = self.timings
        lines.append("  timeline (s after the change started): " + ", ".join(f"{k} {v:.2f}" for k, v in t.items()))
        lossy = [r for r in self.flows if r.lost]
        lines.append(f"  flows: {len(self.flows)} at {self.rate_pps:.0f} pps each; {len(lossy)} of them lost packets")
        for r in sorted(self.flows, key=lambda r: (-r.longest_outage_s, r.src, r.dst)):
            mark = (
                ""
                if self.is_judged(r)
                else (
                    "  (not judged: the noisy neighbour)"
                    if r.src == self.noisy_host
                    else "  (not judged: its host left)"
                )
            )
            lines.append(
                f"    {r.tenant or '-':8} {r.src:>8} -> {r.dst:<8} sent {r.sent:6} lost {r.lost:5} "
                f"longest outage {r.longest_outage_s * 1000:7.0f} ms{mark}"
            )
        if self.noisy:
            n = self.noisy
            lines.append(
                f"  noisy neighbour {n['tenant']} {n['src']} -> {n['dst']} (limit {n['limit']}): offered "
                f"{n['offered_mbps']} Mbit/s ({n['offered_fps']} frames/s), delivered {n['delivered_mbps']} "
                f"Mbit/s ({n['delivered_fps']}), dropped {n['dropped']}"
            )
        lines.append(f"  sessions that flapped: {len(self.flapped)}")
        lines += [f"    {f}" for f in self.flapped]
        lines.append("  routes per tenant: " + ("no change" if not self.routes else ""))
        for tenant, ch in self.routes.items():
            lines.append(f"    {tenant}: +{len(ch['added'])} -{len(ch['removed'])}")
            lines += [f"      + {r}" for r in ch["added"][:20]] + [f"      - {r}" for r in ch["removed"][:20]]
        lines.append(f"  events in the change window: {len(self.events)}")
        lines += [f"    {time.strftime('%H:%M:%S', time.localtime(e['time']))} {e['text']}" for e in self.events[-20:]]
        lines.append("  verdicts:")
        lines += [f"    {'ok  ' if ok else 'FAIL'} {c}: {d}" for c, ok, d in self.verdicts()]
        for name, rep in (("verify", self.verify), ("verify after rollback", self.verify_rollback)):
            for c in (rep.failures() if rep else [])[:20]:
                lines.append(f"    {name}: FAIL {c.group}: {c.name}: {c.message}")
        lines += congestion_lines(self.verify)
        for name, cmp in (("baseline", self.baseline), ("baseline after rollback", self.baseline_rollback)):
            lines += [f"    {name}: DIFFERS {d.line()}" for d in (cmp.unallowed if cmp else [])[:20]]
        return "\n".join(lines) + "\n"

    def write_junit(self, path: str | Path) -> None:
        """One testsuite per rehearsal: a testcase per verdict and per flow."""
        cases = [(f"verdict: {c}", ok, d) for c, ok, d in self.verdicts()]
        th = self.thresholds.max_loss
        cases += [
            (
                f"flow {r.tenant} {r.src} -> {r.dst}",
                th is None or r.lost <= th or not self.is_judged(r),
                f"lost {r.lost} of {r.sent}, longest outage {r.longest_outage_s * 1000:.0f} ms",
            )
            for r in self.flows
        ]
        suite = junit.Suite(
            f"rehearse {self.change}",
            [
                junit.Case(f"twin.{self.lab}.rehearse", name, failure=None if ok else detail, detail=detail)
                for name, ok, detail in cases
            ],
        )
        junit.write(path, f"twin rehearse {self.lab}", [suite], totals=False)


def congestion_lines(rep: Report | None) -> list[str]:
    """What the verify after the change saw at each congestion point (its bursts above the point's
    rate): the CE marks there, the CNPs back at the sender, what a dialect's part of the group said
    (NVUE's: the RoCE QoS classes at every hop), and the points it could not drive."""
    cong = (rep.extra.get("congestion") if rep else None) or {}
    out = []
    for p in cong.get("points", []):
        e = p["ect"]
        out.append(
            f"    {p['point']} (above {p['above']}), {p['flow']}: {e['ce']} of {e['received']} ECN-capable frames "
            f"marked CE (counted there {p['counted'].get('ce', 0)}), {e['cnps_received']} of {e['cnps_sent']} CNPs "
            "back at the sender"
        )
    out += (
        [f"    {c.name}: {c.message}" for c in rep.checks if c.group == "congestion" and c.passed and c.message]
        if rep
        else []
    )
    out += [f"    not exercised: {n['safeguard']}: {n['why']}" for n in cong.get("not_exercised", [])]
    return ["  congestion (verify's bursts above each point's rate, after the change):", *out] if out else []
