#!/usr/bin/python3
"""`nv` inside a node of a twin lab: as on a Cumulus switch, it talks to the NVUE service over
/run/nvue/nvue.sock (the lab's service, `twin.nvue.nvued`, bound into the node by twin). It only
sends its words (and the bytes of a file that `nv config patch|replace FILE` names) and
prints what comes back; the service parses and checks everything. `nv config apply` then
follows the revision until it is applied or failed. Python's standard library only: it
runs on the node's python3. Exit 0 on success, 1 on an error, 2 on a usage error.
"""

import base64
import http.client
import json
import os
import socket
import sys
import time
import urllib.parse

SOCKET = os.environ.get("TWIN_NV_SOCKET") or "/run/nvue/nvue.sock"  # (another: for twin's tests)
MAX_FILE = 1 << 20  # what the service takes of a file (a startup.yaml's limit)
APPLY_DEADLINE = 900.0  # s: a revision's apply (the service's convergence wait included)
DONE = ("applied", "apply_fail", "ays_fail", "invalid")


class _Unix(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def request(method: str, path: str, body: object = None, timeout: float = 60.0) -> tuple[int, object]:
    conn = _Unix(SOCKET, timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(
            method, path, body=data, headers={"Content-Type": "application/json", "Accept": "application/json"}
        )
        resp = conn.getresponse()
        raw = resp.read(16 << 20)
    finally:
        conn.close()
    try:
        return resp.status, json.loads(raw.decode("utf-8")) if raw else {}
    except ValueError:
        return resp.status, {"detail": raw.decode("utf-8", "replace")[:500]}


def read_file(name: str) -> str:
    """The file's bytes as they are, in base64 (a third larger whatever they hold: JSON's escapes of
    quotes, backslashes and non-ASCII text could make a 1 MiB file six times larger); the service
    decodes (and refuses) them."""
    with open(name, "rb") as f:
        data = f.read(MAX_FILE + 1)
    if len(data) > MAX_FILE:
        raise ValueError(f"{name}: larger than {MAX_FILE} bytes, the limit of a configuration file")
    return base64.b64encode(data).decode("ascii")


def follow(rev: str) -> int:
    """Print a revision's progress until it is done; 0 when applied (and converged, asked to wait)."""
    where = "/nvue_v1/revision/" + urllib.parse.quote(rev, safe="")
    deadline, said = time.monotonic() + APPLY_DEADLINE, ""
    while time.monotonic() < deadline:
        status, doc = request("GET", where)
        if status != 200 or not isinstance(doc, dict):
            print(f"Error: {doc.get('detail', doc) if isinstance(doc, dict) else doc}", file=sys.stderr)
            return 1
        t = doc.get("transition")
        tr: dict = t if isinstance(t, dict) else {}
        if tr.get("progress") and tr.get("progress") != said:
            said = tr["progress"]
            print(said, flush=True)
        if doc.get("state") in DONE:
            issues = [i.get("message", "") for i in (tr.get("issue") or {}).values() if isinstance(i, dict)]
            for m in issues:
                print(("Warning: " if doc["state"] == "applied" else "Error: ") + m, file=sys.stderr)
            print(f"{doc['state']} [rev_id: {rev}]")
            return 0 if doc["state"] == "applied" and not issues else 1
        time.sleep(0.3)
    print(f"Error: revision {rev} is still applying after {APPLY_DEADLINE:.0f}s", file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    body: dict = {"argv": argv, "tty": sys.stdin.isatty()}
    if len(argv) == 3 and argv[:2] in (["config", "patch"], ["config", "replace"]):
        body["file_base64"] = read_file(argv[2])
    status, doc = request("POST", "/nv", body)
    if not isinstance(doc, dict) or status >= 500 and "rc" not in doc:
        print(f"Error: {doc.get('detail', doc) if isinstance(doc, dict) else doc}", file=sys.stderr)
        return 1
    if "rc" not in doc:
        print(f"Error: {doc.get('detail', doc)}", file=sys.stderr)
        return 1
    sys.stdout.write(str(doc.get("out", "")))
    sys.stderr.write(str(doc.get("err", "")))
    if doc.get("ask") and sys.stdin.isatty():
        if input(str(doc["ask"]) + " [y/N] ").strip().lower() not in ("y", "yes"):
            return 1
        status, doc = request("POST", "/nv", {**body, "argv": argv + ["-y"]})
        if not isinstance(doc, dict):  # as the first answer: not an answer of the service
            print(f"Error: {doc}", file=sys.stderr)
            return 1
        sys.stdout.write(str(doc.get("out", "")))
        sys.stderr.write(str(doc.get("err", "")))
    if doc.get("poll"):
        return follow(str(doc["poll"]))
    return int(doc["rc"]) if isinstance(doc.get("rc"), int) else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
    except (FileNotFoundError, ConnectionRefusedError) as e:
        gone = getattr(e, "filename", None) in (None, SOCKET) and not os.path.exists(SOCKET)
        print(
            f"Error: {e.filename + ': ' if getattr(e, 'filename', None) and not gone else ''}"
            + (
                f"no NVUE service answers on {SOCKET}: this lab runs none, or it stopped "
                "(`twin status LAB` on the host says; `twin up` of the lab starts it again)"
                if gone or isinstance(e, ConnectionRefusedError)
                else (e.strerror or str(e))
            ),
            file=sys.stderr,
        )
        sys.exit(1)
    except (OSError, ValueError, http.client.HTTPException) as e:
        print(f"Error: {e}", file=sys.stderr)
        sys.exit(1)
