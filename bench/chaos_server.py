"""`make chaos`'s server rounds: `twin serve` SIGKILLed mid-create (a small lab) or mid-apply (a
tenant added to the default lab) at a random moment, and started again on the same state. The
operation must come back `failed` (or `succeeded`, when it finished before the kill) and its lab
whole (up and healthy) or removed (nothing of it on the host), never half made; then the lab is
deleted through the API and nothing may be left."""

from __future__ import annotations

import random
import time
from pathlib import Path

from tests.e2e.conftest import leftovers
from tests.e2e.served import Served
from twin.client import ApiError, Client
from twin.runtime import DockerRuntime


def whole_or_removed(c: Client, runtime: DockerRuntime, name: str) -> tuple[bool, str]:
    try:
        doc = c.lab(name)
    except ApiError as e:
        left = leftovers(runtime, name)
        return e.status == 404 and not left, "removed" + (f" (LEFT: {', '.join(left)})" if left else "")
    healthy = bool(doc.get("status", {}).get("healthy"))
    return doc["state"] == "up" and healthy, f"kept, {'healthy' if healthy else 'NOT healthy'}"


def round_server(
    runtime: DockerRuntime, i: int, rng: random.Random, tmp: Path, small: Path, aipod: Path, change: Path
) -> dict:
    served = Served(tmp / f"server{i}" / "state").start()
    c = served.client(served.token("chaos"))
    name = f"chaos-sv{i}"
    mid = rng.choice(["create", "apply"])
    try:
        if mid == "apply":
            c.create(aipod, name=name)
            started = c.apply(name, str(change), wait=False)
        else:
            started = c.create(small, name=name, wait=False)
        delay = rng.uniform(0.2, 6.0)
        time.sleep(delay)
        served.kill()
        served.start()
        c = served.client(c.token)
        op = c.operation(started["operation"])
        ok, lab = whole_or_removed(c, runtime, name)
        try:
            c.delete(name)
            down_rc = 0
        except ApiError as e:
            down_rc = 0 if e.status == 404 else 1
        return {
            "round": i,
            "killed": f"server mid-{mid}",
            "after_s": round(delay, 2),
            "stage": f"operation {op['state']}; lab {lab}",
            "status_rc": None,
            "status_truthful": ok and op["state"] in ("failed", "succeeded"),
            "down_rc": down_rc,
            "leftovers": leftovers(runtime, name),
        }
    finally:
        served.stop()
