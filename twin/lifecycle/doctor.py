"""`twin doctor`: what this machine gives twin, and what each lack changes, before a lab is made.

One report from facts read at run time (each source a function of `Sources`, so the answers are
unit-tested with the facts faked): root, the Docker engine and its version, the kernel features
probed in a throwaway namespace (`twin.runtime.features`), the VRF backend and the rate-limit
mechanism a lab gets and why (`twin.config.backend.wanted`, `twin.runtime.kernel.probe_shaping`),
the host limits and CPU against what a lab needs (`hostlimits.check`, `admission.estimate`), the
node images and their FRR, and what killed labs left behind. What twin NEEDS (root, Docker, bridges,
veth pairs, VXLAN) missing is a failure with the fix; the rest is what twin does instead.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Callable

from twin.base import version
from twin.config.backend import DEVICE, NAMES, NO_VRF_DEVICES, wanted
from twin.config.droplog import LOG_GROUP
from twin.lifecycle import admission, hostlimits, state
from twin.runtime import (
    FEATURES,
    EngineFacts,
    HostImage,
    Leftovers,
    engine_facts,
    host_leftovers,
    node_images,
    probe_features,
    probe_shaping,
)
from twin.topology import samples
from twin.topology.model import Fabric

DEFAULT_TOPOLOGY = samples.path()  # the default lab, what `make twin-up` runs (package data)
NEEDED = ("bridge", "veth", "vxlan")
# feature -> what its lack changes (read from the code that uses it)
LACKING: dict[str, str] = {
    "bridge": "twin cannot make a VTEP's segments (each VNI is a bridge) nor wire a lab",
    "veth": "twin cannot make a single link (every link is a veth pair)",
    "vxlan": "twin cannot make the EVPN-VXLAN overlay",
    "vrf": (
        "tenants run on the netns VRF backend (the default anyway); `vrf_backend: device` or `twin up "
        "--vrf-backend device` is refused; a node's `exec` that adds a VRF device fails (reported, the lab "
        "goes on) and a frr.conf VRF that is no tenant stays inactive"
    ),
    "dummy": (
        "nothing of twin's (it makes none); a node's `exec` that adds a dummy interface fails: put the "
        "address on lo or on a bridge without ports"
    ),
    "vlan": (
        "NVUE nodes keep the per-VNI layout even with TWIN_NVUE_LAYOUT=vlan-aware; a node's `exec` that "
        "adds a VLAN interface fails"
    ),
    "bond": (
        "NVUE's bonds (`interface.<bond>` of type bond) are stored with the notice even with "
        "TWIN_NVUE_BONDS=on, never made as Linux bonds; a node's `exec` that adds a bond fails"
    ),
    "netem": (
        "`twin fault link-loss` drops at random with nftables on one end (counted, logged) instead of tc "
        "netem on both ends; twin has no delay fault"
    ),
    "red": (
        "nothing of twin's: congestion points mark ECN with nftables (congestion.nft), not RED; only your "
        "own `exec` commands that use RED fail"
    ),
    "fq_codel": "nothing of twin's (it puts no fq_codel); only your own `exec` commands that use it fail",
    "matchall": (
        "nothing of twin's (its shaping redirects with u32 filters); only your own tc commands that use matchall fail"
    ),
    "nft_nat": (
        "a tenant's internet gateway cannot load its NAT rules (gateway-<vrf>.nft): a lab with an "
        "`internet` tenant fails at `up`"
    ),
    "nft_log": (
        f"twin's drop rules (zero-trust host ports, the nftables loss fault) log with `log group "
        f"{LOG_GROUP}`: their rulesets cannot load"
    ),
    "drop_monitor": "the kernel's own drops are not events (twin reads its own rules' drops either way)",
}
FIX = {
    "root": "run it as root (`sudo .venv/bin/twin ...`): twin makes namespaces, links and containers",
    "docker": f"`make twin-up` (or `sudo {hostlimits.SETUP}`) installs and starts Docker; or start dockerd",
    "bridge": "`modprobe bridge`, or a kernel with CONFIG_BRIDGE",
    "veth": "`modprobe veth`, or a kernel with CONFIG_VETH",
    "vxlan": "`modprobe vxlan`, or a kernel with CONFIG_VXLAN",
}
SHAPING_MEANS = {
    "tc": "workload rates are shaped with tc (TBF; IFB + TBF on what a host sends)",
    "nft": (
        "workload bit rates are policed with nftables `limit` (dropped above the rate, not queued): this "
        "kernel lacks part of TBF, IFB, ingress or u32 + mirred"
    ),
}


@dataclass(frozen=True)
class Sources:
    """Where each fact comes from (the real host by default; tests give their own)."""

    root: Callable[[], bool] = lambda: os.geteuid() == 0
    engine: Callable[[], EngineFacts] = engine_facts
    features: Callable[[], dict[str, bool | None]] = probe_features
    shaping: Callable[[], str] = lambda: probe_shaping("doctor")
    settings: Callable[[], dict[str, int]] = hostlimits.host_settings
    usage: Callable[[], hostlimits.Usage] = hostlimits.host_usage
    cpu: Callable[[], admission.Host] = lambda: admission.CpuWatch().host()
    images: Callable[[], list[HostImage]] = node_images
    leftovers: Callable[[], Leftovers] = lambda: host_leftovers(set(state.known_labs()))


@dataclass(frozen=True)
class Feature:
    key: str
    what: str
    present: bool | None
    needed: bool
    means: str  # what its lack changes ("" when present)


@dataclass(frozen=True)
class LabFit:
    """What one lab gets on this host."""

    lab: str
    source: str
    backend: str
    backend_why: str
    shortfalls: list[str]
    fix: str
    cpu: str
    fits: bool


@dataclass
class Report:
    root: bool
    engine: EngineFacts
    features: list[Feature]
    shaping: str
    shaping_means: str
    labs: list[LabFit]
    images: list[HostImage]
    leftovers: Leftovers
    problems: list[str] = field(default_factory=list)  # what twin needs and lacks, each with its fix
    twin: str = version.text()  # twin's version and where it runs from

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {"ok": self.ok, **asdict(self)}


def feature_list(found: dict[str, bool | None]) -> list[Feature]:
    return [
        Feature(k, what, found.get(k), k in NEEDED, "" if found.get(k) is not False else LACKING[k])
        for k, what in FEATURES.items()
    ]


def lab_fit(
    fabric: Fabric, vrf_devices: bool | None, settings: dict[str, int], usage: hostlimits.Usage, cpu: admission.Host
) -> LabFit:
    """The backend, the host limits and the CPU one lab meets here (pure)."""
    backend, why = wanted(fabric)
    if backend == DEVICE and vrf_devices is False:
        why += f"; but {NO_VRF_DEVICES}: `twin up` refuses it (drop `vrf_backend: device`)"
    short = hostlimits.check(fabric, usage, settings) if settings else []
    est = admission.estimate(fabric, cpu)
    cpu_text = est.figures() + (
        "" if est.fits else f"; beyond its deadline of {est.deadline:.0f} s: " + ", or ".join(est.advice())
    )
    return LabFit(
        fabric.name,
        str(fabric.source),
        NAMES[backend],
        why,
        [str(s) for s in short],
        hostlimits.fix_command(short),
        cpu_text,
        est.fits and not short,
    )


def diagnose(fabrics: list[Fabric], src: Sources = Sources()) -> Report:
    """Every fact and what it means; `problems` names what twin needs and lacks, with the fix."""
    root, engine = src.root(), src.engine()
    problems = [] if root else [f"not root: {FIX['root']}"]
    if not engine.reachable:
        problems.append(f"the Docker engine is not reachable ({engine.error}): {FIX['docker']}")
    found = src.features() if root else {}
    feats = feature_list(found)
    problems += [
        f"this kernel has no {f.what}: {f.means}; fix: {FIX[f.key]}" for f in feats if f.needed and f.present is False
    ]
    shaping = src.shaping() if root else ""
    settings, usage, cpu = src.settings(), src.usage(), src.cpu()
    labs = [lab_fit(f, found.get("vrf"), settings, usage, cpu) for f in fabrics]
    imgs = src.images() if engine.reachable else []
    left = src.leftovers() if engine.reachable else Leftovers()
    return Report(root, engine, feats, shaping, SHAPING_MEANS.get(shaping, ""), labs, imgs, left, problems)


def isolation(e: EngineFacts) -> str:
    """What holds a node's root in, in words (docs/server.md: the threat model)."""
    if e.userns:
        return (
            "node isolation: userns-remap on: root in a node is an unprivileged user of this host; with each "
            "node's own cgroup namespace and seccomp profile"
        )
    return (
        "node isolation: userns-remap off (root in a node is root of this host, held in by its capabilities, "
        "own cgroup namespace and seccomp profile, which refuses mount, unshare and new namespaces"
        + (", on cgroup v1" if e.cgroup == "1" else "")
        + '); `"userns-remap": "default"` in '
        "/etc/docker/daemon.json remaps it (docs/server.md)"
    )


def lines(r: Report) -> list[str]:
    """The report in words, one fact a line (what the CLI prints)."""
    engine = r.engine.version if r.engine.reachable else f"not reachable ({r.engine.error})"
    out = [r.twin, f"root: {'yes' if r.root else 'no'}", f"Docker engine: {engine}"]
    if r.engine.reachable:
        out.append(isolation(r.engine))
    out.append("kernel (probed in a throwaway namespace):")
    for f in r.features:
        mark = {True: "yes", False: "NO ", None: "?  "}[f.present]
        out.append(
            f"  {mark} {f.what}"
            + (f": {f.means}" if f.means else "")
            + (" (not probed: no `nft` on the host)" if f.present is None and f.key.startswith("nft") else "")
        )
    if r.shaping:
        out.append(f"rate limits: {r.shaping}: {r.shaping_means}")
    for lab in r.labs:
        out.append(f"lab {lab.lab} ({lab.source}): VRF backend {lab.backend} ({lab.backend_why})")
        out.append(
            "  host limits: "
            + ("; ".join(lab.shortfalls) + (f"; {lab.fix}" if lab.fix else "") if lab.shortfalls else "enough")
        )
        out.append(f"  CPU: {lab.cpu}")
    imgs = ", ".join(f"{i.tag} (FRR {i.frr or '?'}{', current' if i.current else ''})" for i in r.images)
    out.append("images: " + (imgs or "none: `twin image build` (or `make twin-up`) builds them"))
    left = r.leftovers
    for name, names in left.containers.items():
        out.append(
            f"leftover?: lab {name}: {len(names)} container(s), no directory under {state.labs_root()} "
            f"(a killed run's, or another TWIN_HOME's): `twin down {name}` with the TWIN_HOME that made it"
        )
    out += [
        f"leftover?: lab {name}: network {', '.join(nets)}, no directory under {state.labs_root()}: "
        f"`twin down {name}` with the TWIN_HOME that made it"
        for name, nets in left.networks.items()
        if name not in left.containers
    ]
    out += [f"leftover: namespace /run/netns/{n}: `ip netns del {n}` if no twin runs" for n in left.netns]
    if not (left.containers or left.netns or left.networks):
        out.append("leftovers: none")
    out += [f"MISSING: {p}" for p in r.problems]
    out.append("ready: twin can run here" if r.ok else "not ready: fix what is MISSING above")
    return out
