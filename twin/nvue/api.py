"""The NVUE REST API (`/nvue_v1`, as Cumulus Linux 5.9 serves it) as pure functions: what a
request's path and body mean for a configuration tree, and what the answers look like.
The service that serves it (`twin.nvue.nvued`) does the I/O; everything it receives goes
through here first, from a TCP client or from a node's socket alike, as hostile input:

    path = path_of(b"/nvue_v1/interface/swp3")           # ("interface", "swp3"), or ValueError
    body = parse_json(raw)                               # bounded like a startup.yaml, or ValueError
    merge_patch(tree, path, body)                        # PATCH: RFC 7396 (null unsets), at a path
    delete_at(tree, path)                                # DELETE
    revision_doc(State.APPLY_FAIL, ["why"])              # {"state": "apply_fail", "transition": {...}}
    problem(404, "no such place")                        # {"type", "title", "status", "detail"}

A PATCH body is a JSON merge patch (RFC 7396) of the subtree at the path: objects merge,
`null` unsets a key, anything else replaces. Paths name places of NVUE's object tree
(`twin.nvue.schema`); a segment is URL-decoded one by one, so a revision id
(`changeset/twin/2026-12-04_10.15.02_A1B2`) travels as one segment (`%2F`).
"""

from __future__ import annotations

import copy
import json
import math
import secrets
import time
from enum import Enum
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote_to_bytes

from twin.nvue.tree import Path, get, show, spec_at
from twin.topology.problems import quoted

BASE = "/nvue_v1"
MAX_DEPTH = 64  # as a startup.yaml (twin.topology.yaml_safe)
MAX_VALUES = 100_000
MAX_TEXT = 4096  # characters of one value or key
MAX_SEGMENT = 255  # characters of one path segment
REV_APPLIED, REV_STARTUP = "applied", "startup"  # the revisions a node always has: what it runs, what was saved
SAVE = "save"  # a transition asked of the applied revision (`nv config save`)


class State(str, Enum):
    """A revision's state, as NVUE names it (the REST API's "state"): made `pending` and edited while
    it is; `apply` asked of a pending one (or of one that ended `ays_fail`, asked again) makes it
    `apply` (being applied), then `applied` or `apply_fail`; one that needs a yes and got none is
    `ays_fail`. A revision applied or being applied is not edited any more: a new one is made."""

    PENDING = "pending"
    APPLY = "apply"
    APPLIED = "applied"
    APPLY_FAIL = "apply_fail"
    AYS_FAIL = "ays_fail"
    INVALID = "invalid"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return self.value.__format__(spec)


EDITABLE = frozenset({State.PENDING})
APPLICABLE = frozenset({State.PENDING, State.AYS_FAIL})
DONE = frozenset({State.APPLIED, State.APPLY_FAIL, State.AYS_FAIL, State.INVALID})
FAILED = DONE - {State.APPLIED}


# --- what comes in -------------------------------------------------------------------------------
def path_of(raw: bytes, base: str = BASE) -> Path:
    """The NVUE path of a raw URL path under `base` (each segment URL-decoded on its own);
    ValueError saying what is wrong with it."""
    if not raw.startswith(base.encode()):
        raise ValueError(f"the NVUE API is under {base}/")
    rest = raw[len(base.encode()) :].strip(b"/")
    parts = rest.split(b"/") if rest else []
    if len(parts) > MAX_DEPTH:
        raise ValueError(f"a path has at most {MAX_DEPTH} segments")
    out = []
    for p in parts:
        try:
            seg = unquote_to_bytes(p).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("a path segment is not UTF-8 text") from None
        if not seg or len(seg) > MAX_SEGMENT or not seg.isprintable():
            raise ValueError(f"{quoted(seg[:40])}: a path segment is 1-{MAX_SEGMENT} printable characters")
        out.append(seg)
    return tuple(out)


def known(path: Path) -> str:
    """ "" when `path` is a place of NVUE's object tree, else why not."""
    for n in range(1, len(path) + 1):
        if spec_at(path[:n]) is None:
            return f"{show(path[:n])}: no such place in NVUE's object tree"
    return ""


def parse_json(raw: bytes, what: str = "the request body", free: tuple[str, ...] = ()) -> Any:
    """A JSON document within a startup.yaml's bounds; ValueError naming what is wrong. `free`: keys
    of a top-level object whose string values are bounded by the caller, not by MAX_TEXT (the file
    `nv config patch` sends)."""
    if not raw.strip():
        raise ValueError(f"{what} is empty: send a JSON document")
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise ValueError(f"{what} is not UTF-8 text") from None
    except RecursionError:
        raise ValueError(f"{what} nests deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} is not JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    held = {k: value.pop(k) for k in free if isinstance(value, dict) and isinstance(value.get(k), str)}
    bounded(value, what)
    return value | held if held else value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a value NVUE takes")


def bounded(value: Any, what: str = "the request body") -> None:
    """ValueError when `value` is deeper, larger or of other types than a startup.yaml may hold."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    count = 0
    while stack:
        v, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise ValueError(f"{what} holds more than {MAX_VALUES} values")
        if depth > MAX_DEPTH:
            raise ValueError(f"{what} nests deeper than {MAX_DEPTH} levels")
        if isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str) or not k or len(k) > MAX_TEXT or not k.isprintable():
                    raise ValueError(f"{what}: a key is 1-{MAX_TEXT} printable characters ({quoted(str(k)[:40])})")
                stack.append((x, depth + 1))
        elif isinstance(v, list):
            stack += [(x, depth + 1) for x in v]
        elif isinstance(v, str):
            if len(v) > MAX_TEXT:
                raise ValueError(f"{what}: a value is at most {MAX_TEXT} characters")
        elif isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{what}: {v} is not a value NVUE takes")
        elif v is not None and not isinstance(v, (bool, int, float)):
            raise ValueError(f"{what}: {quoted(v)} is not a JSON value")


# --- edits --------------------------------------------------------------------------------------------
def merge_patch(tree: dict, path: Path, body: Any) -> dict:
    """PATCH `body` onto the subtree at `path` (RFC 7396); returns the tree. The root takes an object."""
    if not path:
        if not isinstance(body, dict):
            raise ValueError(f"a PATCH of the root takes an object of NVUE's top-level keys, not {quoted(body)}")
        return _merge(tree, body)
    parent = tree
    for k in path[:-1]:
        if not isinstance(parent.get(k), dict):
            parent[k] = {}
        parent = parent[k]
    if body is None:
        parent.pop(path[-1], None)
    else:
        parent[path[-1]] = _merge(parent.get(path[-1]), body)
    return tree


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = target if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge(out.get(k), v)
    return out


def delete_at(tree: dict, path: Path) -> dict:
    """DELETE: the place at `path` unset (the root: everything)."""
    if not path:
        tree.clear()
        return tree
    parent = get(tree, path[:-1])
    if isinstance(parent, dict):
        parent.pop(path[-1], None)
    return tree


# --- what goes out ------------------------------------------------------------------------------------
def revision_id(user: str = "cumulus") -> str:
    """A new revision id, in NVUE's form: changeset/<user>/<date>_<time>_<4 random>."""
    return f"changeset/{user}/{time.strftime('%Y-%m-%d_%H.%M.%S')}_{secrets.token_hex(2).upper()}"


def revision_doc(state: State, issues: list[str] | None = None, progress: str = "", severity: str = "error") -> dict:
    """A revision as `GET /revision/<id>` shows it."""
    issue: dict[str, dict[str, object]]
    issue = {
        str(i): {
            "code": "config_invalid" if severity == "error" else "warning",
            "data": {},
            "message": m,
            "severity": severity,
        }
        for i, m in enumerate(issues or [])
    }
    return {"state": state.value, "transition": {"issue": issue, "progress": progress}}


def problem(status: int, detail: str) -> dict:
    """An error as NVUE (connexion) answers it: application/problem+json."""
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    return {"type": "about:blank", "title": title, "status": status, "detail": detail}
