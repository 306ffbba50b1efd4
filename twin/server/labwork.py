"""What each operation does to a lab, through `twin.Lab` and the stages the CLI uses, with the
result the CLI prints with --json (and its exit code): the server adds no second way of doing
anything. Each function returns the operation's work (`Work`: (home, say) -> (result, exit
code)), as data a worker process takes (`twin.server.worker`): a function of this module with
its arguments bound.
"""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path
from typing import Any

from twin import host, prove, verify
from twin.base.errors import LabStateError
from twin.change import fault_types
from twin.change.rehearse import Thresholds, rehearse
from twin.lab import Lab
from twin.observe import store as events
from twin.server.home import Home
from twin.server.worker import Say, Work
from twin.topology.allow import load_allow
from twin.topology.checks import CheckSet, load_checks, merge
from twin.verify import baseline as B
from twin.verify.baseline_file import load_baseline
from twin.verify.compare import compare


def create(lab: Lab, timeout: float | None, vrf_backend: str | None, saved: Path | None) -> Work:
    return partial(_create, lab, timeout, vrf_backend, saved)


def _create(
    lab: Lab, timeout: float | None, vrf_backend: str | None, saved: Path | None, home: Home, say: Say
) -> tuple[Any, int]:
    try:
        timings = lab.up(timeout=timeout, vrf_backend=vrf_backend, say=say)
    except BaseException:
        row = home.store.lab(lab.name)  # Lab.up removed what it made: its record and sources go too
        home.store.drop_lab(lab.name)
        home.drop_source(row["source"] if row else None)
        raise
    if saved is not None:
        _restore_saved(lab, saved, say)
    home.store.set_lab(lab.name, state="up")
    return host.up_summary(lab, timings), 0


def _restore_saved(lab: Lab, saved: Path, say: Say) -> None:
    """A snapshot's NVUE saved configurations (`nv config save`) back in the new lab's NVUE service."""
    from twin.nvue import service as nvue_service

    for f in sorted(saved.glob("*.yaml")):
        dest = nvue_service.saved(lab.dir, f.stem)
        dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        dest.write_bytes(f.read_bytes())
        say(f"NVUE saved configuration of {f.stem} restored")


def delete(name: str, reason: str = "") -> Work:
    return partial(_delete, name, reason)


def _delete(name: str, reason: str, home: Home, say: Say) -> tuple[Any, int]:
    say(f"removing lab {name}" + (f" ({reason})" if reason else ""))
    removed = Lab(name).down()
    row = home.store.lab(name)
    home.store.drop_lab(name)
    home.drop_source(row["source"] if row else None)
    (home.where("baselines") / f"{name}.json").unlink(missing_ok=True)
    return {"lab": name, "removed": removed, "reason": reason or None}, 0


def apply(name: str, change: str, timeout: float | None, wait: bool) -> Work:
    return partial(_apply, name, change, timeout, wait)


def _apply(name: str, change: str, timeout: float | None, wait: bool, home: Home, say: Say) -> tuple[Any, int]:
    res = Lab(name).apply(change, timeout=timeout, wait=wait, say=say)
    return res.as_dict(), 0 if res.converged else 1


def plan(name: str, change: str) -> dict[str, Any]:
    return Lab(name).plan(change).as_dict()


def rehearsal(
    name: str, change: str, th: Thresholds, rollback: bool, noisy: str | None, baseline: str | None, allow: str | None
) -> Work:
    return partial(_rehearse, name, change, th, rollback, noisy, baseline, allow)


def _rehearse(
    name: str,
    change: str,
    th: Thresholds,
    rollback: bool,
    noisy: str | None,
    baseline: str | None,
    allow: str | None,
    home: Home,
    say: Say,
) -> tuple[Any, int]:
    base = load_baseline(baseline) if baseline else None
    rules = load_allow(allow) if allow else ()
    rep = rehearse(Lab(name).context(), change, th, rollback=rollback, say=say, noisy=noisy, baseline=base, allow=rules)
    return {**json.loads(rep.to_json()), "text": rep.text()}, 0 if rep.passed else 1  # text: what it prints


def verification(name: str, only: list[str] | None, checks: list[str], prove_: bool, patterns: list[str]) -> Work:
    return partial(_verify, name, only, checks, prove_, patterns)


def _verify(
    name: str, only: list[str] | None, checks: list[str], prove_: bool, patterns: list[str], home: Home, say: Say
) -> tuple[Any, int]:
    ctx = Lab(name).context()
    if prove_ or patterns:
        proof = prove.prove(ctx, patterns or None, only, say=say)
        return json.loads(proof.to_json()), 0 if proof.passed else 1
    sets = [CheckSet(f"the topology of {name}", tuple(ctx.fabric.checks))]
    sets += [load_checks(f, ctx.fabric) for f in checks]
    say(f"verifying {name}")
    report = verify.run(ctx, only=only, checks=merge(sets))
    events.save_verify(ctx.dir, report.to_dict())
    return report.to_dict(), 0 if report.passed else 1


def fault(name: str, key: str, target: str, args: list[str]) -> Work:
    return partial(_fault, name, key, target, args)


def _fault(name: str, key: str, target: str, args: list[str], home: Home, say: Say) -> tuple[Any, int]:
    ctx = Lab(name).context()
    cls = fault_types()[key]
    f = cls.parse(ctx, target, [str(a) for a in args], f"fault {key}")
    say(f"fault {f.describe()}")
    res = f.apply(ctx, say=say)
    inverse = f.inverse(ctx)
    out = res.as_dict()
    out["undo_fault"] = {"fault": inverse.key, "target": inverse.target, "args": []} if inverse else None
    return out, 0


def baseline_record(name: str) -> Work:
    return partial(_baseline_record, name)


def _baseline_record(name: str, home: Home, say: Say) -> tuple[Any, int]:
    say(f"recording the baseline of {name}")
    doc = B.record(Lab(name).context())
    f = home.where("baselines") / f"{name}.json"
    f.write_text(json.dumps(doc, indent=2) + "\n")
    items = B.items(doc)
    counts = {w: sum(k[2] == w for k in items) for w in ("session", "route", "vni", "adjacency")}
    return {"lab": name, "recorded": time.time(), "nodes": len(doc["nodes"]), "counts": counts}, 0


def baseline_compare(name: str, allow: str | None, settle: float) -> Work:
    return partial(_baseline_compare, name, allow, settle)


def _baseline_compare(name: str, allow: str | None, settle: float, home: Home, say: Say) -> tuple[Any, int]:
    f = home.where("baselines") / f"{name}.json"
    if not f.is_file():
        raise LabStateError(f"lab {name!r} has no baseline on this server; POST /v1/labs/{name}/baseline first")
    say(f"comparing {name} with its baseline")
    result = compare(Lab(name).context(), load_baseline(str(f)), load_allow(allow) if allow else (), settle=settle)
    return json.loads(result.to_json()), 0 if result.passed else 1
