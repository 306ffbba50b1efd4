"""/v1/labs and /v1/snapshots: a user's labs made, listed, shown, given more time, removed, and
snapshotted; a lab made again from a snapshot."""

from __future__ import annotations

import json
import secrets
import time
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.concurrency import run_in_threadpool

from twin.lab import Lab
from twin.server import create, labwork, snapshots
from twin.server.auth import Principal
from twin.server.core import Core
from twin.server.operations import request_digest
from twin.server.problems import ApiProblem
from twin.server.who import Who

router = APIRouter(prefix="/v1", tags=["labs"])
Idem = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        max_length=200,
        description="A retried request with the same key (and body) gets the same operation.",
    ),
]
MULTIPART = {
    "type": "object",
    "properties": {
        "topology": {"type": "string", "format": "binary"},
        "configs": {"type": "string", "format": "binary"},
        **{
            k: {"type": "string"}
            for k in ("format", "snapshot", "name", "expires_in", "timeout", "vrf_backend", "roles")
        },
    },
}
ACCEPTED: dict[int | str, dict[str, Any]] = {
    202: {"description": "The operation started: {operation, lab}; GET /v1/operations/{id}."}
}


def core_of(request: Request) -> Core:
    return request.app.state.core


def accepted(op: dict[str, Any]) -> JSONResponse:
    return JSONResponse(
        {"operation": op["id"], "lab": op["lab"], "kind": op["kind"], "state": op["state"]},
        202,
        headers={"Location": f"/v1/operations/{op['id']}"},
    )


class ExpiryBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    expires_in: create.Duration


@router.post(
    "/labs",
    status_code=202,
    responses=ACCEPTED,
    summary="Create a lab (an operation)",
    description="From a topology (twin YAML, containerlab, NVIDIA Air JSON) with configs as a map or, in "
    "multipart, as an archive; or from a snapshot.",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": create.CreateBody.model_json_schema()},
                "multipart/form-data": {"schema": MULTIPART},
            },
        }
    },
)
async def create_lab(request: Request, who: Who, idem: Idem = None) -> JSONResponse:
    core = core_of(request)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    raw = await request.body()
    if kind == "multipart/form-data":
        form = await request.form(max_files=4, max_fields=20, max_part_size=32 << 20)
        fields = {k: (await v.read() if hasattr(v, "read") else v) for k, v in form.multi_items()}
        body, archive = create.from_form(fields)
    elif kind in ("application/json", ""):
        try:
            body, archive = create.CreateBody.model_validate(json.loads(raw or b"null")), None
        except ValueError as e:
            raise ApiProblem(
                422, f"the body is not a lab: {str(e).splitlines()[0][:300]}", "invalid", str(e).splitlines()[:40]
            ) from None
    else:
        raise ApiProblem(415, f"a lab is sent as application/json or multipart/form-data, not {kind[:100]!r}")
    op = await run_in_threadpool(create.start, core, who, body, archive, idem, request_digest("POST", "/v1/labs", raw))
    return accepted(op)


@router.get("/labs", summary="The labs of the user (an admin: all=true for everyone's)")
def list_labs(request: Request, who: Who, all: Annotated[bool, Query()] = False) -> dict:
    core = core_of(request)
    rows = core.store.labs(None if all and who.admin else who.user)
    return {"labs": [core.lab_doc(r) for r in rows], "user": who.user, "limits": core.limits(who.user).to_dict()}


@router.get("/labs/{name}", summary="A lab: its record, and its status against its intent (twin status --json)")
def get_lab(name: str, request: Request, who: Who, status: Annotated[bool, Query()] = True) -> dict:
    core = core_of(request)
    row = core.lab(who, name)
    doc = core.lab_doc(row)
    if status and row["state"] == "up":
        doc["status"] = Lab(name).status().to_dict()
    doc["operations"] = [
        core.ops.doc(o) for o in core.store.operations(lab=name, limit=10) if o["owner"] == who.user or who.admin
    ]
    return doc


@router.patch("/labs/{name}", summary="Set a lab's expiry: a lifetime from now, up to the server's maximum")
def patch_lab(name: str, body: ExpiryBody, request: Request, who: Who) -> dict:
    core = core_of(request)
    core.lab(who, name)
    life = core.expiry(create.seconds(body.expires_in))
    core.store.set_lab(name, expires=time.time() + life)
    return core.lab_doc(core.lab(who, name))


@router.delete("/labs/{name}", status_code=202, responses=ACCEPTED, summary="Remove a lab (an operation)")
def delete_lab(name: str, request: Request, who: Who, idem: Idem = None) -> JSONResponse:
    core = core_of(request)
    core.lab(who, name)
    op, _ = core.ops.start(
        who,
        name,
        "delete",
        labwork.delete(name),
        idem,
        request_digest("DELETE", f"/v1/labs/{name}", b""),
        before=lambda: core.store.set_lab(name, state="deleting"),
    )
    return accepted(op)


@router.post(
    "/labs/{name}/snapshots",
    status_code=202,
    responses=ACCEPTED,
    tags=["snapshots"],
    summary="Snapshot what a lab runs now (an operation; running memory such as BGP tables is not kept)",
)
def snapshot_lab(name: str, request: Request, who: Who, idem: Idem = None) -> JSONResponse:
    core = core_of(request)
    row = core.lab(who, name)
    snapshots.room(core, row["owner"])
    sid = secrets.token_hex(6)
    op, _ = core.ops.start(
        who,
        name,
        "snapshot",
        snapshots.take(name, sid, row["owner"]),
        idem,
        request_digest("POST", f"/v1/labs/{name}/snapshots", b""),
    )
    return accepted(op)


@router.get("/snapshots", tags=["snapshots"], summary="The user's snapshots")
def list_snapshots(request: Request, who: Who, lab: str | None = None) -> dict:
    rows = core_of(request).store.snapshots(None if who.admin else who.user, lab)
    return {"snapshots": rows, "not_kept": snapshots.NOT_KEPT}


def _snapshot(core: Core, who: Principal, sid: str) -> dict:
    row = core.store.snapshot(sid) if len(sid) < 100 else None
    if row is None or (row["owner"] != who.user and not who.admin):
        raise ApiProblem(404, f"no snapshot {sid[:100]!r} of yours", "no-such-snapshot")
    return row


@router.get("/snapshots/{sid}", tags=["snapshots"], summary="A snapshot's record")
def get_snapshot(sid: str, request: Request, who: Who) -> dict:
    return _snapshot(core_of(request), who, sid)


@router.get(
    "/snapshots/{sid}/archive",
    tags=["snapshots"],
    summary="A snapshot as its archive (tar.gz)",
    response_class=FileResponse,
)
def snapshot_archive(sid: str, request: Request, who: Who) -> FileResponse:
    core = core_of(request)
    _snapshot(core, who, sid)
    return FileResponse(snapshots.path(core, sid), media_type="application/gzip", filename=f"snapshot-{sid}.tar.gz")


@router.delete("/snapshots/{sid}", tags=["snapshots"], summary="Remove a snapshot")
def delete_snapshot(sid: str, request: Request, who: Who) -> dict:
    core = core_of(request)
    _snapshot(core, who, sid)
    snapshots.path(core, sid).unlink(missing_ok=True)
    core.store.run("DELETE FROM snapshots WHERE id = ?", sid)
    return {"deleted": sid}
