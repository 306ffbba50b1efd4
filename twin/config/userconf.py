"""The user's own FRR configs: a directory of per-node files, read, checked against a
fabric and merged over twin's rendering.

    DIR/<node>/frr.conf    the node's frr.conf (and, optionally, DIR/<node>/daemons)
    DIR/<node>.conf        the node's frr.conf alone
    DIR/<node>/startup.yaml  the node's NVUE configuration (spines, leafs, DPUs: read and rendered
                           by `twin.nvue`, which gives the node its frr.conf and kernel plane)

A node with a file boots it instead of twin's; every other node gets twin's
rendering. The topology still gives the wiring and the tenants' kernel plane
(VRFs, VXLAN, bridges), as ifupdown2 does beside FRR on a switch or a DPU, so
the one thing twin may change in a user's file is what that kernel plane needs
of zebra (its VRF backend), and it says so (`merge` returns the notes).

`twin up --configs DIR` and `twin apply LAB DIR` read directories the same way
(`read_dir`; `twin lint` single files too, `read_file`); FRR's own check of the files is
`twin.runtime.dryrun`, twin's own of what they declare against the topology's intent `lint`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from twin import kinds
from twin.base.errors import Problem, TopologyError
from twin.config import overlay, render
from twin.config.backend import NETNS, Backend
from twin.intent import frrconf, generic
from twin.lint import Report as LintReport
from twin.lint import lint as lint_files
from twin.topology import files as inputs
from twin.topology.model import Fabric

FRR_CONF, DAEMONS, NVUE = "frr.conf", "daemons", "startup.yaml"
FILES = (FRR_CONF, DAEMONS, NVUE)
FORMATS = {FRR_CONF: inputs.FRR_CONFIG, DAEMONS: inputs.DAEMONS, NVUE: inputs.NVUE}  # their limits (UTF-8 text)
_ZEBRA_OPTIONS = re.compile(r'^(zebra_options=")([^"]*)(")', re.M)
_NETNS_FLAG = re.compile(r"(^|\s)(-n|--vrfwnetns)(?=\s|$)")


@dataclass(frozen=True)
class UserConfigs:
    """Per node, the files the user gives (frr.conf, daemons) and where each came from."""

    source: str
    files: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> file name -> text
    paths: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> file name -> path

    def path(self, node: str, name: str) -> str:
        return self.paths.get(node, {}).get(name, f"{self.source}/{node}/{name}")

    def under(self, other: "UserConfigs") -> "UserConfigs":
        """These files with `other`'s over them, file by file (`twin up LAB.clab.yml --configs DIR`)."""
        files = {n: dict(f) for n, f in self.files.items()}
        paths = {n: dict(p) for n, p in self.paths.items()}
        for n, f in other.files.items():
            files.setdefault(n, {}).update(f)
            paths.setdefault(n, {}).update({k: other.path(n, k) for k in f})
        return UserConfigs(f"{self.source} and {other.source}", files, paths)

    def owned(self) -> dict[str, list[str]]:
        """node -> the file names the user owns (what `twin apply` of a topology leaves alone)."""
        return {n: sorted(f) for n, f in sorted(self.files.items())}


def read_dir(d: str | Path) -> UserConfigs:
    """Every node's files in directory `d`; TopologyError names every file that cannot be read
    (or a node given twice). Which nodes exist is `check`'s business. Files are read below `d`
    only (twin.topology.files): a link that leads out of it is refused, not followed."""
    d = Path(d)
    if not d.is_dir():
        raise TopologyError(
            [
                Problem(
                    str(d),
                    "",
                    "not a directory: a config directory holds <node>/frr.conf "
                    "(optionally <node>/daemons) or <node>.conf per node",
                )
            ]
        )
    files: dict[str, dict[str, str]] = {}
    paths: dict[str, dict[str, str]] = {}
    problems: list[Problem] = []
    for node, name, rel in _candidates(d):
        f = str(d / rel)
        if name in files.get(node, {}):
            problems.append(
                Problem(f, "", f"{node}'s {name} is given twice: here and in {paths[node][name]}; keep one")
            )
            continue
        try:
            text = inputs.read_text(rel, FORMATS[name], d)
        except inputs.Refused as e:
            problems.append(e.problem(f))
            continue
        files.setdefault(node, {})[name] = text
        paths.setdefault(node, {})[name] = f
    if problems:
        raise TopologyError(problems)
    return UserConfigs(str(d), files, paths)


def read_file(f: str | Path) -> UserConfigs:
    """One node's file, named as a config directory names it (DIR/<node>/frr.conf, daemons or
    startup.yaml, or DIR/<node>.conf): what `twin lint FILE` reads (a pre-commit hook gives files)."""
    f = Path(f)
    if f.name in FILES and f.parent.name not in ("", ".", ".."):
        node, name, d, rel = f.parent.name, f.name, f.parent.parent, f"{f.parent.name}/{f.name}"
    elif f.suffix == ".conf" and f.name != FRR_CONF:
        node, name, d, rel = f.stem, FRR_CONF, f.parent, f.name
    else:
        raise TopologyError(
            [
                Problem(
                    str(f),
                    "",
                    "not a node's config file: <node>/frr.conf, <node>/daemons, "
                    "<node>/startup.yaml or <node>.conf (the node is named by it)",
                )
            ]
        )
    try:
        text = inputs.read_text(rel, FORMATS[name], d)
    except inputs.Refused as e:
        raise TopologyError([e.problem(str(f))]) from None
    return UserConfigs(str(f), {node: {name: text}}, {node: {name: str(f)}})


def read_paths(paths: Sequence[str | Path]) -> UserConfigs:
    """Config directories and single files together (a later one's file over an earlier one's);
    TopologyError with every problem of every one."""
    out: UserConfigs | None = None
    problems: list[Problem] = []
    for p in paths:
        try:
            got = read_dir(p) if Path(p).is_dir() else read_file(p)
        except TopologyError as e:
            problems += e.problems
            continue
        out = got if out is None else out.under(got)
    if problems:
        raise TopologyError(problems)
    return out or UserConfigs("no files")


def lint(configs: UserConfigs, fabric: Fabric) -> LintReport:
    """`twin lint` of the configs on this fabric: `check`'s problems, then what each dialect's reader
    makes of the files (a reader registers with twin.lint) compared with the fabric's intent."""
    report = lint_files(fabric, configs.files, configs.paths)
    report.problems[:0] = check(configs, fabric)
    return report


def _candidates(d: Path) -> list[tuple[str, str, str]]:
    """(node, file name, path relative to d) of the files a config directory gives."""
    out = []
    for entry, is_dir in inputs.entries(d):
        if is_dir:
            out += [(entry, n, f"{entry}/{n}") for n in FILES if inputs.exists(f"{entry}/{n}", d)]
        elif Path(entry).suffix == ".conf":
            out.append((Path(entry).stem, FRR_CONF, entry))
    return out


def check(configs: UserConfigs, fabric: Fabric) -> list[Problem]:
    """Files for nodes the fabric does not have, or that run no FRR."""
    frr_nodes = sorted(n for n, node in fabric.nodes.items() if kinds.of(node).runs_frr)
    problems = []
    for node, files in configs.files.items():
        where = configs.path(node, next(iter(files)))
        if node not in fabric.nodes:
            problems.append(
                Problem(where, "", f"no FRR node {node!r} in lab {fabric.name!r}; FRR nodes: {', '.join(frr_nodes)}")
            )
        elif node not in frr_nodes:
            problems.append(
                Problem(
                    where,
                    "",
                    f"{node} is a {fabric.nodes[node].kind}: it runs no FRR, so it "
                    f"takes no FRR config; FRR nodes: {', '.join(frr_nodes)}",
                )
            )
        elif NVUE in files:
            problems += _nvue_node(configs, fabric, node, files)
    return problems


def _nvue_node(configs: UserConfigs, fabric: Fabric, node: str, files: dict[str, str]) -> list[Problem]:
    """NVUE runs on the fabric's switches and DPUs, and renders the node's FRR files itself."""
    where = configs.path(node, NVUE)
    kind = kinds.of(fabric.nodes[node])
    if kind.user_config or kind.edge:
        return [Problem(where, "", f"{node} is a {fabric.nodes[node].kind}: NVUE runs on spines, leafs and DPUs")]
    other = [n for n in (FRR_CONF, DAEMONS) if n in files]
    if other:
        return [
            Problem(
                where,
                "",
                f"{node} has NVUE's startup.yaml and {' and '.join(other)} "
                f"({configs.path(node, other[0])}): NVUE renders the node's FRR files; give one",
            )
        ]
    return []


def load(d: str | Path, fabric: Fabric) -> UserConfigs:
    """`read_dir` + `check`: TopologyError with every problem."""
    configs = read_dir(d)
    problems = check(configs, fabric)
    if problems:
        raise TopologyError(problems)
    return configs


def merge(
    rendered: dict[str, dict[str, str]], configs: UserConfigs | None, fabric: Fabric, backend: Backend
) -> tuple[dict[str, dict[str, str]], list[str]]:
    """twin's rendering with the user's files over it, and notes of what twin adapted."""
    out = {n: dict(f) for n, f in rendered.items()}
    notes: list[str] = []
    if configs is None:
        return out, notes
    for node, files in configs.files.items():
        out.setdefault(node, {}).update(files)
        if kinds.of(fabric.nodes[node]).user_config and FRR_CONF in files and DAEMONS not in files:
            need = generic.daemons_for(frrconf.parse(files[FRR_CONF]))
            out[node][DAEMONS] = render.daemons_file(fabric.nodes[node], need)
            notes.append(
                f"{configs.path(node, FRR_CONF)}: no daemons file beside it; twin's enables what it "
                f"configures: {', '.join(['zebra', *need])}"
            )
        lo = overlay.loopback_steps(fabric, node, backend, files.get(FRR_CONF, ""))
        if lo and FRR_CONF in files:
            out[node]["interfaces.sh"] = overlay.script(fabric, node, backend, first=lo)
            notes.append(
                f"{configs.path(node, FRR_CONF)}: puts no {lo[0].args['cidr']} on lo; twin's kernel plane "
                "does (the topology's loopback), as ifupdown2 would on a switch"
            )
        if DAEMONS in files:
            out[node][DAEMONS], note = node_daemons(files[DAEMONS], fabric, node, backend)
            notes += [f"{configs.path(node, DAEMONS)}: {note}"] if note else []
    return out, notes


_FORWARDING = {"ip": "net.ipv4.ip_forward", "ipv6": "net.ipv6.conf.all.forwarding"}


def forwarding_sysctls(frr_conf: str) -> dict[str, str]:
    """The forwarding sysctls a config's `[no] ip forwarding` / `[no] ipv6 forwarding` asks for: zebra
    cannot write them in a container (its /proc/sys is read-only), so the container gets them."""
    out = {}
    for line in frr_conf.splitlines():
        w = line.split()
        if w[:1] == ["no"] and w[2:3] == ["forwarding"] and w[1] in _FORWARDING and len(w) == 3:
            out[_FORWARDING[w[1]]] = "0"
        elif w[1:2] == ["forwarding"] and w[0] in _FORWARDING and len(w) == 2:
            out[_FORWARDING[w[0]]] = "1"
    return out


def node_daemons(text: str, fabric: Fabric, node: str, backend: Backend) -> tuple[str, str]:
    """A user's daemons file as `node` runs it (`twin up --configs`, `twin apply LAB DIR`): a VTEP's with
    zebra's VRF backend adapted (`adapt_daemons`), any other node's as written; and a note of what changed."""
    return adapt_daemons(text, backend == NETNS) if fabric.tenants_on(node) else (text, "")


def adapt_daemons(text: str, netns_vrfs: bool) -> tuple[str, str]:
    """A VTEP's daemons file with zebra's VRF backend as its kernel plane needs it: `-n`
    (FRR's netns VRF backend) on the netns backend, none on the device backend.
    Returns the text and a note of what changed ("" when nothing did)."""
    m = _ZEBRA_OPTIONS.search(text)
    has = bool(m and _NETNS_FLAG.search(m.group(2)))
    if has == netns_vrfs:
        return text, ""
    if netns_vrfs:
        why = (
            "zebra_options gets -n: the lab's tenant VRFs are network namespaces (twin's netns VRF "
            "backend, FRR's netns VRF backend)"
        )
        if m is None:
            return text.rstrip("\n") + '\nzebra_options="  -A 127.0.0.1 -s 90000000 -n"\n', why
        return text[: m.end(2)] + " -n" + text[m.end(2) :], why
    assert m is not None  # (has: the options carry -n)
    opts = _NETNS_FLAG.sub(" ", m.group(2))
    return (
        text[: m.start(2)] + opts + text[m.end(2) :],
        "zebra_options loses -n: the lab's tenant VRFs are Linux VRF devices (the device VRF backend), not namespaces",
    )
