"""A small client of `twin serve` (the standard library's HTTP only): what `twin --server URL`,
the pytest plugin and a user's scripts use.

    c = Client("http://127.0.0.1:8470")            # the token from TWIN_TOKEN, or the token file
    op = c.create("topologies/aipod.yml", name="ci-42", expires_in="1h", say=print)
    report = c.verify("ci-42")                     # the result of `twin verify --json`
    c.delete("ci-42")

Every call that starts an operation waits for it (following its events, `say` hears its
progress: each line a `twin.base.stages.Said`, a str that carries its stage) and returns the
operation (`state`, `exit`, `result`); `wait=False` returns it at once.
A refusal is `ApiError` with the server's problem (`status`, `detail`, `problems`).

The token: `token=`, else $TWIN_TOKEN, else the first line of $TWIN_TOKEN_FILE or
~/.config/twin/token (which must be readable by its owner only).
"""

from __future__ import annotations

import http.client
import io
import json
import os
import secrets
import ssl
import stat
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator

from twin.base.errors import TwinError
from twin.base.stages import Said

Say = Callable[[str], None]
TOKEN_FILE = Path("~/.config/twin/token")
TIMEOUT = 60.0  # s for one request (an event stream sends a keep-alive every 15 s)
DONE = ("succeeded", "failed")


class ApiError(TwinError):
    """The server refused a request: its problem document, in one line and whole."""

    def __init__(self, status: int, problem: dict[str, Any]):
        self.status, self.problem = status, problem
        self.detail = str(problem.get("detail") or problem.get("title") or f"HTTP {status}")
        self.problems: list[str] = list(problem.get("problems") or [])
        super().__init__("\n".join([f"{self.detail} (HTTP {status})", *(f"  {p}" for p in self.problems)]))


def token_from_env() -> str:
    if os.environ.get("TWIN_TOKEN"):
        return os.environ["TWIN_TOKEN"].strip()
    f = Path(os.environ.get("TWIN_TOKEN_FILE") or TOKEN_FILE).expanduser()
    try:
        st = f.stat()
    except OSError:
        raise TwinError(
            f"no token: set TWIN_TOKEN, or put it in {f} (mode 0600); an admin makes one with "
            "`twin serve token create USER`"
        ) from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise TwinError(f"{f} is readable by others (mode {stat.S_IMODE(st.st_mode):o}); `chmod 600 {f}`")
    return f.read_text().strip().splitlines()[0] if f.read_text().strip() else ""


class Client:
    def __init__(self, url: str, token: str | None = None, timeout: float = TIMEOUT, cafile: str | None = None):
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise TwinError(f"--server {url!r}: give the server's URL, e.g. http://127.0.0.1:8470")
        self.url, self.timeout = url.rstrip("/"), timeout
        self.token = token if token is not None else token_from_env()
        self._ssl = (
            ssl.create_default_context(cafile=cafile or os.environ.get("TWIN_CA")) if parsed.scheme == "https" else None
        )

    # --- HTTP ------------------------------------------------------------------------------
    def _open(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        kind: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> http.client.HTTPResponse:
        h = {"Authorization": f"Bearer {self.token}", "Accept": "application/json", **(headers or {})}
        if kind:
            h["Content-Type"] = kind
        req = urllib.request.Request(self.url + path, data=body, method=method, headers=h)
        try:
            return urllib.request.urlopen(req, timeout=self.timeout, context=self._ssl)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                problem = json.loads(raw)
            except ValueError:
                problem = {"detail": raw.decode(errors="replace").strip()[:300] or e.reason}
            raise ApiError(e.code, problem if isinstance(problem, dict) else {"detail": str(problem)}) from None
        except (urllib.error.URLError, OSError) as e:
            raise TwinError(f"twin server {self.url}: {getattr(e, 'reason', e)}") from None

    def request(self, method: str, path: str, doc: Any = None, headers: dict[str, str] | None = None) -> Any:
        body = None if doc is None else json.dumps(doc).encode()
        with self._open(method, path, body, "application/json" if body is not None else None, headers) as r:
            raw = r.read()
        return json.loads(raw) if raw else None

    def multipart(self, path: str, fields: dict[str, str | bytes], headers: dict[str, str] | None = None) -> Any:
        boundary = "twin" + secrets.token_hex(12)
        out = io.BytesIO()
        for name, value in fields.items():
            out.write(f"--{boundary}\r\n".encode())
            if isinstance(value, bytes):
                out.write(
                    f'Content-Disposition: form-data; name="{name}"; filename="{name}"\r\n'
                    "Content-Type: application/octet-stream\r\n\r\n".encode()
                )
                out.write(value)
            else:
                out.write(f'Content-Disposition: form-data; name="{name}"\r\n\r\n{value}'.encode())
            out.write(b"\r\n")
        out.write(f"--{boundary}--\r\n".encode())
        with self._open("POST", path, out.getvalue(), f"multipart/form-data; boundary={boundary}", headers) as r:
            return json.loads(r.read())

    # --- operations ------------------------------------------------------------------------
    def operation(self, oid: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/operations/{oid}")

    def events(self, oid: str, after: int = -1) -> Iterator[tuple[str, dict[str, Any]]]:
        """(event, data) of operation `oid` as they come, to its `done`; a dropped stream is resumed."""
        for _ in range(100):
            with self._open(
                "GET", f"/v1/operations/{oid}/events?after={after}", headers={"Accept": "text/event-stream"}
            ) as r:
                kind, data = "message", []
                for raw in r:
                    line = raw.decode().rstrip("\r\n")
                    if line.startswith("event:"):
                        kind = line[6:].strip()
                    elif line.startswith("data:"):
                        data.append(line[5:].strip())
                    elif line.startswith("id:") and line[3:].strip().isdigit():
                        after = int(line[3:].strip())
                    elif not line and data:
                        yield kind, json.loads("\n".join(data))
                        if kind == "done":
                            return
                        kind, data = "message", []
        raise TwinError(f"operation {oid}: its event stream kept dropping")

    def wait(self, started: dict[str, Any], say: Say = lambda _: None) -> dict[str, Any]:
        """The operation a 202 named, followed to its end (its progress to `say`)."""
        oid = started["operation"]
        for kind, data in self.events(oid):
            if kind == "progress":
                say(Said(data["text"], data.get("stage") or data["text"]))
            elif kind == "done":
                return data
        return self.operation(oid)

    def _run(self, started: dict[str, Any], wait: bool, say: Say) -> dict[str, Any]:
        return self.wait(started, say) if wait else started

    # --- labs ------------------------------------------------------------------------------
    def labs(self) -> list[dict[str, Any]]:
        return self.request("GET", "/v1/labs")["labs"]

    def lab(self, name: str, status: bool = True) -> dict[str, Any]:
        return self.request("GET", f"/v1/labs/{_q(name)}?status={str(status).lower()}")

    def create(
        self,
        topology: str | Path | None = None,
        name: str | None = None,
        configs: str | Path | None = None,
        snapshot: str | None = None,
        expires_in: str | int | None = None,
        timeout: float | None = None,
        vrf_backend: str | None = None,
        idempotency_key: str | None = None,
        wait: bool = True,
        say: Say = lambda _: None,
    ) -> dict[str, Any]:
        """A lab from a topology file (with a config directory, sent as an archive) or a snapshot."""
        fields: dict[str, Any] = {
            k: v
            for k, v in (
                ("name", name),
                ("snapshot", snapshot),
                ("expires_in", expires_in),
                ("timeout", timeout),
                ("vrf_backend", vrf_backend),
            )
            if v is not None
        }
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        if topology is not None:
            fields["format"] = topology_format(topology)
        if configs is not None:
            fields = {k: str(v) for k, v in fields.items()}
            fields["topology"] = Path(topology).read_bytes() if topology is not None else b""
            fields["configs"] = archive(configs)
            started = self.multipart("/v1/labs", fields, headers)
        else:
            if topology is not None:
                fields["topology"] = Path(topology).read_text(errors="surrogateescape")
            started = self.request("POST", "/v1/labs", fields, headers)
        return self._run(started, wait, say)

    def delete(self, name: str, wait: bool = True, say: Say = lambda _: None) -> dict[str, Any]:
        return self._run(self.request("DELETE", f"/v1/labs/{_q(name)}"), wait, say)

    def extend(self, name: str, expires_in: str | int) -> dict[str, Any]:
        return self.request("PATCH", f"/v1/labs/{_q(name)}", {"expires_in": expires_in})

    def snapshot(self, name: str, wait: bool = True, say: Say = lambda _: None) -> dict[str, Any]:
        return self._run(self.request("POST", f"/v1/labs/{_q(name)}/snapshots"), wait, say)

    # --- day 2 -----------------------------------------------------------------------------
    def plan(self, name: str, change: str) -> dict[str, Any]:
        return self.request("POST", f"/v1/labs/{_q(name)}/plan", change_body(change))

    def apply(
        self,
        name: str,
        change: str,
        timeout: float | None = None,
        no_wait: bool = False,
        idempotency_key: str | None = None,
        wait: bool = True,
        say: Say = lambda _: None,
    ) -> dict[str, Any]:
        query = urllib.parse.urlencode(
            {k: v for k, v in (("timeout", timeout), ("wait", str(not no_wait).lower())) if v is not None}
        )
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._run(
            self.request("POST", f"/v1/labs/{_q(name)}/apply?{query}", change_body(change), headers), wait, say
        )

    def rehearse(
        self, name: str, change: str, wait: bool = True, say: Say = lambda _: None, **options: Any
    ) -> dict[str, Any]:
        return self._run(
            self.request("POST", f"/v1/labs/{_q(name)}/rehearse", {"change": change_body(change), **options}), wait, say
        )

    def verify(
        self,
        name: str,
        only: list[str] | None = None,
        checks: list[str | Path] | None = None,
        prove: bool = False,
        elements: list[str] | None = None,
        wait: bool = True,
        say: Say = lambda _: None,
    ) -> dict[str, Any]:
        doc = {
            "only": list(only or []),
            "checks": [Path(f).read_text() for f in checks or []],
            "prove": prove,
            "elements": list(elements or []),
        }
        return self._run(self.request("POST", f"/v1/labs/{_q(name)}/verify", doc), wait, say)

    def fault(
        self,
        name: str,
        key: str,
        target: str,
        args: list[str] | None = None,
        wait: bool = True,
        say: Say = lambda _: None,
    ) -> dict[str, Any]:
        doc = {"fault": key, "target": target, "args": list(args or [])}
        return self._run(self.request("POST", f"/v1/labs/{_q(name)}/faults", doc), wait, say)

    def exec(self, name: str, node: str, command: list[str]) -> dict[str, Any]:
        return self.request("POST", f"/v1/labs/{_q(name)}/exec", {"node": node, "command": list(command)})


def _q(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def topology_format(path: str | Path) -> str:
    name = Path(path).name.lower()
    if name.endswith((".clab.yml", ".clab.yaml")):
        return "containerlab"
    return "air" if name.endswith(".json") else "twin"


def archive(d: str | Path) -> bytes:
    """A config directory as a tar.gz (regular files only; a link is left out)."""
    root = Path(d)
    if not root.is_dir():
        raise TwinError(f"{d}: not a directory of configs")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for p in sorted(root.rglob("*")):
            if p.is_file() and not p.is_symlink():
                tar.add(p, arcname=str(p.relative_to(root)), recursive=False)
    return buf.getvalue()


def config_map(d: Path) -> dict[str, dict[str, str]]:
    """A config directory as {node: {file: text}}: <node>/<file> and <node>.conf (its frr.conf)."""
    out: dict[str, dict[str, str]] = {}
    for p in sorted(d.iterdir()):
        if p.is_dir() and not p.is_symlink():
            files = {f.name: f.read_text() for f in sorted(p.iterdir()) if f.is_file() and not f.is_symlink()}
            if files:
                out[p.name] = files
        elif p.suffix == ".conf" and p.is_file() and not p.is_symlink():
            out.setdefault(p.stem, {})["frr.conf"] = p.read_text()
    return out


def change_body(change: str) -> dict[str, Any]:
    """A change as the command line names it (a topology file, a config directory, nv:NODE:FILE,
    fault:KEY:TARGET[:ARG]) as the API's change body."""
    if change.startswith("fault:"):
        parts = change.split(":")
        if len(parts) < 3:
            raise TwinError(f"{change!r}: a fault is fault:KEY:TARGET[:ARG]")
        # the server joins them again as they were: fault:KEY:TARGET[:ARG...]
        return {"fault": {"fault": parts[1], "target": ":".join(parts[2:4]), "args": parts[4:]}}
    if change.startswith("nv:"):
        _, node, f = change.split(":", 2)
        return {"nv": {"node": node, "commands": Path(f).read_text()}}
    p = Path(change)
    if p.is_dir():
        return {"configs": config_map(p)}
    return {"topology": p.read_text(errors="surrogateescape"), "format": topology_format(p)}
