"""Every timeout of `twin`, named in one place (seconds). Never clamped silently."""

CONTAINER_START = 60.0      # all containers of a lab running
CONVERGE_BASE = 60.0        # underlay convergence: base ...
CONVERGE_PER_NODE = 1.0     # ... plus this per FRR node
EXEC_DEFAULT = 30.0         # one command in a node
VNIS_UP = 60.0              # zebra on a VTEP knows all its VNIs after FRR started
IMAGE_BUILD = 1800.0        # debootstrap + docker build


def converge(frr_nodes: int) -> float:
    return CONVERGE_BASE + CONVERGE_PER_NODE * frr_nodes
TRAFFIC = 10.0              # a traffic run: until every expected frame arrived
TRAFFIC_WINDOW = 0.3        # then this much longer, to see late, stray or leaked frames
NODE_STOP = 5.0             # a stopped node's grace period before SIGKILL (faults)
FRR_RELOAD = 120.0          # frr-reload.py (or an FRR restart) on one node (twin apply)
