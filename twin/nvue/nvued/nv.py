"""The `nv` command's verbs, run for a node on its own revisions: what `POST /nv` on the
node's socket does with the words the node's `nv` sent (`twin.nvue.client`).

As on a switch, `nv set`/`unset`/`config patch`/`replace` edit the node's pending revision
(made from the applied configuration on the first edit), `nv config diff` shows it against
the applied one, `nv config apply` applies it (the client then follows the revision),
`nv config detach` drops it, `nv config save` keeps the applied configuration as the
startup one, `nv config show` prints the applied configuration and `nv show PATH` the
operational state (`show.py`) or, for places it does not cover, the applied configuration
with the node's host name (`show.as_run`). The body is the node's: hostile until checked, and
every failure is an answer, not a crash.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from twin.base.errors import TopologyError, TwinError
from twin.nvue import cli
from twin.nvue.api import FAILED, State
from twin.nvue.load import dump, from_tree
from twin.nvue.nvued import show
from twin.nvue.nvued.engine import Engine
from twin.nvue.nvued.revision import Revision
from twin.nvue.schema import API
from twin.nvue.tree import diff, get
from twin.nvue.tree import show as show_path

MAX_FILE = 1 << 20  # a file `nv config patch|replace` sends (a startup.yaml's limit)
MAX_BODY = (MAX_FILE + 2) // 3 * 4 + (64 << 10)  # such a file in base64, and room for the words around it
FILES = ("file_base64", "file")  # the body's keys that carry a file (their own limit, MAX_FILE)


def run(engine: Engine, node: str, body: Any) -> dict:
    """The answer to one `nv` command: {rc, out, err} and, for an apply, `poll` (the revision)."""
    try:
        cmd, data = _request(body)
    except ValueError as e:
        return _fail(f"Error: {e}\n", 2)
    try:
        return _verb(engine, node, cmd, data, bool(body.get("tty")))
    except TopologyError as e:
        return _fail("".join(f"Error: {p.path + ': ' if p.path else ''}{p.message}\n" for p in e.problems))
    except (ValueError, TwinError) as e:
        return _fail(f"Error: {str(e).strip() or type(e).__name__}\n")


def _fail(err: str, rc: int = 1) -> dict:
    return {"rc": rc, "out": "", "err": err}


def _ok(out: str = "") -> dict:
    return {"rc": 0, "out": out, "err": ""}


def _request(body: Any) -> tuple[cli.Command, bytes | None]:
    if not isinstance(body, dict) or not isinstance(body.get("argv"), list):
        raise ValueError('the request is {"argv": [words of nv], "file_base64": "...", "tty": true|false}')
    return cli.parse(body["argv"]), _file(body)


def _file(body: dict) -> bytes | None:
    """The bytes of the file sent with the words: base64 (`file_base64`), or text whose characters
    are its bytes (`file`, what the clients of labs made before sent)."""
    coded, text = body.get("file_base64"), body.get("file")
    if coded is not None:
        try:
            data = base64.b64decode(coded, validate=True) if isinstance(coded, str) else None
        except (ValueError, binascii.Error):
            data = None
        if data is None:
            raise ValueError("file_base64 is not base64")
    elif text is not None:
        if not isinstance(text, str):
            raise ValueError("file is text (its characters the file's bytes)")
        data = text.encode("latin-1", "replace")
    else:
        return None
    if len(data) > MAX_FILE:
        raise ValueError(f"a file sent with nv is at most {MAX_FILE} bytes")
    return data


def _verb(engine: Engine, node: str, cmd: cli.Command, data: bytes | None, tty: bool) -> dict:
    if cmd.verb == "help":
        return _ok(cli.HELP)
    if cmd.verb == "show":
        return _ok(cli.render(_show(engine, node, cmd.words), cmd.output))
    if cmd.verb == "config-show":
        nf = engine.applied(node)
        docs = [{"header": nf.header or {"nvue-api-version": API}}, {"set": nf.tree}]
        return _ok(cli.render(docs, cmd.output) if cmd.output == "json" else dump(nf.tree, nf.header))
    if cmd.verb == "save":
        engine.save(node)
        return _ok("saved\n")
    if cmd.verb in ("set", "unset", "patch", "replace"):
        engine.edit(_pending(engine, node), lambda tree: cli.edit(tree, cmd, data))
        return _ok()
    rev = _current(engine, node)
    if cmd.verb == "detach":
        if rev is not None:
            engine.drop(rev)
            engine.session(node, None)
        return _ok()
    if cmd.verb == "diff":
        docs = diff(engine.applied(node).tree, rev.tree) if rev else []
        return _ok(cli.render(docs, cmd.output) if docs or cmd.output == "json" else "")
    return _apply(engine, node, rev, cmd, tty)


def _apply(engine: Engine, node: str, rev: Revision | None, cmd: cli.Command, tty: bool) -> dict:
    if rev is None or not diff(engine.applied(node).tree, rev.tree):
        return _ok("no changes to apply: the pending configuration is the applied one\n")
    stored = from_tree(rev.tree, rev.id).not_emulated
    if stored and not cmd.yes:
        what = ", ".join(show_path(p) for p in stored[:8])
        if tty:
            return {
                "rc": 1,
                "out": "",
                "err": f"Warning: stored, not emulated: {what}\n",
                "ask": "Are you sure you want to apply it?",
            }
        return _fail(f"Error: stored, not emulated: {what}; `nv config apply -y` applies it anyway\n")
    engine.apply(rev, yes=True, wait=cmd.wait)
    return {"rc": 0, "out": "", "err": "", "poll": rev.id}


def _pending(engine: Engine, node: str) -> Revision:
    rev = _current(engine, node)
    if rev is None:
        rev = engine.create(node)
        engine.session(node, rev)
    return rev


def _current(engine: Engine, node: str) -> Revision | None:
    """The node's `nv` revision while it is pending; after a failed apply, its edits pending
    again (in a new revision, on what the node runs now), as a switch keeps them."""
    rid = engine.cli.get(node)
    rev = engine.revisions.get(rid) if rid else None
    if rev is not None and rev.state in FAILED:
        rev = engine.create(node, carry=rev)
        engine.session(node, rev)
    return rev if rev is not None and rev.state is State.PENDING else None


def _show(engine: Engine, node: str, words: tuple[str, ...]) -> Any:
    path = tuple(words)
    why = show.known(path)
    if why:
        raise ValueError(why)
    if show.operational(path):
        return show.read(engine.context(), node, path)
    tree = show.as_run(engine.applied(node).tree, node)
    found = get(tree, path)
    if found is None and path:
        raise ValueError(f"{show_path(path)}: not set in {node}'s applied configuration")
    return found
