"""The user's own FRR configs: a directory of per-node files, read, checked against a
fabric and merged over twin's rendering.

    DIR/<node>/frr.conf    the node's frr.conf (and, optionally, DIR/<node>/daemons)
    DIR/<node>.conf        the node's frr.conf alone
    DIR/<node>/startup.yaml  the node's NVUE configuration (spines, leafs, DPUs: read and rendered
                           by `twin.interop.nvue`, which gives the node its frr.conf and kernel plane)

A node with a file boots it instead of twin's; every other node gets twin's
rendering. The topology still gives the wiring and the tenants' kernel plane
(VRFs, VXLAN, bridges), as ifupdown2 does beside FRR on a switch or a DPU, so
the one thing twin may change in a user's file is what that kernel plane needs
of zebra (its VRF backend), and it says so (`merge` returns the notes).

`twin up --configs DIR` and `twin apply LAB DIR` read directories the same way
(`read_dir`); FRR's own check of the files is `twin.runtime.dryrun`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from twin import kinds
from twin.config import overlay, render
from twin.config.backend import NETNS
from twin.errors import Problem, TopologyError
from twin.intent import frrconf, generic
from twin.topology.model import Fabric

FRR_CONF, DAEMONS, NVUE = "frr.conf", "daemons", "startup.yaml"
FILES = (FRR_CONF, DAEMONS, NVUE)
MAX_BYTES = 1 << 20          # a config file of more than 1 MiB is not one
_ZEBRA_OPTIONS = re.compile(r'^(zebra_options=")([^"]*)(")', re.M)
_NETNS_FLAG = re.compile(r"(^|\s)(-n|--vrfwnetns)(?=\s|$)")


@dataclass(frozen=True)
class UserConfigs:
    """Per node, the files the user gives (frr.conf, daemons) and where each came from."""

    source: str
    files: dict[str, dict[str, str]] = field(default_factory=dict)    # node -> file name -> text
    paths: dict[str, dict[str, str]] = field(default_factory=dict)    # node -> file name -> path

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
    (or a node given twice). Which nodes exist is `check`'s business."""
    d = Path(d)
    if not d.is_dir():
        raise TopologyError([Problem(str(d), "", "not a directory: a config directory holds <node>/frr.conf "
                                                 "(optionally <node>/daemons) or <node>.conf per node")])
    files: dict[str, dict[str, str]] = {}
    paths: dict[str, dict[str, str]] = {}
    problems: list[Problem] = []
    for entry in sorted(d.iterdir()):
        found = ([(entry.name, n, entry / n) for n in FILES if (entry / n).is_file()] if entry.is_dir()
                 else [(entry.stem, FRR_CONF, entry)] if entry.is_file() and entry.suffix == ".conf" else [])
        for node, name, f in found:
            if name in files.get(node, {}):
                problems.append(Problem(str(f), "", f"{node}'s {name} is given twice: here and in "
                                                    f"{paths[node][name]}; keep one"))
                continue
            text, why = read_text_file(f)
            if why:
                problems.append(Problem(str(f), "", why))
                continue
            files.setdefault(node, {})[name] = text
            paths.setdefault(node, {})[name] = str(f)
    if problems:
        raise TopologyError(problems)
    return UserConfigs(str(d), files, paths)


def read_text_file(f: Path) -> tuple[str, str]:
    """(text, "") of a config file, or ("", why not): at most 1 MiB of UTF-8 text, no NUL."""
    try:
        raw = f.read_bytes()
    except OSError as e:
        return "", f"cannot read it: {e.strerror}"
    if len(raw) > MAX_BYTES:
        return "", f"{len(raw)} bytes: a config file is at most {MAX_BYTES} bytes"
    if b"\0" in raw:
        return "", "holds NUL bytes: not a text file"
    try:
        return raw.decode("utf-8"), ""
    except UnicodeDecodeError as e:
        return "", f"not UTF-8 text (byte {e.start})"


def check(configs: UserConfigs, fabric: Fabric) -> list[Problem]:
    """Files for nodes the fabric does not have, or that run no FRR."""
    frr_nodes = sorted(n for n, node in fabric.nodes.items() if kinds.of(node).runs_frr)
    problems = []
    for node, files in configs.files.items():
        where = configs.path(node, next(iter(files)))
        if node not in fabric.nodes:
            problems.append(Problem(where, "", f"no FRR node {node!r} in lab {fabric.name!r}; FRR nodes: "
                                               f"{', '.join(frr_nodes)}"))
        elif node not in frr_nodes:
            problems.append(Problem(where, "", f"{node} is a {fabric.nodes[node].kind}: it runs no FRR, so it "
                                               f"takes no FRR config; FRR nodes: {', '.join(frr_nodes)}"))
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
        return [Problem(where, "", f"{node} has NVUE's startup.yaml and {' and '.join(other)} "
                                   f"({configs.path(node, other[0])}): NVUE renders the node's FRR files; give one")]
    return []


def load(d: str | Path, fabric: Fabric) -> UserConfigs:
    """`read_dir` + `check`: TopologyError with every problem."""
    configs = read_dir(d)
    problems = check(configs, fabric)
    if problems:
        raise TopologyError(problems)
    return configs


def merge(rendered: dict[str, dict[str, str]], configs: UserConfigs | None,
          fabric: Fabric, backend: str) -> tuple[dict[str, dict[str, str]], list[str]]:
    """twin's rendering with the user's files over it, and notes of what twin adapted."""
    out = {n: dict(f) for n, f in rendered.items()}
    notes: list[str] = []
    for node, files in (configs.files.items() if configs else ()):
        out.setdefault(node, {}).update(files)
        if kinds.of(fabric.nodes[node]).user_config and FRR_CONF in files and DAEMONS not in files:
            need = generic.daemons_for(frrconf.parse(files[FRR_CONF]))
            out[node][DAEMONS] = render.daemons_file(fabric.nodes[node], need)
            notes.append(f"{configs.path(node, FRR_CONF)}: no daemons file beside it; twin's enables what it "
                         f"configures: {', '.join(['zebra', *need])}")
        lo = overlay.loopback_steps(fabric, node, backend, files.get(FRR_CONF, ""))
        if lo and FRR_CONF in files:
            out[node]["interfaces.sh"] = overlay.script(fabric, node, backend, first=lo)
            notes.append(f"{configs.path(node, FRR_CONF)}: puts no {lo[0].args['cidr']} on lo; twin's kernel plane "
                         "does (the topology's loopback), as ifupdown2 would on a switch")
        if DAEMONS in files and fabric.tenants_on(node):
            out[node][DAEMONS], note = adapt_daemons(files[DAEMONS], backend == NETNS)
            notes += [f"{configs.path(node, DAEMONS)}: {note}"] if note else []
    return out, notes


def adapt_daemons(text: str, netns_vrfs: bool) -> tuple[str, str]:
    """A VTEP's daemons file with zebra's VRF backend as its kernel plane needs it: `-n`
    (FRR's netns VRF backend) on the netns backend, none on the device backend.
    Returns the text and a note of what changed ("" when nothing did)."""
    m = _ZEBRA_OPTIONS.search(text)
    has = bool(m and _NETNS_FLAG.search(m.group(2)))
    if has == netns_vrfs:
        return text, ""
    if netns_vrfs:
        why = ("zebra_options gets -n: the lab's tenant VRFs are network namespaces (twin's netns VRF "
               "backend, FRR's netns VRF backend)")
        if m is None:
            return text.rstrip("\n") + '\nzebra_options="  -A 127.0.0.1 -s 90000000 -n"\n', why
        return text[:m.end(2)] + " -n" + text[m.end(2):], why
    opts = _NETNS_FLAG.sub(" ", m.group(2))
    return (text[:m.start(2)] + opts + text[m.end(2):],
            "zebra_options loses -n: the lab's tenant VRFs are Linux VRF devices (the device VRF backend), "
            "not namespaces")
