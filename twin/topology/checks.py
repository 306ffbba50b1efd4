"""The user's checks: a checks file, or the `checks:` section of a topology, validated.

    checks = load_checks("checks.yml", fabric)      # CheckSet, or TopologyError with every problem

A checks file is a mapping with one key, `checks:`, a list of checks as in a
topology's `checks:` section (a topology file is read for that section alone).
Each check is validated on its own (structure: `twin.topology.schema`), then
against the fabric it is meant for: its nodes, hosts, peers, ports, VRFs,
tenants, prefixes and addresses must exist there, each problem placed at its
file and line, with what is allowed. Names are unique across every file given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from ipaddress import ip_address, ip_network
from pathlib import Path
from typing import Any, Callable

from twin.base.errors import Problem, TopologyError
from twin.kinds import KINDS
from twin.topology import files
from twin.topology.model import Fabric
from twin.topology.names import match_node
from twin.topology.problems import Path_, Problems, listing, quoted
from twin.topology.read import kind_of, validate_model
from twin.topology.schema import (
    CHECK_TYPES,
    BgpPrefixesCheck,
    BgpSessionCheck,
    CheckSpec,
    ExecCheck,
    FrrJsonCheck,
    PingCheck,
    RoceCheck,
    RouteCheck,
)
from twin.topology.yaml_safe import read_yaml

NAME_RULE = "a check name is 1-100 characters of text on one line"
TYPES = ", ".join(CHECK_TYPES)


@dataclass(frozen=True)
class CheckSet:
    """Validated checks of one source (a file, or a lab's topology), with the line of each."""

    source: str
    checks: tuple[CheckSpec, ...] = ()
    lines: dict[str, int] = field(default_factory=dict)  # check name -> line


def load_checks(path: str | Path, fabric: Fabric | None = None) -> CheckSet:
    """Read a checks file (or a topology file's `checks:`); with `fabric`, also check it against the lab."""
    data, lines = read_yaml(path, files.CHECKS)
    problems = Problems(str(path), lines)
    if not isinstance(data, dict):
        what = "nothing (it is empty, only comments or null)" if data is None else kind_of(data)
        problems.add((), f"the file holds {what}; a checks file is a mapping with one key, checks: a list of checks")
        problems.raise_if_any()
    topology = "nodes" in data
    if not topology:
        for key in data:
            if key != "checks":
                problems.add((str(key),), "unknown field; a checks file has one key, checks")
    if "checks" not in data:
        problems.add(("checks",), "required: a list of checks, each {name, type, ...}; types: " + TYPES)
    raw = data.get("checks")
    if raw is not None and not isinstance(raw, list):
        problems.add(("checks",), f"must be a list of checks, each {{name, type, ...}}; got {kind_of(raw)}")
        raw = []
    specs = parse_checks(raw or [], ("checks",), problems)
    if fabric is not None:
        check_against(specs, fabric, problems, ("checks",))
    problems.raise_if_any()
    return CheckSet(str(path), tuple(c for _, c in specs), {c.name: lines.get(("checks", i), 0) for i, c in specs})


def parse_checks(raw: list, at: Path_, problems: Problems) -> list[tuple[int, CheckSpec]]:
    """Each check validated alone (so one bad check hides no other), with its index; names unique."""
    out: list[tuple[int, CheckSpec]] = []
    first: dict[str, int] = {}
    for i, item in enumerate(raw):
        here = at + (i,)
        if not isinstance(item, dict):
            problems.add(here, f"a check is a mapping {{name, type, ...}}; got {kind_of(item)}")
            continue
        kind = item.get("type")
        model = CHECK_TYPES.get(kind) if isinstance(kind, str) else None
        if model is None:
            problems.add(
                here + ("type",),
                "required: the check's type, one of " + TYPES
                if kind is None
                else f"unknown check type {quoted(kind)}; types: {TYPES}",
            )
            continue
        spec = validate_model(model, item, here, problems)
        if spec is None:
            continue
        if not spec.name.strip() or len(spec.name) > 100 or "\n" in spec.name or "\r" in spec.name:
            problems.add(here + ("name",), f"{NAME_RULE}; got {quoted(spec.name)}")
        elif spec.name in first:
            problems.add(
                here + ("name",),
                f"the name {quoted(spec.name)} is also the name of "
                f"{at[-1]}[{first[spec.name]}]; every check needs its own",
            )
            continue
        first.setdefault(spec.name, i)
        out.append((i, spec))
    return out


def merge(sets: list[CheckSet]) -> tuple[CheckSpec, ...]:
    """The checks of several sources; a name used twice is an error naming both places."""
    seen: dict[str, CheckSet] = {}
    problems, out = [], []
    for s in sets:
        for c in s.checks:
            if c.name in seen:
                other = seen[c.name]
                problems.append(
                    Problem(
                        s.source,
                        "checks",
                        f"the check name {quoted(c.name)} is used in "
                        f"{other.source}:{other.lines.get(c.name, 0)} too; every check needs its own",
                        s.lines.get(c.name) or None,
                    )
                )
                continue
            seen[c.name] = s
            out.append(c)
    if problems:
        raise TopologyError(problems)
    return tuple(out)


# --- against the fabric ----------------------------------------------------------------------------


def check_against(specs: list[tuple[int, CheckSpec]], fabric: Fabric, problems: Problems, at: Path_) -> None:
    """Problems of each check (with its index) against `fabric`, placed at `at`[index].field. A node
    named as the user wrote it (`PC1` for pc1, `names.match_node`) is the lab's name from here on."""
    specs[:] = [(i, _as_named(s, fabric)) for i, s in specs]
    rules: dict[type, Callable[[Any, Fabric], Found]]  # each rule takes the CheckSpec type it is filed under
    rules = {
        BgpSessionCheck: _bgp,
        BgpPrefixesCheck: _prefixes,
        RouteCheck: _route,
        PingCheck: _ping,
        RoceCheck: _roce,
        FrrJsonCheck: _frr_json,
        ExecCheck: _exec,
    }
    for i, s in specs:
        for place, message in rules[type(s)](s, fabric):
            problems.add(at + (i,) + place, message)


Found = list[tuple[Path_, str]]


def _as_named(spec: CheckSpec, fabric: Fabric) -> CheckSpec:
    update = {}
    for field_ in ("node", "from_"):
        typed = getattr(spec, field_, None)
        found = match_node(typed, fabric.nodes) if isinstance(typed, str) else []
        if len(found) == 1 and found[0] != typed:
            update[field_] = found[0]
    return spec.model_copy(update=update) if update else spec


def _node(fabric: Fabric, node: str, field_: str, frr: bool = False) -> Found:
    if node not in fabric.nodes:
        return [((field_,), f"no node named {quoted(node)}; nodes: {listing(list(fabric.nodes))}")]
    if frr and not KINDS[fabric.nodes[node].kind].runs_frr:
        return [
            (
                (field_,),
                f"{node} runs no FRR; FRR nodes: "
                f"{listing([n for n, x in fabric.nodes.items() if KINDS[x.kind].runs_frr])}",
            )
        ]
    return []


def _own_config(fabric: Fabric, node: str) -> bool:
    """Does `node` run the user's own FRR config (a router): its VRFs and peers are that config's."""
    return KINDS[fabric.nodes[node].kind].user_config


def _vrfs(fabric: Fabric, node: str) -> dict[str, str]:
    """VRF -> tenant of every tenant VRF on `node`."""
    return {t.vrf: t.name for t in fabric.tenants_on(node)}


def _vrf(fabric: Fabric, node: str, vrf: str | None, tenant: str | None, default: bool = True) -> Found:
    if vrf is not None and tenant is not None:
        return [(("tenant",), "give vrf or tenant, not both")]
    if vrf is not None and _own_config(fabric, node):
        return []  # a router's VRFs are its config's: a VRF it lacks shows as such when judged
    known = _vrfs(fabric, node)
    if tenant is not None:
        if tenant not in fabric.tenants:
            return [
                (("tenant",), f"no tenant named {quoted(tenant)}; tenants: {listing(list(fabric.tenants)) or 'none'}")
            ]
        if fabric.tenants[tenant].vrf not in known:
            return [
                (
                    ("tenant",),
                    f"tenant {tenant} has no VRF on {node}; its VTEPs: {listing(fabric.tenants[tenant].vteps())}",
                )
            ]
    if vrf is not None and vrf not in known and not (default and vrf == "default"):
        allowed = (["default"] if default else []) + list(known)
        return [(("vrf",), f"{node} has no VRF {quoted(vrf)}; its VRFs: {listing(allowed) or 'none'}")]
    return []


def _peer(s: BgpSessionCheck | BgpPrefixesCheck, fabric: Fabric, required: bool) -> Found:
    if s.peer is not None and s.port is not None:
        return [(("port",), "give peer or port, not both")]
    node = fabric.nodes[s.node]
    ports = node.ports if _own_config(fabric, s.node) else node.fabric_ports  # a router peers where its config says
    what = "ports" if _own_config(fabric, s.node) else "fabric ports"
    if s.port is not None and s.port not in node.ports_by_name:
        return [
            (
                ("port",),
                f"{s.node} has no port {quoted(s.port)}; its {what}: {listing([p.name for p in ports]) or 'none'}",
            )
        ]
    if s.peer is not None and s.peer in fabric.nodes:
        if not any(p.peer_node == s.peer for p in ports):
            return [
                (
                    ("peer",),
                    f"{s.node} has no session with {s.peer}; its peers: "
                    f"{listing(sorted({p.peer_node for p in ports})) or 'none'}",
                )
            ]
    elif s.peer is not None and not _is_address(s.peer):
        return [
            (
                ("peer",),
                f"{quoted(s.peer)} is neither a node of the lab nor an address; {s.node}'s peers: "
                f"{listing(sorted({p.peer_node for p in ports})) or 'none'}",
            )
        ]
    if required and s.peer is None and s.port is None:
        return [((), "give peer (a node or a neighbour address) or port")]
    return []


def _evpn(s: BgpSessionCheck | BgpPrefixesCheck) -> Found:
    if s.afi == "evpn" and s.vrf != "default":
        return [(("afi",), "EVPN sessions live in the default VRF: drop vrf, or give afi ipv4 or ipv6")]
    return []


def _bgp(s: BgpSessionCheck, fabric: Fabric) -> Found:
    return (
        _node(fabric, s.node, "node", frr=True)
        or _vrf(fabric, s.node, s.vrf, None)
        or _evpn(s)
        or _peer(s, fabric, True)
    )


def _prefixes(s: BgpPrefixesCheck, fabric: Fabric) -> Found:
    found = (
        _node(fabric, s.node, "node", frr=True)
        or _vrf(fabric, s.node, s.vrf, None)
        or _evpn(s)
        or _peer(s, fabric, False)
    )
    if s.min is None and s.max is None:
        found.append(((), "give min, max or both: the number of prefixes expected"))
    elif s.min is not None and s.max is not None and s.min > s.max:
        found.append((("max",), f"max ({s.max}) is below min ({s.min})"))
    if s.count == "received" and not (s.port or s.peer in fabric.nodes):
        found.append((("count",), "received counts what a peer of the lab sent: give peer (a node) or port"))
    return found


def _route(s: RouteCheck, fabric: Fabric) -> Found:
    found = _node(fabric, s.node, "node", frr=True) or _vrf(fabric, s.node, s.vrf, s.tenant)
    try:
        ip_network(s.prefix)
    except ValueError as e:
        hint = f"host bits are set; did you mean {ip_network(s.prefix, strict=False)}?" if "host bits" in str(e) else ""
        found.append((("prefix",), f"{quoted(s.prefix)} is not a prefix like 10.1.1.0/24{'; ' + hint if hint else ''}"))
    if s.nexthops is not None and s.vteps is not None:
        found.append((("vteps",), "give nexthops or vteps, not both"))
    if s.expect == "absent" and (s.nexthops is not None or s.vteps is not None):
        found.append((("expect",), "an absent route has no next hops: drop nexthops/vteps, or expect present"))
    vteps = fabric.vteps()
    for i, v in enumerate(s.vteps or []):
        if v not in vteps or fabric.nodes[v].loopback is None:
            found.append((("vteps", i), f"{quoted(v)} is not a VTEP of the lab; VTEPs: {listing(vteps) or 'none'}"))
    found += [(("nexthops", i), f"{quoted(h)} is empty") for i, h in enumerate(s.nexthops or []) if not h.strip()]
    return found


def _ping(s: PingCheck, fabric: Fabric) -> Found:
    found = _node(fabric, s.from_, "from")
    if not found and KINDS[fabric.nodes[s.from_].kind].runs_frr:
        found += _vrf(fabric, s.from_, s.vrf, s.tenant)
    elif not found and (s.vrf is not None or s.tenant is not None):
        found.append(
            (
                ("vrf" if s.vrf is not None else "tenant",),
                f"{s.from_} is a host: it pings from its own tenant, without vrf or tenant",
            )
        )
    if not _is_address(s.to):
        found.append((("to",), f"{quoted(s.to)} is not an IPv4 or IPv6 address"))
    return found


def _roce(s: RoceCheck, fabric: Fabric) -> Found:
    hosts = [n for n in fabric.nodes if fabric.attachment_of(n)]
    if fabric.attachment_of(s.from_) is None:
        return [(("from",), f"{quoted(s.from_)} is not a host of a tenant; hosts: {listing(hosts) or 'none'}")]
    if s.to in fabric.nodes:
        if fabric.attachment_of(s.to) is None:
            return [(("to",), f"{s.to} is not a host of a tenant; hosts: {listing(hosts)}")]
        return []
    if not _is_address(s.to) or ":" in s.to:
        return [(("to",), f"{quoted(s.to)} is neither a host nor an IPv4 address; hosts: {listing(hosts)}")]
    found = fabric.attachment_of(s.from_)
    if found is None:
        return []  # told above: not a host of a tenant
    tenant = found[0]
    if s.expect == "delivered" and not any(a.ip == s.to for a in tenant.attachments):
        return [
            (
                ("to",),
                f"no host of tenant {tenant.name} has {s.to}, so nothing can be delivered there; "
                "expect blocked, or name a host",
            )
        ]
    return []


def _frr_json(s: FrrJsonCheck, fabric: Fabric) -> Found:
    found = _node(fabric, s.node, "node", frr=True)
    if not s.command.split() or s.command.split()[-1] != "json":
        found.append(
            (
                ("command",),
                f"{quoted(s.command)} does not print JSON: a vtysh command ending in json, "
                "like 'show bgp summary json'",
            )
        )
    if not isinstance(s.match, (dict, list)):
        found.append((("match",), f"must be the JSON to find, an object or a list; got {kind_of(s.match)}"))
    return found


def _exec(s: ExecCheck, fabric: Fabric) -> Found:
    found = _node(fabric, s.node, "node")
    for f in ("regex", "not_regex"):
        try:
            re.compile(getattr(s, f) or "")
        except re.error as e:
            found.append(((f,), f"not a regular expression: {e}"))
    return found


def _is_address(text: Any) -> bool:
    try:
        ip_address(text)
        return True
    except ValueError:
        return False
