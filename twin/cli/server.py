"""`twin serve`: the shared twin's server, its tokens and its users' quotas."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import click
from rich.table import Table

from twin.base.errors import TwinError
from twin.cli.common import err, main, out, run
from twin.cli.observe import listen_options

if TYPE_CHECKING:
    from twin.server import Settings, Store

DEFAULT_LISTEN = "127.0.0.1:8470"


def _settings(
    state_dir: str | None,
    expiry: str = "4h",
    max_expiry: str = "24h",
    max_labs: int = 3,
    max_frr: int = 64,
    max_memory: str = "16g",
    workers: int = 4,
    reap_every: float = 30.0,
    allow_images: Sequence[str] = (),
    max_snapshots: int = 10,
    max_snapshot_bytes: str = "256m",
    trust_proxy: Sequence[str] = (),
) -> Settings:
    from twin import server

    if server.duration(expiry) > server.duration(max_expiry):
        raise TwinError(f"--expiry {expiry} is longer than --max-expiry {max_expiry}")
    limits = server.Limits(max_labs, max_frr, server.size(max_memory))
    settings = server.Settings(
        expiry=server.duration(expiry),
        max_expiry=server.duration(max_expiry),
        limits=limits,
        workers=workers,
        reap_every=reap_every,
        allow_images=tuple(allow_images),
        max_snapshots=max_snapshots,
        max_snapshot_bytes=server.size(max_snapshot_bytes) or 0,
        trusted_proxies=tuple(trust_proxy),
    )
    return replace(settings, home=Path(state_dir)) if state_dir else settings


STATE_HELP = "The server's state directory (default: $TWIN_HOME/server)."


@main.group(name="serve", invoke_without_command=True)
@click.option("--state", "state_dir", type=click.Path(file_okay=False), help=STATE_HELP)
@listen_options(DEFAULT_LISTEN)
@click.option("--expiry", default="4h", show_default=True, help="A new lab's lifetime unless asked for less.")
@click.option(
    "--max-expiry",
    default="24h",
    show_default=True,
    help="The furthest ahead a lab's expiry may be set (its owner extends it up to this from now).",
)
@click.option("--max-labs", type=int, default=3, show_default=True, help="Labs a user may hold at once.")
@click.option(
    "--max-frr-nodes",
    "max_frr",
    type=int,
    default=64,
    show_default=True,
    help="FRR nodes a user's labs may have together.",
)
@click.option(
    "--max-memory",
    default="16g",
    show_default=True,
    help="Memory a user's labs may have together (the sum of their containers' limits).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 32),
    default=4,
    show_default=True,
    help="Operations running at once (more wait as pending).",
)
@click.option(
    "--reap-every",
    type=click.FloatRange(0.5, 3600),
    default=30.0,
    show_default=True,
    help="Seconds between two looks for expired labs.",
)
@click.option(
    "--allow-image",
    "allow_images",
    multiple=True,
    metavar="IMAGE",
    help="An image a user's node may name besides twin's own node image (repeatable; default: none).",
)
@click.option(
    "--max-snapshots", type=click.IntRange(0, 10000), default=10, show_default=True, help="Snapshots a user may keep."
)
@click.option(
    "--max-snapshot-bytes", default="256m", show_default=True, help="The bytes a user's snapshots may take together."
)
@click.option(
    "--trust-proxy",
    multiple=True,
    metavar="ADDRESS",
    help="A reverse proxy whose X-Forwarded-For is believed (repeatable; default: none, the peer's "
    "address is the client's).",
)
@click.pass_context
def serve_group(
    cli: click.Context,
    state_dir: str | None,
    listen: tuple[str, ...],
    allow_remote: bool,
    tls_cert: str | None,
    tls_key: str | None,
    expiry: str,
    max_expiry: str,
    max_labs: int,
    max_frr: int,
    max_memory: str,
    workers: int,
    reap_every: float,
    allow_images: tuple[str, ...],
    max_snapshots: int,
    max_snapshot_bytes: str,
    trust_proxy: tuple[str, ...],
) -> None:
    """Serve the twin API (/v1, OpenAPI at /openapi.json, reference at /docs, the labs page at /):
    labs made, changed, verified, rehearsed, snapshotted and removed through a token, with owners,
    quotas and expiry. Run as root, as `twin up` is; its clients need only a token
    (`twin --server URL ...`, TWIN_TOKEN)."""
    if cli.invoked_subcommand is not None:
        cli.obj.serve_state = state_dir
        return

    def serve_api() -> None:
        from twin import server
        from twin.lifecycle.service import Listener

        settings = _settings(
            state_dir,
            expiry,
            max_expiry,
            max_labs,
            max_frr,
            max_memory,
            workers,
            reap_every,
            allow_images,
            max_snapshots,
            max_snapshot_bytes,
            trust_proxy,
        )
        listeners = [
            Listener.parse(x, **({"certfile": tls_cert, "keyfile": tls_key} if not x.startswith("unix:") else {}))
            for x in listen
        ]
        server.logs()
        server.serve(
            settings,
            listeners,
            allow_remote,
            say=lambda m: err.print(m, highlight=False),
            on_start=lambda s: err.print(
                f"twin serve: {', '.join(s.addresses())} (state in {settings.home}; Ctrl-C stops)", highlight=False
            ),
        )

    run(cli, serve_api)


def _store(cli: click.Context) -> Store:
    from twin import server

    return server.Store(_settings(cli.find_root().obj.serve_state).home / "state.db")


@serve_group.group(name="token")
def token_group() -> None:
    """API tokens: made (shown once), listed, revoked."""


@token_group.command(name="create")
@click.argument("user")
@click.option("--admin", is_flag=True, help="An admin's token: it reaches every user's labs.")
@click.option("--expires", metavar="DURATION", help="The token's lifetime, e.g. 30d or 12h (default: none).")
@click.pass_context
def token_create(cli: click.Context, user: str, admin: bool, expires: str | None) -> None:
    """Make a token for USER (made if new). It is printed once, here, and kept only as its hash."""

    def create_token() -> None:
        from twin import server

        tid, token = server.issue(_store(cli), user, admin, server.duration(expires) if expires else None)
        err.print(
            f"token {tid} for {user}{' (admin)' if admin else ''}"
            + (f", expires in {expires}" if expires else "")
            + "; shown once: keep it (TWIN_TOKEN)"
        )
        click.echo(token)

    run(cli, create_token)


@token_group.command(name="list")
@click.pass_context
def token_list(cli: click.Context) -> None:
    """Every token: its id, user, role, when it was made, expires, was last used, or was revoked."""

    def list_tokens() -> None:
        t = Table(title_justify="left")
        for col in ("id", "user", "role", "created", "expires", "last used", "revoked"):
            t.add_column(col)
        for r in _store(cli).tokens():
            t.add_row(
                r["id"],
                r["user"],
                "admin" if r["admin"] else "user",
                _when(r["created"]),
                _when(r["expires"]),
                _when(r["used"]),
                _when(r["revoked"]),
            )
        out.print(t)

    run(cli, list_tokens)


@token_group.command(name="revoke")
@click.argument("token_id")
@click.pass_context
def token_revoke(cli: click.Context, token_id: str) -> None:
    """Revoke token TOKEN_ID: every request with it is 401 from now on."""

    def revoke_token() -> None:
        if not _store(cli).revoke(token_id):
            raise TwinError(f"no token {token_id!r} that is not revoked already; `twin serve token list` shows them")
        out.print(f"token {token_id} revoked")

    run(cli, revoke_token)


@serve_group.command(name="quota")
@click.argument("user")
@click.option("--labs", type=int, help="Labs USER may hold at once.")
@click.option("--frr-nodes", type=int, help="FRR nodes USER's labs may have together.")
@click.option("--memory", help="Memory USER's labs may have together, e.g. 32g.")
@click.pass_context
def quota(cli: click.Context, user: str, labs: int | None, frr_nodes: int | None, memory: str | None) -> None:
    """Set USER's own limits over the server's defaults (an option left out: the server's)."""

    def set_quota() -> None:
        from twin import server

        _store(cli).set_limits(server.auth.check_user(user), labs, frr_nodes, server.size(memory))
        out.print(
            f"{user}: labs {labs if labs is not None else 'default'}, FRR nodes "
            f"{frr_nodes if frr_nodes is not None else 'default'}, memory {memory or 'default'}"
        )

    run(cli, set_quota)


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "-"
