"""Day 2 on a lab: plan, apply, rehearse, verify (and --prove), baselines, faults, exec."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from twin import host, verify
from twin.change.rehearse import Thresholds
from twin.server import allowlist, changes, labwork
from twin.server.auth import Principal
from twin.server.core import Core
from twin.server.operations import Work, request_digest
from twin.server.problems import ApiProblem
from twin.server.routes_labs import ACCEPTED, Idem, accepted, core_of
from twin.server.who import Who

router = APIRouter(prefix="/v1/labs/{name}", tags=["day 2"])
PLANS = 2  # plans one user may have under way at once (a plan is answered in the request, not an operation)
CHANGE_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": changes.ChangeBody.model_json_schema()},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "topology": {"type": "string", "format": "binary"},
                        "configs": {"type": "string", "format": "binary"},
                        "nv": {"type": "string", "format": "binary"},
                        "node": {"type": "string"},
                        "format": {"type": "string"},
                    },
                }
            },
        },
    }
}


class RehearseBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    change: changes.ChangeBody
    max_loss: int = Field(0, ge=-1, description="Packets any one flow may lose (-1: no limit).")
    max_outage_ms: float | None = Field(None, ge=0)
    max_reconverge: float | None = Field(None, ge=0)
    rollback: bool = False
    noisy_neighbour: str | None = Field(None, max_length=64)
    baseline: bool = Field(False, description="Compare with the lab's recorded baseline after the change.")
    allow: str | None = Field(None, max_length=1 << 20, description="An allow file's text.")


class VerifyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    only: list[str] = Field(default_factory=list, max_length=16)
    checks: list[str] = Field(default_factory=list, max_length=16, description="Checks files' texts.")
    prove: bool = False
    elements: list[str] = Field(default_factory=list, max_length=64, description="With prove: element globs.")


class CompareBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    allow: str | None = Field(None, max_length=1 << 20)
    settle: float = Field(5.0, ge=0, le=600)


class ExecBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    node: str = Field(..., max_length=64)
    command: list[str] = Field(..., min_length=1, max_length=allowlist.MAX_WORDS)


def _start(
    request: Request,
    who: Principal,
    name: str,
    kind: str,
    work: Work,
    idem: str | None,
    raw: bytes,
    core: Core,
    writes: bool = True,
) -> JSONResponse:
    row = core.lab(who, name)
    if row["state"] != "up":
        raise ApiProblem(409, f"lab {name!r} is {row['state']}, not up", "lab-state")
    op, _ = core.ops.start(who, name, kind, work, idem, request_digest("POST", request.url.path, raw), writes=writes)
    return accepted(op)


async def _change(request: Request, core: Core, row: dict[str, Any]) -> tuple[str, bytes]:
    """The change a plan or apply request brings, as a spec; and the raw body (for Idempotency-Key)."""
    raw = await request.body()
    into = Path(row["source"])
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "multipart/form-data":
        form = await request.form(max_files=4, max_fields=8, max_part_size=32 << 20)
        fields = {k: (await v.read() if hasattr(v, "read") else v) for k, v in form.multi_items()}
        body, archive, nv_file, node = changes.from_form(fields)
        return await run_in_threadpool(changes.spec, body, into, archive, nv_file, node, core.settings.max_kept), raw
    try:
        body = changes.ChangeBody.model_validate(json.loads(raw or b"null"))
    except ValueError as e:
        raise ApiProblem(
            422, f"the body is not a change: {str(e).splitlines()[0][:300]}", "invalid", str(e).splitlines()[:40]
        ) from None
    return await run_in_threadpool(changes.spec, body, into, None, None, None, core.settings.max_kept), raw


@router.post("/plan", summary="What a change would do (twin plan --json)", openapi_extra=CHANGE_BODY)
async def plan(name: str, request: Request, who: Who) -> dict:
    core = core_of(request)
    row = core.lab(who, name)
    if core.plans.get(who.user, 0) >= PLANS:
        raise ApiProblem(
            429,
            f"{who.user} has {PLANS} plans under way, the most one user may at once; ask again when one is answered",
            "plans",
            limit=PLANS,
        )
    core.plans[who.user] = core.plans.get(who.user, 0) + 1
    try:
        spec, _ = await _change(request, core, row)
        try:
            return await run_in_threadpool(labwork.plan, name, spec)
        finally:  # a plan is answered at once: what it brought is not kept
            await run_in_threadpool(changes.forget, spec, Path(row["source"]))
    finally:
        core.plans[who.user] -= 1


@router.post(
    "/apply",
    status_code=202,
    responses=ACCEPTED,
    summary="Apply a change (an operation; twin apply)",
    openapi_extra=CHANGE_BODY,
)
async def apply(
    name: str,
    request: Request,
    who: Who,
    idem: Idem = None,
    timeout: Annotated[float | None, Query(gt=0, le=7200)] = None,
    wait: bool = True,
) -> JSONResponse:
    core = core_of(request)
    spec, raw = await _change(request, core, core.lab(who, name))
    return await run_in_threadpool(
        _start, request, who, name, "apply", labwork.apply(name, spec, timeout, wait), idem, raw, core
    )


@router.post(
    "/rehearse",
    status_code=202,
    responses=ACCEPTED,
    summary="Rehearse a change under RoCE traffic: the impact report (an operation; twin rehearse)",
)
def rehearse(name: str, body: RehearseBody, request: Request, who: Who, idem: Idem = None) -> JSONResponse:
    core = core_of(request)
    row = core.lab(who, name)
    spec = changes.spec(body.change, Path(row["source"]), limit=core.settings.max_kept)
    th = Thresholds(
        max_loss=None if body.max_loss < 0 else body.max_loss,
        max_outage=None if body.max_outage_ms is None else body.max_outage_ms / 1000.0,
        max_reconverge=body.max_reconverge,
    )
    base = core.where("baselines") / f"{name}.json"
    if body.baseline and not base.is_file():
        raise ApiProblem(409, f"lab {name!r} has no baseline; POST /v1/labs/{name}/baseline first", "no-baseline")
    allow = _text_file(row, "allow.yml", body.allow) if body.allow else None
    work = labwork.rehearsal(
        name, spec, th, body.rollback, body.noisy_neighbour, str(base) if body.baseline else None, allow
    )
    return _start(request, who, name, "rehearse", work, idem, body.model_dump_json().encode(), core)


def _text_file(row: dict[str, Any], name: str, text: str, limit: int | None = None) -> str:
    if limit is not None:
        changes.room(Path(row["source"]), limit)
    d = Path(row["source"]) / "inputs" / secrets.token_hex(6)
    d.mkdir(parents=True, mode=0o700)
    (d / name).write_text(text)
    return str(d / name)


@router.post(
    "/verify",
    status_code=202,
    responses=ACCEPTED,
    summary="Verify the lab (twin verify --json), or prove verify (--prove) (an operation)",
)
def verify_lab(
    name: str, request: Request, who: Who, body: VerifyBody | None = None, idem: Idem = None
) -> JSONResponse:
    core = core_of(request)
    body = body or VerifyBody()
    row = core.lab(who, name)
    try:
        verify.known(body.only or None)
    except Exception as e:  # noqa: BLE001  (an unknown group is the client's mistake)
        raise ApiProblem(422, str(e).splitlines()[0], "invalid") from None
    files = [_text_file(row, "checks.yml", t, core.settings.max_kept) for t in body.checks]
    work = labwork.verification(name, body.only or None, files, body.prove, body.elements)
    proving = body.prove or bool(body.elements)  # a plain verify reads the lab: never refused as busy
    return _start(
        request,
        who,
        name,
        "prove" if proving else "verify",
        work,
        idem,
        body.model_dump_json().encode(),
        core,
        writes=proving,
    )


@router.post("/baseline", status_code=202, responses=ACCEPTED, summary="Record the lab's baseline (an operation)")
def baseline_record(name: str, request: Request, who: Who, idem: Idem = None) -> JSONResponse:
    core = core_of(request)
    return _start(request, who, name, "baseline", labwork.baseline_record(name), idem, b"", core)


@router.post(
    "/baseline/compare",
    status_code=202,
    responses=ACCEPTED,
    summary="Compare the lab with its baseline (an operation; twin baseline compare --json)",
)
def baseline_compare(
    name: str, request: Request, who: Who, body: CompareBody | None = None, idem: Idem = None
) -> JSONResponse:
    core = core_of(request)
    body = body or CompareBody()
    row = core.lab(who, name)
    allow = _text_file(row, "allow.yml", body.allow) if body.allow else None
    return _start(
        request,
        who,
        name,
        "baseline-compare",
        labwork.baseline_compare(name, allow, body.settle),
        idem,
        body.model_dump_json().encode(),
        core,
    )


@router.post(
    "/faults",
    status_code=202,
    responses=ACCEPTED,
    summary="Apply a fault (an operation); its result names the fault that undoes it",
)
def fault(name: str, body: changes.FaultBody, request: Request, who: Who, idem: Idem = None) -> JSONResponse:
    core = core_of(request)
    changes.fault_spec(body)
    return _start(
        request,
        who,
        name,
        "fault",
        labwork.fault(name, body.fault, body.target, body.args),
        idem,
        body.model_dump_json().encode(),
        core,
    )


@router.post("/exec", summary="Run an allowed command in a node: vtysh -c 'show ...', nv show, ip, ping")
def exec_(name: str, body: ExecBody, request: Request, who: Who) -> dict:
    core = core_of(request)
    row = core.lab(who, name)
    if row["state"] != "up":
        raise ApiProblem(409, f"lab {name!r} is {row['state']}, not up", "lab-state")
    argv = allowlist.check(body.command)
    res, hint = host.exec_in(name, body.node, argv, inside=True)  # in the node's container, not from the host
    return {
        "node": body.node,
        "command": argv,
        "rc": res.rc,
        "stdout": res.stdout,
        "stderr": res.stderr,
        "hint": hint or None,
    }
