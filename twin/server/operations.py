"""Long work as operations: a create, a delete, an apply, a rehearsal, a verify, a proof, a fault,
a snapshot. A request that starts one is answered `202 {"operation": ID}` at once; the work runs
in a process of its own (`worker`), and its progress is events (twin.base.stages' Steps, stage and
text, as twin's bring-up, apply, rehearse and proof speak them), kept in the state database and
streamed as server-sent events.

    state   pending -> running -> succeeded | failed
    result  the JSON the CLI prints with --json for the same command, when the work finished
    exit    the CLI's exit code for it (0; 1 when the verdict failed: a check, a threshold)

An operation that raised is `failed` with its error as a problem (`error`); one whose worker
process died (killed, out of memory) is `failed` too, its lab settled whole or removed
(`settle`). At most `workers` operations run at once; more wait as `pending`. One write operation
at a time per lab: a second is refused (409) while one is pending or running, and so is one
while a `twin` command on the host holds the lab's lock. `Idempotency-Key`: a retried request
with the same key and body gets the same operation; with another body, 422.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from twin.base.errors import TwinError
from twin.lifecycle import locks
from twin.server import worker
from twin.server.auth import Principal
from twin.server.home import Home
from twin.server.problems import ApiProblem, of_error
from twin.server.store import DONE
from twin.server.worker import Say, Work

__all__ = ["Operations", "Say", "Work", "request_digest"]
WORKERS = 4  # operations running at once (more wait as pending)
log = logging.getLogger("twin.server")
Settle = Callable[[str, str], str]  # (lab, kind of the operation cut off) -> what was done to the lab


def request_digest(method: str, path: str, body: bytes) -> str:
    return hashlib.sha256(method.encode() + b" " + path.encode() + b"\n" + body).hexdigest()


class Operations:
    def __init__(self, home: Home, workers: int = WORKERS, settle: Settle = lambda lab, kind: ""):
        self.home, self.store, self.settle = home, home.store, settle
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="twin-op")  # each waits for its worker

    def close(self) -> None:
        """Pending operations dropped (a next start settles them as failed); running ones finish first."""
        running = self.store.rows("SELECT id, kind, lab FROM operations WHERE state = 'running'")
        if running:
            log.warning(
                "stopping: waiting for %d running operation(s) to finish: %s",
                len(running),
                ", ".join(f"{r['id']} ({r['kind']} of {r['lab']})" for r in running),
            )
        self._pool.shutdown(wait=True, cancel_futures=True)

    # --- starting one ----------------------------------------------------------------------
    def start(
        self,
        who: Principal,
        lab: str,
        kind: str,
        work: Work,
        idem: str | None = None,
        digest: str = "",
        writes: bool = True,
        before: Callable[[], None] | None = None,
    ) -> tuple[dict, bool]:
        """A new operation of `kind` on `lab` (or the one `idem` made already): (its row, whether it is
        new). `writes`: refused while another write operation or a `twin` command holds the lab.
        `before`: run in the same transaction as the insert (a quota check and the lab's row)."""
        oid = secrets.token_hex(8)
        with self.store.transaction() as db:
            if idem:
                row = db.execute("SELECT * FROM operations WHERE owner = ? AND idem = ?", (who.user, idem)).fetchone()
                if row is not None:
                    if row["request"] != f'"{digest}"':
                        raise ApiProblem(
                            422,
                            f"Idempotency-Key {idem!r} was used for another request (operation "
                            f"{row['id']}); use a new key for a new request",
                            "idempotency-key",
                        )
                    return dict(row), False
            if writes:
                self._refuse_busy(db, lab)
            if before is not None:
                before()
            db.execute(
                "INSERT INTO operations(id, lab, owner, kind, state, created, idem, request) "
                "VALUES (?, ?, ?, ?, 'pending', ?, ?, ?)",
                (oid, lab, who.user, kind, time.time(), idem or None, f'"{digest}"'),
            )
        log.info("%s: operation %s (%s of lab %s) pending", who.user, oid, kind, lab)
        self._pool.submit(self._run, oid, lab, kind, work)
        return self.store.operation(oid) or {}, True

    @staticmethod
    def _refuse_busy(db: sqlite3.Connection, lab: str) -> None:
        row = db.execute(
            "SELECT id, kind, state FROM operations WHERE lab = ? AND state IN ('pending', 'running') "
            "ORDER BY created LIMIT 1",
            (lab,),
        ).fetchone()
        if row is not None:
            raise ApiProblem(
                409,
                f"lab {lab!r} is busy: operation {row['id']} ({row['kind']}) is {row['state']}; "
                "wait for it (GET /v1/operations/ID)",
                "lab-busy",
                operation=row["id"],
            )
        try:
            held = locks.holder(lab)
        except TwinError:  # not a lab name: no lock to hold
            held = ""
        if held:
            raise ApiProblem(409, f"lab {lab!r} is busy: {held} holds its lock on the host; wait for it", "lab-busy")

    # --- running one -----------------------------------------------------------------------
    def _run(self, oid: str, lab: str, kind: str, work: Work) -> None:
        t0 = time.monotonic()
        try:
            proc = worker.start(self.home.root, oid, work)
            proc.join()
            how = f"exit code {proc.exitcode}" if (proc.exitcode or 0) >= 0 else f"signal {-(proc.exitcode or 0)}"
        except BaseException as e:  # noqa: BLE001  (the work could not be handed to a worker: the operation fails)
            how = f"it could not start: {of_error(e).detail}"
        row = self.store.operation(oid) or {}
        if row.get("state") not in DONE:
            self._lost(oid, lab, kind, how)
            row = self.store.operation(oid) or {}
        took = time.monotonic() - t0
        if row.get("state") == "succeeded":
            log.info("operation %s (%s of lab %s) succeeded in %.1fs (exit %s)", oid, kind, lab, took, row.get("exit"))
        else:
            log.warning("operation %s (%s of lab %s) failed after %.1fs: %s", oid, kind, lab, took, row.get("error"))

    def _lost(self, oid: str, lab: str, kind: str, how: str) -> None:
        """Operation `oid`'s worker ended before the operation did: failed, its lab settled."""
        why = f"the operation's worker process ended before it did ({how}); "
        try:
            why += self.settle(lab, kind)
        except (TwinError, OSError) as e:
            why += f"settling the lab failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        problem = ApiProblem(500, why, "worker-died")
        self.store.add_event(oid, self.store.last_event(oid) + 1, "state", f"failed: {why}")
        self.store.finish(oid, "failed", {"error": problem.doc()}, why, 1)

    # --- watching one ----------------------------------------------------------------------
    def doc(self, row: dict[str, Any]) -> dict[str, Any]:
        """An operation as the API shows it."""
        out = {k: row.get(k) for k in ("id", "lab", "owner", "kind", "state", "created", "started", "finished")}
        if row["state"] in DONE:
            out["exit"] = row.get("exit")
            out["result"] = row.get("result")
            if row["state"] == "failed":
                out["error"] = (row.get("result") or {}).get("error") or {"detail": row.get("error")}
        last = self.store.row(
            "SELECT stage, text FROM events WHERE op = ? AND kind = 'progress' ORDER BY seq DESC LIMIT 1", row["id"]
        )
        out["stage"], out["progress"] = (last["stage"], last["text"]) if last else ("", "")
        return out
