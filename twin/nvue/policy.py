"""`router policy` as NVUE declares it: prefix lists and route maps, as typed data for the FRR
renderer, and what twin refuses of them on the node: a policy a neighbor or a redistribution names
that does not exist, and a route-map rule with a match or set twin does not emulate (without it the
rule would match more, or do less, than it says: its FRR line is not written half).

    policy = Policy.of(tree)                # prefix_lists, route_maps
    problems = policy.problems(tree, used)  # [(path, message)]
"""
from __future__ import annotations

from dataclasses import dataclass, field

from twin.nvue.tree import Path, get

ROOT = ("router", "policy")


@dataclass
class PrefixRule:
    seq: int
    action: str                        # permit | deny
    prefix: str
    le: int | None = None              # max-prefix-len
    ge: int | None = None              # min-prefix-len


@dataclass
class RouteMapRule:
    seq: int
    action: str
    prefix_list: str | None = None     # match ip-prefix-list
    interface: str | None = None       # match interface
    tag: int | None = None             # match tag
    sets: dict[str, int] = field(default_factory=dict)   # local-preference, metric, weight, tag


@dataclass
class Policy:
    prefix_lists: dict[str, list[PrefixRule]] = field(default_factory=dict)
    six: set[str] = field(default_factory=set)             # prefix lists of type ipv6
    route_maps: dict[str, list[RouteMapRule]] = field(default_factory=dict)

    @classmethod
    def of(cls, tree: dict) -> "Policy":
        out = cls()
        for name, pl in get(tree, ROOT + ("prefix-list",), {}).items():
            if pl.get("type") == "ipv6":
                out.six.add(name)
            out.prefix_lists[name] = [PrefixRule(int(seq), _action(r), prefix, m.get("max-prefix-len"),
                                                 m.get("min-prefix-len"))
                                      for seq, r in sorted(pl.get("rule", {}).items(), key=lambda x: int(x[0]))
                                      for prefix, m in r.get("match", {}).items()]
        for name, rm in get(tree, ROOT + ("route-map",), {}).items():
            out.route_maps[name] = [_rule(int(seq), r)
                                    for seq, r in sorted(rm.get("rule", {}).items(), key=lambda x: int(x[0]))]
        return out

    def problems(self, tree: dict, used: dict[Path, tuple[str, str]]) -> list[tuple[Path, str]]:
        """What twin refuses of the policies: `used` is every place naming one (path -> (kind, name))."""
        out: list[tuple[Path, str]] = []
        for at, (kind, name) in used.items():
            known = self.route_maps if kind == "route-map" else self.prefix_lists
            if name not in known:
                out.append((at, f"no {kind} {name} in router.policy.{kind}"))
        for name, rm in get(tree, ROOT + ("route-map",), {}).items():
            for seq, r in rm.get("rule", {}).items():
                at = ROOT + ("route-map", name, "rule", seq)
                for part, emulated in (("match", _MATCHES), ("set", _SETS)):
                    for k in sorted(set(r.get(part, {})) - emulated):
                        out.append((at + (part, k), f"{part} {k} is not emulated: the rule would "
                                                    f"{'match more' if part == 'match' else 'do less'} than it "
                                                    "says; twin does not run it half"))
                if "action" not in r:
                    out.append((at + ("action",), "a rule needs an action: permit or deny"))
                for k in sorted({"call", "exit-policy"} & set(r)):
                    out.append((at + (k,), f"{k} is not emulated: twin does not run the route map half"))
                pl = r.get("match", {}).get("ip-prefix-list")
                if pl is not None and pl not in self.prefix_lists:
                    out.append((at + ("match", "ip-prefix-list"), f"no prefix-list {pl} in router.policy.prefix-list"))
        for name, pl in get(tree, ROOT + ("prefix-list",), {}).items():
            out += [(ROOT + ("prefix-list", name, "rule", seq, "action"), "a rule needs an action: permit or deny")
                    for seq, r in pl.get("rule", {}).items() if "action" not in r]
        for name in sorted(self.six):
            out.append((ROOT + ("prefix-list", name, "type"), "IPv6 prefix lists are not emulated (twin's fabric is "
                                                              "IPv4; stored nowhere else)"))
        return out


_MATCHES = {"ip-prefix-list", "type", "interface", "tag"}
_SETS = {"local-preference", "metric", "weight", "tag"}


def _action(r: dict) -> str:
    return str(r.get("action", "permit"))


def _rule(seq: int, r: dict) -> RouteMapRule:
    m = r.get("match", {})
    return RouteMapRule(seq, _action(r), m.get("ip-prefix-list"), m.get("interface"), m.get("tag"),
                        {k: v for k, v in r.get("set", {}).items() if k in _SETS})
