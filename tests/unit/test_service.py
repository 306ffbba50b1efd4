"""The HTTP layer of `twin web`, `twin exporter` (and a per-lab NVUE API): one ASGI app on several
listeners; a request that fails gets a clean status, JSON or text, and one line on stderr at most,
never a traceback; bodies and time are bounded; 127.0.0.1 unless told otherwise."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time

import pytest

from twin.base.errors import TwinError
from twin.lifecycle.service import Listener, check_listeners

SERVER = r"""
import asyncio, sys, time
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse, StreamingResponse
from starlette.routing import Route
from twin.lifecycle import service

async def slow(request):
    await asyncio.sleep(30)

async def echo(request):
    return PlainTextResponse(str(len(await request.body())))

def boom(request):
    raise ValueError("the handler broke\nsecond line")

def ticks():
    for i in range(3):
        yield f"data: {i}\n\n".encode()
        time.sleep(0.3)

app = Starlette(routes=[Route("/ok", lambda r: JSONResponse({"ok": True})), Route("/boom", boom),
                        Route("/slow", slow), Route("/echo", echo, methods=["POST"]),
                        Route("/stream", lambda r: StreamingResponse(ticks(), media_type="text/event-stream"))],
                exception_handlers=service.error_handlers())
svc = service.Service("test", app, [service.Listener(port=0), service.Listener(uds=sys.argv[1])],
                      max_body=1000, timeout=1.0)
svc.start()
print(" ".join(svc.addresses()), flush=True)
sys.stdin.read()
svc.stop()
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sock = tmp_path_factory.mktemp("svc") / "test.sock"
    p = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(sock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    tcp, uds = p.stdout.readline().split()
    assert tcp.startswith("http://127.0.0.1:") and uds == f"unix:{sock}"
    yield p, int(tcp.rsplit(":", 1)[1]), str(sock)
    p.stdin.close()
    p.wait(timeout=10)


def request(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    return r.status, r.getheader("content-type"), r.read().decode()


def read_all(s: socket.socket) -> bytes:
    s.settimeout(10)
    out = b""
    while chunk := s.recv(4096):
        out += chunk
    s.close()
    return out


def stderr_lines(p: subprocess.Popen) -> list[str]:
    """What the server wrote on stderr until now (it is stopped to read it all)."""
    p.stdin.close()
    p.wait(timeout=10)
    return p.stderr.read().splitlines()


def test_failing_requests_get_clean_statuses_and_one_line_each(server):
    p, port, sock = server
    assert request(port, "GET", "/ok") == (200, "application/json", '{"ok":true}')
    assert request(port, "GET", "/nope") == (404, "text/plain; charset=utf-8", "404: Not Found\n")
    assert request(port, "GET", "/nope", headers={"Accept": "application/json"})[2] == json.dumps(
        {"error": "Not Found", "status": 404}
    )
    status, _, body = request(port, "GET", "/boom")
    assert (status, body) == (500, "500: internal error: ValueError: the handler broke\n")
    t0 = time.monotonic()
    assert request(port, "GET", "/slow")[:1] == (504,), "an answer that does not start in time"
    assert time.monotonic() - t0 < 5
    assert request(port, "POST", "/echo", body=b"x" * 1000)[2] == "1000"
    assert request(port, "POST", "/echo", body=b"x" * 1001)[:1] == (413,), "Content-Length over the bound"
    assert request(port, "PUT", "/ok")[:1] == (405,)
    assert request(port, "GET", "/a%0aforged%0d%1bline")[:1] == (404,), "a path is logged on one line"
    # a body that says nothing of its length, streamed over the bound
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(
        "POST",
        "/echo",
        body=iter([b"y" * 600, b"y" * 600]),
        encode_chunked=True,
        headers={"Transfer-Encoding": "chunked"},
    )
    assert c.getresponse().status == 413
    # a stream runs on past the answer timeout once it has started
    status, kind, body = request(port, "GET", "/stream")
    assert (status, body) == (200, "data: 0\n\ndata: 1\n\ndata: 2\n\n")
    # the same app on the unix socket
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(b"GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert read_all(s).endswith(b'\r\n\r\n{"ok":true}')
    # a client slow to send its headers (slowloris) is answered 408 within the timeout, and while it
    # dawdles others are served
    slow = socket.create_connection(("127.0.0.1", port))
    t0 = time.monotonic()
    slow.sendall(b"GET /ok HTTP/1.1\r\nHost: x\r\n")
    assert request(port, "GET", "/ok")[0] == 200
    assert read_all(slow).startswith(b"HTTP/1.1 408") and time.monotonic() - t0 < 5
    # garbage is answered, not traced
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
    assert read_all(s).startswith(b"HTTP/1.1 400")
    lines = stderr_lines(p)
    assert "Traceback" not in "\n".join(lines)
    assert [line for line in lines if "/nope" in line] == ["twin test: GET /nope: 404"] * 2
    assert "twin test: GET /a\\nforged\\r\\x1bline: 404" in lines
    assert "twin test: GET /boom: 500: internal error: ValueError: the handler broke" in lines
    assert "twin test: GET /slow: 504: no answer within 1s" in lines
    assert "twin test: POST /echo: 413: a request body is at most 1000 bytes" in lines
    assert "twin test: a client's request headers did not arrive within 1s: 408, connection closed" in lines
    assert all(line.startswith("twin test: ") for line in lines), lines
    assert len(lines) == 10, lines  # 3 x 404, 500, 504, 2 x 413, 405, the late headers, the invalid request


def test_only_loopback_unless_allowed_and_then_warned():
    assert (
        check_listeners(
            "twin web",
            [Listener("127.0.0.1", 8080), Listener("localhost", 1), Listener("::1", 2), Listener(uds="/tmp/x.sock")],
            False,
        )
        == []
    )
    with pytest.raises(TwinError, match=r"twin web on http://0.0.0.0:8080: not a loopback address.*--allow-remote"):
        check_listeners("twin web", [Listener("0.0.0.0", 8080)], False)
    (w,) = check_listeners("twin web", [Listener("0.0.0.0", 8080)], True)
    assert w.startswith("warning: twin web listens on http://0.0.0.0:8080")
    with pytest.raises(TwinError, match="both a certificate and its key"):
        check_listeners("x", [Listener(certfile="c.pem")], False)
    assert str(Listener.parse("[::1]:9342")) == "http://[::1]:9342"
    with pytest.raises(TwinError, match="give HOST:PORT"):
        Listener.parse("9342")


def test_tls_and_plain_listeners_serve_one_app_in_one_process(tmp_path):
    """HTTPS (a per-lab NVUE API's way) beside plain HTTP, from one Service."""
    import ssl

    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
        ],
        check=True,
        capture_output=True,
    )
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from twin.lifecycle.service import Service

    app = Starlette(routes=[Route("/", lambda r: PlainTextResponse(r.url.scheme))])
    svc = Service("tls", app, [Listener(port=0, certfile=str(cert), keyfile=str(key)), Listener(port=0)]).start()
    try:
        https, plain = svc.addresses()
        assert https.startswith("https://127.0.0.1:") and plain.startswith("http://127.0.0.1:")
        ctx = ssl.create_default_context(cafile=str(cert))
        ctx.check_hostname = False
        c = http.client.HTTPSConnection("127.0.0.1", int(https.rsplit(":", 1)[1]), context=ctx, timeout=10)
        c.request("GET", "/")
        assert c.getresponse().read() == b"https"
        assert request(int(plain.rsplit(":", 1)[1]), "GET", "/")[2] == "http"
    finally:
        svc.stop()
    with pytest.raises(TwinError, match="cannot listen on http://127.0.0.1:"):
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        try:
            Service("busy", app, [Listener(port=busy.getsockname()[1])]).start()
        finally:
            busy.close()
