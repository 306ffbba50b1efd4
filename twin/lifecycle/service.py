"""A lab's long-lived HTTP service: one ASGI app served on several listeners in one process.

    svc = Service("web", app, [Listener.parse("127.0.0.1:8080"), Listener(uds="/run/twin/x.sock")])
    svc.start()            # uvicorn on its own thread and event loop; returns once every listener is bound
    svc.addresses()        # what they are bound to (port 0 asks the kernel for one)
    svc.stop()
    svc.run()              # or: start, and stop on Ctrl-C

`twin web` (Starlette) and `twin exporter` (prometheus_client's ASGI app) run on it, and
a per-lab NVUE REST API can: TCP listeners (plain or TLS), unix sockets, all serving the
same app. Every app is wrapped in `Guard`, so whatever a request does:
- it never ends in a traceback: a handler that raises gets a clean 500 (JSON when the
  client asked for JSON, else text) and one line on stderr; uvicorn's own messages are
  one line each too (`_one_line`);
- its body is bounded (`max_body`: 413 beyond it, from Content-Length or as it streams),
  and so is the time to read it and to start answering (`timeout`: 408 / 504); a stream
  (server-sent events) may run on once it has started; headers are bounded in size by h11
  and in time too (`timeout`: 408, `slowclient`), the connections at once by
  `limit_concurrency` (503 beyond it);
- a failing request (status >= 400) is logged as one line: "twin web: GET /x: 404".
Listeners are on 127.0.0.1 unless told otherwise: another address needs `allow_remote`
(`--allow-remote` on the command line), and is then warned about.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import signal
import socket
import sys
import threading
from dataclasses import dataclass, replace
from typing import Any, Awaitable, Callable, MutableMapping

import uvicorn

from twin.base.errors import TwinError
from twin.lifecycle.slowclient import HeaderDeadline

Scope = MutableMapping[str, Any]  # as ASGI frameworks (Starlette) type them
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
Body = Callable[[Scope, int, str], "tuple[bytes, str]"]  # (scope, status, why) -> an error's body and type

MAX_BODY = 64 * 1024  # bytes a request body may have
TIMEOUT = 30.0  # s to receive a body, and to start answering
CONCURRENCY = 64  # connections at once, per listener
DRAIN = 16 << 20  # bytes of a body too large read and dropped before the 413 (beyond: the connection closes)
STARTUP = 10.0  # s for every listener to be bound
ERROR = "twin.error"  # the scope's key for why a request failed (set by the error handlers), for the log line
TAG = "twin.listener"  # the scope's key for the tag of the listener a request came in on


@dataclass(frozen=True)
class Listener:
    """Where a service listens: a TCP host and port (TLS with a certificate and key) or a unix socket."""

    host: str = "127.0.0.1"
    port: int = 0
    uds: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    tag: str = ""  # what the app is told of the listener a request came in on (scope TAG)
    fd: int | None = None  # a unix socket bound already (a path too long for bind(2) directly)

    @classmethod
    def parse(cls, text: str, certfile: str | None = None, keyfile: str | None = None) -> "Listener":
        """HOST:PORT ([v6]:PORT), or unix:PATH."""
        if text.startswith("unix:"):
            return cls(uds=text[5:], certfile=certfile, keyfile=keyfile)
        host, _, port = text.rpartition(":")
        if not host or not port.isdigit() or not 0 <= int(port) < 65536:
            raise TwinError(f"--listen {text!r}: give HOST:PORT, e.g. 127.0.0.1:8080 (or unix:PATH)")
        return cls(host.strip("[]"), int(port), certfile=certfile, keyfile=keyfile)

    @property
    def scheme(self) -> str:
        return "https" if self.certfile else "http"

    def loopback(self) -> bool:
        """Only this host can reach it: a unix socket, or a name or address that is loopback only."""
        if self.uds:
            return True
        try:
            found = {str(a[4][0]) for a in socket.getaddrinfo(self.host, None)}  # IPv4 and IPv6: a str
        except OSError:
            return False
        return bool(found) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in found)

    def __str__(self) -> str:
        if self.uds:
            return f"unix:{self.uds}"
        return f"{self.scheme}://{f'[{self.host}]' if ':' in self.host else self.host}:{self.port}"


def check_listeners(what: str, listeners: list[Listener], allow_remote: bool) -> list[str]:
    """Warnings for listeners others can reach; TwinError for one without `allow_remote`, or TLS half given."""
    warnings = []
    for ls in listeners:
        if bool(ls.certfile) != bool(ls.keyfile):
            raise TwinError(f"{what} on {ls}: TLS needs both a certificate and its key")
        if ls.loopback():
            continue
        if not allow_remote:
            raise TwinError(
                f"{what} on {ls}: not a loopback address, so other machines could reach the lab's "
                "data; listen on 127.0.0.1, or add --allow-remote to mean it"
            )
        warnings.append(f"warning: {what} listens on {ls}: anyone who reaches this host there can read it")
    return warnings


# --- every request bounded, every failure one line --------------------------------------------------
class Guard:
    """The ASGI app `app` with bounded requests and no traceback ever (see the module docstring)."""

    def __init__(
        self, app: App, name: str, max_body: int = MAX_BODY, timeout: float = TIMEOUT, body: "Body | None" = None
    ):
        self.app, self.name, self.max_body, self.timeout = app, name, max_body, timeout
        self.body = body or _body
        self.log = logging.getLogger(f"twin.service.{name}")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started: list[int] = []
        what = _printable(f"{scope.get('method', '?')} {scope.get('path', '?')}")

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.append(message["status"])
            elif started and started[0] >= 400 and not message.get("more_body"):  # logged before it is answered
                why = scope.get(ERROR, "")
                self.log.warning("%s: %s%s", what, started[0], f": {why}" if why else "")
            await send(message)

        try:
            try:
                length = int(dict(scope.get("headers", [])).get(b"content-length", b"0") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= self.max_body:
                raise _TooLarge(f"a request body is at most {self.max_body} bytes")
            await self._run(scope, self._bounded(receive), sending, started)
        except Exception as e:  # noqa: BLE001  (a clean status and one line, never a traceback)
            status, scope[ERROR] = _status_of(e)
            if not started:
                if isinstance(e, _TooLarge):
                    await self._drain(receive)
                await _answer(scope, sending, status, scope[ERROR], self.body)

    async def _drain(self, receive: Receive) -> None:
        """What is left of a body too large, read and dropped (up to DRAIN bytes, within `timeout`):
        closed with unread data, the connection would be reset before the client reads its 413."""
        seen = 0
        try:
            while seen <= DRAIN:
                message = await asyncio.wait_for(receive(), self.timeout)
                seen += len(message.get("body", b""))
                if message.get("type") != "http.request" or not message.get("more_body"):
                    return
        except (asyncio.TimeoutError, OSError):
            return

    async def _run(self, scope: Scope, receive: Receive, send: Send, started: list[int]) -> None:
        """The app, given `timeout` to start answering (then it may stream on)."""
        task = asyncio.ensure_future(self.app(scope, receive, send))
        done, _ = await asyncio.wait({task}, timeout=self.timeout)
        if not done and not started:
            task.cancel()
            raise _Timeout(f"no answer within {self.timeout:g}s")
        await task

    def _bounded(self, receive: Receive) -> Receive:
        seen = 0

        async def bounded() -> Message:
            nonlocal seen
            try:
                message = await asyncio.wait_for(receive(), self.timeout)
            except asyncio.TimeoutError:
                raise _Slow(f"the request body did not arrive within {self.timeout:g}s") from None
            seen += len(message.get("body", b""))
            if seen > self.max_body:
                raise _TooLarge(f"a request body is at most {self.max_body} bytes")
            return message

        return bounded


def _printable(text: str, limit: int = 200) -> str:
    """A client's words fit for one log line: control characters escaped, at most `limit` long."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return out if len(out) <= limit else out[:limit] + "..."


class _TooLarge(Exception):
    pass


class _Slow(Exception):
    pass


class _Timeout(Exception):
    pass


def _status_of(e: Exception) -> tuple[int, str]:
    if isinstance(e, _TooLarge):
        return 413, str(e)
    if isinstance(e, _Slow):
        return 408, str(e)
    if isinstance(e, _Timeout):
        return 504, str(e)
    if isinstance(e, TwinError):
        return 500, str(e).splitlines()[0] if str(e) else type(e).__name__
    return 500, f"internal error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": ")


def error_handlers(body: "Body | None" = None) -> dict:
    """Starlette's exception handlers answering as `Guard` does (404s and handler errors alike)."""
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import Response

    def answer(request: Request, exc: Exception) -> Response:
        status, why = (exc.status_code, exc.detail) if isinstance(exc, HTTPException) else _status_of(exc)
        if status >= 500:
            request.scope[ERROR] = why
        body_, kind = (body or _body)(request.scope, status, why)
        return Response(body_, status_code=status, media_type=kind)

    return {HTTPException: answer, Exception: answer}


def _body(scope: Scope, status: int, why: str) -> tuple[bytes, str]:
    accept = dict(scope.get("headers", [])).get(b"accept", b"")
    if b"json" in accept:
        return json.dumps({"error": why, "status": status}).encode(), "application/json"
    return f"{status}: {why}\n".encode(), "text/plain; charset=utf-8"


async def _answer(scope: Scope, send: Send, status: int, why: str, answer: Body | None = None) -> None:
    """A whole response: JSON `{"error": why}` when the client accepts JSON, else a line of text
    (or what the service's own `answer` makes of it)."""
    body, kind = (answer or _body)(scope, status, why)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", kind.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class _OneLine(logging.Formatter):
    """Each record one line, "twin NAME: message[: exception]": never a traceback."""

    def __init__(self, name: str):
        super().__init__()
        self.name = name

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage().replace("\n", " ")
        if record.exc_info and record.exc_info[1] is not None:
            e = record.exc_info[1]
            text += f": {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": ")
        return f"twin {self.name}: {text}"


def _one_line(name: str) -> None:
    """uvicorn's loggers and the guard's: warnings and errors, one line each on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine(name))
    for logger in ("uvicorn", "uvicorn.error", "uvicorn.access", f"twin.service.{name}"):
        log = logging.getLogger(logger)
        log.handlers[:] = [handler] if logger in ("uvicorn", f"twin.service.{name}") else []
        log.setLevel(logging.WARNING)
        log.propagate = logger == "uvicorn.error"


# --- the service --------------------------------------------------------------------------------------
class Service:
    """One ASGI app on several listeners, in one process, on a thread of its own."""

    def __init__(
        self,
        name: str,
        app: App,
        listeners: list[Listener],
        max_body: int = MAX_BODY,
        timeout: float = TIMEOUT,
        concurrency: int = CONCURRENCY,
        body: Body | None = None,
        forwarded: tuple[str, ...] = (),
    ):
        """`body`: how the service words an error it answers itself (default: `{"error", "status"}`);
        `forwarded`: the proxies whose X-Forwarded-For is believed (none: the peer is the client)."""
        if not listeners:
            raise TwinError(f"twin {name}: no listener given")
        self.name, self.listeners, self.forwarded = name, listeners, forwarded
        self.app = Guard(app, name, max_body, timeout, body)
        self.servers = [uvicorn.Server(self._config(ls, concurrency)) for ls in listeners]
        self._thread: threading.Thread | None = None
        self._failed: BaseException | None = None

    def _config(self, ls: Listener, concurrency: int) -> uvicorn.Config:
        where = (
            {"fd": ls.fd} if ls.fd is not None else {"uds": ls.uds} if ls.uds else {"host": ls.host, "port": ls.port}
        )
        app = _Tagged(self.app, ls.tag) if ls.tag else self.app
        http = HeaderDeadline.bounded(self.app.timeout, logging.getLogger(f"twin.service.{self.name}"))
        return uvicorn.Config(
            app,
            **where,
            http=http,
            lifespan="off",
            log_config=None,
            access_log=False,
            ssl_certfile=ls.certfile,
            ssl_keyfile=ls.keyfile,
            limit_concurrency=concurrency,
            timeout_keep_alive=5,
            h11_max_incomplete_event_size=16 * 1024,
            server_header=False,
            timeout_graceful_shutdown=2,
            proxy_headers=bool(self.forwarded),
            forwarded_allow_ips=list(self.forwarded) or None,
        )

    def start(self) -> "Service":
        """Serve on every listener from a thread; returns once all are bound (TwinError if one cannot be)."""
        _one_line(self.name)
        self._thread = threading.Thread(target=self._serve, name=f"twin-{self.name}", daemon=True)
        self._thread.start()
        deadline = threading.Event()
        for _ in range(int(STARTUP / 0.05)):
            if all(s.started for s in self.servers) or self._failed or not self._thread.is_alive():
                break
            deadline.wait(0.05)
        if not all(s.started for s in self.servers):
            self.stop()
            why = self._failed or "it did not start"
            raise TwinError(f"twin {self.name}: cannot listen on {', '.join(map(str, self.listeners))}: {why}")
        return self

    def _serve(self) -> None:
        async def every() -> None:
            await asyncio.gather(*(s.serve() for s in self.servers))

        try:
            asyncio.run(every())
        except BaseException as e:  # noqa: BLE001  (start() reports it; uvicorn exits when it cannot bind)
            self._failed = e

    def addresses(self) -> list[str]:
        """Every listener as bound (a port 0 replaced by the port the kernel gave)."""
        out = []
        for ls, s in zip(self.listeners, self.servers):
            if ls.uds or not s.servers:
                out.append(str(ls))
                continue
            out.append(str(replace(ls, port=self.port(ls))))
        return out

    def port(self, ls: Listener) -> int:
        """The port TCP listener `ls` is bound to (its own, or the one the kernel gave for 0)."""
        s = self.servers[self.listeners.index(ls)]
        return s.servers[0].sockets[0].getsockname()[1] if s.servers else ls.port

    def stop(self, timeout: float = 5.0) -> None:
        for s in self.servers:
            s.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)

    def run(
        self,
        on_start: Callable[["Service"], None] = lambda s: None,
        on_stop: Callable[[], None] = lambda: None,
        watch: Callable[[], bool] = lambda: True,
    ) -> None:
        """Start, then serve until Ctrl-C or SIGTERM (or a listener fails, or `watch()`, asked
        twice a second, says no more); `on_stop` before the listeners close (what ends the
        app's streams)."""
        # SIGTERM only sets a flag: a handler that raised would raise in a process forked meanwhile too
        # (pyroute2 forks to open a socket in a namespace) and run this one's code on in it
        term = threading.Event()
        main = threading.current_thread() is threading.main_thread()
        old = signal.signal(signal.SIGTERM, lambda signum, frame: term.set()) if main else None
        self.start()
        try:
            on_start(self)
            while self._thread is not None and self._thread.is_alive() and watch() and not term.is_set():
                self._thread.join(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            on_stop()
            self.stop()
            if main:
                signal.signal(signal.SIGTERM, old)


class _Tagged:
    """An app told which listener a request came in on (`scope[TAG]`)."""

    def __init__(self, app: App, tag: str):
        self.app, self.tag = app, tag

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app({**scope, TAG: self.tag}, receive, send)
