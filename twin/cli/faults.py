"""`twin fault KEY LAB TARGET [ARG]`: one command per registered fault, made from the registry."""

from __future__ import annotations

import click

from twin.change import fault_types
from twin.change.fault_base import Fault
from twin.cli.common import main, run
from twin.lab import Lab


@main.group(name="fault")
def fault_group() -> None:
    """Apply faults to a running lab: links, loss, nodes, FRR daemons.

    The same names work in `twin rehearse LAB fault:KEY:TARGET[:ARG]`."""


def _command(cls: type[Fault]) -> None:
    def body(cli: click.Context, lab: str, target: str, **args: object) -> None:
        def inject_fault() -> None:
            ctx = Lab(lab).context()
            fault = cls.parse(
                ctx,
                target,
                [str(args[p.name]) for p in cls.params if args.get(p.name) is not None],
                f"twin fault {cls.key}",
            )
            click.echo(str(fault.apply(ctx)))

        run(cli, inject_fault)

    cmd = click.pass_context(body)
    for p in reversed(cls.params):
        if p.default is None:
            cmd = click.argument(p.name, metavar=p.name.upper())(cmd)
        else:
            cmd = click.option(f"--{p.name}", default=p.default, show_default=True, help=p.help)(cmd)
    cmd = click.argument("target", metavar="NODE:PORT" if cls.on == "port" else "NODE")(cmd)
    cmd = click.argument("lab")(cmd)
    fault_group.command(name=cls.key, help=cls.summary[0].upper() + cls.summary[1:] + ".")(cmd)


for _cls in fault_types().values():
    _command(_cls)
