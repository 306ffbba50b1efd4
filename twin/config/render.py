"""Day-0 configuration: Fabric -> per-node files, rendered with Jinja2.

Pure: returns file contents; `twin.lifecycle.state.write_files` puts them in
the lab directory (`<labdir>/<node>/frr.conf`, `daemons`, `vtysh.conf`), which
is what the node's FRR runs (the directory is bind-mounted on /etc/frr). What a kind
renders is its data (`twin.kinds`): its daemons and frr.conf feature templates.
"""

from __future__ import annotations

from typing import Iterable

from twin import kinds
from twin.base.errors import TopologyError
from twin.config import overlay, safetext, services
from twin.config.backend import DEFAULT_BACKEND, NETNS
from twin.config.jinja import render_template
from twin.config.overlay import DEFAULT_SHAPING, Backend, Shaping
from twin.intent.gateway import vtep_gateways
from twin.topology.model import Fabric, Node

ALL_DAEMONS = (
    "bgpd",
    "ospfd",
    "ospf6d",
    "ripd",
    "ripngd",
    "isisd",
    "pimd",
    "ldpd",
    "nhrpd",
    "eigrpd",
    "babeld",
    "sharpd",
    "pbrd",
    "bfdd",
    "fabricd",
    "vrrpd",
    "pathd",
)
# How long (ms) bgpd holds a new update group's first announcements, so that peers that come up together
# share one computation of them. FRR's own heuristic holds it 1 s plus 50 ms per peer of the instance (a
# spine of 20 leafs: 2 s), and in a bring-up every route waits it out once its session is up (issue 46,
# docs/performance.md "A bring-up's timeline"); a node's sessions come up together, in well under this,
# when FRR releases them from its config hold. On a host busy for the lab (BGP timers scaled by
# admission) FRR's heuristic stays: there sessions come up over many seconds, and grouping them saves CPU.
COALESCE_MS = 100
# Route updates zebra queues for the kernel (FRR's default: 200), in every router twin renders (FRR files
# and NVUE alike): a lab's routers share one kernel and take its routing lock in turn, and with a full queue
# zebra retries every 1 ms, a wait FRR 10.3's event loop rounds down to 0 and spins on (FRRouting/frr#19715;
# issue 46, docs/performance.md "The barrier at 256 nodes"). 10,000 is FRR's maximum.
ZEBRA_DPLANE_LIMIT = 10000


def frr_files(node: Node, fabric: Fabric, backend: Backend) -> dict[str, str]:
    """frr.conf, daemons and vtysh.conf of an FRR node, from its kind's features and daemons."""
    kind = kinds.of(node)
    tenants = fabric.tenants_on(node.name)
    features = kind.frr_features + (("evpn",) if tenants else ())
    # FRR's netns VRF backend: zebra -n, each VRF a network namespace
    netns_vrfs = bool(tenants) and backend == NETNS
    zebra_extra = " -n" if netns_vrfs else ""
    # zebra -n keeps interfaces as "<netns>:<ifname>": FRR 10 asserts on interface blocks
    # then, so a VTEP of that backend gets its loopback from the kernel side instead
    # the internet: ports towards it carry no EVPN; a gateway VTEP announces its tenants' public addresses
    edge_ports = [p.name for p in node.fabric_ports if kinds.of(fabric.nodes[p.peer_node]).edge]
    public = [ip for g in vtep_gateways(fabric, node.name).values() for ip in g.public]
    # every fabric peer in one AS (a leaf's spines): what carries that AS is not sent to them
    peer_as = {fabric.nodes[p.peer_node].asn for p in node.fabric_ports if p.name not in edge_ports}
    ctx = dict(
        node=node,
        fabric=fabric,
        kind=kind,
        features=features,
        tenants=tenants,
        netns_vrfs=netns_vrfs,
        daemons=kind.daemons,
        all_daemons=ALL_DAEMONS,
        zebra_extra=zebra_extra,
        edge_ports=edge_ports,
        public=public,
        one_peer_as=len(peer_as) == 1,
        coalesce=None if fabric.timers else COALESCE_MS,
        dplane_limit=ZEBRA_DPLANE_LIMIT,
    )
    return {name: render_template(f"frr/{name}.j2", **ctx) for name in ("frr.conf", "daemons", "vtysh.conf")}


def daemons_file(node: Node, daemons: list[str], fabric: Fabric | None = None, netns: bool = False) -> str:
    """A daemons file that enables `daemons` (and FRR's own), for a router whose config came alone
    or a node NVUE configures (`fabric`: its BGP timers' watchfrr; `netns`: zebra -n, VRFs as namespaces)."""
    return render_template(
        "frr/daemons.j2",
        node=node,
        daemons=daemons,
        all_daemons=ALL_DAEMONS,
        zebra_extra=" -n" if netns else "",
        **({"fabric": fabric} if fabric else {}),
    )


def render_node(
    node: Node, fabric: Fabric, backend: Backend = DEFAULT_BACKEND, shaping: Shaping = DEFAULT_SHAPING
) -> dict[str, str]:
    files = frr_files(node, fabric, backend) if kinds.of(node).runs_frr else {}
    kernel = overlay.script(fabric, node.name, backend, shaping)
    if kernel:
        files["interfaces.sh"] = kernel
    files.update(overlay.nft_rulesets(fabric, node.name, backend))
    files.update(services.rulesets(fabric, node.name, backend, shaping))
    return files


def render_lab(
    fabric: Fabric,
    backend: Backend = DEFAULT_BACKEND,
    shaping: Shaping = DEFAULT_SHAPING,
    nodes: Iterable[str] | None = None,
) -> dict[str, dict[str, str]]:
    """Every node's files (or those of `nodes`): {node: {file name: text}}; `backend` is the VRF backend of the VTEPs,
    `shaping` how rate limits are enforced (`twin.config.services`). A value holding a control character
    is refused (TopologyError at its place in the topology: `twin.config.safetext`), never written."""
    out: dict[str, dict[str, str]] = {}
    problems = []
    for name, node in fabric.nodes.items():
        if nodes is not None and name not in nodes:
            continue
        try:
            out[name] = render_node(node, fabric, backend, shaping)
        except safetext.UnsafeText as e:
            problems.append(safetext.refusal(e, name, fabric.source, fabric.model_dump(mode="json")))
    if problems:
        raise TopologyError(problems)
    return out
