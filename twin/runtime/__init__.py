"""Everything that touches Docker or netlink, behind one face: the rooms above import these
names from `twin.runtime`, never one of its modules (tests/unit/test_layout.py holds it), so
the rooms inside can change without anyone above noticing. The pure pipeline never imports it.

- the runtime and its nodes: `Runtime` (the protocol Docker's and containerlab's runtimes
  implement), `make_runtime` (one of the registry's by name), `NodeHandle`, a node's `NodeExec`
  (the one seam commands run through, with its `Result`s and their `Recorder`);
- network namespaces and netlink: `node_netlink` (a handle in a node's namespace),
  `namespace_path`, `in_namespace`, `in_ns_command` (a command's prefix in one), `NetlinkHandles`,
  netlink attributes (`nl_attr`...);
- links: `Wiring` (bring-up's), `add_link`/`delete_link`, a stopped node's `park_links`;
- FRR control: `frr_take` (frr-reload, or a restart; ospfd's interface settings, `OSPFD_INTERFACES`, sent
  to ospfd alone), `apply_live`, its `show ... json` commands (`FRR_SUMMARY`...) and their readers
  (`session_states`, `vni_states`...); a node's daemons started (`frr_start`: by the node's own server
  where it takes it), FRR's boot in a node watched, a stalled one booted again once (`frr_boot_watch`),
  then its neighbours asked to advertise at once (`solicit_routers`: BGP unnumbered finds its peers'
  addresses in their advertisements);
- a node's lldpd: `read_lldpd` (its timers, the name it sends, its neighbours per port);
- kernel steps: `apply_steps` (twin's kernel steps over netlink), the kernel's probes
  (`probe_shaping`, `kernel_lacks`...), what a node's kernel holds (`read_routes`, `read_fdb`...);
- the host: its engine and images (`engine_facts`, `node_tag`), what labs left (`host_leftovers`).
"""

from twin.runtime import dockersdk  # noqa: F401  (first: the SDK without its SSH transport)
from twin.runtime.base import Configure, ImageFacts, NodeHandle, Runtime
from twin.runtime.cgroup import memory as node_memory
from twin.runtime.docker import DockerRuntime
from twin.runtime.exec import Evidence, NodeExec, Recorder, Result, carried, labelled, recording
from twin.runtime.failures import describe as describe_failure
from twin.runtime.features import FEATURES
from twin.runtime.features import probe as probe_features
from twin.runtime.frr import ADJACENCIES as FRR_ADJACENCIES
from twin.runtime.frr import AFI_KEYS as FRR_AFI_KEYS
from twin.runtime.frr import BGP_IPV4 as FRR_BGP_IPV4
from twin.runtime.frr import (
    FRR_CONF,
    adjacency_states,
    apply_live,
    bgp_origins,
    bgp_table_cmd,
    bgp_table_size,
    evpn_table,
    normalize_vni,
    route_cmd,
    route_counts,
    route_entries,
    session_states,
    unexpected_peers,
    vni_states,
    vrf_routes,
    vrf_routes_cmd,
)
from twin.runtime.frr import NO_EVPN as FRR_NO_EVPN
from twin.runtime.frr import RIB as FRR_RIB
from twin.runtime.frr import ROUTES as FRR_ROUTES
from twin.runtime.frr import ROUTES_V4_VRFS as FRR_ROUTES_V4_VRFS
from twin.runtime.frr import ROUTES_V6_VRFS as FRR_ROUTES_V6_VRFS
from twin.runtime.frr import SUMMARY as FRR_SUMMARY
from twin.runtime.frr import SUMMARY_ALL as FRR_SUMMARY_ALL
from twin.runtime.frr import SUMMARY_VRFS as FRR_SUMMARY_VRFS
from twin.runtime.frr import UP_STATE as FRR_UP_STATE
from twin.runtime.frr import VNIS as FRR_VNIS
from twin.runtime.frr import flaps as session_flaps
from twin.runtime.frr import never_started as sessions_never_started
from twin.runtime.frr import peer_state as bgp_peer_state
from twin.runtime.frr import peers as bgp_peers
from twin.runtime.frr import summary_cmd as bgp_summary_cmd
from twin.runtime.frr import take as frr_take
from twin.runtime.frrboot import FIFO as FRR_BOOT_FIFO
from twin.runtime.frrboot import BootStalled as FrrBootStalled
from twin.runtime.frrboot import command as frr_boot_command
from twin.runtime.frrboot import start as frr_start
from twin.runtime.frrboot import watch as frr_boot_watch
from twin.runtime.hostfacts import Engine as EngineFacts
from twin.runtime.hostfacts import Image as HostImage
from twin.runtime.hostfacts import Leftovers, node_images, stray_netns
from twin.runtime.hostfacts import engine as engine_facts
from twin.runtime.hostfacts import leftovers as host_leftovers
from twin.runtime.images import DEFAULT_SUITE, node_tag
from twin.runtime.kernel import apply as apply_steps
from twin.runtime.kernel import lacks as kernel_lacks
from twin.runtime.kernel import probe_bonds, probe_red, probe_shaping, probe_vlans, set_link
from twin.runtime.kernel import vrf_devices as probe_vrf_devices
from twin.runtime.kernelhint import hint as kernel_hint
from twin.runtime.links import Wiring, add_link, create_link, delete_link, remove_held
from twin.runtime.links import park as park_links
from twin.runtime.links import unpark as unpark_links
from twin.runtime.lldpd import Lldpd
from twin.runtime.lldpd import Neighbor as LldpNeighbor
from twin.runtime.lldpd import parse as parse_lldpd
from twin.runtime.lldpd import read as read_lldpd
from twin.runtime.ndisc import solicit as solicit_routers
from twin.runtime.netns import Handles as NetlinkHandles
from twin.runtime.netns import Netlink, open_ns
from twin.runtime.netns import exec_prefix as in_ns_command
from twin.runtime.netns import inside as in_namespace
from twin.runtime.netns import ipr as node_netlink
from twin.runtime.netns import netlink as netlink_socket
from twin.runtime.netns import path as namespace_path
from twin.runtime.netns import remove_named as remove_netns
from twin.runtime.nftables import CONGESTION as NFT_CONGESTION
from twin.runtime.nftables import counters as nft_counters
from twin.runtime.nftables import listing as nft_listing
from twin.runtime.nftables import of_counters as nft_of_counters
from twin.runtime.nftables import rules as nft_rules
from twin.runtime.nlattr import attr as nl_attr
from twin.runtime.nlattr import attrs as nl_attrs
from twin.runtime.nlattr import attrs_all as nl_attrs_all
from twin.runtime.nodefs import FRR_DAEMONS, NodeFileError
from twin.runtime.nodefs import exists as node_file_exists
from twin.runtime.nodefs import read_text as read_node_file
from twin.runtime.observe import FLOOD as FLOOD_MAC
from twin.runtime.observe import drop_monitor as drop_monitor_text
from twin.runtime.observe import fdb as read_fdb
from twin.runtime.observe import has_host_route, has_link, link_names, port_counters, vrf_prefixes
from twin.runtime.observe import interfaces as read_interfaces
from twin.runtime.observe import learned as learned_macs
from twin.runtime.observe import mac as port_mac
from twin.runtime.observe import rib as read_rib
from twin.runtime.observe import routes as read_routes
from twin.runtime.observe import tc_classes as read_tc_classes
from twin.runtime.ospfdif import FILE as OSPFD_INTERFACES
from twin.runtime.registry import RUNTIMES, make_runtime
from twin.runtime.rtdump import Dumper as RouteDumper
from twin.runtime.rtdump import Dumpers as RouteDumpers
from twin.runtime.rtdump import enough_files

__all__ = [
    # the runtime and its nodes
    "Runtime",
    "RUNTIMES",
    "make_runtime",
    "DockerRuntime",
    "NodeHandle",
    "ImageFacts",
    "Configure",
    "node_memory",
    "NodeExec",
    "Result",
    "Evidence",
    "Recorder",
    "recording",
    "labelled",
    "carried",
    "describe_failure",
    # network namespaces and netlink
    "Netlink",
    "NetlinkHandles",
    "node_netlink",
    "netlink_socket",
    "namespace_path",
    "in_ns_command",
    "in_namespace",
    "open_ns",
    "remove_netns",
    "nl_attr",
    "nl_attrs",
    "nl_attrs_all",
    "RouteDumper",
    "RouteDumpers",
    "enough_files",
    # links
    "Wiring",
    "create_link",
    "add_link",
    "delete_link",
    "park_links",
    "unpark_links",
    "remove_held",
    # FRR control: its files, reload, live kernel steps, its `show ... json` commands and their readers
    "FRR_CONF",
    "FRR_DAEMONS",
    "frr_take",
    "OSPFD_INTERFACES",
    "apply_live",
    "FRR_SUMMARY",
    "FRR_SUMMARY_ALL",
    "FRR_SUMMARY_VRFS",
    "FRR_ROUTES",
    "FRR_ROUTES_V4_VRFS",
    "FRR_ROUTES_V6_VRFS",
    "FRR_RIB",
    "FRR_VNIS",
    "FRR_BGP_IPV4",
    "FRR_ADJACENCIES",
    "FRR_UP_STATE",
    "FRR_AFI_KEYS",
    "FRR_NO_EVPN",
    "adjacency_states",
    "session_states",
    "session_flaps",
    "sessions_never_started",
    "unexpected_peers",
    "bgp_peers",
    "bgp_peer_state",
    "bgp_summary_cmd",
    "bgp_table_cmd",
    "bgp_table_size",
    "bgp_origins",
    "evpn_table",
    "route_counts",
    "route_cmd",
    "route_entries",
    "vni_states",
    "normalize_vni",
    "vrf_routes",
    "vrf_routes_cmd",
    # FRR's boot in a node (the node's twin-nodectl): asked for, watched, a stalled one booted again
    "FRR_BOOT_FIFO",
    "FrrBootStalled",
    "frr_boot_command",
    "frr_start",
    "frr_boot_watch",
    "solicit_routers",
    # a node's lldpd: what it runs and sees
    "Lldpd",
    "LldpNeighbor",
    "read_lldpd",
    "parse_lldpd",
    # kernel steps, the kernel's probes, what a node's kernel and files hold
    "apply_steps",
    "set_link",
    "probe_shaping",
    "probe_bonds",
    "probe_red",
    "probe_vlans",
    "probe_vrf_devices",
    "kernel_lacks",
    "kernel_hint",
    "FEATURES",
    "probe_features",
    "drop_monitor_text",
    "read_routes",
    "read_fdb",
    "read_rib",
    "read_interfaces",
    "read_tc_classes",
    "link_names",
    "learned_macs",
    "port_counters",
    "port_mac",
    "vrf_prefixes",
    "has_link",
    "has_host_route",
    "FLOOD_MAC",
    "NFT_CONGESTION",
    "nft_counters",
    "nft_listing",
    "nft_of_counters",
    "nft_rules",
    "NodeFileError",
    "node_file_exists",
    "read_node_file",
    # the host: its engine, node images, leftovers
    "EngineFacts",
    "engine_facts",
    "HostImage",
    "node_images",
    "DEFAULT_SUITE",
    "node_tag",
    "Leftovers",
    "host_leftovers",
    "stray_netns",
]
