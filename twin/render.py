"""Day-0 configuration: Fabric -> per-node files, rendered with Jinja2.

Pure: returns file contents; `write_lab` puts them in the lab directory
(`<labdir>/<node>/frr.conf`, `daemons`, `vtysh.conf`), which is what the
node's FRR runs (the directory is bind-mounted on /etc/frr).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import jinja2

from twin import kinds, overlay
from twin.overlay import Backend

if TYPE_CHECKING:
    from twin.kinds.frr import FrrKind
    from twin.topology.model import Fabric, Node

ALL_DAEMONS = ("bgpd", "ospfd", "ospf6d", "ripd", "ripngd", "isisd", "pimd", "ldpd",
               "nhrpd", "eigrpd", "babeld", "sharpd", "pbrd", "bfdd", "fabricd", "vrrpd", "pathd")

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("twin", "templates"),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def frr_files(kind: "FrrKind", node: "Node", fabric: "Fabric", backend: Backend) -> dict[str, str]:
    tenants = fabric.tenants_on(node.name)
    features = kind.frr_features + (("evpn",) if tenants else ())
    # FRR's netns VRF backend: zebra -n, each VRF a network namespace
    netns_vrfs = bool(tenants) and backend == "netns"
    zebra_extra = " -n" if netns_vrfs else ""
    # zebra -n keeps interfaces as "<netns>:<ifname>": FRR 10 asserts on interface blocks
    # then, so a VTEP of that backend gets its loopback from the kernel side instead
    ctx = dict(node=node, fabric=fabric, kind=kind, features=features, tenants=tenants, netns_vrfs=netns_vrfs,
               daemons=kind.daemons, all_daemons=ALL_DAEMONS, zebra_extra=zebra_extra)
    return {
        "frr.conf": _env.get_template("frr/frr.conf.j2").render(ctx),
        "daemons": _env.get_template("frr/daemons.j2").render(ctx),
        "vtysh.conf": _env.get_template("frr/vtysh.conf.j2").render(ctx),
    }


def render_template(name: str, **ctx) -> str:
    return _env.get_template(name).render(ctx)


def render_node(node: "Node", fabric: "Fabric", backend: Backend = "netns") -> dict[str, str]:
    files = kinds.get(node.kind).render(node, fabric, backend)
    kernel = overlay.script(fabric, node.name, backend)
    if kernel:
        files["interfaces.sh"] = kernel
    files.update(overlay.nft_rulesets(fabric, node.name, backend))
    return files


def render_lab(fabric: "Fabric", backend: Backend = "netns") -> dict[str, dict[str, str]]:
    """Every node's files: {node: {file name: text}}; `backend` is the VRF backend of the VTEPs."""
    return {name: render_node(node, fabric, backend) for name, node in fabric.nodes.items()}


def write_lab(fabric: "Fabric", labdir: Path, backend: Backend = "netns") -> None:
    for node, files in render_lab(fabric, backend).items():
        d = labdir / node
        d.mkdir(parents=True, exist_ok=True)
        for fname, text in files.items():
            (d / fname).write_text(text)
