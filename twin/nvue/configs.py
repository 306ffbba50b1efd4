"""NVUE files among a lab's configs: `DIR/<node>/startup.yaml` for spines, leafs and DPUs,
beside the frr.conf form (`twin.config.userconf` reads both; this module reads the NVUE
ones and makes each node's files and kernel plane from them).

A node runs NVUE when its lab directory holds `startup.yaml` (as NVUE normalised it:
one `- header:` and one `- set:` document): `running` reads the planes of a running lab
back from there, for day 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from twin import kinds
from twin.base.errors import Problem, TopologyError, TwinError
from twin.config import render, safetext, userconf
from twin.config.backend import DEFAULT_BACKEND, NETNS
from twin.config.overlay import DEFAULT_SHAPING, Backend, Shaping, script_of
from twin.config.userconf import NVUE, UserConfigs
from twin.kinds import MGMT_PORT
from twin.nvue import frr, kernelplane, load
from twin.nvue import mtu as nvue_mtu
from twin.nvue import plane as planes_
from twin.nvue.load import NvueFile, dump
from twin.nvue.model import MGMT
from twin.nvue.plane import PER_VNI, Plane
from twin.nvue.tree import show
from twin.runtime import OSPFD_INTERFACES
from twin.topology.model import Fabric

STARTUP = NVUE


@dataclass
class NvueNode:
    """One node's NVUE file and what it runs."""

    file: NvueFile
    plane: Plane
    files: dict[str, str]


def read(configs: UserConfigs | None) -> dict[str, NvueFile]:
    """Every node's startup.yaml of a config directory, read and checked on its own (no topology);
    TopologyError with every problem of every file."""
    out, problems = _read(configs)
    if problems:
        raise TopologyError(problems)
    return out


def _read(configs: UserConfigs | None) -> tuple[dict[str, NvueFile], list[Problem]]:
    out: dict[str, NvueFile] = {}
    problems: list[Problem] = []
    if configs is None:
        return out, problems
    for node, files in configs.files.items():
        if NVUE not in files:
            continue
        try:
            out[node] = load.read(configs.path(node, NVUE), files[NVUE])  # as read below its directory
        except TopologyError as e:
            problems += e.problems
    return out, problems


def build(
    nfs: dict[str, NvueFile],
    fabric: Fabric,
    backend: Backend,
    shaping: Shaping = DEFAULT_SHAPING,
    layout: str = PER_VNI,
    bonds: bool = False,
    red: bool = False,
) -> tuple[dict[str, NvueNode], list[str]]:
    """Each NVUE node's plane and files on `fabric` (`bonds`: the lab makes Linux bonds,
    `twin.nvue.bonds`); TopologyError with every problem of every node at once. Returns the
    nodes and the notes (what twin left out or adapted)."""
    out: dict[str, NvueNode] = {}
    problems: list[Problem] = []
    notes: list[str] = []
    for node, nf in sorted(nfs.items()):
        try:
            p = planes_.build(nf, fabric, node, backend, shaping, bonds, red=red)
            if layout != PER_VNI:
                from twin.nvue import vlanaware

                vlanaware.apply(p, backend)
            out[node] = NvueNode(nf, p, files_of(p, nf, backend, shaping))
        except TopologyError as e:
            problems += e.problems
            continue
        except safetext.UnsafeText as e:
            problems.append(_refusal(e, nf, fabric, node))
            continue
        notes += p.notes + [f"{nf.source}: {show(path)}: stored, not emulated" for path in nf.not_emulated]
    if problems:
        raise TopologyError(problems)
    return out, notes


def _refusal(e: safetext.UnsafeText, nf: NvueFile, fabric: Fabric, node: str) -> Problem:
    """A value a renderer refused, at its place in the NVUE file (with its line), else in the topology."""
    found = safetext.places(nf.tree)
    if found:
        return nf.problem(tuple(str(k) for k in found[0][0]), safetext.message(e, node))
    return safetext.refusal(e, node, fabric.source, fabric.model_dump(mode="json"))


def blank(fabric: Fabric, configs: UserConfigs | None = None) -> dict[str, NvueFile]:
    """What the topology's blank NVUE nodes run (`nvue: blank`; not those `configs` gives files of),
    as switches after zero-touch provisioning: their host name alone (the management network's eth0
    and NVUE itself are theirs at `twin up`); the user's automation configures the rest."""

    def tree(n: str) -> dict:
        mgmt = {"interface": {MGMT_PORT: {"type": "eth", "ip": {"address": {"dhcp": {}}, "vrf": MGMT}}}}
        return {"system": {"hostname": n}, **(mgmt if fabric.mgmt and fabric.nodes[n].mgmt else {})}

    return {
        n: load.from_tree(tree(n), f"{n}/{STARTUP} (blank: the topology's nvue: blank)")
        for n, node in fabric.nodes.items()
        if node.nvue == "blank" and n not in (configs.files if configs else {})
    }


def check_files(configs: UserConfigs | None, fabric: Fabric) -> list[Problem]:
    """Every problem of the config directory's NVUE files on this topology (none: they run)."""
    nfs, problems = _read(configs)
    try:
        build(nfs, fabric, DEFAULT_BACKEND)
    except TopologyError as e:
        problems += e.problems
    return problems


def files_of(p: Plane, nf: NvueFile, backend: Backend, shaping: Shaping) -> dict[str, str]:
    """What an NVUE node runs: frr.conf rendered from NVUE and ospfd's interface settings, twin's daemons and
    vtysh.conf (zebra's VRF backend as the node's VRFs need), interfaces.sh of its plane, its nftables rules,
    and the startup.yaml itself."""
    node = p.fabric.nodes[p.node]
    files = render.render_node(node, p.fabric, backend, shaping)
    kernel = nvue_mtu.kernel_name(p, backend)
    files["frr.conf"] = frr.render(p.conf, p.node, p.devices, p.vrfs, kernel)
    # an interface's OSPF settings: ospfd's alone (FRR 10.3's zebra -n aborts on an interface block); the file
    # is there, empty too, so a reload takes away what ospfd runs and the file no longer has
    files[OSPFD_INTERFACES] = frr.ospfd_interfaces(p.conf, p.node, p.vrfs, kernel)
    # as on a switch, whatever it holds yet: staticd for its static routes, bfdd for its BFD, ospfd for its
    # OSPF, and (netns backend) zebra -n, so a VRF NVUE declares later (a tenant's, a plain one) is adopted,
    # and BFD or OSPF set later (`nv config apply`) is a reload, never a restart of FRR (which loses zebra's
    # VRF bindings; Cumulus restarts FRR when OSPF is enabled)
    files["daemons"] = render.daemons_file(
        node, list(kinds.of(node).daemons) + ["staticd", "bfdd", "ospfd"], p.fabric, netns=backend == NETNS
    )
    what = (
        f"EVPN overlay on this VTEP as its NVUE declares it ({p.layout} layout, VRF backend: {backend})"
        if p.fabric.tenants_on(p.node)
        else "node as its NVUE declares it"
    )
    files["interfaces.sh"] = script_of(p.node, p.fabric.name, what, p.steps, p.bindings)
    files[STARTUP] = dump(nf.tree, nf.header)
    files.update(p.kfiles)  # its ACLs' nftables and its QoS's tc batches (twin.nvue.acl, twin.nvue.qos)
    return files


def runs_nvue(d: Path, node: str) -> bool:
    """Does `node` of the lab in directory `d` run NVUE (its directory holds its startup.yaml)?"""
    f = d / node / STARTUP
    return f.is_file() and not f.is_symlink()


def not_emulated(d: Path, nodes: Iterable[str]) -> dict[str, list[str]]:
    """Per node running NVUE, the places of its startup.yaml twin keeps but does not run."""
    out: dict[str, list[str]] = {}
    for node in nodes:
        f = d / node / STARTUP
        if f.is_file() and not f.is_symlink():
            paths = [show(p) for p in load.read(f"{node}/{STARTUP}", under=d).not_emulated]
            if paths:
                out[node] = paths
    return out


def running(
    d: Path, fabric: Fabric, backend: Backend, shaping: Shaping = DEFAULT_SHAPING, nodes: Iterable[str] | None = None
) -> dict[str, NvueNode]:
    """The NVUE nodes of a running lab (of `nodes`), from the startup.yaml in each node's directory,
    on the kernel plane the lab chose at `twin up` (`kernelplane.recorded`)."""
    nfs = {}
    for node in fabric.nodes if nodes is None else [n for n in nodes if n in fabric.nodes]:
        f = d / node / STARTUP
        if f.is_file() and not f.is_symlink():
            nfs[node] = load.read(f"{node}/{STARTUP}", under=d)  # a node's directory: no link out
    k = kernelplane.recorded(d)
    try:
        return build(nfs, fabric, backend, shaping, k.layout, k.bonds, k.red)[0]
    except TopologyError as e:
        raise TwinError(
            f"lab {d.name!r}: the NVUE files it runs no longer fit its topology:\n  "
            + "\n  ".join(str(p) for p in e.problems)
        ) from None


def frr_view(configs: UserConfigs, fabric: Fabric) -> UserConfigs:
    """The configs as FRR will read them: the user's frr.conf files, and the frr.conf NVUE renders
    for each startup.yaml (FRR checks twin's rendering of them too, before anything is made)."""
    files = {n: dict(f) for n, f in configs.files.items() if userconf.FRR_CONF in f or userconf.DAEMONS in f}
    paths = {n: dict(p) for n, p in configs.paths.items()}
    nodes, _ = build(read(configs), fabric, DEFAULT_BACKEND)
    for n, x in nodes.items():
        files[n] = {userconf.FRR_CONF: x.files[userconf.FRR_CONF] + x.files[OSPFD_INTERFACES]}  # FRR reads both
        paths.setdefault(n, {})[userconf.FRR_CONF] = f"{x.file.source} (the frr.conf NVUE renders)"
    return UserConfigs(configs.source, files, paths)
