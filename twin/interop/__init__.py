"""Taking a twin lab out, and bringing topologies in.

One module per format, each pure (files in, files or text out):
- containerlab: `<lab>.clab.yml` and the files it binds (startscript: the bring-up it execs);
- clab_cli: the containerlab command lines twin runs, and reading `inspect --format json`;
- clabernetes: the Kubernetes manifests of the same lab, for labs larger than one machine;
- air, air_json, air_dot, air_import: NVIDIA Air's JSON and DOT topologies, out and in;
NVUE in and out is a package of its own, next on the data path (`twin.nvue`).
Each module imports from the rest of twin only what sits before it on the data path.
"""

from twin.interop.air_dot import export_air_dot
from twin.interop.air_import import import_air, parse_roles
from twin.interop.air_json import export_air_json
from twin.interop.clab_cli import BINARIES, ClabContainer, Containerlab, find_binary, parse_inspect
from twin.interop.clabernetes import export_clabernetes
from twin.interop.containerlab import export_containerlab
from twin.interop.doors import import_file
from twin.interop.inventory import FORMATS, write
from twin.interop.startscript import wait_then_exec

__all__ = [
    "export_containerlab",
    "export_clabernetes",
    "export_air_json",
    "export_air_dot",
    "import_air",
    "parse_roles",
    "Containerlab",
    "ClabContainer",
    "parse_inspect",
    "BINARIES",
    "FORMATS",
    "clone",
    "doors",
    "find_binary",
    "import_file",
    "inventory",
    "wait_then_exec",
    "write",
]
