"""The allow file of `twin baseline compare`: differences from the baseline that a change intends.

    allow:
      - {what: route, vrf: green, change: appeared, reason: "tenant green is new"}
      - {node: "leaf*", what: prefixes, change: changed}

Each rule matches a difference when every field given matches it (`node`, `vrf`
and `key` are shell-style patterns, `*` by default; `key` is the prefix of a
route, "AFI PEER" of a session or its prefix counts, the number of a VNI);
`what` is session, prefixes, route, vni or adjacency (an OSPF/IS-IS
neighbour, key "PROTOCOL INTERFACE"; any by default), `change` appeared,
disappeared or changed (any by default). Read like a topology: every problem at
once, with file and line.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from twin.topology import files
from twin.topology.problems import Problems
from twin.topology.read import kind_of, validate_model
from twin.topology.yaml_safe import read_yaml

WHATS = ("session", "prefixes", "route", "vni", "adjacency")
CHANGES = ("appeared", "disappeared", "changed")


class AllowRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    node: str = "*"
    vrf: str = "*"
    what: Literal["session", "prefixes", "route", "vni", "adjacency", "any"] = "any"
    key: str = "*"
    change: Literal["appeared", "disappeared", "changed", "any"] = "any"
    reason: str = ""

    def matches(self, node: str, vrf: str, what: str, key: str, change: str) -> bool:
        return (
            fnmatchcase(node, self.node)
            and fnmatchcase(vrf, self.vrf)
            and fnmatchcase(key, self.key)
            and self.what in ("any", what)
            and self.change in ("any", change)
        )

    def describe(self) -> str:
        fields = [f"{k}={v}" for k, v in self.model_dump(exclude_defaults=True).items() if k != "reason"]
        return " ".join(fields) or "everything"


def load_allow(path: str | Path) -> tuple[AllowRule, ...]:
    """The rules of an allow file, or TopologyError with every problem."""
    data, lines = read_yaml(path, files.ALLOW)
    problems = Problems(str(path), lines)
    if not isinstance(data, dict) or not isinstance(data.get("allow"), list):
        got = (
            "nothing"
            if data is None
            else kind_of(data)
            if not isinstance(data, dict)
            else "no list under allow"
            if "allow" in data
            else "no allow key"
        )
        problems.add(
            ("allow",) if isinstance(data, dict) else (),
            f"an allow file is a mapping with one key, allow: a list of rules "
            f"{{node, vrf, what, key, change, reason}}; got {got}",
        )
        problems.raise_if_any()
    for key in data:
        if key != "allow":
            problems.add((str(key),), "unknown field; an allow file has one key, allow")
    rules = [validate_model(AllowRule, raw, ("allow", i), problems) for i, raw in enumerate(data["allow"])]
    problems.raise_if_any()
    return tuple(r for r in rules if r is not None)  # each None was told
