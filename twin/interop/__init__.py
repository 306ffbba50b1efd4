"""Taking a twin lab out, and bringing topologies in.

One module per format, each pure (files in, files or text out):
- containerlab: `<lab>.clab.yml` and the files it binds (startscript: the bring-up it execs).
What they take from the rest of twin is imported in one place, `_twin`.
"""
from twin.interop.containerlab import export_containerlab

__all__ = ["export_containerlab"]
