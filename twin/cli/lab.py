"""Lab commands: up, wait, down, status, list, exec, image build."""

from __future__ import annotations

import json
import sys

import click
from rich.table import Table

from twin import host, kinds
from twin.base.errors import AlreadyUp, ConvergenceTimeout, TwinError
from twin.cli import upreport
from twin.cli.common import err, main, out, progress, run
from twin.cli.lint import STRICT_HELP, quiet, warn
from twin.config.backend import CHOICES
from twin.config.naming import container_name
from twin.interop import parse_roles
from twin.lab import Lab
from twin.lifecycle import generic
from twin.lifecycle.status import LabStatus
from twin.topology import Confined

VRF_BACKEND_HELP = (
    "How tenant VRFs are made on VTEPs, over the topology's defaults.vrf_backend: netns (the "
    "default on every kernel: a network namespace per tenant, what the test suite runs) or device "
    "(Linux VRF devices: needs CONFIG_NET_VRF; not exercised by twin's test suite)."
)


@main.command()
@click.argument("topology", type=click.Path(dir_okay=False), metavar="TOPOLOGY|LAB.clab.yml|AIR.json|AIR.dot")
@click.option(
    "--configs",
    type=click.Path(file_okay=False, exists=True),
    metavar="DIR",
    help="Your own FRR configs: DIR/<node>/frr.conf (optionally DIR/<node>/daemons) or "
    "DIR/<node>.conf. Those nodes boot your files instead of twin's; the others get twin's. "
    "FRR checks every file first (vtysh --dryrun): a refused line is reported with its "
    "file:line and nothing is created.",
)
@click.option(
    "--role",
    "roles",
    multiple=True,
    metavar="NODE=KIND[,...]",
    help="A containerlab or Air file's nodes of kinds twin cannot run (SR Linux, cEOS...) or does not "
    "know as twin kinds, whose day-0 config twin renders; repeatable, e.g. "
    "--role leaf1=leaf,spine=spine.",
)
@click.option("--name", help="Lab name (default: the topology's name).")
@click.option(
    "--timeout",
    type=float,
    help="Deadline of the whole bring-up in seconds, from the command's start: it ends by then, converged "
    "or naming what is missing (default: convergence within 60 s + 1 s per FRR node once wired).",
)
@click.option("--image", help="Node image tag (default: built from twin's recipe, twin/images/, when missing).")
@click.option(
    "--images",
    type=click.Choice(["auto", "own", "twin"]),
    help="Which image a node naming its own runs (a containerlab node's `image`): auto, its own where "
    "the engine has it, else twin's node image (the default, or the topology's defaults.images); "
    "own, its own or nothing is made; twin, twin's node image.",
)
@click.option(
    "--keep-on-failure",
    "--keep",
    "keep",
    is_flag=True,
    help="When bring-up fails, leave the lab as it was (containers, links, FRR, its directory) for "
    "inspection (`twin exec`, `twin status`, `twin verify`); `twin down LAB` removes it.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="The verdict as JSON on stdout: the lab's summary, or what is still missing by node and kind.",
)
@click.option(
    "--junit",
    "junit_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="The verdict as JUnit XML: a case per node and kind still missing, or one passing case.",
)
@click.option(
    "--runtime",
    type=click.Choice(["docker", "containerlab"]),
    envvar="TWIN_RUNTIME",
    help="What makes the nodes and links: twin itself through the Docker SDK (default), or the "
    "containerlab CLI on twin's export (where containerlab is installed). Env: TWIN_RUNTIME.",
)
@click.option("--vrf-backend", type=click.Choice(list(CHOICES)), help=VRF_BACKEND_HELP)
@click.option(
    "--no-wait",
    is_flag=True,
    help="Return once the nodes run, are wired and FRR started (as `clab deploy`), for labs your own "
    "scripts configure; `twin wait LAB` waits for convergence afterwards.",
)
@click.option("--strict", is_flag=True, help=STRICT_HELP)
@click.option(
    "--strict-exec",
    is_flag=True,
    help="A node's exec command that fails ends the bring-up (by default it is reported and the lab "
    "goes on, as in containerlab).",
)
@click.option(
    "--confined",
    is_flag=True,
    help="A topology from a source not trusted with this host (a PR's, in CI): binds only of files beside "
    "it (read-only, no link out), only twin's node image (or --allow-image), its nodes' exec "
    "commands and exec checks run inside their containers (docs/server.md: the threat model).",
)
@click.option(
    "--allow-image",
    "allow_images",
    multiple=True,
    metavar="IMAGE",
    help="With --confined: an image its nodes may name besides twin's own (repeatable).",
)
@click.pass_context
def up(
    cli: click.Context,
    topology: str,
    configs: str | None,
    roles: tuple[str, ...],
    name: str | None,
    timeout: float | None,
    image: str | None,
    images: str | None,
    keep: bool,
    as_json: bool,
    junit_file: str | None,
    runtime: str | None,
    vrf_backend: str | None,
    no_wait: bool,
    strict: bool,
    strict_exec: bool,
    confined: bool,
    allow_images: tuple[str, ...],
) -> None:
    """Bring a lab up from TOPOLOGY and wait until it has converged.

    TOPOLOGY is a twin topology file (or the name of one twin ships: aipod, pod8, leaf-vtep,
    dpu-services, fabric-4x8), a containerlab topology (known by its content, whatever
    its name) or an NVIDIA Air .json/.dot, imported on the way as `twin import` does: a
    containerlab node's bound frr.conf/daemons are its configs; --role gives the kinds an
    Air file does not.
    The wiring and the tenants' kernel plane (VRFs, VXLAN, bridges) come from TOPOLOGY,
    the FRR configs from twin's rendering or, with --configs, from your files. Your files
    are linted against TOPOLOGY's intent first (as `twin lint` does: warnings, errors with
    --strict); the barrier and `twin verify` judge the lab against it; routers running
    your configs (kind router) by what their configs declare.

    On a lab that is already up: exit 0 if it runs this topology (and configs) and has
    converged, else exit 1 saying what differs."""

    def bring_up() -> None:
        if allow_images and not confined:
            raise click.UsageError("--allow-image names what a --confined lab may run; add --confined")
        rules = Confined(images=allow_images) if confined else None  # its files: the topology's directory
        lab = Lab.load(topology, name=name, runtime=runtime, configs=configs, roles=parse_roles(roles), confined=rules)
        try:
            with progress(lab.name, "starting") as say:
                timings = lab.up(
                    image=image,
                    timeout=timeout,
                    keep=keep,
                    vrf_backend=vrf_backend,
                    wait=not no_wait,
                    strict_exec=strict_exec,
                    images=images,
                    say=say,
                    strict=strict,
                    warn=quiet if strict else warn,
                )
        except AlreadyUp as e:
            click.echo(str(e), err=True)
            return
        except TwinError as e:
            upreport.write(lab.name, as_json, junit_file, error=e, kept=keep)
            if isinstance(e, ConvergenceTimeout):  # one line first where only the lab's own scripts can go on
                raise generic.after_deploy(e, lab.name, topology) from None
            raise
        finally:
            for note in lab.notes:
                err.print(f"note: {note}")
        fabric = lab.fabric or lab.to_bring_up()  # as recorded; else as brought up
        blank = [n for n, x in fabric.nodes.items() if x.nvue == "blank"]
        if no_wait or blank:
            frr = sum(1 for n in fabric.nodes.values() if kinds.of(n).runs_frr)
            out.print(
                f"lab [bold]{lab.name}[/bold] is deployed: {len(fabric.nodes)} nodes running and wired, "
                f"FRR started on {frr}, in {timings['wired']:.1f}s; configs in {lab.dir}; "
                + (
                    f"{len(blank)} NVUE nodes are blank (nothing configured yet, NVUE running): your automation "
                    f"configures them (`twin inventory {lab.name}` says where), then `twin wait {lab.name}` "
                    "judges the fabric"
                    if blank
                    else f"`twin exec {lab.name} NODE -- CMD` (or `docker exec {container_name(lab.name, 'NODE')} "
                    f"CMD`) configures them, `twin wait {lab.name}` waits for convergence"
                )
            )
            return
        doc = host.up_summary(lab, timings)
        upreport.write(lab.name, as_json, junit_file, doc=doc)
        if not as_json:
            upreport.print_up(doc)

    run(cli, bring_up)


@main.command(name="wait")
@click.argument("lab")
@click.option(
    "--timeout",
    type=float,
    help="Convergence deadline in seconds, from the command's start (default: from lab size, as `up`).",
)
@click.pass_context
def wait_(cli: click.Context, lab: str, timeout: float | None) -> None:
    """Wait until LAB has converged (the barrier of `twin up`): after `twin up --no-wait` and the
    scripts that configure its nodes. Exit 1 naming what is still missing at the deadline."""

    def wait_converged() -> None:
        handle = Lab(lab)
        with progress(lab, "waiting") as say:
            took = handle.wait(timeout, say=say)
        out.print(f"lab [bold]{lab}[/bold] has converged, in {took:.1f}s")

    run(cli, wait_converged)


@main.command()
@click.argument("lab")
@click.pass_context
def down(cli: click.Context, lab: str) -> None:
    """Remove everything LAB owns (also after a failed or killed `up`)."""

    def tear_down() -> None:
        removed = Lab(lab).down()
        out.print(
            f"lab [bold]{lab}[/bold]: removed {len(removed)} containers"
            if removed
            else f"lab [bold]{lab}[/bold]: nothing left to remove"
        )

    run(cli, tear_down)


@main.command()
@click.argument("lab")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def status(cli: click.Context, lab: str, as_json: bool) -> None:
    """Nodes, sessions, tenants of LAB, compared with its intent; exit 1 if anything is missing."""

    def show_status() -> None:
        st = Lab(lab).status()
        if as_json:
            click.echo(json.dumps(st.to_dict(), indent=2))
        elif st.status == "absent":
            raise TwinError(f"no lab named {lab!r}; `twin list` shows the labs")
        else:
            print_status(st)
        sys.exit(0 if st.healthy else 1)

    run(cli, show_status)


def print_status(st: LabStatus) -> None:
    t = Table(title=f"lab {st.lab}: {st.status}", title_justify="left")
    for col in ("node", "kind", "state", "asn", "loopback", "sessions up/expected"):
        t.add_column(col)
    for node in st.nodes:
        bgp = ""
        if node.sessions_expected is not None:
            bgp = f"{'?' if node.sessions_up is None else node.sessions_up}/{node.sessions_expected}"
            bgp += f" (down: {', '.join(node.sessions_down)})" if node.sessions_down else ""
        t.add_row(node.node, node.kind, node.state, str(node.asn or ""), node.loopback or "", bgp)
    out.print(t)
    if st.tenants:
        shaping = {
            "tc": "; rate limits: tc shaping (TBF, IFB), nftables policing for packet rates",
            "nft": "; rate limits: nftables policing",
        }.get(st.shaping or "", "")
        tt = Table(title=f"tenants (VRF backend: {st.vrf_backend}{shaping})", title_justify="left")
        for col in ("tenant", "vrf", "l3vni", "VTEP", "L2VNIs up (segment)", "hosts", "type-2", "type-3", "type-5"):
            tt.add_column(col)
        for ten in st.tenants:
            segs = {s["l2vni"]: s["segment"] for s in ten.segments}
            for i, (v, vtep) in enumerate(ten.vteps.items()):
                up_ = ", ".join(f"{x} ({segs[x]})" for x in vtep.vnis_up if x in segs)
                up_ += f"; MISSING {', '.join(map(str, vtep.vnis_missing))}" if vtep.vnis_missing else ""
                hosts = ", ".join(h["host"] for h in ten.hosts if h["vtep"].startswith(v + ":"))
                counts = [
                    f"{vtep.routes.get(k, '?')}/{vtep.expected.get(k, '?')}" if vtep.reachable else "?"
                    for k in ("type2", "type3", "type5")
                ]
                head = [ten.tenant, ten.vrf, str(ten.l3vni)] if i == 0 else ["", "", ""]
                tt.add_row(*head, v, up_, hosts, *counts)
        out.print(tt)
    for line in st.service_lines():
        out.print(line, highlight=False)
    problems = st.problems()
    for p in problems[:40]:
        out.print(f"[red]MISSING[/red] {p}", highlight=False)
    if len(problems) > 40:
        out.print(f"... and {len(problems) - 40} more")
    if st.changing:
        out.print(f"[yellow]changing now[/yellow]: {st.changing} holds the lab's lock", highlight=False)
    out.print(
        "[green]healthy[/green]: the lab holds its intent"
        if st.healthy
        else f"[red]NOT healthy[/red]: {len(problems) or 'status ' + st.status} problem(s)"
    )


@main.command(name="exec", context_settings={"ignore_unknown_options": True})
@click.argument("lab")
@click.argument("node")
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def exec_(cli: click.Context, lab: str, node: str, cmd: tuple[str, ...]) -> None:
    """Run CMD in NODE of LAB: twin exec LAB NODE -- vtysh -c 'show bgp summary'. The node's
    container is twin-LAB-NODE (containerlab's clab-LAB-NODE): `docker exec -it` for a TTY."""

    def exec_in_node() -> None:
        res, hint = host.exec_in(lab, node, cmd)
        sys.stdout.write(res.stdout)
        sys.stderr.write(res.stderr)
        if hint:
            sys.stderr.write(f"twin: {hint}\n")
        sys.exit(res.rc)

    run(cli, exec_in_node)


@main.command(name="list")
@click.pass_context
def list_(cli: click.Context) -> None:
    """Labs on this host: from Docker labels and lab directories."""

    def list_labs() -> None:
        rows = host.labs()
        t = Table(title_justify="left")
        for col in ("lab", "status", "containers", "running", "topology"):
            t.add_column(col)
        for row in rows:
            t.add_row(row.name, row.status, str(row.containers), str(row.running), row.topology)
        out.print(t if rows else "no labs")

    run(cli, list_labs)


@main.group()
def image() -> None:
    """Node images (built without a registry)."""


@image.command(name="build")
@click.option(
    "--suite",
    default=host.DEFAULT_SUITE,
    show_default=True,
    help="Debian release of the image (bookworm: FRR 8.4, trixie: FRR 10.3).",
)
@click.option("--force", is_flag=True, help="Rebuild even when the recipe did not change.")
@click.pass_context
def image_build(cli: click.Context, suite: str, force: bool) -> None:
    """Build the base and node images when their recipe changed."""

    def build_image() -> None:
        with err.status("building images") as status:

            def say(m: str) -> None:
                status.update(m)
                err.print(f"  {m}")

            tag = host.build_images(suite=suite, force=force, say=say)
        out.print(tag)

    run(cli, build_image)
