"""The NVUE REST API of a lab, one ASGI app (Starlette) on every node's listeners: each FRR node
has an HTTPS port on 127.0.0.1 (HTTP Basic auth, user `cumulus` and the lab's password) and a
unix socket bound into the node (/run/nvue/nvue.sock: no password, as on a switch, and `POST
/nv` for the node's `nv`). The listener a request came in on says which node it is for
(`scope[TAG]`: "tcp:leaf01", "unix:leaf01"): a node reaches only its own configuration.

    POST   /nvue_v1/revision                       a revision: {"<id>": {"state": "pending", ...}}
    GET    /nvue_v1/revision[/<id>]                the node's revisions, or one
    PATCH  /nvue_v1/revision/<id>[?wait=true]      {"state": "apply", "auto-prompt": {"ays": "ays_yes"}}:
                                                   applied once the node runs it (and the lab converged)
    PATCH  /nvue_v1/revision/applied               {"state": "save"} (and on an applied revision)
    DELETE /nvue_v1/revision/<id>                  a pending revision dropped
    PATCH  /nvue_v1/<path>?rev=<id>                a JSON merge patch of the subtree (the root too)
    DELETE /nvue_v1/<path>?rev=<id>                the subtree unset
    GET    /nvue_v1/<path>?rev=applied|startup|<id>[&filled=false][&diff=applied|startup|<id>]
    GET    /nvue_v1/<path>                         the operational state (`show.py`), else the applied config
                                                   with the node's host name (`show.as_run`)

Errors are problem JSON ({type, title, status, detail}): 400 for what NVUE's tree or the
request's form refuses (every problem), 401 without the right credentials (nothing changed),
404 for an unknown place or revision, 409 for a request the state refuses (a revision being
applied or applied: not changed or applied again; a node without NVUE; the lab busy).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Scope

from twin.base.errors import LabStateError, Problem, TopologyError
from twin.lifecycle.service import TAG, error_handlers
from twin.nvue import api
from twin.nvue.api import REV_APPLIED, REV_STARTUP, SAVE, State
from twin.nvue.nvued import nv, show
from twin.nvue.nvued.engine import Engine
from twin.nvue.nvued.revision import Conflict, NotFound
from twin.nvue.service import USER
from twin.nvue.tree import diff, get

PARAMS = ("rev", "filled", "diff", "wait")
METHODS = ["GET", "POST", "PATCH", "DELETE"]


class Refused(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


def problem_body(scope: Scope, status: int, why: str) -> tuple[bytes, str]:
    """How the service words an error it answers itself (a body too large, too slow)."""
    return json.dumps(api.problem(status, why)).encode(), "application/json"


def answer(doc: Any, status: int = 200, headers: dict | None = None) -> Response:
    return Response(json.dumps(doc, indent=2) + "\n", status, headers, media_type="application/json")


def make_app(engine: Engine, password: str) -> Starlette:
    async def handle(request: Request) -> Response:
        how, _, node = str(request.scope.get(TAG, "")).partition(":")
        if how != "unix" and not _authorized(request, password):
            return answer(
                api.problem(
                    401,
                    "the NVUE API takes HTTP Basic auth: user cumulus and the lab's "
                    "password (`twin inventory LAB` prints it)",
                ),
                401,
                {"WWW-Authenticate": 'Basic realm="twin NVUE"'},
            )
        raw = request.scope.get("raw_path") or request.url.path.encode()
        raw = raw.split(b"?", 1)[0]
        body = await request.body()
        try:
            if raw.rstrip(b"/") == b"/nv" and how == "unix" and request.method == "POST":
                return answer(await run_in_threadpool(nv.run, engine, node, api.parse_json(body, free=nv.FILES)))
            doc = await run_in_threadpool(
                dispatch, engine, node, request.method, api.path_of(raw), _params(request), body
            )
            return answer(doc)
        except Refused as e:
            return answer(api.problem(e.status, e.detail), e.status)
        except TopologyError as e:
            return answer(api.problem(400, "; ".join(_said(p) for p in e.problems)), 400)
        except ValueError as e:
            return answer(api.problem(400, str(e)), 400)
        except NotFound as e:
            return answer(api.problem(404, str(e)), 404)
        except (Conflict, LabStateError) as e:
            return answer(api.problem(409, str(e)), 409)

    return Starlette(
        routes=[Route("/{rest:path}", handle, methods=METHODS)], exception_handlers=error_handlers(problem_body)
    )


def _said(p: Problem) -> str:
    return f"{p.path}: {p.message}" if p.path else p.message


def _authorized(request: Request, password: str) -> bool:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic" or not value or len(value) > 1024:
        return False
    try:
        user, _, given = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return hmac.compare_digest(user.encode(), USER.encode()) & hmac.compare_digest(given.encode(), password.encode())


def _params(request: Request) -> dict[str, str]:
    out = {}
    for k, v in request.query_params.multi_items():
        if k not in PARAMS:
            raise ValueError(f"unknown parameter {k[:40]!r}; parameters: {', '.join(PARAMS)}")
        if k in out or len(v) > 255 or not v:
            raise ValueError(f"parameter {k} is given once, 1-255 characters")
        out[k] = v
    if out.get("filled", "false") not in ("true", "false"):
        raise ValueError("filled is true or false (twin fills in no defaults: both show what is set)")
    if out.get("wait", "false") not in ("true", "false"):
        raise ValueError("wait is true or false (true: a revision's apply waits for the lab to converge too)")
    return out


# --- what a request does ------------------------------------------------------------------------------
def dispatch(engine: Engine, node: str, method: str, path: tuple[str, ...], params: dict, body: bytes) -> Any:
    if path[:1] == ("revision",):
        return revisions(engine, node, method, path[1:], body, params.get("wait") == "true")
    why = show.known(path) if method == "GET" else api.known(path)
    if why:
        raise NotFound(why)
    rev = params.get("rev")
    if method == "GET":
        return _get(engine, node, path, rev, params.get("diff"))
    if method not in ("PATCH", "DELETE"):
        raise Refused(405, f"{method} is not taken here: GET, PATCH or DELETE a configuration path")
    if rev in (None, REV_APPLIED, REV_STARTUP):
        raise ValueError(f"{method} edits a revision: give ?rev=<id> of one POST /nvue_v1/revision made")
    r = engine.get(node, rev)
    if method == "DELETE":
        engine.edit(r, lambda tree: api.delete_at(tree, path))
        return {}
    patch = api.parse_json(body)
    tree = engine.edit(r, lambda t: api.merge_patch(t, path, patch))
    return get(tree, path, {})


def _get(engine: Engine, node: str, path: tuple[str, ...], rev: str | None, against: str | None) -> Any:
    if rev is None and against is None:
        if show.operational(path):
            return show.read(engine.context(), node, path)
        return get(show.as_run(engine.tree(node, REV_APPLIED), node), path, {})
    tree = engine.tree(node, rev or REV_APPLIED)
    if against is not None:
        return diff(get(engine.tree(node, against), path, {}), get(tree, path, {}))
    return get(tree, path, {})


def revisions(engine: Engine, node: str, method: str, rest: tuple[str, ...], body: bytes, wait: bool = False) -> Any:
    if not rest:
        if method == "POST":
            r = engine.create(node)
            return {r.id: r.doc()}
        if method == "GET":
            return {k: r.doc() for k, r in engine.of(node).items()}
        raise Refused(405, f"{method} /nvue_v1/revision: GET lists the revisions, POST makes one")
    rid = "/".join(rest)
    if method == "PATCH":
        return _transition(engine, node, rid, api.parse_json(body), wait)
    if rid == REV_APPLIED and method == "GET":
        return api.revision_doc(State.APPLIED)
    r = engine.get(node, rid)
    if method == "GET":
        return r.doc()
    if method == "DELETE":
        engine.drop(r)
        return {}
    raise Refused(405, f"{method} /nvue_v1/revision/<id>: GET shows it, PATCH applies it, DELETE drops it")


def _transition(engine: Engine, node: str, rid: str, body: Any, wait: bool = False) -> dict:
    if not isinstance(body, dict) or body.get("state") not in (State.APPLY, SAVE):
        raise ValueError('a revision takes {"state": "apply", "auto-prompt": {"ays": "ays_yes"}} or {"state": "save"}')
    prompt = body.get("auto-prompt", {})
    if (
        not isinstance(prompt, dict)
        or prompt.get("ays", "ays_no") not in ("ays_yes", "ays_no")
        or set(body) - {"state", "auto-prompt"}
    ):
        raise ValueError('"auto-prompt" is {"ays": "ays_yes"} (or "ays_no"); a revision takes no other keys')
    if body["state"] == SAVE:
        if rid != REV_APPLIED and engine.get(node, rid).state is not State.APPLIED:
            raise Conflict(f"revision {rid} is not applied: apply it first, then save")
        engine.save(node)
        return {"state": "saved", "transition": {"issue": {}, "progress": "saved"}}
    if rid == REV_APPLIED:
        raise Conflict("the applied revision is applied already")
    r = engine.get(node, rid)
    engine.apply(r, yes=prompt.get("ays") == "ays_yes", wait=wait)
    return r.doc()
