"""Operations (their state, result and events as server-sent events), a lab's own events and
metrics, its NVUE API, and who the caller is: all behind the same token."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import ssl
import time
from typing import Annotated, AsyncIterator

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse
from prometheus_client import generate_latest

from twin.base import timeouts
from twin.lab import Lab
from twin.nvue import service as nvue_service
from twin.observe import Collector, metrics, store
from twin.server.core import Core
from twin.server.problems import ApiProblem
from twin.server.routes_labs import core_of
from twin.server.who import Who

router = APIRouter(prefix="/v1")
POLL = 0.2  # s: how often a stream looks for news of its operation
KEEPALIVE = 15.0  # s: a comment line when there is none
NVUE_METHODS = ["GET", "POST", "PATCH", "DELETE"]
NVUE_BODY = 1 << 20


@router.get("/me", tags=["server"], summary="Who the token is, the user's limits and the server's expiry rules")
def me(request: Request, who: Who) -> dict:
    core = core_of(request)
    s = core.settings
    return {
        "user": who.user,
        "admin": who.admin,
        "token": who.token,
        "limits": core.limits(who.user).to_dict(),
        "expiry": {"default_seconds": s.expiry, "max_seconds": s.max_expiry},
    }


@router.get(
    "/server",
    tags=["server"],
    summary="The server's figures (an admin's): labs, open operations, failed authentications",
)
def server_figures(request: Request, who: Who) -> dict:
    if not who.admin:
        raise ApiProblem(403, "the server's figures are an admin's", "admin-only")
    core = core_of(request)
    return {
        "started": core.started,
        "labs": len(core.store.labs()),
        "operations_open": len(core.store.open_operations()),
        "failed_authentications": core.throttle.total,
        "users": len(core.store.rows("SELECT name FROM users")),
    }


@router.get("/operations", tags=["operations"], summary="The user's recent operations")
def list_operations(
    request: Request, who: Who, lab: str | None = None, limit: Annotated[int, Query(ge=1, le=500)] = 50
) -> dict:
    core = core_of(request)
    rows = core.store.operations(None if who.admin else who.user, lab, limit)
    return {"operations": [core.ops.doc(r) for r in rows]}


@router.get(
    "/operations/{oid}",
    tags=["operations"],
    summary="An operation: state (pending, running, succeeded, failed), progress, result, exit",
)
async def get_operation(oid: str, request: Request, who: Who) -> dict:
    # answered on the event loop (a few SQLite reads): no hop through the thread pool the labs' work shares
    core = core_of(request)
    return core.ops.doc(core.operation(who, oid))


@router.get(
    "/operations/{oid}/events",
    tags=["operations"],
    response_class=StreamingResponse,
    summary="An operation's progress as server-sent events (follow=false: as JSON, at once)",
    responses={200: {"content": {"text/event-stream": {}, "application/json": {}}}},
)
async def operation_events(
    oid: str, request: Request, who: Who, follow: bool = True, after: Annotated[int, Query(ge=-1)] = -1
) -> Response:
    core = core_of(request)
    core.operation(who, oid)
    last = request.headers.get("last-event-id", "")
    seen = int(last) if last.isdigit() else after
    if not follow:
        return Response(json.dumps({"events": core.store.events(oid, seen)}), media_type="application/json")
    held = core.streams.get(who.user, 0)
    if held >= core.settings.max_streams:  # each holds a connection of the listener's: never all of them
        raise ApiProblem(
            429,
            f"{who.user} holds {held} event streams open, the most one user may on this server "
            f"({core.settings.max_streams}); close one, or ask with follow=false",
            "streams",
            held=held,
            limit=core.settings.max_streams,
        )
    core.streams[who.user] = held + 1
    return StreamingResponse(
        _stream(core, oid, seen, who.user),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def _stream(core: Core, oid: str, seen: int, user: str) -> AsyncIterator[bytes]:
    try:
        async for chunk in _events(core, oid, seen):
            yield chunk
    finally:
        core.streams[user] = max(0, core.streams.get(user, 1) - 1)


async def _events(core: Core, oid: str, seen: int) -> AsyncIterator[bytes]:
    quiet = time.monotonic()
    while True:
        row = core.store.operation(oid)
        for e in core.store.events(oid, seen):
            seen = e["seq"]
            yield f"id: {seen}\nevent: {e['kind']}\ndata: {json.dumps(e)}\n\n".encode()
            quiet = time.monotonic()
        if row is None or row["state"] in ("succeeded", "failed"):
            yield f"event: done\ndata: {json.dumps(core.ops.doc(row) if row else {}, default=str)}\n\n".encode()
            return
        if time.monotonic() - quiet > KEEPALIVE:
            yield b": keep-alive\n\n"
            quiet = time.monotonic()
        await asyncio.sleep(POLL)


@router.get("/labs/{name}/events", tags=["observe"], summary="What happened in the lab (twin events --json)")
def lab_events(
    name: str,
    request: Request,
    who: Who,
    since: Annotated[float, Query(gt=0, le=30 * 86400)] = 3600,
    node: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=10000)] = 1000,
) -> dict:
    core = core_of(request)
    core.lab(who, name)
    ctx = Lab(name).context()
    found = store.read(ctx.dir, since=time.time() - since, node=ctx.node(node) if node else None)
    return {"lab": name, "events": found[-limit:]}


@router.get(
    "/labs/{name}/metrics",
    tags=["observe"],
    response_class=Response,
    summary="The lab's counters now, in Prometheus' text format (twin exporter's metrics)",
)
def lab_metrics(name: str, request: Request, who: Who) -> Response:
    core = core_of(request)
    core.lab(who, name)
    col = Collector(Lab(name).context(), record=False)
    col.round(control=True)
    return Response(generate_latest(metrics.registry(col)), media_type="text/plain; version=0.0.4")


async def nvue(name: str, node: str, path: str, request: Request, who: Who) -> Response:
    core = core_of(request)
    core.lab(who, name)
    body = await request.body()
    if len(body) > NVUE_BODY:
        raise ApiProblem(413, f"an NVUE request body is at most {NVUE_BODY} bytes")
    status, kind, answer = await asyncio.to_thread(
        _forward, name, node, request.method, path, request.url.query, body, request.headers.get("content-type")
    )
    return Response(answer, status, media_type=kind)


for _method in NVUE_METHODS:
    router.add_api_route(
        "/labs/{name}/nvue/{node}/{path:path}",
        nvue,
        methods=[_method],
        tags=["nvue"],
        operation_id=f"nvue_{_method.lower()}",
        summary="The lab's NVUE REST API for a node (/nvue_v1/PATH), behind the server's token",
    )


def _forward(
    lab: str, node: str, method: str, path: str, query: str, body: bytes, kind: str | None
) -> tuple[int, str, bytes]:
    d = Lab(lab).dir
    rec = nvue_service.record(d)
    port = ((rec or {}).get("listeners") or {}).get(node, {}).get("port") if rec else None
    if rec is None:
        raise ApiProblem(409, f"lab {lab!r} runs no NVUE service (its nodes run no NVUE, or it stopped)", "no-nvue")
    if not isinstance(port, int):
        raise ApiProblem(
            404,
            f"node {node[:64]!r} of lab {lab!r} has no NVUE API; nodes with one: "
            f"{', '.join(sorted(rec.get('listeners') or {}))}",
            "no-such-node",
        )
    cert, _ = nvue_service.certificate(d, lab)
    ctx = ssl.create_default_context(cafile=str(cert))
    ctx.check_hostname = False
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeouts.NVUE_PROBE * 10, context=ctx)
    auth = base64.b64encode(f"{nvue_service.USER}:{nvue_service.password(d)}".encode()).decode()
    headers = {"Authorization": f"Basic {auth}", "Accept": "application/json"}
    if kind:
        headers["Content-Type"] = kind
    try:
        conn.request(method, f"/nvue_v1/{path}" + (f"?{query}" if query else ""), body=body or None, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.getheader("content-type") or "application/json", resp.read(8 << 20)
    except (OSError, http.client.HTTPException) as e:
        raise ApiProblem(502, f"lab {lab!r}'s NVUE service did not answer: {e}", "nvue-unreachable") from None
    finally:
        conn.close()
