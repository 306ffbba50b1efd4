"""The API as one ASGI application (FastAPI): OpenAPI at /openapi.json, its reference as a plain
page at /docs (made here from the same document: no script from a CDN), the labs page at /, and
/v1 behind a token. Served by `twin.lifecycle.service` (`twin.server.serve`), whose guard bounds
every request and answers what it refuses itself as problem JSON.

Every request is logged as one line with its user ("twin serve: alice POST /v1/labs 202 41ms");
a request without a valid token is 401, counted per client address and slowed (`auth.Throttle`).
"""

from __future__ import annotations

import html
import json
import logging
import time
from importlib import resources
from typing import Any, Callable

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from twin.server.core import Core
from twin.server.problems import MEDIA, ApiProblem, of_error
from twin.server.who import COOKIE, USER, principal
from twin.topology.json_safe import depth

MAX_DEPTH = 64  # levels a JSON body may nest (a create's configs map nests 3)

log = logging.getLogger("twin.server.access")
PAGES = {
    "/": ("labs.html", "text/html; charset=utf-8"),
    "/labs.js": ("labs.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}


def problem_response(problem: ApiProblem) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="twin"'} if problem.status == 401 else None
    return Response(problem.body(), problem.status, headers, media_type=MEDIA)


def _handlers() -> dict:
    async def on_problem(request: Request, e: Exception) -> Response:
        return problem_response(of_error(e))

    async def on_invalid(request: Request, e: Exception) -> Response:
        errors = e.errors() if isinstance(e, RequestValidationError) else []
        found = [f"{'.'.join(str(x) for x in err.get('loc', ()))}: {err.get('msg', '')}"[:300] for err in errors]
        return problem_response(
            ApiProblem(422, f"{len(found)} problem(s) in the request: {found[0] if found else ''}", "invalid", found)
        )

    async def on_http(request: Request, e: Exception) -> Response:
        status = e.status_code if isinstance(e, HTTPException) else 500
        detail = e.detail if isinstance(e, HTTPException) and isinstance(e.detail, str) else str(e)
        if status == 404:
            detail = f"no such resource: {request.method} {request.url.path[:200]}; /docs lists the API"
        return problem_response(ApiProblem(status, detail))

    return {ApiProblem: on_problem, RequestValidationError: on_invalid, HTTPException: on_http, Exception: on_problem}


class _Bearer(Request):
    """A request seen as if it sent `Authorization: Bearer TOKEN` (the sign-in form's token)."""

    def __init__(self, request: Request, token: str):
        headers = [(k, v) for k, v in request.scope["headers"] if k != b"authorization"]
        super().__init__(
            {**request.scope, "headers": headers + [(b"authorization", f"Bearer {token}".encode())]}, request.receive
        )


class AccessLog:
    """One line per request: user, method, path, status, time."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0, status = time.monotonic(), []

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
                log.info(
                    "%s %s %s %d %.0fms",
                    scope.get(USER, "-"),
                    scope.get("method"),
                    _printable(scope.get("path")),
                    message["status"],
                    (time.monotonic() - t0) * 1000,
                )
            await send(message)

        await self.app(scope, receive, sending)


class Gate:
    """Before any /v1 route reads a byte of its body: the token (401, slowed, as `principal`), then a
    JSON body's nesting (422 beyond `MAX_DEPTH`: a body nested 100,000 deep is refused, not parsed)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        try:
            await principal(Request(scope))
        except ApiProblem as e:
            await problem_response(e)(scope, receive, send)
            return
        kind = next((v for k, v in scope["headers"] if k == b"content-type"), b"").split(b";")[0].strip().lower()
        if scope.get("method") in ("GET", "HEAD", "DELETE") or kind not in (b"application/json", b""):
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message]), send)
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if depth(body.decode("utf-8", errors="replace")) > MAX_DEPTH:
            await problem_response(
                ApiProblem(
                    422,
                    f"the JSON body nests deeper than {MAX_DEPTH} levels; a request of this API nests a few",
                    "invalid",
                )
            )(scope, receive, send)
            return
        await self.app(scope, _replay([{"type": "http.request", "body": body, "more_body": False}], receive), send)


def _replay(messages: list[Message], then: Receive | None = None) -> Receive:
    async def receive() -> Message:
        if messages:
            return messages.pop(0)
        if then is not None:
            return await then()
        return {"type": "http.disconnect"}

    return receive


def _printable(text: object, limit: int = 200) -> str:
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    return out if len(out) <= limit else out[:limit] + "..."


def create_app(core: Core) -> FastAPI:
    from twin.server import routes_day2, routes_labs, routes_ops

    app = FastAPI(
        title="twin",
        version="1",
        docs_url=None,
        redoc_url=None,
        exception_handlers=_handlers(),
        description="A shared twin server: labs of an EVPN-VXLAN fabric created, changed, verified, "
        "rehearsed, snapshotted and removed through a token. Long work is an operation: "
        "202 and its id, then GET /v1/operations/{id} or its events.",
    )
    app.state.core = core
    for module in (routes_labs, routes_day2, routes_ops):
        app.include_router(module.router, dependencies=[Depends(principal)])
    _pages(app)
    app.add_middleware(Gate)
    app.add_middleware(AccessLog)
    return app


def _pages(app: FastAPI) -> None:
    def static(name: str, kind: str) -> Callable[[], Response]:
        body = resources.files("twin.observe").joinpath("static").joinpath(name).read_bytes()
        return lambda: Response(body, media_type=kind, headers={"Cache-Control": "no-store"})

    for path, (name, kind) in PAGES.items():
        app.add_api_route(path, static(name, kind), include_in_schema=False)

    def docs() -> HTMLResponse:
        return HTMLResponse(reference(app.openapi()))

    async def sign_in(request: Request) -> Response:
        """The labs page's sign-in: the token checked, then kept in an HttpOnly cookie (GETs only)."""
        try:
            token = json.loads(await request.body() or b"{}").get("token")
        except (ValueError, AttributeError):
            token = None
        who = await principal(_Bearer(request, token if isinstance(token, str) else ""))
        request.scope[USER] = who.user
        r = JSONResponse({"user": who.user})
        r.set_cookie(COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https")
        return r

    def sign_out() -> Response:
        r = JSONResponse({"signed_out": True})
        r.delete_cookie(COOKIE)
        return r

    app.add_api_route("/session", sign_in, methods=["POST"], include_in_schema=False)
    app.add_api_route("/session", sign_out, methods=["DELETE"], include_in_schema=False)
    app.add_api_route("/docs", docs, include_in_schema=False)
    app.add_api_route("/healthz", lambda: JSONResponse({"ok": True}), include_in_schema=False)


def reference(doc: dict[str, Any]) -> str:
    """The API's reference as a plain page, from its OpenAPI document."""
    rows = []
    for path, methods in doc.get("paths", {}).items():
        for method, op in methods.items():
            params = ", ".join(f"{p['name']} ({p['in']})" for p in op.get("parameters", []))
            body = ", ".join(op.get("requestBody", {}).get("content", {}))
            rows.append(
                f"<tr><td><code>{method.upper()}</code></td><td><code>{html.escape(path)}</code></td>"
                f"<td>{html.escape(op.get('summary', ''))}<br><small>{html.escape(op.get('description', ''))}"
                f"</small></td><td>{html.escape(params)}</td><td>{html.escape(body)}</td>"
                f"<td>{', '.join(op.get('responses', {}))}</td></tr>"
            )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>twin API</title>"
        "<link rel='stylesheet' href='/style.css'></head><body><h1>twin API</h1>"
        f"<p>{html.escape(doc.get('info', {}).get('description', ''))}</p>"
        "<p>Every /v1 request sends <code>Authorization: Bearer TOKEN</code>. Errors are problem JSON "
        "(<code>type, title, status, detail</code>, and <code>problems</code>). The machine-readable "
        "description: <a href='/openapi.json'>/openapi.json</a>.</p><table class='ref'><tr><th>method</th>"
        "<th>path</th><th>what</th><th>parameters</th><th>body</th><th>answers</th></tr>"
        + "".join(rows)
        + "</table></body></html>"
    )
