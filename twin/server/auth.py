"""API tokens: issued by an admin (`twin serve token create USER`), shown once, stored as their
SHA-256 only, revocable, with an optional expiry; sent as `Authorization: Bearer TOKEN`.

A token is 32 random bytes (`twin_` and URL-safe base64): a hash of that much randomness
cannot be reversed or guessed, so no slow password hash is needed, and a lookup by hash
compares no secret byte by byte. Two roles: a user's token reaches that user's labs only,
an admin's reaches every lab. Failed attempts are counted per client address and slowed
(`Throttle`): each answer waits longer than the one before, up to `MAX_DELAY`.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
from dataclasses import dataclass

from twin.base.errors import TwinError
from twin.server.store import Store

PREFIX = "twin_"
DELAY = 0.1  # s: the answer to the first failed attempt of an address waits this long
MAX_DELAY = 3.0  # ... doubling with each further one, up to this
FORGET = 600.0  # s: an address's failures are forgotten after this long without one
_USER = re.compile(r"[a-z][a-z0-9_.-]{0,31}")
_DURATION = re.compile(r"(\d+)([smhdw])")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(frozen=True)
class Principal:
    """Who a request comes from."""

    user: str
    admin: bool
    token: str  # the token's id (never the token)


class Unauthorized(TwinError):
    pass


def check_user(name: str) -> str:
    if not _USER.fullmatch(name or ""):
        raise TwinError(
            f"user {name!r}: a user name is 1-32 characters: a lowercase letter, then lowercase "
            "letters, digits, '_', '.' or '-'"
        )
    return name


def duration(text: str) -> float:
    """`30d`, `12h`, `90m`, `3600s`, `2w` in seconds; TwinError naming the form otherwise."""
    m = _DURATION.fullmatch((text or "").strip())
    if not m or int(m.group(1)) <= 0:
        raise TwinError(f"{text!r} is not a duration: give a number and a unit (s, m, h, d, w), e.g. 30d or 12h")
    return int(m.group(1)) * UNITS[m.group(2)]


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue(store: Store, user: str, admin: bool = False, expires: float | None = None) -> tuple[str, str]:
    """A new token for `user` (made if new): (its id, the token). The token is not kept."""
    check_user(user)
    tid = secrets.token_hex(4)
    token = PREFIX + secrets.token_urlsafe(32)
    store.add_token(tid, user, digest(token), admin, None if expires is None else time.time() + expires)
    return tid, token


def authenticate(store: Store, header: str | None) -> Principal:
    """The principal an Authorization header names; Unauthorized saying why not."""
    scheme, _, token = (header or "").partition(" ")
    if not header:
        raise Unauthorized("no token: send `Authorization: Bearer TOKEN` (`twin serve token create USER` makes one)")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("the Authorization header takes `Bearer TOKEN`")
    row = store.token_by_hash(digest(token.strip()))
    if row is None:
        raise Unauthorized("unknown token")
    if row["revoked"] is not None:
        raise Unauthorized(f"token {row['id']} was revoked")
    now = time.time()
    if row["expires"] is not None and row["expires"] <= now:
        raise Unauthorized(f"token {row['id']} expired")
    if row["used"] is None or now - row["used"] > 60:  # written at most once a minute
        store.run("UPDATE tokens SET used = ? WHERE id = ?", now, row["id"])
    return Principal(row["user"], bool(row["admin"]), row["id"])


class Throttle:
    """Failed authentication per client address: counted, and each answer slowed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[int, float]] = {}  # address -> (failures, last)
        self.total = 0

    def failed(self, address: str) -> float:
        """Count a failure of `address`; the seconds its answer waits."""
        now = time.monotonic()
        with self._lock:
            self.total += 1
            n, last = self._seen.get(address, (0, now))
            n = 1 if now - last > FORGET else n + 1
            self._seen[address] = (n, now)
            if len(self._seen) > 10_000:  # bounded: the oldest addresses go
                for a, _ in sorted(self._seen.items(), key=lambda kv: kv[1][1])[:1000]:
                    self._seen.pop(a, None)
        return min(DELAY * 2 ** (n - 1), MAX_DELAY)

    def failures(self, address: str) -> int:
        with self._lock:
            return self._seen.get(address, (0, 0.0))[0]
