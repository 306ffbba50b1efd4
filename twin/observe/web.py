"""`twin web`: the lab as a page, served from this machine only (no CDN: page, script and
style are files of this package), updated live over server-sent events.

    GET /               the page (static/index.html, app.js, style.css)
    GET /api/topology   nodes (kind, tier), links, tenants and their hosts
    GET /api/state      the collector's state: snapshot, rates, latest events
    GET /api/verify     the last `twin verify` result (isolation matrix included)
    GET /api/stream     server-sent events: the state, each time the collector has news
"""
from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from twin import kinds
from twin.observe import store
from twin.observe.collector import Collector

STATIC = {"/": ("index.html", "text/html; charset=utf-8"), "/app.js": ("app.js", "text/javascript; charset=utf-8"),
          "/style.css": ("style.css", "text/css; charset=utf-8")}
STREAM_EVERY = 1.0   # s: the longest a page waits for news (a keep-alive when there is none)


def topology(collector: Collector) -> dict[str, Any]:
    f = collector.ctx.fabric
    nodes = [{"name": n.name, "kind": n.kind, "tier": kinds.of(n).tier, "asn": n.asn, "loopback": n.loopback,
              "ports": [p.name for p in n.ports]} for n in f.nodes.values()]
    links = [{"id": f"{l.a.node}:{l.a.port}--{l.b.node}:{l.b.port}", "a": {"node": l.a.node, "port": l.a.port},
              "b": {"node": l.b.node, "port": l.b.port}} for l in f.links]
    tenants = {t.name: {"vrf": t.vrf, "l3vni": t.l3vni, "vteps": t.vteps(),
                        "hosts": [a.host for a in t.attachments],
                        "segments": {s.name: {"subnet": s.subnet, "l2vni": s.l2vni} for s in t.segments.values()}}
               for t in f.tenants.values()}
    return {"lab": collector.ctx.name, "nodes": nodes, "links": links, "tenants": tenants}


class Handler(BaseHTTPRequestHandler):
    collector: Collector   # set on the class `serve` makes

    def log_message(self, *args) -> None:   # quiet: the terminal shows the URL, not every request
        pass

    def _send(self, body: bytes, kind: str, code: int = 200) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, doc: Any) -> None:
        self._send(json.dumps(doc, default=str).encode(), "application/json")

    def do_GET(self) -> None:  # noqa: N802  (http.server's name)
        path = self.path.split("?", 1)[0]
        if path in STATIC:
            name, kind = STATIC[path]
            self._send(resources.files("twin.observe").joinpath("static", name).read_bytes(), kind)
        elif path == "/api/topology":
            self._json(topology(self.collector))
        elif path == "/api/state":
            self._json(self.collector.state())
        elif path == "/api/verify":
            self._json(store.last_verify(self.collector.ctx.dir))
        elif path == "/api/stream":
            self._stream()
        else:
            self._send(b"not found\n", "text/plain", 404)

    def _stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        c, seen = self.collector, -1
        try:
            while not c.stopped:
                with c.lock:
                    c.lock.wait_for(lambda: c.version != seen or c.stopped, timeout=STREAM_EVERY)
                    seen = c.version
                doc = json.dumps(c.state(), default=str)
                self.wfile.write(f"event: state\ndata: {doc}\n\n".encode())
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return


def serve(collector: Collector, host: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server of the page on (host, port), not started: call serve_forever()."""
    handler = type("LabHandler", (Handler,), {"collector": collector})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
