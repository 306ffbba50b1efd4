"""The server's parts in one place: its settings, its state directory (`home`: the database and
what requests brought, default `$TWIN_HOME/server`, mode 0700), operations, failed-auth throttle,
and the rule of ownership (another user's lab is answered as one that does not exist).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from twin.lifecycle import state
from twin.server import settle
from twin.server.auth import Principal, Throttle
from twin.server.home import Home
from twin.server.operations import WORKERS, Operations
from twin.server.problems import ApiProblem, hide
from twin.server.quotas import Limits, limits_of

HOUR = 3600.0


@dataclass(frozen=True)
class Settings:
    home: Path = field(default_factory=lambda: state.home() / "server")
    expiry: float = 4 * HOUR  # a new lab's lifetime, unless asked for less
    max_expiry: float = 24 * HOUR  # the furthest ahead an expiry may be set (from now)
    limits: Limits = Limits()  # per user, unless set for the user
    workers: int = WORKERS
    reap_every: float = 30.0  # s between two looks for expired labs
    allow_images: tuple[str, ...] = ()  # images a user's node may name besides twin's own (twin.topology.confine)
    max_snapshots: int = 10  # snapshots a user may keep
    max_snapshot_bytes: int = 256 << 20  # their archives' bytes together
    max_streams: int = 8  # event streams a user may hold open at once
    max_kept: int = 64 << 20  # bytes of change files (plan, apply, rehearse) kept per lab
    trusted_proxies: tuple[str, ...] = ()  # addresses whose X-Forwarded-For is believed (none by default)


class Core(Home):
    def __init__(self, settings: Settings):
        super().__init__(settings.home)
        self.settings = settings
        self.ops = Operations(self, settings.workers, partial(settle.settle, self))
        self.throttle = Throttle()
        self.started = time.time()
        self.streams: dict[str, int] = {}  # user -> event streams open (on the event loop only)
        self.plans: dict[str, int] = {}  # user -> plans under way (on the event loop only)
        hide(str(settings.home), str(state.home()))  # no answer names where the server keeps things

    def close(self) -> None:
        self.ops.close()
        self.store.close()

    # --- ownership -------------------------------------------------------------------------
    def lab(self, who: Principal, name: str) -> dict[str, Any]:
        """The server's lab `name` as `who` may see it; 404 when it is not theirs (as when it does not
        exist: whose labs exist is no one else's business), unless `who` is an admin."""
        row = self.store.lab(name) if isinstance(name, str) and len(name) < 200 else None
        if row is None or (row["owner"] != who.user and not who.admin):
            raise ApiProblem(
                404, f"no lab named {name[:100]!r} of yours on this server; GET /v1/labs lists yours", "no-such-lab"
            )
        return row

    def operation(self, who: Principal, oid: str) -> dict[str, Any]:
        row = self.store.operation(oid) if isinstance(oid, str) and len(oid) < 100 else None
        if row is None or (row["owner"] != who.user and not who.admin):
            raise ApiProblem(404, f"no operation {oid[:100]!r} of yours", "no-such-operation")
        return row

    def taken(self, who: Principal, name: str) -> ApiProblem:
        """A create of a name that is taken: its owner is told so; anyone else gets one answer for every
        name taken (another user's lab, a lab of the host's CLI), which says nothing of whose it is."""
        row = self.store.lab(name)
        if row is not None and row["owner"] == who.user:
            return ApiProblem(409, f"you have a lab named {name!r}; name the new one (`name`)", "name-taken")
        return ApiProblem(409, f"the name {name!r} is not available on this server; name yours (`name`)", "name-taken")

    def limits(self, user: str) -> Limits:
        return limits_of(self.store.user(user), self.settings.limits)

    def expiry(self, asked: float | None) -> float:
        """A lifetime from now: the one asked (capped at the maximum) or the server's default."""
        if asked is None:
            return self.settings.expiry
        if asked <= 0:
            raise ApiProblem(422, "an expiry is a positive duration from now, e.g. 2h", "invalid")
        if asked > self.settings.max_expiry:
            raise ApiProblem(
                422,
                f"an expiry is at most {self.settings.max_expiry / HOUR:g}h from now on this "
                f"server; asked {asked / HOUR:g}h",
                "expiry",
                max_seconds=self.settings.max_expiry,
            )
        return asked

    def lab_doc(self, row: dict[str, Any]) -> dict[str, Any]:
        """A lab as the API lists it."""
        now = time.time()
        return {
            "name": row["name"],
            "owner": row["owner"],
            "state": row["state"],
            "created": row["created"],
            "expires": row["expires"],
            "expires_in": max(0.0, round(row["expires"] - now)),
            "frr_nodes": row["frr_nodes"],
            "memory": row["memory"],
            "snapshot": row["snapshot"],
            "error": row["error"] or None,
        }
