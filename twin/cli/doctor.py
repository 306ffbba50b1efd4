"""`twin doctor`: what this machine gives twin, before a lab is made (`twin.lifecycle.doctor`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from twin.cli.common import err, main, out, run
from twin.lab import Lab
from twin.lifecycle import doctor as diagnosis


@main.command()
@click.option(
    "--topology",
    "topologies",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True),
    metavar="FILE",
    help="Also judge this topology (twin, containerlab or Air file) against the host "
    "limits and CPU; repeatable. The default lab (topologies/aipod.yml) always is.",
)
@click.option("--json", "as_json", is_flag=True, help="The report as JSON.")
@click.pass_context
def doctor(cli: click.Context, topologies: tuple[str, ...], as_json: bool) -> None:
    """Say what this machine gives twin and what each lack changes.

    Docker engine and version; kernel features probed in a throwaway namespace (VRF devices,
    VXLAN, dummy, 802.1Q VLANs, bonding, netem, RED, fq_codel, tc matchall, nftables NAT and `log group`,
    drop_monitor) with what twin does without each; the VRF backend and rate-limit mechanism a lab
    gets and why; host limits and CPU against the default lab and each --topology; node images and
    their FRR; what killed labs left behind. Exit 1, with the fix, when something twin needs is
    missing (root, Docker, bridges, veth pairs, VXLAN)."""

    def diagnose_host() -> None:
        files = ([diagnosis.DEFAULT_TOPOLOGY] if diagnosis.DEFAULT_TOPOLOGY.exists() else []) + [
            Path(t).resolve() for t in topologies
        ]
        fabrics = [(lab := Lab.load(f)).fabric or lab.to_bring_up() for f in dict.fromkeys(files)]  # each file once
        with err.status("probing this machine"):
            report = diagnosis.diagnose(fabrics)
        if as_json:
            out.print_json(json.dumps(report.to_dict(), default=str))
        else:
            for line in diagnosis.lines(report):
                out.print(line, markup=False)
        if not report.ok:
            sys.exit(1)

    run(cli, diagnose_host)
