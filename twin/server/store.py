"""The server's state in one SQLite file (`<state dir>/state.db`): users, hashed tokens, labs,
operations with their progress events, and snapshots. It survives a restart: what was running
when the server stopped is found here and settled (`twin.server.recover`).

One connection per process, shared by its threads under one lock (SQLite serialises writers
anyway); an operation's worker process has its own (`worker`), writing the operation's state and
events as it goes. WAL journal, so a reader never waits for a writer. Rows come back as plain dicts.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, overload

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    name TEXT PRIMARY KEY, created REAL NOT NULL,
    max_labs INTEGER, max_frr INTEGER, max_memory INTEGER);
CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY, user TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, admin INTEGER NOT NULL,
    created REAL NOT NULL, expires REAL, revoked REAL, used REAL);
CREATE TABLE IF NOT EXISTS labs (
    name TEXT PRIMARY KEY, owner TEXT NOT NULL, created REAL NOT NULL, expires REAL NOT NULL,
    state TEXT NOT NULL, source TEXT NOT NULL, frr_nodes INTEGER NOT NULL, memory INTEGER NOT NULL,
    snapshot TEXT, error TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS operations (
    id TEXT PRIMARY KEY, lab TEXT NOT NULL, owner TEXT NOT NULL, kind TEXT NOT NULL, state TEXT NOT NULL,
    created REAL NOT NULL, started REAL, finished REAL, result TEXT, error TEXT NOT NULL DEFAULT '',
    exit INTEGER, idem TEXT, request TEXT, worker INTEGER);
CREATE UNIQUE INDEX IF NOT EXISTS operations_idem ON operations(owner, idem) WHERE idem IS NOT NULL;
CREATE TABLE IF NOT EXISTS events (
    op TEXT NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL,
    stage TEXT NOT NULL DEFAULT '', PRIMARY KEY (op, seq));
CREATE TABLE IF NOT EXISTS snapshots (
    id TEXT PRIMARY KEY, lab TEXT NOT NULL, owner TEXT NOT NULL, created REAL NOT NULL,
    size INTEGER NOT NULL, summary TEXT NOT NULL);
"""
ADDED = (("operations", "worker", "INTEGER"), ("events", "stage", "TEXT NOT NULL DEFAULT ''"))  # since the first
DONE = ("succeeded", "failed")  # an operation's final states
OPEN = ("pending", "running")


class Store:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.path = path
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=10)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
            for table, column, decl in ADDED:  # a database an older server made
                if column not in {r["name"] for r in self._db.execute(f"PRAGMA table_info({table})")}:
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
        path.chmod(0o600)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def rows(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._db.execute(sql, args).fetchall()]

    def row(self, sql: str, *args: Any) -> dict[str, Any] | None:
        found = self.rows(sql, *args)
        return found[0] if found else None

    def run(self, sql: str, *args: Any) -> int:
        """One statement; the rows it changed."""
        with self._lock:
            return self._db.execute(sql, args).rowcount

    def transaction(self) -> "_Tx":
        return _Tx(self)

    # --- users and tokens ------------------------------------------------------------------
    def ensure_user(self, name: str) -> None:
        self.run("INSERT OR IGNORE INTO users(name, created) VALUES (?, ?)", name, time.time())

    def user(self, name: str) -> dict[str, Any] | None:
        return self.row("SELECT * FROM users WHERE name = ?", name)

    def set_limits(self, name: str, labs: int | None, frr: int | None, memory: int | None) -> None:
        self.ensure_user(name)
        self.run("UPDATE users SET max_labs = ?, max_frr = ?, max_memory = ? WHERE name = ?", labs, frr, memory, name)

    def add_token(self, tid: str, user: str, digest: str, admin: bool, expires: float | None) -> None:
        self.ensure_user(user)
        self.run(
            "INSERT INTO tokens(id, user, hash, admin, created, expires) VALUES (?, ?, ?, ?, ?, ?)",
            tid,
            user,
            digest,
            int(admin),
            time.time(),
            expires,
        )

    def token_by_hash(self, digest: str) -> dict[str, Any] | None:
        return self.row("SELECT * FROM tokens WHERE hash = ?", digest)

    def tokens(self) -> list[dict[str, Any]]:
        return self.rows("SELECT id, user, admin, created, expires, revoked, used FROM tokens ORDER BY created")

    def revoke(self, tid: str) -> bool:
        return self.run("UPDATE tokens SET revoked = ? WHERE id = ? AND revoked IS NULL", time.time(), tid) > 0

    # --- labs ------------------------------------------------------------------------------
    def lab(self, name: str) -> dict[str, Any] | None:
        return self.row("SELECT * FROM labs WHERE name = ?", name)

    def labs(self, owner: str | None = None) -> list[dict[str, Any]]:
        if owner is None:
            return self.rows("SELECT * FROM labs ORDER BY created")
        return self.rows("SELECT * FROM labs WHERE owner = ? ORDER BY created", owner)

    def set_lab(self, name: str, **fields: Any) -> None:
        cols = ", ".join(f"{k} = ?" for k in fields)
        self.run(f"UPDATE labs SET {cols} WHERE name = ?", *fields.values(), name)

    def drop_lab(self, name: str) -> None:
        self.run("DELETE FROM labs WHERE name = ?", name)

    # --- operations and their events -------------------------------------------------------
    def operation(self, oid: str) -> dict[str, Any] | None:
        return _decoded(self.row("SELECT * FROM operations WHERE id = ?", oid))

    def by_key(self, owner: str, key: str) -> dict[str, Any] | None:
        return _decoded(self.row("SELECT * FROM operations WHERE owner = ? AND idem = ?", owner, key))

    def operations(self, owner: str | None = None, lab: str | None = None, limit: int = 100) -> list[dict]:
        where, args = [], []
        if owner is not None:
            where.append("owner = ?")
            args.append(owner)
        if lab is not None:
            where.append("lab = ?")
            args.append(lab)
        sql = "SELECT * FROM operations" + (f" WHERE {' AND '.join(where)}" if where else "")
        return [_decoded(r) for r in self.rows(sql + " ORDER BY created DESC LIMIT ?", *args, limit)]

    def open_operations(self, lab: str | None = None) -> list[dict[str, Any]]:
        if lab is None:
            return self.rows("SELECT * FROM operations WHERE state IN ('pending', 'running') ORDER BY created")
        return self.rows("SELECT * FROM operations WHERE state IN ('pending', 'running') AND lab = ?", lab)

    def finish(self, oid: str, state: str, result: Any, error: str, code: int | None) -> None:
        self.run(
            "UPDATE operations SET state = ?, finished = ?, result = ?, error = ?, exit = ? WHERE id = ?",
            state,
            time.time(),
            None if result is None else json.dumps(result, default=str),
            error,
            code,
            oid,
        )

    def add_event(self, oid: str, seq: int, kind: str, text: str, stage: str = "") -> None:
        self.run(
            "INSERT INTO events(op, seq, at, kind, stage, text) VALUES (?, ?, ?, ?, ?, ?)",
            oid,
            seq,
            time.time(),
            kind,
            stage,
            text,
        )

    def events(self, oid: str, after: int = -1) -> list[dict[str, Any]]:
        return self.rows(
            "SELECT seq, at, kind, stage, text FROM events WHERE op = ? AND seq > ? ORDER BY seq", oid, after
        )

    def last_event(self, oid: str) -> int:
        """The number of operation `oid`'s last event (-1: none)."""
        row = self.row("SELECT MAX(seq) AS seq FROM events WHERE op = ?", oid)
        return -1 if row is None or row["seq"] is None else row["seq"]

    # --- snapshots -------------------------------------------------------------------------
    def snapshot(self, sid: str) -> dict[str, Any] | None:
        return _decoded(self.row("SELECT * FROM snapshots WHERE id = ?", sid))

    def snapshots(self, owner: str | None = None, lab: str | None = None) -> list[dict[str, Any]]:
        rows = self.rows("SELECT * FROM snapshots ORDER BY created")
        return [
            _decoded(r) for r in rows if (owner is None or r["owner"] == owner) and (lab is None or r["lab"] == lab)
        ]


class _Tx:
    """BEGIN IMMEDIATE .. COMMIT under the store's lock: a check and the insert it allows, as one."""

    def __init__(self, store: Store):
        self.store = store

    def __enter__(self) -> sqlite3.Connection:
        self.store._lock.acquire()
        self.store._db.execute("BEGIN IMMEDIATE")
        return self.store._db

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        try:
            self.store._db.execute("COMMIT" if kind is None else "ROLLBACK")
        finally:
            self.store._lock.release()


@overload
def _decoded(row: dict[str, Any]) -> dict[str, Any]: ...
@overload
def _decoded(row: None) -> None: ...
def _decoded(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    for k in ("result", "request", "summary"):
        if isinstance(row.get(k), str):
            row[k] = json.loads(row[k])
    return row
