"""NVUE in and out: Cumulus Linux 5.9 / DOCA HBN configurations (API nvue_v1) become the same
per-node configs and kernel steps twin renders for its own designs, and twin's designs are
written as NVUE.

The rooms, in the order data takes:
- `schema`: NVUE's object tree as twin knows it (emulated, stored-not-emulated, refused);
- `tree`: the configuration tree and the edits `nv set`/`nv unset`/`nv config` and the REST
  API are made of (set/unset a path, interface ranges, patch, diff), and its check;
- `load`: a startup.yaml read (file, line, NVUE path of every problem);
- `model`: the emulated subset as typed data;
- `frr`: frr.conf as NVUE renders it; `plane`: the node's kernel plane (per-VNI layout),
  `vlanaware`: Cumulus's own layout (opt-in, golden-tested);
- `configs`: NVUE files among a lab's configs, each node's files; `export`: twin's design as NVUE.

The API a live layer (`nv`, the REST API) sits on:

    nf = read("leaf01/startup.yaml")                        # or from_tree(tree, "nv set")
    tree = copy.deepcopy(nf.tree); set_path(tree, ("interface", "swp5-8", "link", "state"), "up")
    path, value = words("interface swp3 bridge domain br_default access 30".split())
    nf2 = from_tree(tree, "revision 3")                     # TopologyError: every problem, no change
    diff(nf.tree, nf2.tree)                                  # [{"unset": ...}, {"set": ...}]
    nodes, notes = build({"leaf01": nf2}, fabric, backend)   # files and kernel plane per node
    NvueChange(source, {"leaf01": nf2})                      # through twin apply's stages
"""
from twin.interop.nvue.cli import EDITS, Command, commands, edit
from twin.interop.nvue.configs import (
           STARTUP,
           NvueNode,
           build,
           check_files,
           dump,
           files_of,
           frr_view,
           not_emulated,
           running,
)
from twin.interop.nvue.configs import read as read_configs
from twin.interop.nvue.export import export, export_node
from twin.interop.nvue.load import NvueFile, from_tree, read
from twin.interop.nvue.plane import PER_VNI, VLAN_AWARE, Layout, Plane, extras_delta, tenant_of
from twin.interop.nvue.schema import API, VERSION
from twin.interop.nvue.tree import Finding, diff, expand, get, leaves, patch, set_path, show, unpatch, unset_path, words

__all__ = ["STARTUP", "NvueNode", "build", "check_files", "dump", "files_of", "frr_view", "not_emulated",
           "read_configs",
           "running", "export", "export_node", "NvueFile", "from_tree", "read", "PER_VNI", "VLAN_AWARE", "Plane",
           "tenant_of", "API", "VERSION", "Finding", "diff", "expand", "patch", "set_path", "show", "unpatch",
           "unset_path", "words", "EDITS", "api", "cli", "client", "Command", "commands", "edit", "extras_delta",
           "get", "leaves", "load", "Layout"]
