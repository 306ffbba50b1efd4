"""The command reference of the documentation site (reference/commands.md), written from the CLI
itself (click's help of every command) each time the site is built (scripts/docs.py, a mkdocs
hook), so it cannot drift from the CLI."""

from __future__ import annotations

from typing import Iterator

import click

WIDTH = 100
HEAD = (
    "# Command reference\n\n"
    "Every command's `--help`, as the CLI prints it: generated from `twin.cli` each time the site "
    "is built (scripts/docs.py), so it cannot differ from the CLI.\n"
)


def _walk(cmd: click.Command, parent: click.Context | None, name: str) -> Iterator[click.Context]:
    settings = {**cmd.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    ctx = click.Context(cmd, info_name=name, parent=parent, **settings)
    yield ctx
    if isinstance(cmd, click.Group):
        for sub in sorted(cmd.list_commands(ctx)):
            if (found := cmd.get_command(ctx, sub)) is not None:  # (a listed command is there)
                yield from _walk(found, ctx, sub)


def markdown(root: click.Command | None = None) -> str:
    """The reference page: one section per command, its help in a text block."""
    if root is None:
        from twin.cli import main

        root = main
    parts = [HEAD]
    for ctx in _walk(root, None, "twin"):
        title = ctx.command_path
        parts.append(f"\n## `{title}`\n\n```text\n{ctx.get_help()}\n```\n")
    return "".join(parts)
