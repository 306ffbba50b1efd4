"""`twin` command line: thin wrappers over twin.Lab. One clear line on failure
(details with -v), non-zero exit codes, progress on stderr."""
from __future__ import annotations

import json
import sys
from typing import NoReturn

import click
from rich.console import Console
from rich.table import Table

from twin import images, state
from twin.errors import AlreadyUp, ApplyFailed, ChangeRefused, TopologyError, TwinError
from twin.lab import Lab

err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)
if not out.is_terminal:  # pipes and CI logs: do not squeeze tables into 80 columns
    out = Console(highlight=False, soft_wrap=True, width=160)


def fail(e: BaseException, verbose: bool, code: int = 1) -> NoReturn:
    """One clear line (every problem for a bad topology; everything with -v)."""
    text = str(e) or type(e).__name__
    if not (isinstance(e, (TopologyError, ChangeRefused, ApplyFailed)) or verbose):
        lines = text.splitlines()
        text = lines[0] + (" (-v for details)" if len(lines) > 1 else "")
    click.secho("error: ", fg="red", err=True, nl=False)
    click.echo(text, err=True)
    sys.exit(code)


class Ctx:
    def __init__(self, verbose: bool):
        self.verbose = verbose


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Show full error details.")
@click.pass_context
def main(ctx: click.Context, verbose: bool) -> None:
    """twin: a digital twin of an AI-cloud leaf/spine EVPN fabric, in containers."""
    ctx.obj = Ctx(verbose)


def run(ctx: click.Context, fn):
    try:
        return fn()
    except TwinError as e:
        fail(e, ctx.obj.verbose)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


@main.command()
@click.argument("topology", type=click.Path(dir_okay=False))
@click.option("--name", help="Lab name (default: the topology's name).")
@click.option("--timeout", type=float, help="Convergence deadline in seconds (default: from lab size).")
@click.option("--image", help="Node image tag (default: built from images/ when missing).")
@click.option("--keep", is_flag=True, help="Keep what was created when bring-up fails, for debugging.")
@click.pass_context
def up(ctx, topology, name, timeout, image, keep):
    """Bring a lab up from TOPOLOGY and wait until it has converged."""
    def go():
        lab = Lab.load(topology, name=name)
        try:
            with err.status(f"[bold]{lab.name}[/bold]: starting") as status:
                timings = lab.up(image=image, timeout=timeout, keep=keep,
                                 say=lambda m: (status.update(f"[bold]{lab.name}[/bold]: {m}"),
                                                err.print(f"  {m}") if ctx.obj.verbose else None))
        except AlreadyUp as e:
            click.echo(str(e), err=True)
            return
        out.print(f"lab [bold]{lab.name}[/bold] is up: {len(lab.fabric.nodes)} nodes, "
                  f"{len(lab.fabric.sessions())} BGP sessions Established, converged in "
                  f"{timings['converged']:.1f}s (containers {timings['containers']:.1f}s); configs in {lab.dir}")
    run(ctx, go)


@main.command()
@click.argument("lab")
@click.pass_context
def down(ctx, lab):
    """Remove everything LAB owns (also after a failed or killed `up`)."""
    def go():
        removed = Lab(lab).down()
        out.print(f"lab [bold]{lab}[/bold]: removed {len(removed)} containers" if removed
                  else f"lab [bold]{lab}[/bold]: nothing left to remove")
    run(ctx, go)


@main.command()
@click.argument("lab")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def status(ctx, lab, as_json):
    """Nodes, container state and BGP sessions up/expected of LAB."""
    def go():
        st = Lab.open(lab).status()
        if as_json:
            click.echo(json.dumps(st, indent=2))
            return
        if st["status"] == "absent":
            raise TwinError(f"no lab named {lab!r}; `twin list` shows the labs")
        t = Table(title=f"lab {lab}: {st['status']}", title_justify="left")
        for col in ("node", "kind", "state", "asn", "loopback", "bgp up/expected"):
            t.add_column(col)
        for r in st["nodes"]:
            bgp = ""
            if "sessions_expected" in r:
                up_ = "?" if r.get("sessions_up") is None else str(r["sessions_up"])
                bgp = f"{up_}/{r['sessions_expected']}"
                if r.get("sessions_down"):
                    bgp += f" (down: {', '.join(r['sessions_down'])})"
            t.add_row(r["node"], r["kind"], r["state"], str(r["asn"] or ""), r["loopback"] or "", bgp)
        out.print(t)
        if st["tenants"]:
            tt = Table(title=f"tenants (VRF backend: {st['vrf_backend']})", title_justify="left")
            for col in ("tenant", "vrf", "l3vni", "VTEP", "L2VNIs up (segment)", "hosts", "type-2", "type-3", "type-5"):
                tt.add_column(col)
            for t in st["tenants"]:
                segs = {s["l2vni"]: s["segment"] for s in t["segments"]}
                for i, (v, r) in enumerate(t["vteps"].items()):
                    up = ", ".join(f"{x} ({segs[x]})" for x in r.get("vnis_up", []) if x in segs)
                    if r.get("vnis_missing"):
                        up += f"; MISSING {', '.join(map(str, r['vnis_missing']))}"
                    hosts = ", ".join(h["host"] for h in t["hosts"] if h["vtep"].startswith(v + ":"))
                    head = [t["tenant"], t["vrf"], str(t["l3vni"])] if i == 0 else ["", "", ""]
                    tt.add_row(*head, v, up, hosts, *(str(r.get(k, "?")) for k in ("type2", "type3", "type5")))
            out.print(tt)
        bad = [r for r in st["nodes"] if r["state"] != "running" or
               ("sessions_expected" in r and r.get("sessions_up") != r["sessions_expected"])]
        bad += [v for t in st["tenants"] for v, r in t["vteps"].items() if r.get("vnis_missing") or
                not r.get("reachable", True)]
        if bad:
            sys.exit(1)
    run(ctx, go)


@main.command(name="plan")
@click.argument("lab")
@click.argument("change", type=click.Path())
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def plan_(ctx, lab, change, as_json):
    """Show what CHANGE would do to LAB: topology changes, per-node config diffs, FRR reloads and kernel commands.

    CHANGE is an edited topology file, or a directory of node configs (<dir>/<node>/frr.conf)."""
    from twin import apply as A

    def go():
        handle = _up_lab(lab)
        p = A.plan(handle, A.load_change(handle, change))
        if as_json:
            click.echo(json.dumps(p.as_dict(), indent=2))
        else:
            click.echo(p.text(), nl=False)
    run(ctx, go)


@main.command(name="apply")
@click.argument("lab")
@click.argument("change", type=click.Path())
@click.option("--timeout", type=float, help="Convergence deadline in seconds (default: from lab size).")
@click.option("--no-wait", is_flag=True, help="Return once applied, without waiting for convergence.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def apply_(ctx, lab, change, timeout, no_wait, as_json):
    """Apply CHANGE to the running LAB: FRR reload (no restart), kernel reconciled, then wait for convergence.

    CHANGE is an edited topology file, or a directory of node configs (<dir>/<node>/frr.conf).
    A bad change is refused and the lab left untouched; one that fails half way is rolled back."""
    from twin import apply as A

    def go():
        handle = _up_lab(lab)
        with err.status(f"applying {change} to {lab}") as st:
            res = A.apply(handle, A.load_change(handle, change), timeout=timeout, wait=not no_wait,
                          say=lambda m: st.update(m))
        if as_json:
            click.echo(json.dumps(res.as_dict(), indent=2))
        else:
            click.echo(f"applied {change} to {lab}: " + ("; ".join(res.changes) or "no change"))
            if res.reloaded or res.restarted:
                click.echo(f"  FRR reloaded on: {', '.join(res.reloaded) or '-'}"
                           + (f"; restarted on: {', '.join(res.restarted)}" if res.restarted else ""))
            for k, v in res.timings.items():
                click.echo(f"  {k} after {v:.1f}s")
            if res.missing:
                click.echo(f"  NOT converged; still missing ({len(res.missing)}):")
                for m in res.missing[:40]:
                    click.echo(f"    - {m}")
        sys.exit(0 if res.converged else 1)
    run(ctx, go)


@main.command(name="rehearse")
@click.argument("lab")
@click.argument("change")
@click.option("--max-loss", type=int, default=0, show_default=True,
              help="Packets any one flow may lose (-1: no limit).")
@click.option("--max-outage", type=float, help="Longest outage any flow may see, in ms.")
@click.option("--max-reconverge", type=float, help="Seconds from the change until the data plane is whole again.")
@click.option("--rollback", is_flag=True, help="Restore the previous intent (or revert the fault) and verify again.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Write JUnit XML to this file.")
@click.pass_context
def rehearse_(ctx, lab, change, max_loss, max_outage, max_reconverge, rollback, as_json, junit):
    """Rehearse CHANGE on LAB with RoCE traffic flowing between all same-tenant hosts; report the impact.

    CHANGE: an edited topology file, a directory of node configs, or a fault:
    fault:link-down:NODE:PORT, fault:link-loss:NODE:PORT:PERCENT, fault:node-stop|node-kill|node-restart:NODE,
    fault:daemon-kill:NODE[:DAEMON]. Exit 0 only if the change applied, the fabric converged and verified,
    and every threshold held."""
    from twin.rehearse import Thresholds, rehearse

    def go():
        handle = _up_lab(lab)
        th = Thresholds(max_loss=None if max_loss < 0 else max_loss,
                        max_outage=None if max_outage is None else max_outage / 1000.0,
                        max_reconverge=max_reconverge)
        with err.status(f"rehearsing {change} on {lab}") as st:
            rep = rehearse(handle, change, th, rollback=rollback, say=lambda m: st.update(m))
        if junit:
            rep.write_junit(junit)
        click.echo(rep.to_json() if as_json else rep.text(), nl=as_json)
        sys.exit(0 if rep.passed else 1)
    run(ctx, go)


def _up_lab(lab: str) -> Lab:
    handle = Lab.open(lab)
    if handle.fabric is None or not handle.runtime.containers(lab):
        raise TwinError(f"no lab named {lab!r} is up; `twin list` shows the labs")
    return handle


@main.command(name="verify")
@click.argument("lab")
@click.option("--only", "only", multiple=True, metavar="GROUP",
              help="Run only these check groups (repeatable): control, traffic, isolation, underlay, zerotrust.")
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Write JUnit XML to this file.")
@click.pass_context
def verify_(ctx, lab, only, as_json, junit):
    """Verify LAB against its topology: state, RoCE traffic, isolation, zero-trust. Exit 0 only if all pass."""
    from twin import verify

    def go():
        handle = _up_lab(lab)
        with err.status(f"verifying {lab}"):
            report = verify.run(handle, only=list(only) or None)
        if junit:
            report.write_junit(junit)
        if as_json:
            click.echo(report.to_json())
        else:
            print_report(report)
        sys.exit(0 if report.passed else 1)
    run(ctx, go)


def print_report(report) -> None:
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
    t = Table(title=f"twin verify {report.lab}", title_justify="left")
    for col in ("group", "checks", "passed", "failed", "seconds"):
        t.add_column(col, justify="right" if col != "group" else "left")
    for group, checks in report.groups().items():
        failed = sum(not c.passed for c in checks)
        t.add_row(group, str(len(checks)), str(len(checks) - failed),
                  f"[red]{failed}[/red]" if failed else "0", f"{report.seconds.get(group, 0):.1f}")
    out.print(t)
    for c in report.failures():
        out.print(f"[red]FAIL[/red] {c.group}: {c.name}: ", end="")
        out.print(c.message, markup=False, highlight=False)
    out.print("[green]PASSED[/green]" if report.passed else f"[red]FAILED[/red]: {len(report.failures())} checks")


@main.command(name="traffic")
@click.argument("lab")
@click.argument("src")
@click.argument("dst")
@click.option("--count", default=16, show_default=True, help="Packets (PSNs) in the flow.")
@click.option("--payload", default=1024, show_default=True, help="Payload bytes per packet.")
@click.option("--dscp", default=26, show_default=True)
@click.option("--ecn", default=2, show_default=True, help="ECN bits (2 = ECT(0)).")
@click.option("--opcode", default=4, show_default=True, help="BTH opcode (4 = RC SEND only).")
@click.option("--qp", "dqp", default=0x11, show_default=True, help="Destination QP.")
@click.option("--psn", default=0, show_default=True, help="First PSN.")
@click.option("--sport", default=49152, show_default=True, help="UDP source port (ECMP entropy).")
@click.option("--cnp", is_flag=True, help="Send CNPs (congestion notifications) instead of data.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def traffic_(ctx, lab, src, dst, count, payload, dscp, ecn, opcode, dqp, psn, sport, cnp, as_json):
    """Send one RoCEv2 flow from host SRC to host DST's address and report what arrived where."""
    from dataclasses import asdict

    from twin.traffic import flows

    def go():
        handle = _up_lab(lab)
        for h in (src, dst):
            if not handle.fabric.attachment_of(h):
                raise TwinError(f"{h!r} is not a host endpoint of {lab}; hosts: {', '.join(flows.hosts(handle.fabric))}")
        f = flows.flow(handle.fabric, src, dst, 1, count=count, payload=payload, dscp=dscp, ecn=ecn,
                       opcode=opcode, dqp=dqp, psn=psn, sport=sport, cnp=cnp)
        same = flows.same_tenant(handle.fabric, src, dst)
        r = flows.run(handle, [f], {1: same})[1]
        doc = {k: v for k, v in asdict(r).items() if k != "flow"} | {"expected": "deliver" if same else "never"}
        if as_json:
            click.echo(json.dumps(doc, indent=2))
        else:
            out.print(f"{src} -> {dst} ({f.dst_ip}), expected to {doc['expected']}: sent {r.sent}, received {r.received}"
                      f", ICRC bad {r.icrc_bad}, DSCP/ECN changed {r.tos_changed}, PSN gaps {r.gaps}, "
                      f"duplicates {r.duplicates}, reordered {r.reordered}; seen at {r.seen_at or 'no host'}")
        ok = r.delivered if same else not r.seen_at or all(
            flows.same_tenant(handle.fabric, src, h) for h in r.seen_at) and r.received == 0
        sys.exit(0 if ok else 1)
    run(ctx, go)


@main.command(name="exec", context_settings={"ignore_unknown_options": True})
@click.argument("lab")
@click.argument("node")
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def exec_(ctx, lab, node, cmd):
    """Run CMD in NODE of LAB: twin exec LAB NODE -- vtysh -c 'show bgp summary'."""
    def go():
        res = Lab(lab).node(node).run(list(cmd), timeout=3600)
        sys.stdout.write(res.stdout)
        sys.stderr.write(res.stderr)
        sys.exit(res.rc)
    run(ctx, go)


@main.command(name="list")
@click.pass_context
def list_(ctx):
    """Labs on this host: from Docker labels and lab directories."""
    def go():
        from twin.runtime.docker import DockerRuntime
        running = DockerRuntime().labs()
        names = sorted(set(running) | set(state.known_labs()))
        t = Table(title_justify="left")
        for col in ("lab", "status", "containers", "running", "topology"):
            t.add_column(col)
        for n in names:
            st, _ = state.load(state.labdir(n))
            cs = running.get(n, [])
            t.add_row(n, st.status if st else "orphaned", str(len(cs)),
                      str(sum(c.status == "running" for c in cs)), st.topology if st else "")
        out.print(t if names else "no labs")
    run(ctx, go)


@main.group()
def image():
    """Node images (built without a registry)."""


@image.command(name="build")
@click.option("--suite", default=images.DEFAULT_SUITE, show_default=True,
              help="Debian release of the image (bookworm: FRR 8.4, trixie: FRR 10.3).")
@click.option("--force", is_flag=True, help="Rebuild even when the recipe did not change.")
@click.pass_context
def image_build(ctx, suite, force):
    """Build the base and node images when their recipe changed."""
    def go():
        from twin.runtime.docker import DockerRuntime
        with err.status("building images") as status:
            tag = images.ensure(DockerRuntime().client, suite=suite, force=force,
                                say=lambda m: (status.update(m), err.print(f"  {m}")))
        out.print(tag)
    run(ctx, go)


def _register() -> None:
    from twin.faults import fault_group
    from twin.inventory import inventory_cmd

    main.add_command(fault_group)
    main.add_command(inventory_cmd)


_register()

if __name__ == "__main__":
    main()
