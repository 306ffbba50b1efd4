"""Errors as problem JSON (RFC 9457: `{type, title, status, detail}`, as the NVUE API answers them),
with `problems`: every problem of a bad body at once (file, place, what is allowed), and the
numbers of a refusal (a quota, the host's capacity) in `limits`.

twin's own errors map to a status here, in one place: a bad topology or change 422, a lab that
is busy or in the wrong state 409, a name that is not one 400, the host that cannot take a lab
409 with its figures, anything else twin refuses 422; a deadline passed 504, the engine or the
kernel failing 502. Anything else is a 500 with one line, never a traceback.
"""

from __future__ import annotations

import json
import re
from http import HTTPStatus
from typing import Any

from pydantic import ValidationError

from twin.base.errors import (
    ApplyFailed,
    ChangeRefused,
    CommandError,
    ConfigError,
    ConvergenceTimeout,
    LabNameError,
    LabStateError,
    NetlinkFailed,
    Problem,
    RuntimeFailed,
    TopologyError,
    TwinError,
)
from twin.lifecycle import admission
from twin.lifecycle.service import Scope

TYPE = "https://twin.invalid/problems/"  # problem types are names under this (not fetched: no network)
MEDIA = "application/problem+json"


class ApiProblem(Exception):
    """An answer other than success: status, a one-line detail, and what else the client needs."""

    def __init__(self, status: int, detail: str, kind: str = "", problems: list[str] | None = None, **extra: Any):
        super().__init__(detail)
        self.status, self.detail, self.kind = status, detail, kind or _kind(status)
        self.problems, self.extra = problems or [], extra

    def doc(self) -> dict[str, Any]:
        out = {
            "type": TYPE + self.kind,
            "title": title(self.status),
            "status": self.status,
            "detail": scrubbed(self.detail),
        }
        if self.problems:
            out["problems"] = [scrubbed(str(p)) for p in self.problems]
        return {**out, **self.extra}

    def body(self) -> bytes:
        return json.dumps(self.doc(), default=str).encode()


_HIDDEN: list[str] = []  # the server's own directories: never in an answer


def hide(*paths: str) -> None:
    """Directories an answer never names (a problem naming a file in one names it from there on)."""
    for p in paths:
        p = p.rstrip("/")
        if p and p not in _HIDDEN:
            _HIDDEN.append(p)
    _HIDDEN.sort(key=len, reverse=True)


def scrubbed(text: str) -> str:
    for p in _HIDDEN:
        text = re.sub(re.escape(p) + r"(?:/[^/\s:'\"]+)*/", "", text).replace(p, "<server>")
    return text


def title(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _kind(status: int) -> str:
    return title(status).lower().replace(" ", "-").replace("'", "")


def said(p: Problem) -> str:
    """A problem of a file as one line: FILE:LINE: FIELD: message."""
    return str(p)


def of_error(e: BaseException) -> ApiProblem:
    """twin's error (or anything else) as the problem a client is answered."""
    if isinstance(e, ApiProblem):
        return e
    if isinstance(e, ValidationError):  # a body that is not of its model (a multipart's fields)
        found = [f"{'.'.join(str(x) for x in err.get('loc', ()))}: {err.get('msg', '')}"[:300] for err in e.errors()]
        return ApiProblem(422, f"{len(found)} problem(s) in the request: {found[0] if found else ''}", "invalid", found)
    if isinstance(e, admission.NotAdmitted):
        return ApiProblem(409, str(e).splitlines()[0], "capacity", limits=e.to_dict())
    if isinstance(e, (TopologyError, ConfigError)):
        found = [said(p) for p in getattr(e, "problems", [])] or str(e).splitlines()
        return ApiProblem(422, f"{len(found)} problem(s): {found[0]}" if found else str(e), "invalid", found)
    if isinstance(e, ChangeRefused):
        return ApiProblem(422, str(e).splitlines()[0], "change-refused", list(e.reasons))
    if isinstance(e, ApplyFailed):
        return ApiProblem(500, str(e).splitlines()[0], "apply-failed", str(e).splitlines()[1:])
    if isinstance(e, LabNameError):
        return ApiProblem(400, str(e), "bad-name")
    if isinstance(e, LabStateError):
        return ApiProblem(409, str(e).splitlines()[0], "lab-state")
    lines = str(e).splitlines() or [type(e).__name__]
    if isinstance(e, ConvergenceTimeout):
        return ApiProblem(504, lines[0], "not-converged", e.missing[:200])
    if isinstance(e, (RuntimeFailed, NetlinkFailed, CommandError)):  # the engine, the kernel, a node
        return ApiProblem(502, lines[0], "engine", lines[1:])
    if isinstance(e, TwinError):  # what twin refuses, saying why (the request or the lab does not allow it)
        return ApiProblem(422, lines[0], "refused", lines[1:])
    first = str(e).splitlines()[0] if str(e) else ""
    return ApiProblem(500, f"internal error: {type(e).__name__}" + (f": {first}" if first else ""), "internal")


def guard_body(scope: Scope, status: int, why: str) -> tuple[bytes, str]:
    """How the guard words an error it answers itself (a body too large, a slow client)."""
    return ApiProblem(status, why).body(), MEDIA
