"""Shell completion (click's): lab names and node names, for every command's LAB, NODE, SRC, DST
and TARGET (NODE or NODE:PORT). Commands and options complete by click itself. Attached to the
commands as they are loaded (`twin.cli.common.TwinGroup.load`), so the command modules stay as they are; see
docs/completion.md for enabling it in bash, zsh or fish."""

from __future__ import annotations

import click
from click.shell_completion import CompletionItem

NODE_PARAMS = ("node", "src", "dst")


def docker_labs() -> list[str]:
    """Labs whose containers are on this host (their `twin.lab` label); none when Docker does not answer."""
    from twin import host  # loaded when the shell completes a name, not for every command

    try:
        return host.running_labs(timeout=3)
    except Exception:  # noqa: BLE001  (a completion never fails: no Docker, no names from it)
        return []


def lab_names(incomplete: str) -> list[str]:
    """Labs under $TWIN_HOME and labs with containers here, whose name starts with `incomplete`."""
    from twin.lifecycle import state

    return sorted(n for n in {*state.known_labs(), *docker_labs()} if n.startswith(incomplete))


def node_names(lab: str | None, incomplete: str, ports: bool = False) -> list[str]:
    """Nodes of `lab` (its recorded intent) starting with `incomplete` (any case); with `ports`,
    NODE:PORT once a node and ':' are typed."""
    from twin.lab import Lab

    try:
        fabric = Lab(lab).fabric if lab else None
    except Exception:  # noqa: BLE001  (a completion never fails: no lab, no names)
        fabric = None
    if fabric is None:
        return []
    node, sep, _ = incomplete.partition(":")
    if ports and sep:
        found = [n for n in fabric.nodes if n == node.lower()]
        return (
            [
                f"{found[0]}:{p}"
                for p in fabric.nodes[found[0]].ports_by_name
                if f"{found[0]}:{p}".startswith(f"{found[0]}:{incomplete.partition(':')[2]}")
            ]
            if found
            else []
        )
    return [n for n in fabric.nodes if n.startswith(incomplete.lower())]


def _lab(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    return [CompletionItem(n) for n in lab_names(incomplete)]


def _node(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    return [CompletionItem(n) for n in node_names(ctx.params.get("lab"), incomplete, ports=param.name == "target")]


def attach(cmd: click.Command) -> None:
    """Give every LAB, NODE, SRC, DST and TARGET parameter of `cmd` (and of its commands, a group's) its completion."""
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            attach(sub)
        return
    for p in cmd.params:
        if p.name == "lab":
            p._custom_shell_complete = _lab
        elif p.name in NODE_PARAMS + ("target",) and not isinstance(p, click.Option) or p.name == "node":
            p._custom_shell_complete = _node
