"""An NVUE configuration tree: plain nested mappings, as `nv config show -o json` holds it.

Pure functions on it, the ones `nv set`/`nv unset`, `nv config apply|diff|patch|replace`
and the REST API's PATCH/DELETE are made of:

    tree, found = check(tree)                      # normalised (on/off -> bool, '10' -> 10), and
                                                   # every error and not-emulated place found
    set_path(tree, ("interface", "swp1-4", "link", "state"), "up")    # ranges name several
    path, value = words(["interface", "swp3", "bridge", "domain", "br_default", "access", "30"])
    unset_path(tree, ("interface", "swp3"))
    patch(tree, {...}); unpatch(tree, {...})       # a `- set:` / `- unset:` document
    diff(old, new) -> [{"unset": ...}, {"set": ...}]   # what takes old to new, in NVUE's form

Keys are always text (YAML reads `10:` as a number; NVUE's own files quote VLAN ids: '10').
"""

from __future__ import annotations

import copy
import ipaddress
import re
from dataclasses import dataclass
from typing import Any

from twin.nvue.places import EMULATED, STORED, Coll, Empty, Leaf, Obj, Opaque
from twin.nvue.schema import TREE
from twin.topology import port_range as expand  # `nv set interface swp1-4,swp7 ...`
from twin.topology.problems import dotted, listing, quoted

Path = tuple[str, ...]
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,15}")
_VRF = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,14}")
_GROUP = re.compile(r"[A-Za-z0-9_.-]{1,63}")
_POLICY = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,62}")  # route maps and prefix lists (NVUE: a letter first)
_MAC = re.compile(r"[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}")
_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")  # RFC 1123: one label of a host name
_RT = re.compile(r"(ANY|\*|\d{1,10}|\d{1,3}(\.\d{1,3}){3}):(\d{1,10})")
_RD = re.compile(r"(\d{1,10}|\d{1,3}(\.\d{1,3}){3}):(\d{1,10})")
_LIST = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,62}|[1-9][0-9]?")  # community... lists: a name, or FRR's 1-99
_COMMUNITY = re.compile(r"(\d{1,5}):(\d{1,5})")
_LARGE = re.compile(r"(\d{1,10}):(\d{1,10}):(\d{1,10})")
_ASPATH = re.compile(r"[0-9 _^$.*+?()\[\]{}|,-]{1,255}")  # FRR's AS-path regex, nothing a line could end with
_MD5 = re.compile(r"[!-~]{1,16}")  # an OSPF MD5 key as FRR takes it: one word of printable ASCII, 16 at most


@dataclass(frozen=True)
class Finding:
    """An error (`stored` False) or a place twin keeps without emulating it (`stored` True)."""

    path: Path
    message: str
    stored: bool = False

    def __str__(self) -> str:
        return f"{show(self.path)}: {self.message}" if self.path else self.message


def show(path: Path) -> str:
    """interface.swp1.bridge.domain.br_default.access; a key like a prefix is quoted: address['10.1.10.2/24']."""
    return dotted(path)


# --- values ------------------------------------------------------------------------------------------
def value_of(leaf: Leaf, v: Any) -> tuple[Any, str]:
    """(the value normalised, "") or (None, why it is not one `leaf` takes)."""
    if leaf.keyed and isinstance(v, dict) and len(v) == 1 and next(iter(v.values())) in ({}, None):
        v = next(iter(v))  # NVUE writes `state: {up: {}}`
    if isinstance(v, str) and v in leaf.choices:
        return v, ""
    check = _CHECKS.get(leaf.kind, _text)
    out, ok = check(leaf, v)
    if ok:
        return out, ""
    if isinstance(v, int) and not isinstance(v, bool) and leaf.kind == "mac":
        return None, (
            f"{quoted(v)} is not {leaf.what}: YAML 1.1 read a MAC of digits starting 1-9 as a number "
            "(base 60); quote it"
        )
    what = leaf.what or (f"one of {', '.join(leaf.choices)}" if leaf.choices else f"a {leaf.kind}")
    return None, f"{quoted(v)} is not {what}"


def _bool(leaf: Leaf, v: Any) -> tuple[Any, bool]:
    if isinstance(v, bool):
        return v, True
    return {"on": True, "off": False}.get(v) if isinstance(v, str) else None, v in ("on", "off")


def _int(leaf: Leaf, v: Any) -> tuple[Any, bool]:
    if isinstance(v, str) and v.isascii() and v.isdigit() and len(v) <= 10:
        v = int(v)
    ok = isinstance(v, int) and not isinstance(v, bool) and leaf.lo <= v <= leaf.hi
    return v, ok


def _asn(leaf: Leaf, v: Any) -> tuple[Any, bool]:
    v, ok = _int(Leaf("int", lo=1, hi=4294967295), v)
    return v, ok and v != 23456


def _ipv4(leaf: Leaf, v: Any) -> tuple[Any, bool]:
    try:
        return str(ipaddress.IPv4Address(v)), isinstance(v, str)
    except ValueError:
        return None, False


def _prefix(leaf: Leaf, v: Any) -> tuple[Any, bool]:
    if not _plain(v) or "/" not in v:
        return None, False
    try:
        ipaddress.ip_interface(v)
    except ValueError:
        return None, False
    return v, True


def _plain(v: Any) -> bool:
    """Text an address may be: ASCII, no scope (Python takes `fe80::1%<anything>`, a newline too)."""
    return isinstance(v, str) and v.isascii() and v.isprintable() and "%" not in v


def _host(leaf: Leaf, v: Any) -> tuple[Any, bool]:
    return v, (isinstance(v, str) and 0 < len(v) <= 253 and all(_LABEL.fullmatch(x) for x in v.split(".")))


def _match(pattern: re.Pattern) -> Any:
    return lambda leaf, v: (v, isinstance(v, str) and bool(pattern.fullmatch(v)))


def _neighbor(leaf: Leaf, v: Any) -> tuple[Any, bool]:
    if isinstance(v, str) and _NAME.fullmatch(v):
        return v, True
    try:
        return str(ipaddress.ip_address(v)), _plain(v)
    except ValueError:
        return None, False


def _via(leaf: Leaf, v: Any) -> tuple[Any, bool]:
    try:
        return str(ipaddress.ip_address(v)), _plain(v)
    except ValueError:
        return None, False


def _numbers(pattern: re.Pattern, hi: int) -> Any:
    """Text of numbers joined by ':' (a community), each at most `hi`."""
    return lambda leaf, v: (
        v,
        isinstance(v, str) and (m := pattern.fullmatch(v)) is not None and all(int(x) <= hi for x in m.groups()),
    )


def _area(leaf: Leaf, v: Any) -> tuple[Any, bool]:
    """An OSPF area: 0-4294967295, or dotted like an IPv4 address (issue 44)."""
    n, ok = _int(Leaf("int", lo=0, hi=4294967295), v)
    return (n, True) if ok else _ipv4(leaf, v)


def _md5(leaf: Leaf, v: Any) -> tuple[Any, bool]:
    v = str(v) if isinstance(v, int) and not isinstance(v, bool) else v  # YAML reads a key of digits as a number
    return v, isinstance(v, str) and bool(_MD5.fullmatch(v))


def _enum(leaf: Leaf, v: Any) -> tuple[Any, bool]:
    return v, isinstance(v, str) and v in leaf.choices


def _text(leaf: Leaf, v: Any) -> tuple[Any, bool]:
    return v, isinstance(v, (str, int, float, bool)) and not (isinstance(v, str) and len(v) > 4096)


_CHECKS = {
    "bool": _bool,
    "int": _int,
    "asn": _asn,
    "ipv4": _ipv4,
    "prefix": _prefix,
    "enum": _enum,
    "mac": _match(_MAC),
    "name": _match(_NAME),
    "vrf": _match(_VRF),
    "group": _match(_GROUP),
    "rt": _match(_RT),
    "rd": _match(_RD),
    "policy": _match(_POLICY),
    "via": _via,
    "neighbor": _neighbor,
    "host": _host,
    "str": _text,
    "list": _match(_LIST),
    "aspath": _match(_ASPATH),
    "community": _numbers(_COMMUNITY, 65535),
    "large": _numbers(_LARGE, 4294967295),
    "area": _area,
    "md5": _md5,
}


# --- the tree, checked -----------------------------------------------------------------------------------
def check(tree: Any) -> tuple[dict, list[Finding]]:
    """The tree normalised against NVUE's object tree, and every finding: errors (refused
    places, wrong values) and the places kept but not emulated."""
    found: list[Finding] = []
    if not isinstance(tree, dict):
        return {}, [
            Finding(
                (), f"the configuration is {quoted(tree)}, not a mapping of NVUE objects ({listing(TREE.children)})"
            )
        ]
    return _obj(TREE, tree, (), found, EMULATED), found


def _walk(spec: Any, v: Any, at: Path, found: list[Finding], status: str) -> Any:
    if isinstance(spec, Opaque):
        found.append(Finding(at, "stored, not emulated", True))
        return v
    if isinstance(spec, Leaf):
        out, why = value_of(spec, v)
        if why:
            found.append(Finding(at, why))
        elif STORED in (status, spec.status):
            found.append(Finding(at, "stored, not emulated", True))
        return out if not why else v
    if v is None:
        v = {}  # `bridge: {domain: {br_default: }}`: an object named, nothing in it
    if not isinstance(v, dict):
        found.append(Finding(at, f"{quoted(v)} is not an object: it holds " + _holds(spec)))
        return v
    if isinstance(spec, Coll):
        return _coll(spec, v, at, found, status)
    if isinstance(spec, Empty):
        return _empty(spec, v, at, found, status)
    return _obj(spec, v, at, found, status)


def _obj(spec: Obj, v: dict, at: Path, found: list[Finding], status: str) -> dict:
    status = STORED if STORED in (status, spec.status) else EMULATED
    out = {}
    for k, sub in v.items():
        key = str(k) if not isinstance(k, bool) else ("on" if k else "off")
        if key in spec.children:
            out[key] = _walk(spec.children[key], sub, at + (key,), found, status)
        elif spec.open:
            found.append(Finding(at + (key,), "stored, not emulated (twin does not know this key)", True))
            out[key] = sub
        else:
            found.append(
                Finding(
                    at + (key,),
                    f"no such key in NVUE's {show(at) or 'object tree'}; keys: {listing(sorted(spec.children))}",
                )
            )
    return out


def _coll(spec: Coll, v: dict, at: Path, found: list[Finding], status: str) -> dict:
    status = STORED if STORED in (status, spec.status) else EMULATED
    out = {}
    for k, sub in v.items():
        key, why = value_of(spec.key, k)
        if why:
            found.append(Finding(at + (str(k),), why))
            continue
        out[str(key)] = _walk(spec.item, sub, at + (str(key),), found, status)
    return out


def _empty(spec: Empty, v: dict, at: Path, found: list[Finding], status: str) -> dict:
    if STORED in (status, spec.status):
        found.append(Finding(at, "stored, not emulated", True))
    return _obj(Obj(spec.extra, STORED), v, at, found, STORED) if v else {}


def _holds(spec: Any) -> str:
    if isinstance(spec, Obj):
        return f"keys {listing(sorted(spec.children))}"
    if isinstance(spec, Coll):
        return f"entries keyed by {spec.key.what or spec.key.kind}"
    return "nothing but its key ({})"


# --- editing ---------------------------------------------------------------------------------------------
def spec_at(path: Path) -> Any:
    """The schema of a place (None: no such place in NVUE's tree; an Opaque for anything below one)."""
    spec: Any = TREE
    for k in path:
        if isinstance(spec, Opaque):
            return spec
        if isinstance(spec, Obj):
            spec = spec.children.get(k, Opaque() if spec.open else None)
        elif isinstance(spec, Coll):
            spec = spec.item
        elif isinstance(spec, Empty):
            spec = spec.extra.get(k)
        else:
            return None
        if spec is None:
            return None
    return spec


def words(ws: list[str]) -> tuple[Path, Any]:
    """The path and value of `nv set WORDS...`: the words that name places, then the value (or
    the last key of a collection: `ip address 10.1.30.2/24` sets that address to {})."""
    spec: Any = TREE
    path: list[str] = []
    for i, w in enumerate(ws):
        if isinstance(spec, Leaf):
            return tuple(path), " ".join(ws[i:])
        if isinstance(spec, (Opaque, Empty)) and i == len(ws) - 1:
            return tuple(path), w
        path.append(w)
        spec = spec_at(tuple(path))
        if spec is None:
            raise ValueError(f"{show(tuple(path))}: no such place in NVUE's object tree")
    return tuple(path), {} if not isinstance(spec, Leaf) else None


def _paths(path: Path) -> list[Path]:
    """A path with every interface range in it expanded into the paths it names."""
    out: list[Path] = [()]
    for i, k in enumerate(path):
        spec = spec_at(path[:i])
        names = expand(k) if isinstance(spec, Coll) and spec.ranges else [k]
        out = [p + (n,) for p in out for n in names]
    return out


def set_path(tree: dict, path: Path, value: Any) -> dict:
    """`nv set`: the value at every place `path` names (ranges expanded); returns the tree. An
    object named with nothing in it (`nv set interface swp3`) keeps what the place holds."""
    for p in _paths(path):
        node = tree
        for k in p[:-1]:
            nxt = node.get(k)
            if not isinstance(nxt, dict):
                nxt = node[k] = {}
            node = nxt
        if p and not (value == {} and isinstance(node.get(p[-1]), dict)):
            node[p[-1]] = copy.deepcopy(value)
    return tree


def unset_path(tree: dict, path: Path) -> dict:
    """`nv unset`: the places `path` names removed (and objects left empty by it)."""
    for p in _paths(path):
        chain = [tree]
        for k in p[:-1]:
            nxt = chain[-1].get(k)
            if not isinstance(nxt, dict):
                break
            chain.append(nxt)
        else:
            if p:
                chain[-1].pop(p[-1], None)
    return tree


def patch(tree: dict, doc: Any) -> dict:
    """A `- set:` document merged into the tree (mappings merged, anything else replaced)."""
    if not isinstance(doc, dict):
        return tree
    for k, v in doc.items():
        k = str(k)
        if isinstance(v, dict) and isinstance(tree.get(k), dict) and v:
            patch(tree[k], v)
        else:
            tree[k] = copy.deepcopy(v) if v is not None else tree.get(k, {})
    return tree


def unpatch(tree: dict, doc: Any) -> dict:
    """An `- unset:` document: a key with nothing under it goes, with all below it."""
    if not isinstance(doc, dict):
        return tree
    for k, v in doc.items():
        k = str(k)
        if isinstance(v, dict) and v and isinstance(tree.get(k), dict):
            unpatch(tree[k], v)
        else:
            tree.pop(k, None)
    return tree


def diff(old: dict, new: dict) -> list[dict]:
    """What takes `old` to `new`, as NVUE writes it: an `unset` document, then a `set` one."""
    unset, sets = _diff(old, new)
    return ([{"unset": unset}] if unset else []) + ([{"set": sets}] if sets else [])


def _diff(old: dict, new: dict) -> tuple[dict, dict]:
    unset: dict = {}
    sets: dict = {}
    for k, v in old.items():
        if k not in new:
            unset[k] = None
        elif isinstance(v, dict) and isinstance(new[k], dict):
            u, s = _diff(v, new[k])
            if u:
                unset[k] = u
            if s:
                sets[k] = s
        elif v != new[k]:
            sets[k] = copy.deepcopy(new[k])
    for k, v in new.items():
        if k not in old:
            sets[k] = copy.deepcopy(v)
    return unset, sets


def get(tree: dict, path: Path, default: Any = None) -> Any:
    node: Any = tree
    for k in path:
        if not isinstance(node, dict) or k not in node:
            return default
        node = node[k]
    return node


def leaves(tree: Any, at: Path = ()) -> dict[Path, Any]:
    """Every place that holds a value or an empty object: path -> value."""
    if not isinstance(tree, dict) or not tree:
        return {at: tree}
    out: dict[Path, Any] = {}
    for k, v in tree.items():
        out.update(leaves(v, at + (k,)))
    return out


def not_emulated(found: list[Finding]) -> list[Path]:
    """The places kept but not emulated (what an apply result and `twin verify` list)."""
    return [f.path for f in found if f.stored]
