"""NVUE, in one room: Cumulus Linux 5.9 / DOCA HBN configurations (API nvue_v1) become the same
per-node configs and kernel steps twin renders for its own designs, twin's designs are written
as NVUE, and a lab whose nodes run NVUE has NVUE's REST API and `nv` as a switch has them.

NVUE is a dialect (`twin.config.dialect`): it registers what it brings (`DIALECT`, registered by
`twin.dialects`), and the rooms that serve every lab never import it. Its own rooms are in layers
of their own (tests/unit/test_layout.py), in the order data takes:

1. model and tree: `schema` (NVUE's object tree as twin knows it: emulated, stored-not-emulated,
   refused), `tree` (the configuration tree and its edits: set/unset a path, interface ranges,
   patch, diff, its check), `load` (a startup.yaml read: file, line, NVUE path of every problem),
   `model` (the emulated subset as typed data; `policy`: prefix lists, route maps), `api` and
   `cli` (the REST API's and `nv`'s pure parts), `client` (the `nv` command a node runs);
2. plane and render: `plane` (a node's kernel plane, per-VNI layout; `routed`, `beyond`, `bonds`
   for what goes beyond twin's tenants; `vlanaware`: Cumulus's own layout), `frr` (frr.conf as NVUE
   renders it), `kernelplane` (the layout and bonds a lab chose, once), `configs` (NVUE files among
   a lab's configs, each node's files), `export` (twin's design as NVUE), `declared` (what a
   startup.yaml declares, for `twin lint`);
3. change: `change` (NVUE's change kinds: startup.yaml directories, `nv` files, revisions);
4. service: `service` (the NVUE service's files in the lab directory, its start, stop and health,
   what the nodes get bound), `nvued` (the service itself: REST API, `nv`'s socket, revisions),
   `prove` (its `--prove` elements), `dialect` (the record it registers).

This face, for the rest of twin and for scripts:

    nf = read("leaf01/startup.yaml")                        # or from_tree(tree, "nv set")
    nodes, notes = build({"leaf01": nf}, fabric, backend)    # files and kernel plane per node
    texts, notes = export(fabric)                            # twin's design as startup.yaml files
"""

from twin.nvue import service
from twin.nvue.configs import STARTUP, build
from twin.nvue.configs import read as read_configs
from twin.nvue.dialect import DIALECT
from twin.nvue.export import export, export_node
from twin.nvue.load import NvueFile, dump, from_tree, read

__all__ = [
    "DIALECT",
    "STARTUP",
    "NvueFile",
    "read",
    "from_tree",
    "dump",
    "read_configs",
    "build",
    "export",
    "export_node",
    "service",
    "nvued",
]
