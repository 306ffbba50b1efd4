"""`twin web`: the lab as a page, served from this machine only (no CDN: page, script and
style are files of this package), updated live over server-sent events. A Starlette app,
served by `twin.lifecycle.service` (bounded requests, one line per failure, 127.0.0.1).

    GET /               the page (static/index.html, app.js, style.css)
    GET /api/topology   nodes (kind, tier), links, tenants and their hosts
    GET /api/state      the collector's state: snapshot, rates, latest events
    GET /api/verify     the last `twin verify` result (isolation matrix included)
    GET /api/stream     server-sent events: the state, each time the collector has news
"""

from __future__ import annotations

import json
from functools import partial
from importlib import resources
from typing import Any, Callable, Iterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from twin import kinds
from twin.lifecycle.service import error_handlers
from twin.observe import store
from twin.observe.collector import Collector

STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}
STREAM_EVERY = 1.0  # s: the longest a page waits for news (a keep-alive when there is none)
NO_STORE = {"Cache-Control": "no-store"}


def topology(collector: Collector) -> dict[str, Any]:
    f = collector.ctx.fabric
    nodes = [
        {
            "name": n.name,
            "kind": n.kind,
            "tier": kinds.of(n).tier,
            "asn": n.asn,
            "loopback": n.loopback,
            "ports": [p.name for p in n.ports],
        }
        for n in f.nodes.values()
    ]
    links = [
        {
            "id": f"{link.a.node}:{link.a.port}--{link.b.node}:{link.b.port}",
            "a": {"node": link.a.node, "port": link.a.port},
            "b": {"node": link.b.node, "port": link.b.port},
        }
        for link in f.links
    ]
    tenants = {
        t.name: {
            "vrf": t.vrf,
            "l3vni": t.l3vni,
            "vteps": t.vteps(),
            "hosts": [a.host for a in t.attachments],
            "segments": {s.name: {"subnet": s.subnet, "l2vni": s.l2vni} for s in t.segments.values()},
        }
        for t in f.tenants.values()
    }
    return {"lab": collector.ctx.name, "nodes": nodes, "links": links, "tenants": tenants}


def app(collector: Collector) -> Starlette:
    """The page and its API as an ASGI app (served by `twin.lifecycle.service.Service`)."""

    def static(name: str, kind: str) -> Callable[[Request], Response]:
        body = resources.files("twin.observe").joinpath("static").joinpath(name).read_bytes()
        return lambda request: Response(body, media_type=kind, headers=NO_STORE)

    def doc(make: Callable[[], Any]) -> Callable[[Request], Response]:
        return lambda request: Response(
            json.dumps(make(), default=str), media_type="application/json", headers=NO_STORE
        )

    routes = [Route(path, static(name, kind)) for path, (name, kind) in STATIC.items()]
    routes += [
        Route("/api/topology", doc(lambda: topology(collector))),
        Route("/api/state", doc(collector.state)),
        Route("/api/verify", doc(lambda: store.last_verify(collector.ctx.dir))),
        Route(
            "/api/stream",
            lambda request: StreamingResponse(_stream(collector), media_type="text/event-stream", headers=NO_STORE),
        ),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
    ]
    return Starlette(routes=routes, exception_handlers=error_handlers())


def _news(c: Collector, seen: int) -> bool:
    """The collector has a state newer than version `seen`, or stopped."""
    return c.version != seen or c.stopped


def _stream(c: Collector) -> Iterator[bytes]:
    """Server-sent events: the state each time the collector has news (at least every STREAM_EVERY s)."""
    seen = -1
    while not c.stopped:
        with c.lock:
            c.lock.wait_for(partial(_news, c, seen), timeout=STREAM_EVERY)
            seen = c.version
        yield f"event: state\ndata: {json.dumps(c.state(), default=str)}\n\n".encode()
