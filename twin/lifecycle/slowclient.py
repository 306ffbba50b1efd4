"""A deadline for a request's headers, on uvicorn's h11 protocol.

uvicorn bounds the idle time between two requests of a connection (`timeout_keep_alive`) but
not the time a client takes to send one request's headers: a client that connects and sends
nothing, or a header line a minute (slowloris), holds a connection, and `limit_concurrency`
of them shut every other client out (503). `HeaderDeadline` gives each request `within`
seconds from its connection (or its first byte, on a kept-alive connection) to the end of its
headers; a client late is answered 408, the connection closed, and one line logged. Once the
headers are in, the service's guard bounds the body and the answer (`twin.lifecycle.service`).

One address holds at most `PER_ADDRESS` connections whose headers are still awaited: a new one
beyond that closes the oldest of them (a client that sends its request at once is awaited for
milliseconds; one that holds connections half-open loses its own, never another client's slots).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict

from uvicorn.protocols.http.h11_impl import H11Protocol

LATE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\ncontent-length: 22\r\nconnection: close\r\n\r\n"
    b"408: Request Timeout\r\n"
)
HEADERS = 10.0  # s: the longest a request's headers are awaited
PER_ADDRESS = 16  # connections of one address whose headers are awaited at once


class HeaderDeadline(H11Protocol):
    """uvicorn's h11 protocol, with `within` seconds for a request's headers (see the module)."""

    within: float = 30.0
    log: logging.Logger = logging.getLogger("twin.service")
    awaited: dict[str, OrderedDict[int, HeaderDeadline]] = {}  # per address: connections awaiting headers
    _late: asyncio.TimerHandle | None = None
    _peer: str = ""

    @classmethod
    def bounded(cls, within: float, log: logging.Logger) -> type[HeaderDeadline]:
        """This protocol with its deadline and logger, as uvicorn's `Config(http=...)` takes it."""
        return type("HeaderDeadline", (cls,), {"within": min(within, HEADERS), "log": log, "awaited": {}})

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        peer = transport.get_extra_info("peername")
        self._peer = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._waiting() and self._late is None:
            self._arm()  # the first byte of the next request on a kept-alive connection
        super().data_received(data)
        if not self._waiting():
            self._disarm()  # its headers are in: the guard bounds the rest

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _waiting(self) -> bool:
        """No request is being answered: the next one's headers are awaited."""
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        self._late = self.loop.call_later(self.within, self._too_late)
        if not self._peer:
            return
        mine = self.awaited.setdefault(self._peer, OrderedDict())
        mine[id(self)] = self
        while len(mine) > PER_ADDRESS:  # the oldest half-open connection of this address makes room
            _, oldest = mine.popitem(last=False)
            oldest._disarm()
            if not oldest.transport.is_closing():
                oldest.transport.close()

    def _disarm(self) -> None:
        if self._late is not None:
            self._late.cancel()
            self._late = None
        mine = self.awaited.get(self._peer)
        if mine is not None:
            mine.pop(id(self), None)
            if not mine:
                self.awaited.pop(self._peer, None)

    def _too_late(self) -> None:
        self._late = None
        if self.transport.is_closing() or not self._waiting():
            return
        self.log.warning(f"a client's request headers did not arrive within {self.within:g}s: 408, connection closed")
        self.transport.write(LATE)
        self.transport.close()
