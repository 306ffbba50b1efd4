"""`twin serve`: the API on its listeners, with its upkeep (what a stopped server left settled
first, expired labs removed while it runs), until Ctrl-C or SIGTERM.

Served by `twin.lifecycle.service.Service`: 127.0.0.1 unless `--allow-remote`, TLS with a
certificate, every request bounded (a body at most `MAX_BODY`: a topology and its configs'
archive), its headers within a deadline, and whatever it refuses answered as problem JSON.
"""

from __future__ import annotations

import gc
import logging
import sys
from typing import Callable

from twin.lifecycle.service import Listener, Service, check_listeners
from twin.server import cpu, worker
from twin.server.app import create_app
from twin.server.core import Core, Settings
from twin.server.problems import guard_body
from twin.server.reaper import Reaper, recover

MAX_BODY = 40 << 20  # bytes: a topology with a configs archive (bodies.MAX_TOTAL unpacked) and room
TIMEOUT = 60.0  # s: to receive a body and start answering (a create checks the host's CPU first)
CONCURRENCY = 128  # connections at once, per listener (event streams hold theirs)


def logs(level: int = logging.INFO) -> None:
    """The server's lines (access, operations, upkeep) on stderr, one each: "twin serve: ..."."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("twin serve: %(message)s"))
    log = logging.getLogger("twin.server")
    log.handlers[:] = [handler]
    log.setLevel(level)
    log.propagate = False


def _ahead() -> None:
    """The server ahead of the work on a busy host (`cpu`): its CPU priority `worker.NICE` steps
    up, its session's weight as much where the kernel weighs sessions as one and the server leads
    its own (its operations' workers leave it, and run as `twin up` would), and what it has loaded
    kept out of the garbage collector's full passes (tens of ms each, more on a busy CPU, during
    which no request is answered). What it could not do is said on its log."""
    for missing in cpu.ahead(worker.NICE):
        logging.getLogger("twin.server").info("not ahead of its operations' work: %s", missing)
    gc.collect()
    gc.freeze()


def serve(
    settings: Settings,
    listeners: list[Listener],
    allow_remote: bool = False,
    say: Callable[[str], None] = lambda _: None,
    on_start: Callable[[Service], None] = lambda s: None,
) -> None:
    for w in check_listeners("twin serve", listeners, allow_remote):
        say(w)
    core = Core(settings)
    try:
        recover(core)  # what a stopped server left, settled (each said on the log)
        _ahead()
        worker.warm()  # operations' worker processes fork from a process with twin loaded
        reaper = Reaper(core).start()
        service = Service(
            "serve",
            create_app(core),
            listeners,
            max_body=MAX_BODY,
            timeout=TIMEOUT,
            concurrency=CONCURRENCY,
            body=guard_body,
            forwarded=settings.trusted_proxies,
        )

        def started(s: Service) -> None:
            # the access log says every request with its user; the guard's own line only for a 500
            logging.getLogger("twin.service.serve").setLevel(logging.ERROR)
            on_start(s)

        try:
            service.run(on_start=started)
        finally:
            reaper.stop()
    finally:
        core.close()
