"""Long work as operations: a create, a delete, an apply, a rehearsal, a verify, a proof, a fault,
a snapshot. A request that starts one is answered `202 {"operation": ID}` at once; the work runs
on a worker thread, and its progress is events (the `say` lines twin's bring-up, apply, rehearse
and proof already speak), kept in the state database and streamed as server-sent events.

    state   pending -> running -> succeeded | failed
    result  the JSON the CLI prints with --json for the same command, when the work finished
    exit    the CLI's exit code for it (0; 1 when the verdict failed: a check, a threshold)

An operation that raised is `failed` with its error as a problem (`error`). One write operation
at a time per lab: a second is refused (409) while one is pending or running, and so is one
while a `twin` command on the host holds the lab's lock. `Idempotency-Key`: a retried request
with the same key and body gets the same operation; with another body, 422.
"""
from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from twin.errors import TwinError
from twin.lifecycle import locks
from twin.server.auth import Principal
from twin.server.problems import ApiProblem, of_error
from twin.server.store import DONE, Store

Say = Callable[[str], None]
Work = Callable[[Say], "tuple[Any, int]"]        # (the result as the CLI's --json has it, the CLI's exit code)
WORKERS = 4            # operations running at once (more wait as pending)
KEPT_LIVE = 200        # finished operations whose events stay in memory too (the rest: from the database)
log = logging.getLogger("twin.server")


@dataclass
class Live:
    """An operation's events as they come, for its streams."""

    seq: int = -1
    done: bool = False
    last: str = ""          # the last progress line (one said again is not an event again)
    cond: threading.Condition = field(default_factory=threading.Condition)


def request_digest(method: str, path: str, body: bytes) -> str:
    return hashlib.sha256(method.encode() + b" " + path.encode() + b"\n" + body).hexdigest()


class Operations:
    def __init__(self, store: Store, workers: int = WORKERS):
        self.store = store
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="twin-op")
        self._live: dict[str, Live] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        """Pending operations dropped (a next start settles them as failed); running ones finish first."""
        running = self.store.rows("SELECT id, kind, lab FROM operations WHERE state = 'running'")
        if running:
            log.warning("stopping: waiting for %d running operation(s) to finish: %s", len(running),
                        ", ".join(f"{r['id']} ({r['kind']} of {r['lab']})" for r in running))
        self._pool.shutdown(wait=True, cancel_futures=True)

    # --- starting one ----------------------------------------------------------------------
    def start(self, who: Principal, lab: str, kind: str, work: Work, idem: str | None = None,
              digest: str = "", writes: bool = True, before: Callable[[], None] | None = None) -> tuple[dict, bool]:
        """A new operation of `kind` on `lab` (or the one `idem` made already): (its row, whether it is
        new). `writes`: refused while another write operation or a `twin` command holds the lab.
        `before`: run in the same transaction as the insert (a quota check and the lab's row)."""
        oid = secrets.token_hex(8)
        with self.store.transaction() as db:
            if idem:
                row = db.execute("SELECT * FROM operations WHERE owner = ? AND idem = ?", (who.user, idem)).fetchone()
                if row is not None:
                    if row["request"] != f'"{digest}"':
                        raise ApiProblem(422, f"Idempotency-Key {idem!r} was used for another request (operation "
                                              f"{row['id']}); use a new key for a new request", "idempotency-key")
                    return dict(row), False
            if writes:
                self._refuse_busy(db, lab)
            if before is not None:
                before()
            db.execute("INSERT INTO operations(id, lab, owner, kind, state, created, idem, request) "
                       "VALUES (?, ?, ?, ?, 'pending', ?, ?, ?)",
                       (oid, lab, who.user, kind, time.time(), idem or None, f'"{digest}"'))
        with self._lock:
            self._live[oid] = Live()
        log.info("%s: operation %s (%s of lab %s) pending", who.user, oid, kind, lab)
        self._pool.submit(self._run, oid, lab, kind, work)
        return self.store.operation(oid) or {}, True

    @staticmethod
    def _refuse_busy(db, lab: str) -> None:
        row = db.execute("SELECT id, kind, state FROM operations WHERE lab = ? AND state IN ('pending', 'running') "
                         "ORDER BY created LIMIT 1", (lab,)).fetchone()
        if row is not None:
            raise ApiProblem(409, f"lab {lab!r} is busy: operation {row['id']} ({row['kind']}) is {row['state']}; "
                                  "wait for it (GET /v1/operations/ID)", "lab-busy", operation=row["id"])
        try:
            held = locks.holder(lab)
        except TwinError:           # not a lab name: no lock to hold
            held = ""
        if held:
            raise ApiProblem(409, f"lab {lab!r} is busy: {held} holds its lock on the host; wait for it",
                             "lab-busy")

    # --- running one -----------------------------------------------------------------------
    def _run(self, oid: str, lab: str, kind: str, work: Work) -> None:
        self.store.run("UPDATE operations SET state = 'running', started = ? WHERE id = ?", time.time(), oid)
        self.event(oid, "state", "running")
        t0 = time.monotonic()
        try:
            result, code = work(lambda text: self.event(oid, "progress", text))
        except BaseException as e:  # noqa: BLE001  (an operation ends failed, saying why; the server goes on)
            problem = of_error(e)
            self.store.finish(oid, "failed", {"error": problem.doc()}, problem.detail, 1)
            self.event(oid, "state", f"failed: {problem.detail}")
            log.warning("operation %s (%s of lab %s) failed after %.1fs: %s", oid, kind, lab,
                        time.monotonic() - t0, problem.detail)
        else:
            self.store.finish(oid, "succeeded", result, "", code)
            self.event(oid, "state", "succeeded")
            log.info("operation %s (%s of lab %s) succeeded in %.1fs (exit %d)", oid, kind, lab,
                     time.monotonic() - t0, code)
        finally:
            self._finished(oid)

    def event(self, oid: str, kind: str, text: str) -> None:
        live = self._live.get(oid)
        if live is None:
            return
        with live.cond:
            if kind == "progress" and text == live.last:
                return
            live.last = text if kind == "progress" else live.last
            live.seq += 1
            self.store.add_event(oid, live.seq, kind, text)
            live.cond.notify_all()

    def _finished(self, oid: str) -> None:
        live = self._live.get(oid)
        if live is not None:
            with live.cond:
                live.done = True
                live.cond.notify_all()
        with self._lock:
            done = [k for k, v in self._live.items() if v.done]
            for k in done[:max(0, len(done) - KEPT_LIVE)]:
                self._live.pop(k, None)

    # --- watching one ----------------------------------------------------------------------
    def wait(self, oid: str, seen: int, timeout: float) -> bool:
        """Block until operation `oid` has an event after `seen`, or is done, or `timeout` passed;
        whether it is done (a finished operation no longer in memory counts as done)."""
        live = self._live.get(oid)
        if live is None:
            return True
        with live.cond:
            live.cond.wait_for(lambda: live.done or live.seq > seen, timeout)
            return live.done and live.seq <= seen

    def doc(self, row: dict[str, Any]) -> dict[str, Any]:
        """An operation as the API shows it."""
        out = {k: row.get(k) for k in ("id", "lab", "owner", "kind", "state", "created", "started", "finished")}
        if row["state"] in DONE:
            out["exit"] = row.get("exit")
            out["result"] = row.get("result")
            if row["state"] == "failed":
                out["error"] = (row.get("result") or {}).get("error") or {"detail": row.get("error")}
        last = self.store.row("SELECT text FROM events WHERE op = ? AND kind = 'progress' ORDER BY seq DESC LIMIT 1",
                              row["id"])
        out["progress"] = last["text"] if last else ""
        return out
