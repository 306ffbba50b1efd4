"""`twin inventory`: Ansible and Nornir inventories of a lab, for the user's own automation."""

from __future__ import annotations

import click

from twin import nvue
from twin.cli.common import main, run
from twin.interop.inventory import CONNECTIONS, FORMATS, NvueApi, inventory, write
from twin.lab import Lab
from twin.nvue import service as nvue_service


@main.command(name="inventory")
@click.argument("lab")
@click.option(
    "--format", "fmt", type=click.Choice(list(FORMATS)), default="ansible", show_default=True, help="Inventory format."
)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False),
    help="Directory to write the files into (ansible: default stdout; nornir: required).",
)
@click.option(
    "--connection",
    type=click.Choice(list(CONNECTIONS)),
    default="ssh",
    show_default=True,
    help="How Ansible and Nornir reach the nodes on the management network: SSH to their address "
    "(user cumulus and the lab's password), or through Docker, as every other node.",
)
@click.pass_context
def inventory_cmd(cli: click.Context, lab: str, fmt: str, output: str | None, connection: str) -> None:
    """Write an Ansible or Nornir inventory of LAB's nodes (switches, DPUs and routers at their management
    address over SSH, hosts through their containers), or with --format nvue the NVUE REST API of its
    NVUE nodes at their management address, port 8765 (ansible.netcommon.httpapi, nvidia.nvue). The
    files hold the lab's password."""

    def write_inventory() -> None:
        handle = Lab(lab)
        ctx = handle.context()
        password = nvue_service.password(handle.dir) if ctx.fabric.mgmt is not None else None
        files = inventory(ctx, fmt, nvue_api(handle) if fmt == "nvue" else None, password, connection)
        if output is None:
            if len(files) != 1:
                raise click.UsageError(
                    f"--format {fmt} writes {len(files)} files ({', '.join(files)}); give a directory with -o/--output"
                )
            click.echo(next(iter(files.values())), nl=False)
            return
        for path in write(files, output):
            click.echo(f"wrote {path}", err=True)

    run(cli, write_inventory)


def nvue_api(lab: Lab) -> dict[str, NvueApi]:
    """Per NVUE node of the lab, where its REST API listens and with which credentials."""
    rec = nvue_service.require(lab.dir, lab.name)
    st = lab.state
    mine = {n for n, files in (st.user_files if st else {}).items() if nvue.STARTUP in files}
    password = nvue_service.password(lab.dir)
    return {
        n: {"port": x["port"], "user": nvue_service.USER, "password": password}
        for n, x in rec["listeners"].items()
        if n in mine
    }
