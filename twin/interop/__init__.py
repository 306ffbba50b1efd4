"""Taking a twin lab out, and bringing topologies in.

One module per format, each pure (files in, files or text out):
- containerlab: `<lab>.clab.yml` and the files it binds (startscript: the bring-up it execs);
- clab_cli: the containerlab command lines twin runs, and reading `inspect --format json`.
What they take from the rest of twin is imported in one place, `_twin`.
"""
from twin.interop.clab_cli import ClabContainer, Containerlab, parse_inspect
from twin.interop.containerlab import export_containerlab

__all__ = ["export_containerlab", "Containerlab", "ClabContainer", "parse_inspect"]
