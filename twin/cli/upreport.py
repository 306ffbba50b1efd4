"""`twin up --json` and `--junit`: the bring-up's verdict for a CI job, converged or not.

Converged: `twin.host.up_summary`'s document (--json) and one passing case (JUnit). Not converged
within its deadline: what is still missing by node and kind (`twin.base.missing`), every item in
--json, a failing JUnit case per node and kind (its items its text), and the host-level causes.
"""

from __future__ import annotations

import json

import click

from twin.base import junit
from twin.base.errors import ConvergenceTimeout, TwinError
from twin.cli.common import out


def failed_doc(lab: str, e: TwinError, kept: bool) -> dict:
    first = (str(e).splitlines() or [type(e).__name__])[0]
    doc = {"lab": lab, "status": "failed", "error": first, "kept": kept}
    if isinstance(e, ConvergenceTimeout):
        doc |= {
            "what": e.what,
            "seconds": round(e.seconds, 1),
            "causes": e.causes,
            "missing_count": len(e.missing),
            "missing": e.groups(),
        }
    return doc


def write(
    lab: str,
    as_json: bool,
    junit_file: str | None,
    doc: dict | None = None,
    error: TwinError | None = None,
    kept: bool = False,
) -> None:
    """The verdict on stdout (`as_json`) and into `junit_file`: `doc` when the lab is up, else `error`'s."""
    got = doc if error is None else failed_doc(lab, error, kept)
    if as_json and got is not None:
        click.echo(json.dumps(got, indent=2))
    if junit_file:
        suite = junit.Suite(f"twin up {lab}", cases(lab, got or {}, error))
        junit.write(junit_file, f"twin up {lab}", [suite])


def cases(lab: str, doc: dict, error: TwinError | None) -> list[junit.Case]:
    cls = f"twin.{lab}.up"
    if error is None:
        return [junit.Case(cls, "converged", detail=f"converged in {doc.get('timings', {}).get('converged', 0):.1f}s")]
    if not isinstance(error, ConvergenceTimeout) or not error.missing:
        return [junit.Case(cls, "bring-up", failure=doc["error"], detail=str(error))]
    out = (
        [junit.Case(cls, "host-level causes", failure=error.causes[0], detail="\n".join(error.causes))]
        if error.causes
        else []
    )
    return out + [
        junit.Case(
            cls,
            f"{g['node']} {g['kind']}".strip(),
            failure=f"{g['count']} missing: {g['items'][0]}",
            detail="\n".join(g["items"]),
        )
        for g in doc["missing"]
    ]


def print_up(doc: dict) -> None:
    """`twin up`'s line for a lab it brought up (`twin.host.up_summary`), here or through a server."""
    sessions, mine, adjacencies = doc["sessions"], doc["generic_routers"], doc["adjacencies"]
    timings = doc["timings"]
    out.print(
        f"lab [bold]{doc['lab']}[/bold] is up: {doc['nodes']} nodes"
        + (f", {sessions} BGP sessions Established" if sessions or not mine else "")
        + (f", {adjacencies} adjacencies of {mine} routers up" if mine else "")
        + ", converged in "
        f"{timings['converged']:.1f}s (containers {timings['containers']:.1f}s); configs in {doc['dir']}"
        + (f" ({doc['configs_nodes']} nodes run yours)" if doc["configs_nodes"] else "")
        + (f"; BGP timers {doc['timers']}, scaled for this host" if doc["timers"] else "")
    )
