"""`make chaos CHAOS_ARGS="--kinds abuse"`: an ordinary user abuses a shared `twin serve` while
another user's lab runs on it (issue 42).

The victim makes a small lab through the API; then, while the victim polls its lab and its
operation, the abuser (a token of its own) tries the escapes through the API (host binds, the
Docker socket, an image not allowed: each must be 422), holds 500 connections half-open, and
fills its quota (one lab of its own comes up beside the victim's; creates past it: each must be 409
with the numbers). What is measured: the
victim's GETs (p50, p99, worst, errors), what the abuser got (status counts), and whether the
victim's lab and operation are as they were."""

from __future__ import annotations

import json
import socket
import statistics
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.e2e.conftest import leftovers
from tests.e2e.served import Served
from twin.client import ApiError
from twin.runtime import DockerRuntime

ESCAPES = {"/:/host": None, "/var/run/docker.sock:/var/run/docker.sock": None, "../../..:/up": None}
HOST = """name: abuse
nodes:
  spine1: {kind: spine}
  leaf1: {kind: leaf}
  leaf2: {kind: leaf}
  h1: {kind: host, binds: %s, exec: ["touch /host/etc/cron.d/escaped"]%s}
links:
  - [spine1, leaf1]
  - [spine1, leaf2]
  - [leaf1, h1]
"""
HALF_OPEN = 500


def _call(url: str, token: str, method: str = "GET", body: dict | None = None) -> tuple[int, float]:
    req = urllib.request.Request(
        url,
        json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()
            return r.status, time.monotonic() - t0
    except urllib.error.HTTPError as e:
        e.read()
        return e.code, time.monotonic() - t0
    except OSError:
        return 0, time.monotonic() - t0


def round_abuse(runtime: DockerRuntime, i: int, tmp: Path, small: Path) -> dict:
    served = Served(tmp / f"abuse{i}" / "state", "--max-labs", "1").start()
    victim, abuser = served.token("victim"), served.token("abuser")
    name = f"chaos-ab{i}"
    c = served.client(victim)
    got: dict[str, int] = {}
    times: list[float] = []
    errors = [0]
    try:
        op = c.create(small, name=name)
        stop = threading.Event()

        def poll() -> None:
            while not stop.is_set():
                for path in (f"/v1/labs/{name}?status=false", f"/v1/operations/{op['id']}"):
                    status, took = _call(served.url + path, victim)
                    times.append(took)
                    errors[0] += status != 200
                time.sleep(0.05)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        t0 = time.monotonic()
        port = int(served.url.rsplit(":", 1)[1])
        held = []
        for _ in range(HALF_OPEN):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(b"GET /v1/me HTTP/1.1\r\nHost: x\r\n")
                held.append(s)
            except OSError:
                got["half-open refused"] = got.get("half-open refused", 0) + 1
        for bind in ESCAPES:
            for extra in ("", ", image: 'alpine:3'"):
                status, _ = _call(
                    served.url + "/v1/labs",
                    abuser,
                    "POST",
                    {"topology": HOST % (json.dumps([bind]), extra), "name": "abuse"},
                )
                got[f"escape {status}"] = got.get(f"escape {status}", 0) + 1
        for _ in range(5):  # the victim's name: the same neutral answer a taken name gives everyone
            status, _ = _call(served.url + "/v1/labs", abuser, "POST", {"topology": small.read_text(), "name": name})
            got[f"taken name {status}"] = got.get(f"taken name {status}", 0) + 1
        status, _ = _call(served.url + "/v1/labs", abuser, "POST", {"topology": small.read_text(), "name": "abuser0"})
        got[f"own lab {status}"] = 1  # its quota (--max-labs 1) filled: a lab coming up beside the victim's
        for j in range(1, 21):  # past the quota, again and again
            status, _ = _call(
                served.url + "/v1/labs", abuser, "POST", {"topology": small.read_text(), "name": f"abuser{j}"}
            )
            got[f"past quota {status}"] = got.get(f"past quota {status}", 0) + 1
        time.sleep(max(0.0, 15 - (time.monotonic() - t0)))  # the victim polls on meanwhile
        for s in held:
            s.close()
        stop.set()
        poller.join(10)
        lab = c.lab(name)
        whole = lab["state"] == "up" and c.operation(op["id"])["state"] == "succeeded"
        p = sorted(times)
        figures = {
            "gets": len(p),
            "p50_ms": round(statistics.median(p) * 1000, 1),
            "p99_ms": round(p[int(len(p) * 0.99) - 1] * 1000, 1),
            "worst_ms": round(p[-1] * 1000, 1),
            "errors": errors[0],
            "abuser": got,
        }
        try:
            c.delete(name)
            served.client(abuser).delete("abuser0")
            down_rc = 0
        except ApiError:
            down_rc = 1
        return {
            "round": i,
            "killed": "abuse (user token)",
            "after_s": None,
            "stage": f"victim GETs {figures['gets']}: p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms, "
            f"worst {figures['worst_ms']} ms, {errors[0]} errors; abuser: "
            + ", ".join(f"{k}: {v}" for k, v in sorted(got.items()))
            + f"; victim's lab whole: {whole}",
            "status_rc": None,
            "status_truthful": whole
            and errors[0] == 0
            and not Path("/etc/cron.d/escaped").exists()
            and got.get("own lab 202") == 1
            and got.get("past quota 409") == 20
            and all(k.endswith(("422", "409")) for k in got if not k.startswith(("half", "own"))),
            "down_rc": down_rc,
            "leftovers": leftovers(runtime, name) + leftovers(runtime, "abuser0"),
            "abuse": figures,
        }
    finally:
        served.stop()
