"""Configuration, derived from a Fabric (pure): FRR files rendered from Jinja2
templates per kind and feature (`render`), the kernel side of the overlay as
steps (`overlay`, on the one table of operations in `steps`; a node's management port: `mgmt`) and the steps that
take a node from one intent to another (`reconcile`); no value a renderer writes holds a
control character (`safetext`). The user's own configs: `userconf`; what an frr.conf declares, for
`twin lint`: `declared` (the reader it registers)."""
from twin.config import declared, mgmt  # declared: FRR's reader of frr.conf for twin lint (registers it)
from twin.config.backend import (
           CHOICES,
           DEFAULT_BACKEND,
           DEVICE,
           INSTEAD,
           NAMES,
           NETNS,
           NO_VRF_DEVICES,
           VRF_TABLE_BASE,
           device_needs,
           wanted,
)
from twin.config.naming import (
           LABEL_KIND,
           LABEL_LAB,
           LABEL_NODE,
           LABEL_RUNTIME,
           NVUE_DIR,
           container_name,
           dryrun_container,
           held_netns,
           hosts_marker,
           link_alias,
           mgmt_network,
           nvue_run,
           password_file,
           probe_netns,
)
from twin.config.overlay import (
           DEFAULT_SHAPING,
           Backend,
           Shaping,
           bindings,
           loopback_steps,
           plan,
           port_ns,
           script,
           script_of,
           tenant_ns,
           vrf_tables,
)
from twin.config.reconcile import NodeDelta, node_delta
from twin.config.render import render_lab
from twin.config.services import CONGESTION_BURST_S, bucket, gateway_file, gateway_table
from twin.config.steps import ALREADY, VXLAN_PORT, Step
from twin.config.userconf import DAEMONS, FORMATS, FRR_CONF, NVUE, UserConfigs, forwarding_sysctls, read_dir

__all__ = ["VXLAN_PORT", "ALREADY", "CHOICES", "CONGESTION_BURST_S", "DAEMONS", "DEFAULT_BACKEND", "DEFAULT_SHAPING",
           "DEVICE", "FORMATS", "FRR_CONF", "INSTEAD", "LABEL_KIND", "LABEL_LAB", "LABEL_NODE", "LABEL_RUNTIME",
           "NAMES", "NETNS", "NO_VRF_DEVICES", "VRF_TABLE_BASE", "NVUE", "NVUE_DIR", "Backend", "bindings", "bucket",
           "container_name", "declared", "dialect", "held_netns",
           "device_needs", "droplog", "dryrun_container", "forwarding_sysctls", "gateway_file", "gateway_table",
           "link_alias", "loopback_steps", "hosts_marker", "mgmt", "mgmt_network", "node_delta", "NodeDelta",
           "nvue_run", "password_file", "overlay", "plan", "port_ns",
           "probe_netns", "read_dir", "render", "render_lab", "safetext", "script", "script_of", "services", "Shaping",
           "Step",
           "tenant_ns", "userconf", "UserConfigs", "vrf_tables", "wanted"]
