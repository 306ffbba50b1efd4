"""`twin watch`, `twin events`, `twin counters`, `twin exporter`, `twin web`: eyes on a running lab."""

from __future__ import annotations

import json
import re
import sys
import time
from typing import Any, Callable, TypeVar

import click
from rich.live import Live

from twin.base.errors import TwinError
from twin.cli.common import err, main, out, run
from twin.lab import Lab
from twin.lifecycle.service import App
from twin.observe import store, view
from twin.observe.collector import Collector

F = TypeVar("F", bound=Callable[..., Any])  # a click command's function
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def since_seconds(text: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd]?)", text.strip())
    if not m:
        raise TwinError(f"--since {text!r}: give a duration such as 30s, 5m, 2h or 1d")
    return float(m.group(1)) * UNITS[m.group(2) or "s"]


@main.command(name="watch")
@click.argument("lab")
@click.option("--node", help="Only this node's ports and sessions.")
@click.option("--for", "duration", type=float, default=None, help="Stop after this many seconds (default: Ctrl-C).")
@click.pass_context
def watch_(cli: click.Context, lab: str, node: str | None, duration: float | None) -> None:
    """A live view of LAB: ports with rates, RoCE counters, sessions, latest events."""

    def watch_lab() -> None:
        nonlocal node
        ctx = Lab(lab).context()
        if node:
            node = ctx.node(node)
        with (
            Collector(ctx) as col,
            Live(view.screen(col.state(), node), console=out, refresh_per_second=2, screen=out.is_terminal) as live,
        ):
            t0 = time.monotonic()
            try:
                while duration is None or time.monotonic() - t0 < duration:
                    time.sleep(0.5)
                    live.update(view.screen(col.state(), node))
            except KeyboardInterrupt:
                pass

    run(cli, watch_lab)


@main.command(name="events")
@click.argument("lab")
@click.option("--since", "since", default="1h", show_default=True, help="How far back: 30s, 5m, 2h, 1d.")
@click.option("--node", help="Only events of this node.")
@click.option(
    "--kind", "kinds", multiple=True, help="Only these kinds: drop, drop-burst, carrier, session, routes, node, action."
)
@click.option("--json", "as_json", is_flag=True, help="JSON lines, one event each.")
@click.pass_context
def events_(cli: click.Context, lab: str, since: str, node: str | None, kinds: tuple[str, ...], as_json: bool) -> None:
    """What happened in LAB: drops by twin's rules, carrier, sessions, routes, twin's own actions."""

    def show_events() -> None:
        nonlocal node
        ctx = Lab(lab).context()
        if node:
            node = ctx.node(node)
        events = store.read(ctx.dir, since=time.time() - since_seconds(since), node=node, kinds=set(kinds) or None)
        if as_json:
            for e in events:
                click.echo(json.dumps(e, default=str))
            return
        for e in events:
            click.echo(view.event_line(e))
        if not events:
            err.print(
                f"no events in the last {since}"
                + (f" on {node}" if node else "")
                + f" (recorded while `twin watch`, `twin exporter` or `twin web` runs on {lab})"
            )

    run(cli, show_events)


@main.command(name="counters")
@click.argument("lab")
@click.argument("node", required=False)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def counters_(cli: click.Context, lab: str, node: str | None, as_json: bool) -> None:
    """Counters of LAB (or NODE) now: ports, RoCEv2 by class and CNPs, sessions, VNIs, VRF routes."""

    def show_counters() -> None:
        nonlocal node
        ctx = Lab(lab).context()
        if node:
            node = ctx.node(node)
        col = Collector(ctx, record=False)
        col.round(control=True)
        state = col.state()
        if node:
            snap = state["snapshot"]
            for k in ("ports", "roce", "routes", "sessions", "vnis"):
                snap[k] = {n: v for n, v in snap[k].items() if n == node}
        if as_json:
            click.echo(json.dumps({k: state[k] for k in ("lab", "snapshot", "kernel_drops")}, indent=2, default=str))
            return
        for t in (
            view.ports_table(state, node),
            view.roce_table(state, node),
            view.sessions_table(state, node),
            view.vnis_table(state, node),
            view.routes_table(state, node),
        ):
            out.print(t)
        out.print(f"kernel drops: {state['kernel_drops']}")

    run(cli, show_counters)


def listen_options(default: str) -> Callable[[F], F]:
    """--listen (repeatable), --allow-remote, --tls-cert/--tls-key of a served command."""

    def wrap(fn: F) -> F:
        fn = click.option("--tls-key", type=click.Path(dir_okay=False, exists=True), help="Its private key.")(fn)
        fn = click.option(
            "--tls-cert",
            type=click.Path(dir_okay=False, exists=True),
            help="Serve HTTPS with this certificate (PEM) on the TCP listeners.",
        )(fn)
        fn = click.option(
            "--allow-remote",
            is_flag=True,
            help="Allow a --listen address other machines can reach (default: loopback only; a warning is printed).",
        )(fn)
        return click.option(
            "--listen",
            "listen",
            multiple=True,
            default=[default],
            show_default=True,
            metavar="HOST:PORT|unix:PATH",
            help="Where to listen (repeatable: one process serves them all).",
        )(fn)

    return wrap


def serve(
    what: str,
    lab: str,
    make_app: Callable[[Collector], App],
    listen: tuple[str, ...],
    allow_remote: bool,
    tls_cert: str | None,
    tls_key: str | None,
    path: str,
) -> None:
    """Run a lab's ASGI app (`make_app(collector)`) on every listener until Ctrl-C."""
    from twin.lifecycle.service import Listener, Service, check_listeners

    listeners = [
        Listener.parse(x, **({"certfile": tls_cert, "keyfile": tls_key} if not x.startswith("unix:") else {}))
        for x in listen
    ]
    for w in check_listeners(f"twin {what}", listeners, allow_remote):
        err.print(w)

    def started(s: Service) -> None:
        err.print(
            f"twin {what} of {lab}: "
            + ", ".join(a if a.startswith("unix:") else a + path for a in s.addresses())
            + " (Ctrl-C stops)"
        )
        sys.stderr.flush()

    with Collector(Lab(lab).context()) as col:
        Service(what, make_app(col), listeners).run(on_start=started, on_stop=col.stop)


@main.command(name="exporter")
@click.argument("lab")
@listen_options("127.0.0.1:9342")
@click.pass_context
def exporter_(
    cli: click.Context, lab: str, listen: tuple[str, ...], allow_remote: bool, tls_cert: str | None, tls_key: str | None
) -> None:
    """Serve LAB's counters, sessions and drop events to Prometheus (GET /metrics)."""

    def serve_exporter() -> None:
        from twin.observe.metrics import app

        serve("exporter", lab, app, listen, allow_remote, tls_cert, tls_key, "/metrics")

    run(cli, serve_exporter)


@main.command(name="web")
@click.argument("lab")
@listen_options("127.0.0.1:8080")
@click.pass_context
def web_(
    cli: click.Context, lab: str, listen: tuple[str, ...], allow_remote: bool, tls_cert: str | None, tls_key: str | None
) -> None:
    """A live page of LAB: the fabric, links by state, nodes' sessions, VNIs, counters, events."""

    def serve_web() -> None:
        from twin.observe.web import app

        serve("web", lab, app, listen, allow_remote, tls_cert, tls_key, "/")

    run(cli, serve_web)
