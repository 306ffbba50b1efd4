"""Every timeout and polling interval of `twin`, named in one place (seconds). Never clamped silently."""

CONTAINER_START = 60.0  # all containers of a lab running
CONVERGE_BASE = 60.0  # convergence: base ...
CONVERGE_PER_NODE = 1.0  # ... plus this per FRR node
EXEC_DEFAULT = 30.0  # one command in a node
EXEC_INTERACTIVE = 3600.0  # `twin exec`: a user's own command
HOST_PORTS = 300.0  # a host's own command (cmd) waits this long for twin to bring its ports up
VTYSH = 20.0  # one batched vtysh read (verify, status, barrier diagnosis)
NETLINK = 5.0  # one netlink dump's answer (a dump never answered is an error, not a hang)
NETLINK_REQUEST = 60.0  # one pyroute2 request (a read or a change) answered, else abandoned: far beyond what
# a thread kept off the CPU of a saturated host waits, so only a lost answer hits it
NETLINK_OPEN = 30.0  # a netlink socket in a namespace opened, retried while the host is short of resources
VTYSH_QUICK = 10.0  # a vtysh poll while waiting for FRR
ZEBRA_PORT = 30.0  # zebra holds a port in the bridge it was just put in (its dataplane thread)
VNIS_UP = 60.0  # zebra on a VTEP knows all its VNIs after FRR started
IMAGE_BUILD = 1800.0  # debootstrap + docker build
TRAFFIC = 10.0  # a traffic run: until every expected frame arrived
TRAFFIC_QUIET = 1.0  # ... or until no frame at all arrived for this long: the missing ones are lost
TRAFFIC_WINDOW = 0.3  # then this much longer, to see late, stray or leaked frames
ATTACK_WINDOW = 0.5  # zero-trust: how long taps watch for attack frames once all are sent
CAPTURE_START = 10.0  # tcpdump in a node has opened its file
CAPTURE_MAX = 60  # a tcpdump capture runs at most this long
NODE_STOP = 5.0  # a stopped node's grace period before SIGKILL (faults)
FRR_START = 120.0  # FRR's daemons started in a node (frrinit.sh: ~1 s idle, much more under load)
FRR_STEP = 15.0  # one step of FRR's boot in a node (a daemon answering, the config load: ~0.1 s idle),
# per runnable task per core beyond one: longer, it has stalled (twin.runtime.frrboot)
FRR_STEP_MAX = 90.0  # ... however busy the host
FRR_RELOAD = 120.0  # frr-reload.py (or an FRR restart) on one node (twin apply)
DRY_RUN = 30.0  # `vtysh --dryrun` of a new config in its node
BARRIER_FIRST = 0.1  # the barrier polls this soon first (a round is a few netlink dumps) ...
BARRIER_POLL = 0.5  # ... and backs off to at most this far apart (a round over 24 routers: ~10 ms; its
# pace, twice the last round's cost, spaces larger labs' rounds)
WIRING_SAY = 2.0  # bring-up: what is moving (containers, links, configured nodes), this often
BARRIER_LOOK = 5.0  # FRR's session counters (flaps) on the router the barrier waits for, this often
BARRIER_DIAGNOSE = 15.0  # of the barrier's deadline (at most a tenth of it), kept for naming what is missing
HOST_CAUSES = 5.0  # ... and past it if need be: the host-level causes (kernel log, each node's
# container: OOM kills, dead daemons) read within at least this
BARRIER_NOW = 60.0  # `twin status` / `Lab.missing()`: every router read once, within this
PROGRESS_EVERY = 10.0  # off a terminal (a CI log, a file): a plain progress line at least this often
RIB_QUIET = 3.0  # a router running its own config has converged once its routes stood still this long
LLDP_SEEN = 10.0  # verify's lldp group: each port's LLDP neighbour as cabled (lldpd sends at once on a change)
PROTOCOLS_UP = 60.0  # BFD sessions Up, sessions at their new timers, once both ends run a new config
OSPF_WAIT = 40.0  # added to the deadline of a lab with OSPF: a broadcast interface waits its dead
# interval (40 s by default) before it elects a DR and forms a Full adjacency
DATA_PLANE = 60.0  # rehearse: the data plane whole again after a change
REHEARSE_BASELINE = 1.0  # rehearse: traffic before the change
REHEARSE_TAIL = 1.0  # rehearse: traffic after the data plane is whole again
REHEARSE_RECOVERED = 1.0  # rehearse: whole = no flow lost a packet for this long
DOCKER_API = 180.0  # one Docker API call
DOCKER_RETRY = 300.0  # ... tried again while the engine times out or fails on its side (a loaded host)
DOWN_BASE = 120.0  # `twin down`: every container of the lab removed (kills Docker cannot confirm
DOWN_PER_NODE = 1.0  # are tried again), base plus this per container
WATCH_PERIOD = 1.0  # the collector: link stats and carrier of every port, this often
WATCH_ROCE = 2.0  # ... the RoCE counter tables (one nft per namespace)
WATCH_CONTROL = 10.0  # ... FRR's sessions, VNIs and EVPN routes (one vtysh per FRR node)
WATCH_NODES = 10.0  # ... which nodes run (a node restarted gets a new namespace)
CHECK = 30.0  # a user's positive check: until what it expects holds
CHECK_WINDOW = 3.0  # a user's negative check: holds this long once the lab has converged
CHECK_POLL = 0.5  # ... looked at this often within its window
BASELINE_SETTLE = 10.0  # baseline compare: differences may settle this long (counters after a change)
PROVE_DETECT = 15.0  # --prove: verify notices a broken element within this
PROVE_RESTORE = 60.0  # --prove: the barrier holds and verify passes again once it is restored


def converge(frr_nodes: int) -> float:
    return CONVERGE_BASE + CONVERGE_PER_NODE * frr_nodes


SERVICE_START = 90.0  # a lab's long-lived process (the NVUE service) listening (~1 s idle, much more under load)
SERVICE_STOP = 5.0  # ... and leaving on SIGTERM, before SIGKILL
NVUE_PROBE = 3.0  # the NVUE service answering `twin status`


def down(containers: int) -> float:
    return DOWN_BASE + DOWN_PER_NODE * containers
