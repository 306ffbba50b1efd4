"""nftables in a node: named counters of a table, and its chains and rules, read as JSON (`nft -j`).

twin's own rulesets count what they do with named counters (a congestion point's
`ect_<port>` and `ce_<port>`, `twin.config.services`); reading them is one exec. NVUE's ACLs
(`twin.nvue.acl`) are read whole: what each rule does as the kernel holds it, and its counter.
"""

from __future__ import annotations

import json

from twin.base import timeouts
from twin.base.errors import CommandError
from twin.runtime.exec import NodeExec
from twin.runtime.netns import exec_prefix

CONGESTION = ("ip", "twin_ecn")  # the congestion points' table (congestion.nft)


def _listing(ex: NodeExec, ns: str, what: list[str]) -> list[dict]:
    """The objects `nft -j list WHAT` gives (in tenant namespace `ns`); CommandError if nft fails or says no JSON."""
    cmd = exec_prefix(ns) + ["nft", "-j", "list", *what]
    res = ex.check(cmd, timeouts.VTYSH_QUICK)
    try:
        return list(json.loads(res.stdout).get("nftables", []))
    except (json.JSONDecodeError, AttributeError) as e:
        raise CommandError(
            ex.where, cmd, res.rc, f"output is not JSON ({e}):\n{res.stdout[:500]}", res.stderr
        ) from None


def counters(ex: NodeExec, family: str, table: str, ns: str = "") -> dict[str, int]:
    """Packets per named counter of table `family table` (in tenant namespace `ns`)."""
    return of_counters(_listing(ex, ns, ["counters", "table", family, table]))


def listing(ex: NodeExec, family: str, table: str, ns: str = "") -> list[dict]:
    """The whole of table `family table` (in tenant namespace `ns`), as `nft -j list table` gives it: its
    counters, chains and rules (`of_counters`, `rules`)."""
    return _listing(ex, ns, ["table", family, table])


def of_counters(objects: list[dict]) -> dict[str, int]:
    """Packets per named counter of a listing."""
    return {c["counter"]["name"]: int(c["counter"]["packets"]) for c in objects if "counter" in c}


VERDICTS = ("accept", "drop", "reject", "jump", "goto", "return", "queue")


def rules(objects: list[dict]) -> dict[str, dict[str, str]]:
    """Chain -> {comment: verdict} of each chain of a listing and its commented rules (the verdict "accept",
    "drop", ...; "continue" where the rule has none)."""
    out: dict[str, dict[str, str]] = {o["chain"]["name"]: {} for o in objects if "chain" in o}
    for o in objects:
        r = o.get("rule")
        if r and r.get("comment"):
            verdict = next((k for e in r.get("expr", []) for k in e if k in VERDICTS), "continue")
            out.setdefault(r["chain"], {})[r["comment"]] = verdict
    return out
