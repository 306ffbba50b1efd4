"""`nv show router policy [...]`: the route policy FRR runs on the node, in NVUE's words (issue 44):
prefix, community, large-community and AS-path lists with their rules as bgpd holds them (read from
its running configuration: FRR shows no seq numbers of community lists otherwise), and each route map's
rules with their match and set clauses and how often bgpd ran each (`show route-map json`).
"""

from __future__ import annotations

import re
from typing import Any

from twin.base import timeouts
from twin.lifecycle.context import LabContext

RUNNING = ["vtysh", "-c", "show running-config"]
ROUTE_MAPS = "show route-map json"
_LIST = re.compile(
    r"^bgp (community-list|large-community-list|as-path access-list)( standard)? (\S+) "
    r"seq (\d+) (permit|deny) (.+)$"
)
_PREFIX = re.compile(r"^ip prefix-list (\S+) seq (\d+) (permit|deny) (\S+)(?: ge (\d+))?(?: le (\d+))?$")
_KEYS = {
    "community-list": ("community-list", "community"),
    "large-community-list": ("large-community-list", "large-community"),
    "as-path access-list": ("as-path-list", "aspath-exp"),
}


def policy_shown(ctx: LabContext, node: str) -> dict:
    ex = ctx.exec(node)
    text = ex.run(RUNNING, timeouts.VTYSH).check().stdout
    out: dict[str, Any] = {
        "prefix-list": {},
        "community-list": {},
        "large-community-list": {},
        "as-path-list": {},
        "route-map": {},
    }
    for line in text.splitlines():
        if m := _LIST.match(line):
            kind, key = _KEYS[m.group(1)]
            value: Any = m.group(6) if key == "aspath-exp" else {v: {} for v in m.group(6).split()}
            out[kind].setdefault(m.group(3), {"rule": {}})["rule"][m.group(4)] = {"action": m.group(5), key: value}
        elif m := _PREFIX.match(line):
            match = {k: int(v) for k, v in (("min-prefix-len", m.group(5)), ("max-prefix-len", m.group(6))) if v}
            out["prefix-list"].setdefault(m.group(1), {"rule": {}})["rule"][m.group(2)] = {
                "action": m.group(3),
                "match": {m.group(4): match},
            }
    maps = ex.vtysh_json(ROUTE_MAPS, timeout=timeouts.VTYSH)[0]
    bgpd = maps.get("bgpd", {}) if isinstance(maps, dict) else {}
    for name, rm in bgpd.items() if isinstance(bgpd, dict) else ():
        rules = rm.get("rules", []) if isinstance(rm, dict) else []
        out["route-map"][name] = {
            "rule": {
                str(r.get("sequenceNumber")): {
                    "action": r.get("type"),
                    "match": list(r.get("matchClauses", [])),
                    "set": list(r.get("setClauses", [])),
                    "statistics": {"invoked": r.get("invoked")},
                }
                for r in rules
                if isinstance(r, dict)
            },
            "statistics": {"invoked": rm.get("invoked")} if isinstance(rm, dict) else {},
        }
    return out
