"""nftables in a node: named counters of a table, read as JSON (`nft -j`).

twin's own rulesets count what they do with named counters (a congestion point's
`ect_<port>` and `ce_<port>`, `twin.config.services`); reading them is one exec.
"""

from __future__ import annotations

import json

from twin.base import timeouts
from twin.base.errors import CommandError
from twin.runtime.exec import NodeExec

CONGESTION = ("ip", "twin_ecn")  # the congestion points' table (congestion.nft)


def counters(ex: NodeExec, family: str, table: str, ns: str = "") -> dict[str, int]:
    """Packets per named counter of table `family table` (in tenant namespace `ns`)."""
    cmd = (["ip", "netns", "exec", ns] if ns else []) + ["nft", "-j", "list", "counters", "table", family, table]
    res = ex.check(cmd, timeouts.VTYSH_QUICK)
    try:
        doc = json.loads(res.stdout)
    except json.JSONDecodeError as e:
        raise CommandError(
            ex.where, cmd, res.rc, f"output is not JSON ({e.msg}):\n{res.stdout[:500]}", res.stderr
        ) from None
    return {c["counter"]["name"]: int(c["counter"]["packets"]) for c in doc.get("nftables", []) if "counter" in c}
