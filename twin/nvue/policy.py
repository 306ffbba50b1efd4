"""`router policy` as NVUE declares it: prefix lists, community, large-community and AS-path lists
and route maps, as typed data for the FRR renderer, and what twin refuses of them on the node: a
policy a neighbor, a redistribution or a route-map rule names that does not exist, and a route-map
rule with a match or set twin does not emulate (without it the rule would match more, or do less,
than it says: its FRR line is not written half).

    policy = Policy.of(tree)                # prefix_lists, lists (community...), route_maps
    problems = policy.problems(tree, used)  # [(path, message)]
"""

from __future__ import annotations

from dataclasses import dataclass, field

from twin.nvue.tree import Path, get

ROOT = ("router", "policy")


@dataclass
class PrefixRule:
    seq: int
    action: str  # permit | deny
    prefix: str
    le: int | None = None  # max-prefix-len
    ge: int | None = None  # min-prefix-len


@dataclass
class ListRule:
    """A rule of a community, large-community or AS-path list: what it matches (the communities, all of
    them; or the AS-path regular expression)."""

    seq: int
    action: str
    values: list[str]


# NVUE's list -> (the key of a rule's values, FRR's command, the route-map match naming it)
LISTS = {
    "community-list": ("community", "bgp community-list", "community"),
    "large-community-list": ("large-community", "bgp large-community-list", "large-community"),
    "as-path-list": ("aspath-exp", "bgp as-path access-list", "as-path"),
}


def list_line(kind: str, name: str, r: ListRule) -> str:
    """A list's rule as FRR writes it: a community list numbered 1-99 is FRR's numbered (standard) form,
    one named `standard NAME`."""
    std = "" if kind == "as-path-list" or name.isdigit() else " standard"
    return f"{LISTS[kind][1]}{std} {name} seq {r.seq} {r.action} {' '.join(r.values)}"


@dataclass
class RouteMapRule:
    seq: int
    action: str
    prefix_list: str | None = None  # match ip-prefix-list
    interface: str | None = None  # match interface
    tag: int | None = None  # match tag
    sets: dict[str, int] = field(default_factory=dict)  # local-preference, metric, weight, tag
    lists: dict[str, str] = field(default_factory=dict)  # match community-list... -> the list's name
    community: list[str] = field(default_factory=list)  # set community (with additive: added, else replaced)
    large: list[str] = field(default_factory=list)  # set large-community
    prepend: str | None = None  # set as-path-prepend: "65101" or "last-as 2"
    nexthop: str | None = None  # set ip-nexthop: an address, unchanged or peer-address

    def frr_lines(self) -> list[str]:
        """The rule's match and set lines as FRR writes them (in FRR's order)."""
        out = [f"match ip address prefix-list {self.prefix_list}"] if self.prefix_list else []
        out += [f"match {LISTS[k][2]} {n}" for k, n in sorted(self.lists.items())]
        out += [f"match interface {self.interface}"] if self.interface else []
        out += [f"match tag {self.tag}"] if self.tag else []
        out += [f"set as-path prepend {self.prepend}"] if self.prepend else []
        out += [f"set community {_words(self.community)}"] if self.community else []
        out += [f"set ip next-hop {self.nexthop}"] if self.nexthop else []
        out += [f"set large-community {_words(self.large)}"] if self.large else []
        return out + [f"set {k} {v}" for k, v in self.sets.items()]


@dataclass
class Policy:
    prefix_lists: dict[str, list[PrefixRule]] = field(default_factory=dict)
    six: set[str] = field(default_factory=set)  # prefix lists of type ipv6
    route_maps: dict[str, list[RouteMapRule]] = field(default_factory=dict)
    lists: dict[str, dict[str, list[ListRule]]] = field(default_factory=lambda: {k: {} for k in LISTS})

    def list_lines(self) -> list[str]:
        return [
            list_line(kind, name, r)
            for kind, lists in self.lists.items()
            for name, rules in lists.items()
            for r in rules
        ]

    @classmethod
    def of(cls, tree: dict) -> "Policy":
        out = cls()
        for name, pl in get(tree, ROOT + ("prefix-list",), {}).items():
            if pl.get("type") == "ipv6":
                out.six.add(name)
            out.prefix_lists[name] = [
                PrefixRule(int(seq), _action(r), prefix, m.get("max-prefix-len"), m.get("min-prefix-len"))
                for seq, r in sorted(pl.get("rule", {}).items(), key=lambda x: int(x[0]))
                for prefix, m in r.get("match", {}).items()
            ]
        for name, rm in get(tree, ROOT + ("route-map",), {}).items():
            out.route_maps[name] = [
                _rule(int(seq), r) for seq, r in sorted(rm.get("rule", {}).items(), key=lambda x: int(x[0]))
            ]
        for kind, (key, _, _) in LISTS.items():
            for name, cl in get(tree, ROOT + (kind,), {}).items():
                out.lists[kind][name] = [
                    ListRule(int(seq), _action(r), [r[key]] if isinstance(r.get(key), str) else list(r.get(key, {})))
                    for seq, r in sorted(cl.get("rule", {}).items(), key=lambda x: int(x[0]))
                ]
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
                for part, emulated in (("match", _MATCHES), ("set", _SETS | _EMULATED_SETS)):
                    for k in sorted(set(r.get(part, {})) - emulated):
                        out.append(
                            (
                                at + (part, k),
                                f"{part} {k} is not emulated: the rule would "
                                f"{'match more' if part == 'match' else 'do less'} than it "
                                "says; twin does not run it half",
                            )
                        )
                if "action" not in r:
                    out.append((at + ("action",), "a rule needs an action: permit or deny"))
                for k in sorted({"call", "exit-policy"} & set(r)):
                    out.append((at + (k,), f"{k} is not emulated: twin does not run the route map half"))
                pl = r.get("match", {}).get("ip-prefix-list")
                if pl is not None and pl not in self.prefix_lists:
                    out.append((at + ("match", "ip-prefix-list"), f"no prefix-list {pl} in router.policy.prefix-list"))
                for kind in LISTS:
                    n = r.get("match", {}).get(kind)
                    if n is not None and n not in self.lists[kind]:
                        names = ", ".join(sorted(self.lists[kind])) or "none"
                        out.append((at + ("match", kind), f"no {kind} {n} in router.policy.{kind} (declared: {names})"))
                for key in ("community", "large-community"):
                    words = set(r.get("set", {}).get(key, {}))
                    if "none" in words and len(words) > 1:
                        out.append((at + ("set", key), f"none clears the route's {key}: it takes nothing beside it"))
                    elif words and words <= {"additive"}:
                        out.append((at + ("set", key), f"additive adds the {key} values named beside it: none named"))
                pre = r.get("set", {}).get("as-path-prepend")
                if pre is not None and len(pre) != 1:
                    out.append((at + ("set", "as-path-prepend"), "one of as or last-as"))
        for name, pl in get(tree, ROOT + ("prefix-list",), {}).items():
            out += [
                (ROOT + ("prefix-list", name, "rule", seq, "action"), "a rule needs an action: permit or deny")
                for seq, r in pl.get("rule", {}).items()
                if "action" not in r
            ]
        for kind, (key, _, _) in LISTS.items():
            for name, cl in get(tree, ROOT + (kind,), {}).items():
                for seq, r in cl.get("rule", {}).items():
                    at = ROOT + (kind, name, "rule", seq)
                    out += [(at + ("action",), "a rule needs an action: permit or deny")] if "action" not in r else []
                    out += [(at + (key,), f"a rule needs its {key}")] if not r.get(key) else []
        for name in sorted(self.six):
            out.append(
                (
                    ROOT + ("prefix-list", name, "type"),
                    "IPv6 prefix lists are not emulated (twin's fabric is IPv4; stored nowhere else)",
                )
            )
        return out


_MATCHES = {"ip-prefix-list", "type", "interface", "tag", *LISTS}
_EMULATED_SETS = {"community", "large-community", "as-path-prepend", "ip-nexthop"}
_SETS = {"local-preference", "metric", "weight", "tag"}


def _action(r: dict) -> str:
    return str(r.get("action", "permit"))


def _rule(seq: int, r: dict) -> RouteMapRule:
    m, s = r.get("match", {}), r.get("set", {})
    pre = s.get("as-path-prepend", {})
    nh = s.get("ip-nexthop")
    return RouteMapRule(
        seq,
        _action(r),
        m.get("ip-prefix-list"),
        m.get("interface"),
        m.get("tag"),
        {k: v for k, v in s.items() if k in _SETS},
        {k: m[k] for k in LISTS if k in m},
        list(s.get("community", {})),
        list(s.get("large-community", {})),
        (str(pre["as"]) if "as" in pre else f"last-as {pre['last-as']}" if "last-as" in pre else None),
        "peer-address" if nh == "peer-addr" else nh,
    )


def _words(values: list[str]) -> str:
    """A set's values as FRR takes them: `additive` last."""
    return " ".join([v for v in values if v != "additive"] + (["additive"] if "additive" in values else []))
