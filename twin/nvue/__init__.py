"""NVUE, in one room: Cumulus Linux 5.9 / DOCA HBN configurations (API nvue_v1) become the same
per-node configs and kernel steps twin renders for its own designs, twin's designs are written
as NVUE, and a lab whose nodes run NVUE has NVUE's REST API and `nv` as a switch has them.

Its rooms sit on the data path where their data does (tests/unit/test_layout.py): the
configurations are pure and come right after `twin.interop`; the live rooms come later.

Configurations (this face), in the order data takes:
- `schema`: NVUE's object tree as twin knows it (emulated, stored-not-emulated, refused);
- `tree`: the configuration tree and the edits `nv set`/`nv unset`/`nv config` and the REST
  API are made of (set/unset a path, interface ranges, patch, diff), and its check;
- `load`: a startup.yaml read (file, line, NVUE path of every problem);
- `model`: the emulated subset as typed data (`policy`: prefix lists and route maps);
- `frr`: frr.conf as NVUE renders it; `plane`: the node's kernel plane (per-VNI layout), with
  `routed` for what goes beyond twin's tenants (uncabled ports, plain VRFs, VLANs outside a
  tenant) and `beyond` for what NVUE refuses of it; `vlanaware`: Cumulus's own layout (opt-in,
  golden-tested);
- `configs`: NVUE files among a lab's configs, each node's files; `export`: twin's design as NVUE;
- `declared`: what a startup.yaml declares, for `twin lint` (the reader it registers);
- `api`, `cli`: the REST API's and `nv`'s pure parts; `client`: the `nv` command a node runs.

Live, offered whole and imported on demand (each after what it stands on):
- `service`: the service's files in the lab directory, its start, stop and health (lifecycle's layer);
- `change`: NVUE's change kind: startup.yaml directories, `nv` files, revisions (change's layer);
- `nvued`: the service itself, as `nvued` is on a switch: REST API, `nv`'s socket, revisions.

The API a live layer (`nv`, the REST API) sits on:

    nf = read("leaf01/startup.yaml")                        # or from_tree(tree, "nv set")
    tree = copy.deepcopy(nf.tree); set_path(tree, ("interface", "swp5-8", "link", "state"), "up")
    path, value = words("interface swp3 bridge domain br_default access 30".split())
    nf2 = from_tree(tree, "revision 3")                     # TopologyError: every problem, no change
    diff(nf.tree, nf2.tree)                                  # [{"unset": ...}, {"set": ...}]
    nodes, notes = build({"leaf01": nf2}, fabric, backend)   # files and kernel plane per node
    nvue_change.NvueChange(source, {"leaf01": nf2})          # through twin apply's stages (twin.nvue.change)
"""
from twin.nvue import declared  # noqa: E402,F401,I001  (NVUE's reader of startup.yaml for twin lint: registers it)
from twin.nvue.cli import EDITS, Command, commands, edit
from twin.nvue.configs import (
           STARTUP,
           NvueNode,
           blank,
           build,
           check_files,
           dump,
           files_of,
           frr_view,
           not_emulated,
           running,
           runs_nvue,
)
from twin.nvue.configs import read as read_configs
from twin.nvue.export import export, export_node
from twin.nvue.load import NvueFile, from_tree, read
from twin.nvue.plane import PER_VNI, VLAN_AWARE, Layout, Plane, as_run, extras_delta, tenant_of
from twin.nvue.schema import API, VERSION
from twin.nvue.tree import Finding, diff, expand, get, leaves, patch, set_path, show, unpatch, unset_path, words

__all__ = ["STARTUP", "NvueNode", "blank", "build", "check_files", "dump", "files_of", "frr_view", "not_emulated",
           "read_configs", "running", "runs_nvue", "export", "export_node", "NvueFile", "from_tree", "read",
           "PER_VNI", "VLAN_AWARE", "Plane",
           "tenant_of", "API", "VERSION", "Finding", "diff", "expand", "patch", "set_path", "show", "unpatch",
           "unset_path", "words", "EDITS", "api", "cli", "client", "Command", "commands", "edit", "extras_delta",
           "get", "leaves", "load", "Layout", "as_run", "declared",
           "change", "nvued", "service"]
