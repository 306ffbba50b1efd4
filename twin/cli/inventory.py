"""`twin inventory`: Ansible and Nornir inventories of a lab, for the user's own automation."""
from __future__ import annotations

import click

from twin.cli.common import main, run
from twin.interop.inventory import FORMATS, inventory, write
from twin.lab import Lab


@main.command(name="inventory")
@click.argument("lab")
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), default="ansible", show_default=True,
              help="Inventory format.")
@click.option("-o", "--output", type=click.Path(file_okay=False),
              help="Directory to write the files into (ansible: default stdout; nornir: required).")
@click.pass_context
def inventory_cmd(ctx, lab: str, fmt: str, output: str | None) -> None:
    """Write an Ansible or Nornir inventory of LAB's nodes (reached through their containers)."""
    def go():
        files = inventory(Lab(lab).context(), fmt)
        if output is None:
            if len(files) != 1:
                raise click.UsageError(f"--format {fmt} writes {len(files)} files ({', '.join(files)}); "
                                       "give a directory with -o/--output")
            click.echo(next(iter(files.values())), nl=False)
            return
        for path in write(files, output):
            click.echo(f"wrote {path}", err=True)
    run(ctx, go)
