"""containerlab labs in: a containerlab topology as a twin topology plus the user's config directory.

A file is containerlab's by its content (`topology: {nodes: ...}`), whatever its name. Its
semantics are kept (as containerlab's `types/topology.go` resolves a node):
- a node's kind is its own, else its group's, else the default's; its group its own, else its
  kind's, else the default's; `image` and other single values come from the node, else its
  group, its kind, the defaults; `binds` of every level are merged by destination (the most
  specific wins), `env` by name, `exec` of every level run in order: defaults, kind, group, node;
- bind sources are relative to the topology file (`~`, `__clabNodeDir__`, `__clabDir__` expanded);
  a bind of FRR's `frr.conf` or `daemons` (or of the whole /etc/frr) gives the node's config,
  every other bind is carried as it is (`twin.interop.clab_nodes` says how each field is taken);
- interface names stay as given (eth1, e1-1...), and so do link MTUs;
- `kind: linux` nodes run: a node with FRR's files bound (or an FRR image) is a `router`, any
  other a `host` (with its own `cmd`, `entrypoint`, `env` and `exec`);
- the management network's IPv4 subnet and gateway, a router's address on it (`clab_nodes.mgmt_of`).
Each node's `image` is carried: it runs where the engine has it, else twin's node image
(`twin up --images`, said then). What twin does not carry is said once each, as a note with its
reason: the rest of the management network (`clab_nodes.mgmt_notes`) and each node field left out
(`clab_nodes.LEFT_OUT`). Node and lab names are lowercased to twin's rules when that is all they
need. Kinds twin cannot run (SR Linux, cEOS...) are refused in one error that lists them and the
way out: `--role leaf1=leaf,spine=spine` maps them to kinds twin renders configs for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twin.base.errors import Problem, TopologyError
from twin.config.userconf import DAEMONS, FORMATS, FRR_CONF, UserConfigs
from twin.interop import clab_nodes as cn
from twin.kinds import KINDS
from twin.kinds.base import FRR_DIR
from twin.topology import files as inputs
from twin.topology.names import check_lab_name, check_node_name, node_key
from twin.topology.problems import Problems, listing, quoted
from twin.topology.yaml_safe import read_yaml

SUFFIXES = (".clab.yml", ".clab.yaml")
OTHER_FORMATS = (".json", ".dot", ".gv")  # NVIDIA Air's
RUNS = "linux"  # the one containerlab kind twin runs as it is
SPECIAL = ("host", "mgmt-net", "macvlan", "bridge", "ovs-bridge")  # endpoints that leave the lab
NAME_WORDS = {
    "spine": "spine",
    "leaf": "leaf",
    "tor": "leaf",
    "dpu": "dpu",
    "client": "host",
    "host": "host",
    "pc": "host",
    "server": "host",
    "srv": "host",
    "router": "router",
    "r": "router",
}


@dataclass
class Imported:
    """A containerlab lab in twin's terms."""

    source: str
    doc: dict  # the twin topology document
    configs: UserConfigs  # the FRR files its nodes bind
    notes: list[str] = field(default_factory=list)
    lines: dict = field(default_factory=dict)  # the document's places -> the lines of the file it came from


def is_clab(path: str | Path) -> bool:
    """Is `path` a containerlab topology: named so, or holding `topology: {nodes: ...}` and no twin
    `nodes:` (containerlab takes any file name with -t)? A file that cannot be read is not one
    (the reader of twin topologies then says what is wrong with it)."""
    name = Path(path).name.lower()
    if name.endswith(SUFFIXES):
        return True
    if name.endswith(OTHER_FORMATS):
        return False
    try:
        data, _ = read_yaml(path)
    except TopologyError:
        return False
    return (
        isinstance(data, dict)
        and "nodes" not in data
        and isinstance(data.get("topology"), dict)
        and "nodes" in data["topology"]
    )


def import_clab(path: str | Path, roles: dict[str, str] | None = None, name: str | None = None) -> Imported:
    """Read a containerlab topology; TopologyError names every problem (file:line)."""
    path = Path(path)
    data, lines = read_yaml(path, inputs.CONTAINERLAB)
    problems = Problems(str(path), lines)
    topo = data.get("topology") if isinstance(data, dict) else None
    if not isinstance(topo, dict) or not isinstance(topo.get("nodes"), dict) or not topo["nodes"]:
        problems.stop(("topology",), "not a containerlab topology: it needs `topology: {nodes: ...}`")
    roles = dict(roles or {})
    out = _Import(path, data, topo, problems, roles)
    doc = out.run(name)
    problems.raise_if_any()
    nodes = {("nodes", t): lines.get(("topology", "nodes", n)) for n, t in out.names.items()}
    links = {("links", j): lines.get(("topology", "links", i)) for j, i in enumerate(out.link_at)}
    return Imported(
        str(path),
        doc,
        UserConfigs(str(path), out.files, out.paths),
        out.notes,
        {k: v for k, v in [*nodes.items(), *links.items()] if v},
    )


class _Import:
    def __init__(self, path: Path, data: dict, topo: dict, problems: Problems, roles: dict[str, str]):
        self.path, self.data, self.topo, self.problems, self.roles = path, data, topo, problems, roles
        self.base = path.parent  # binds are read below it
        self.nodes: dict[str, dict] = {n: (v if isinstance(v, dict) else {}) for n, v in topo["nodes"].items()}
        self.names: dict[str, str] = {}  # containerlab name -> twin name
        self.link_at: list[int] = []  # the file's index of each link of the document
        self.files: dict[str, dict[str, str]] = {}
        self.paths: dict[str, dict[str, str]] = {}
        self.notes: list[str] = []
        self.left: dict[tuple[str, str], list[str]] = {}  # (field, why) -> nodes it is left out of
        self.kinds: dict[str, str] = {}  # containerlab name -> twin kind

    # --- containerlab's inheritance ------------------------------------------------------------
    def level(self, where: str, key: str | None) -> dict:
        if where == "defaults":
            got = self.topo.get("defaults")
        else:
            got = (self.topo.get(where) or {}).get(key) if isinstance(self.topo.get(where), dict) else None
        return got if isinstance(got, dict) else {}

    def kind_of(self, n: str) -> str:
        node, defaults = self.nodes[n], self.level("defaults", None)
        return str(
            node.get("kind")
            or self.level("groups", node.get("group")).get("kind")
            or self.level("groups", defaults.get("group")).get("kind")
            or defaults.get("kind")
            or ""
        )

    def chain(self, n: str) -> list[dict]:
        """The levels of node `n`, most specific first: node, group, kind, defaults."""
        node, kind = self.nodes[n], self.kind_of(n)
        group = node.get("group") or self.level("kinds", kind).get("group") or self.level("defaults", None).get("group")
        return [node, self.level("groups", group), self.level("kinds", kind), self.level("defaults", None)]

    def value(self, n: str, key: str) -> Any:
        return next((lvl[key] for lvl in self.chain(n) if lvl.get(key)), None)

    def merged(self, n: str, key: str) -> list[str]:
        out: list[str] = []
        for lvl in reversed(self.chain(n)):
            items = lvl.get(key) or []
            out += [str(i) for i in items if str(i) not in out] if isinstance(items, list) else []
        return out

    # --- the import ------------------------------------------------------------------------------
    def run(self, name: str | None) -> dict:
        self._names()
        kinds = self.kinds = self._kinds()
        lab = self._lab_name(name)
        nodes = {}
        for n, kind in kinds.items():
            ip = self.value(n, "mgmt-ipv4") if KINDS[kind].mgmt else None  # a router's management address
            image = self.value(n, "image")  # run where the engine has it (`twin up --images`)
            spec: dict = {
                "kind": kind,
                **({"image": str(image)} if image else {}),
                **({"exec": c} if (c := self.merged(n, "exec")) else {}),
                **({"mgmt_ipv4": str(ip)} if ip else {}),
            }
            nodes[self.names[n]] = {**spec, **self._runtime(n, kind)}
        self._notes()
        mgmt = cn.mgmt_of(self.data.get("mgmt"), any("mgmt_ipv4" in x for x in nodes.values()), self.notes)
        return {
            "name": lab,
            "description": f"imported from containerlab: {self.path}",
            **mgmt,
            "nodes": nodes,
            "links": self._links(),
        }

    def _names(self) -> None:
        taken: dict[str, str] = {}
        for n in self.nodes:
            twin = node_key(str(n))
            if why := check_node_name(twin):
                self.problems.add(("topology", "nodes", n), f"{why} (twin names nodes so; rename it in the file)")
            elif twin in taken:
                self.problems.add(
                    ("topology", "nodes", n), f"is {quoted(twin)} in twin, as {quoted(taken[twin])} is; rename one"
                )
            else:
                taken[twin] = n
                self.names[n] = twin
        renamed = [f"{listing([n])} is {t}" for n, t in self.names.items() if n != t]
        if renamed:
            self.notes.append(
                f"node names as twin writes them (lowercase): {', '.join(renamed)}; "
                "commands take your spelling too (`twin exec LAB PC1`)"
            )

    def _kinds(self) -> dict[str, str]:
        """The twin kind of every node; the ones twin cannot run are refused together, with the way out."""
        out, foreign = {}, []
        for n in self.nodes:
            kind, wanted = self.kind_of(n), self.roles.pop(n, None) or self.roles.pop(self.names.get(n, ""), None)
            if wanted is not None:
                if wanted not in KINDS:
                    self.problems.add(
                        ("topology", "nodes", n),
                        f"--role {listing([n])}={listing([wanted])}: unknown kind; kinds: {', '.join(KINDS)}",
                    )
                    continue
                out[n] = wanted
            elif kind == RUNS:
                out[n] = "router" if self._frr(n) else "host"
            else:
                foreign.append(n)
                self.problems.add(
                    ("topology", "nodes", n, "kind"),
                    f"{listing([kind]) if kind else 'no kind'}: twin cannot run it "
                    "(it runs FRR and Linux: containerlab's kind linux)",
                )
            if n in out and KINDS[out[n]].runs_frr:
                self._configs(n, out[n])
        self.problems.items += [
            Problem(
                str(self.path), f"--role {listing([r])}", f"no node named {quoted(r)}; nodes: {listing(self.nodes)}"
            )
            for r in self.roles
        ]
        if foreign:
            way = ",".join(f"{listing([n])}={_guess(n)}" for n in foreign)
            self.problems.items.append(
                Problem(
                    str(self.path),
                    "",
                    (
                        f"{len(foreign)} node(s) of kinds twin cannot run: "
                        + ", ".join(f"{listing([n])} ({listing([self.kind_of(n)])})" for n in foreign)
                        + f"; map them to twin's kinds, and twin renders their day-0 config: --role {way} "
                        f"(kinds: {', '.join(KINDS)})"
                    ),
                )
            )
        return {n: k for n, k in out.items() if n in self.names}

    def _binds(self, n: str) -> dict[str, tuple[str, str]]:
        """destination -> (source, options) of node `n`'s binds, merged over every level by destination."""
        out = {}
        for bind in self.merged(n, "binds"):
            parts = bind.split(":")
            if len(parts) >= 2:
                out[parts[1].rstrip("/") or "/"] = (parts[0], ":".join(parts[2:]))
        return out

    def _source(self, src: str, n: str) -> str | None:
        """A bind's source as a path relative to the file's directory; None (said why) for one outside it:
        twin reads what a containerlab file binds below the file's directory only, links included."""
        lab = f"clab-{self.data.get('name', '')}"
        src = src.replace("__clabNodeDir__", f"{lab}/{n}").replace("__clabDir__", lab)
        try:
            p = Path(src).expanduser()
            rel = p.relative_to(self.base.absolute()) if p.is_absolute() else p
        except (RuntimeError, ValueError):  # ~user unknown; a path outside the directory
            self.problems.add(
                ("topology", "nodes", n, "binds"),
                f"{quoted(src)} is outside the directory of the "
                f"containerlab file ({self.base}): twin reads the files a lab binds below it only; "
                "copy the file there",
            )
            return None
        return str(rel)

    def _path(self, src: str, n: str) -> Path:
        """A bind's source as the absolute path Docker mounts (any path, as containerlab takes it);
        twin reads nothing through it (`_source` for that)."""
        lab = f"clab-{self.data.get('name', '')}"
        src = src.replace("__clabNodeDir__", f"{lab}/{n}").replace("__clabDir__", lab)
        try:
            p = Path(src).expanduser()
        except RuntimeError:  # ~user unknown: the path as written, found missing
            p = Path(src)
        return (p if p.is_absolute() else self.base / p).absolute()

    def _frr(self, n: str) -> bool:
        binds = self._binds(n)
        return (
            any(d == FRR_DIR or d.startswith(FRR_DIR + "/") for d in binds)
            or "frr" in str(self.value(n, "image") or "").lower()
        )

    def _configs(self, n: str, kind: str) -> None:
        """The FRR files node `n` binds: frr.conf and daemons (or /etc/frr as a whole); else its
        startup-config as its frr.conf."""
        binds, twin = self._binds(n), self.names.get(n)
        wanted = {f"{FRR_DIR}/{f}": f for f in (FRR_CONF, DAEMONS)}
        found = {f: self._source(binds[dst][0], n) for dst, f in wanted.items() if dst in binds}
        d = self._source(binds[FRR_DIR][0], n) if FRR_DIR in binds else None
        if d is not None:
            found.update(
                {
                    f: f"{d}/{f}"
                    for f in (FRR_CONF, DAEMONS)
                    if found.get(f) is None and inputs.exists(f"{d}/{f}", self.base)
                }
            )
        startup = self.value(n, "startup-config") if self.kind_of(n) == RUNS else None  # else: a NOS's config
        if FRR_CONF not in found and isinstance(startup, str) and "\n" not in startup:
            found[FRR_CONF] = self._source(startup, n)
        elif FRR_CONF not in found and isinstance(startup, str) and twin:  # the config itself, inline
            self.files.setdefault(twin, {})[FRR_CONF] = startup
            self.paths.setdefault(twin, {})[FRR_CONF] = f"{self.path} (startup-config of {n})"
        for f, rel in found.items():
            if rel is None:
                continue
            try:
                text = inputs.read_text(rel, FORMATS[f], self.base)
            except inputs.Refused as e:
                self.problems.add(
                    ("topology", "nodes", n, "binds"),
                    f"{quoted(str(self.base / rel))}: {e.message}" + (f" (line {e.line})" if e.line else ""),
                )
                continue
            if twin:
                self.files.setdefault(twin, {})[f] = text
                self.paths.setdefault(twin, {})[f] = str(self.base / rel)
        if (found or startup) and not KINDS[kind].user_config:
            self.notes.append(
                f"{listing([n])}: its bound FRR files are the config of a {kind}: twin judges it by the "
                "topology's intent"
            )

    def _runtime(self, n: str, kind: str) -> dict:
        """Node `n`'s binds (but an FRR node's config), cmd, entrypoint and env, as twin fields."""
        out: dict[str, object] = {}
        k, binds = KINDS[kind], []
        for dst, (src, opts) in self._binds(n).items():
            p = self._path(src, n)
            if k.runs_frr and cn.is_config_target(dst):
                binds += cn.directory_binds(p, opts) if dst == FRR_DIR else []
            elif not p.exists():
                self.problems.add(
                    ("topology", "nodes", n, "binds"),
                    f"{src}:{dst}: {p} does not exist (containerlab refuses a missing source too)",
                )
            else:
                binds.append(cn.bind_text(p, dst, opts))
        if binds:
            out["binds"] = binds
        for key in ("cmd", "entrypoint"):
            value = self.value(n, key)
            if value and k.start is not None:
                self.left.setdefault(
                    (key, "an FRR node runs twin's command, which starts FRR once it is wired"), []
                ).append(n)
            elif value:
                out[key] = str(value)
        if self.value(n, "startup-config") and self.kind_of(n) != RUNS:
            self.left.setdefault(
                ("startup-config", f"a config of {self.kind_of(n)}, not FRR's: twin renders the node's day-0 config"),
                [],
            ).append(n)
        elif self.value(n, "startup-config") and not k.runs_frr:
            self.left.setdefault(
                ("startup-config", "a Linux host has none (containerlab ignores it for kind linux)"), []
            ).append(n)
        env = self._env(n)
        if env:
            out["env"] = env
        return out

    def _env(self, n: str) -> dict[str, str]:
        """env-files, then env, of every level from the defaults to the node: the most specific wins."""
        out: dict[str, str] = {}
        for lvl in reversed(self.chain(n)):
            files = lvl.get("env-files")
            for f in files if isinstance(files, list) else []:
                rel = self._source(str(f), n)
                if rel is None:
                    continue
                try:
                    values, why = cn.parse_env(inputs.read_text(rel, inputs.ENV_FILE, self.base)), ""
                except inputs.Refused as e:
                    values, why = {}, f"{quoted(str(self.base / rel))}: {e.message}"
                except ValueError as e:
                    values, why = {}, f"{quoted(str(self.base / rel))}: {e}"
                if why:
                    self.problems.add(("topology", "nodes", n, "env-files"), why)
                out.update(values)
        for lvl in reversed(self.chain(n)):
            env = lvl.get("env")
            out.update({str(k): cn.env_text(v) for k, v in env.items()} if isinstance(env, dict) else {})
        return out

    def _lab_name(self, name: str | None) -> str:
        if name is not None:
            return name
        raw = str(self.data.get("name") or "")
        lab = re.sub(r"[^a-z0-9-]+", "-", raw.lower()).strip("-")[:16].strip("-")
        if why := check_lab_name(lab):
            self.problems.add(("name",), f"{quoted(raw)} cannot be a twin lab name ({why}); give --name")
        elif lab != raw:
            self.notes.append(f"lab {quoted(raw)} is {lab!r} in twin")
        return lab

    def _links(self) -> list[dict]:
        out = []
        for i, link in enumerate(self.topo.get("links") or []):
            ends = _endpoints(link)
            at = ("topology", "links", i)
            if ends is None:
                kind = link.get("type") if isinstance(link, dict) else None
                self.problems.add(
                    at,
                    f"a link of type {quoted(kind)} leaves the lab or is not a veth pair: twin "
                    "wires veth pairs between its nodes only"
                    if kind
                    else 'not a link: expected endpoints: ["node:interface", "node:interface"]',
                )
                continue
            special = [n for n, _ in ends if n in SPECIAL or n not in self.nodes]
            if special:
                why = (
                    "the host, a management network, a macvlan or a bridge: twin wires its nodes only"
                    if special[0] in SPECIAL
                    else "no such node"
                )
                self.problems.add(at, f"endpoint {quoted(special[0])} is not a node of the lab ({why})")
                continue
            if any(n not in self.names for n, _ in ends):
                continue
            doc: dict = {"endpoints": [f"{self.names[n]}:{port}" for n, port in ends]}
            self.link_at.append(i)
            if isinstance(link, dict) and isinstance(link.get("mtu"), int):
                doc["mtu"] = link["mtu"]
            out.append(doc)
        return out

    def _notes(self) -> None:
        self.notes += cn.mgmt_notes(
            [n for n in self.names if self.value(n, "mgmt-ipv6")],
            [n for n, k in self.kinds.items() if self.value(n, "mgmt-ipv4") and not KINDS[k].mgmt],
        )
        for n in self.names:
            for key in sorted({k for lvl in self.chain(n) for k in lvl} - cn.CARRIED):
                self.left.setdefault((key, cn.left_out_reason(key)), []).append(n)
        self.notes += [f"{key} of {listing(ns)} is left out: {why}" for (key, why), ns in self.left.items()]


def _endpoints(link: object) -> list[tuple[str, str]] | None:
    """[(node, interface), (node, interface)] of a veth link, short or extended; None otherwise."""
    if not isinstance(link, dict) or link.get("type") not in (None, "veth"):
        return None
    eps = link.get("endpoints")
    if not isinstance(eps, list) or len(eps) != 2:
        return None
    out: list[tuple[str, str]] = []
    for ep in eps:
        if isinstance(ep, str) and len(parts := ep.split(":", 1)) == 2:  # NODE:INTERFACE
            out.append((parts[0], parts[1]))
        elif isinstance(ep, dict) and ep.get("node") and ep.get("interface"):
            out.append((str(ep["node"]), str(ep["interface"])))
        else:
            return None
    return out


def _guess(node: str) -> str:
    """A suggestion for --role, from the leading word of a node's name; never applied by itself."""
    word = m.group() if (m := re.match(r"[a-z]*", node.lower())) else ""
    return NAME_WORDS.get(word, "KIND")
