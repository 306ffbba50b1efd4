"""`twin traffic`: one RoCEv2 flow between two hosts of a running lab, and what arrived where."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

import click

from twin.base.errors import TwinError
from twin.cli.common import main, out, run
from twin.lab import Lab
from twin.lifecycle import LabContext
from twin.traffic import dcqcn, flows, wording


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
@click.option(
    "--count", type=click.IntRange(1, 100000), help="Packets (PSNs) in the flow [default: 16; 2000 with --congest]."
)
@click.option(
    "--payload", default=1024, show_default=True, type=click.IntRange(0, 8900), help="Payload bytes per packet."
)
@click.option("--dscp", default=26, show_default=True, type=click.IntRange(0, 63))
@click.option("--ecn", default=2, show_default=True, type=click.IntRange(0, 3), help="ECN bits (2 = ECT(0)).")
@click.option(
    "--opcode", default=4, show_default=True, type=click.IntRange(0, 255), help="BTH opcode (4 = RC SEND only)."
)
@click.option("--qp", "dqp", default=0x11, show_default=True, type=click.IntRange(0, 0xFFFFFF), help="Destination QP.")
@click.option("--psn", default=0, show_default=True, type=click.IntRange(0, 0xFFFFFF), help="First PSN.")
@click.option(
    "--sport", default=49152, show_default=True, type=click.IntRange(1, 65535), help="UDP source port (ECMP entropy)."
)
@click.option("--cnp", is_flag=True, help="Send CNPs (congestion notifications) instead of data.")
@click.option(
    "--congest",
    is_flag=True,
    help="Send back to back so congestion points on the path mark it (ECN CE); "
    "DST answers marks with CNPs (at most one per QP per 50 us); report "
    "CE marks, CNPs and what each congestion point counted.",
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def traffic_(
    cli: click.Context,
    lab: str,
    src: str,
    dst: str,
    count: int | None,
    payload: int,
    dscp: int,
    ecn: int,
    opcode: int,
    dqp: int,
    psn: int,
    sport: int,
    cnp: bool,
    congest: bool,
    as_json: bool,
) -> None:
    """Send one RoCEv2 flow from host SRC to host DST's address and report what arrived where."""

    def send_traffic() -> None:
        nonlocal src, dst
        ctx = Lab(lab).context()
        src, dst = (_as_named(ctx, h) for h in (src, dst))
        for h in (src, dst):
            if not ctx.fabric.attachment_of(h):
                raise TwinError(f"{h!r} is not a host endpoint of {lab}; hosts: {', '.join(flows.hosts(ctx.fabric))}")
        f = flows.flow(
            ctx.fabric,
            src,
            dst,
            1,
            count=count or (2000 if congest else 16),
            payload=payload,
            dscp=dscp,
            ecn=ecn,
            opcode=opcode,
            dqp=dqp,
            psn=psn,
            sport=sport,
            cnp=cnp,
        )
        same = flows.same_tenant(ctx.fabric, src, dst)
        before = dcqcn.congestion_counters(ctx) if congest else {}
        r = flows.run(ctx, [f], {1: same}, cnps=congest)[1]
        points = dcqcn.delta(before, dcqcn.congestion_counters(ctx)) if congest else {}
        doc = {k: v for k, v in asdict(r).items() if k not in ("flow", "ce_times", "times")} | {
            "expected": "deliver" if same else "never"
        }
        if congest:
            doc |= {
                "cnps_allowed": dcqcn.expected_cnps(r.ce_times),
                "cnp_interval_us": dcqcn.CNP_INTERVAL_NS // 1000,
                "congestion_points": points,
            }
        if as_json:
            click.echo(json.dumps(doc, indent=2))
        else:
            out.print(wording.flow_line(ctx.fabric, r, same), markup=False)
            if congest:
                marked = "; ".join(f"{p} marked {n['ce']} of {n['ect']} ECN-capable frames" for p, n in points.items())
                out.print(
                    f"congestion: {r.ce} arrived marked CE; CNPs sent {r.cnps_sent} (the pacing rule, one per "
                    f"QP per {dcqcn.CNP_INTERVAL_NS // 1000} us, allows {doc['cnps_allowed']}), received by "
                    f"{src} {r.cnps_received}; " + (marked or "the lab has no congestion point")
                )
        ok = (
            r.delivered
            if same
            else not r.seen_at or all(flows.same_tenant(ctx.fabric, src, h) for h in r.seen_at) and r.received == 0
        )
        sys.exit(0 if ok else 1)

    run(cli, send_traffic)
