"""What every command shares: the `twin` group, the consoles, and one error style.

Every failure is one line on stderr (`error: ...`, every problem for a bad
topology or change; everything with -v) and a non-zero exit. Errors twin
raises (TwinError), Docker's, netlink's and the operating system's all read the
same way; anything unexpected is still one line, with -v for the traceback.
SIGTERM (`timeout`, a cancelled CI job, `docker stop`) and SIGHUP (a closed
terminal) stop a command as Ctrl-C does: `up` removes what it made, `apply`
rolls back, the lab's lock is released; the exit code is 128 + the signal.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import shlex
import signal
import sys
import threading
import traceback
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Callable, Iterator, NoReturn, TypeVar

import click
from rich.console import Console
from rich.markup import escape

from twin.base import interrupt, stages, version
from twin.base.errors import (
    ApplyFailed,
    ChangeRefused,
    ConfigError,
    ConvergenceTimeout,
    Stopped,
    TopologyError,
    TwinError,
)

if TYPE_CHECKING:
    from twin.verify import Recorder

err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)
if not out.is_terminal:  # pipes and CI logs: do not squeeze tables into 80 columns
    out = Console(highlight=False, soft_wrap=True, width=160)

T = TypeVar("T")
# their every line matters (a convergence timeout's: what is missing by node and kind, a dozen in full)
WHOLE = (TopologyError, ConfigError, ChangeRefused, ApplyFailed, ConvergenceTimeout)


class Ctx:
    def __init__(self, verbose: bool):
        self.verbose = verbose
        self.serve_state: str | None = None  # `twin serve --state DIR` for its subcommands


def fail(text: str, verbose: bool, whole: bool = False, code: int = 1, detail: str = "") -> NoReturn:
    lines = (text or "failed").splitlines()
    if not (whole or verbose) and len(lines) > 1:
        text = lines[0] + " (-v for details)"
    click.secho("error: ", fg="red", err=True, nl=False)
    click.echo(text, err=True)
    if verbose and detail:
        click.echo(detail, err=True)
    sys.exit(code)


def describe(e: BaseException) -> str:
    """One line for an error that is not twin's own."""
    from twin.host import describe_failure  # the runtime's libraries: loaded for an error, not for every command

    if (library := describe_failure(e)) is not None:  # Docker's or netlink's, escaped the runtime's seam
        return library
    if isinstance(e, FileNotFoundError) and e.filename:
        return f"{e.filename}: not found ({e.strerror}); is it installed?"
    if isinstance(e, OSError):
        return f"{e.filename + ': ' if e.filename else ''}{e.strerror or e}"
    return f"internal error: {type(e).__name__}: {e}"


STOPS = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def stops_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise `Stopped` (a KeyboardInterrupt) in the main
    thread, as SIGINT does: every path that cleans up after Ctrl-C cleans up after them too."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> NoReturn:
        raise Stopped(signum, signal.Signals(signum).name)

    old = {s: signal.signal(s, stop) for s in STOPS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def run(cli: click.Context, fn: Callable[[], T]) -> T:
    """Run a command's body in the one error style."""
    verbose = cli.find_root().obj.verbose if cli.find_root().obj else False
    interrupt.keep()
    try:
        with stops_as_interrupt():
            return fn()
    except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
        raise
    except TwinError as e:
        fail(str(e) or type(e).__name__, verbose, whole=isinstance(e, WHOLE))
    except KeyboardInterrupt as e:
        stopped = isinstance(e, Stopped)
        err.print(f"interrupted by {e}" if stopped else f"interrupted{': ' + str(e) if str(e) else ''}")
        sys.exit(128 + e.signum if isinstance(e, Stopped) else 130)
    except Exception as e:  # noqa: BLE001  (one line, never a traceback; -v shows it)
        fail(describe(e), verbose, detail=traceback.format_exc())


@contextlib.contextmanager
def progress(label: str, first: str) -> Iterator[stages.Progress]:
    """The `say` of a long command: on a terminal, rich's status line on stderr; off one (a CI log,
    a file), plain lines on stderr at each stage change and at least every 10 s
    (`twin.base.stages.PlainLines`); with -v, every line too. Its `subscribe` hands out each Step."""
    tell = stages.Progress()
    cli = click.get_current_context(silent=True)
    if cli is not None and cli.find_root().obj and cli.find_root().obj.verbose:
        tell.subscribe(lambda s: err.print(f"  {s.text}", markup=False))
    if err.is_terminal:
        with err.status(f"[bold]{escape(label)}[/bold]: {escape(first)}") as status:
            tell.subscribe(lambda s: status.update(f"[bold]{escape(label)}[/bold]: {escape(s.text)}"))
            yield tell
        return
    with stages.PlainLines(tell, lambda line: err.print(line, markup=False, highlight=False), label):
        tell(first)
        yield tell


SUMMARY_HELP = "Write a Markdown report to this file (verdict, failures with evidence, tables): for a CI job summary."
EVIDENCE_HELP = "Write every command run on a node for the verdict (output, exit code, timing) to this JSON file."


@contextlib.contextmanager
def evidence(wanted: bool) -> Iterator[Recorder | None]:
    """A recorder of every command run on a node, when a summary or evidence file is wanted."""
    if not wanted:
        yield None
        return
    from twin.verify import recording

    with recording() as rec:
        yield rec


def write_reports(
    lab: str,
    passed: bool | None,
    rec: Recorder | None,
    summary: str | None,
    evidence_file: str | None,
    markdown: Callable[[], str],
) -> None:
    """--summary (Markdown) and --evidence (JSON) of a command."""
    from twin.verify.markdown import evidence_doc

    if summary:
        Path(summary).write_text(markdown())
    if evidence_file and rec is not None:
        doc = evidence_doc(rec, shlex.join(["twin", *sys.argv[1:]]), lab, passed)
        Path(evidence_file).write_text(json.dumps(doc, indent=2) + "\n")


class TwinGroup(click.Group):
    """`twin`'s group. Its commands are loaded lazily (click's LazyGroup): `lazy` names each command's
    module and short help (`twin.cli.COMMANDS`), and a command's module is imported only when that
    command runs (or its help is asked for), so `twin --help` and every command load only what they use.
    With --server, a command runs on that twin server (`remote`: the commands `twin.cli.remote`
    registers); one that does not run there says so."""

    remote: dict[str, click.Command] = {}
    lazy: dict[str, tuple[str, str]] = {}  # command -> (its module, its short help)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(self.lazy))

    def load(self, name: str) -> click.Command | None:
        """Command `name`, its module imported first when it is not loaded yet."""
        if name not in self.commands and name in self.lazy:
            importlib.import_module(self.lazy[name][0])
        cmd = self.commands.get(name)
        if cmd is not None:
            from twin.cli.completion import attach

            attach(cmd)  # lab and node names for the shell's completion
        return cmd

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if ctx.params.get("server") and cmd_name != "serve":
            importlib.import_module("twin.cli.remote")  # fills `remote`
            if cmd_name in self.remote:
                return self.remote[cmd_name]
            known = cmd_name in self.list_commands(ctx)
            return _not_remote(cmd_name, sorted(self.remote)) if known else None
        return self.load(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their short help, as click shows them, without importing a command's module."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [
            (n, short_help(self.lazy[n][1], limit) if n in self.lazy else self.commands[n].get_short_help_str(limit))
            for n in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def short_help(text: str, limit: int) -> str:
    """A command's short help cut to `limit` columns, as click cuts it (`Command.get_short_help_str`)."""
    if len(text) <= limit:
        return text
    import textwrap

    return textwrap.shorten(text, limit, placeholder="...", break_on_hyphens=False)


def _not_remote(name: str, remote: list[str]) -> click.Command:
    @click.command(name=name, context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
    @click.pass_context
    def refused(cli: click.Context) -> None:
        def refuse() -> None:
            raise TwinError(
                f"`twin {name}` does not run through a server; through one: {', '.join(remote)} (drop "
                "--server to run it on this host)"
            )

        run(cli, refuse)

    return refused


@click.group(cls=TwinGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Show full error details.")
@click.option(
    "--server",
    metavar="URL",
    envvar="TWIN_SERVER",
    help="Run up, down, status, list, verify, apply, plan, rehearse, snapshot on this twin server "
    "(`twin serve`) with a token (TWIN_TOKEN or ~/.config/twin/token). Env: TWIN_SERVER.",
)
@click.version_option(
    version.VERSION,
    "-V",
    "--version",
    message=version.text().replace("%", "%%"),
    help="Show twin's version and where it runs from, and exit.",
)
@click.pass_context
def main(cli: click.Context, verbose: bool, server: str | None) -> None:
    """twin: a digital twin of an AI-cloud leaf/spine EVPN fabric, in containers."""
    cli.obj = Ctx(verbose)
