"""The server's own upkeep: settling what a stopped server left, and removing expired labs.

`recover` runs before the server answers anyone. An operation the database still has as
pending or running was cut off by the server's stop (a kill, a crash, a reboot): once its
worker process is gone too (it dies with the server), it becomes `failed`, saying so, and its
lab is left whole or removed, never half made (`settle`). A lab of the database that is gone
from the host is forgotten; labs of the host that the server does not know are not touched
(they are the CLI's).

`Reaper` looks every `reap_every` seconds for labs past their expiry and removes each through
a delete operation of the server's own (user `server`), which its owner sees in the lab's
operations; a lab with an operation under way waits for it to end.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import partial

from twin.base.errors import TwinError
from twin.lab import Lab
from twin.server import labwork, worker
from twin.server.auth import Principal
from twin.server.core import Core
from twin.server.problems import ApiProblem
from twin.server.settle import settle

log = logging.getLogger("twin.server")


def recover(core: Core) -> list[str]:
    """Settle what a stopped server left (see the module); one line per thing done."""
    said = []
    for op in core.store.open_operations():
        why = f"the server stopped during this operation (it was {op['state']}); "
        name, kind = op["lab"], op["kind"]
        try:
            worker.gone(op.get("worker"))
            why += settle(core, name, kind)
        except (TwinError, OSError) as e:
            why += f"settling the lab failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        problem = ApiProblem(500, why, "server-stopped")
        core.store.finish(op["id"], "failed", {"error": problem.doc()}, why, 1)
        said.append(f"operation {op['id']} ({kind} of lab {name}): failed: {why}")
    for row in core.store.labs():
        if row["state"] == "up" and not Lab(row["name"]).runtime.containers(row["name"]):
            core.store.drop_lab(row["name"])
            core.drop_source(row["source"])
            said.append(f"lab {row['name']} ({row['owner']}): gone from the host; forgotten")
    for line in said:
        log.warning("recover: %s", line)
    return said


class Reaper:
    """Expired labs removed, on a thread of its own."""

    def __init__(self, core: Core):
        self.core = core
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="twin-reaper", daemon=True)

    def start(self) -> "Reaper":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.reap()
            except Exception as e:  # noqa: BLE001  (one line; the next round tries again)
                log.warning("reaper: %s: %s", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
            self._stop.wait(self.core.settings.reap_every)

    def reap(self) -> list[str]:
        """A delete operation for every lab past its expiry (none while one runs on it): their ids."""
        started = []
        for row in self.core.store.rows("SELECT * FROM labs WHERE expires <= ? AND state != 'deleting'", time.time()):
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["expires"]))
            owner = Principal(row["owner"], False, "server")  # its owner sees the operation
            try:
                op, _ = self.core.ops.start(
                    owner,
                    row["name"],
                    "expire",
                    labwork.delete(row["name"], f"expired at {when}"),
                    before=partial(self.core.store.set_lab, row["name"], state="deleting"),
                )
            except ApiProblem:
                continue  # busy: the next round
            log.warning("lab %s of %s expired: removing it (operation %s)", row["name"], row["owner"], op["id"])
            started.append(op["id"])
        return started
