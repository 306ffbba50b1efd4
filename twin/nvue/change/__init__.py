"""NVUE's change kind, beside `twin.change`'s: NVUE files as a declarative change (`nvue_change`:
a directory of startup.yaml files, or a node's revision from the service), the NVUE nodes' part of
any declarative change (`nvue_work`: their files and kernel plane, old intent to new) and a file
of `nv` commands as a change (`nv_file`: `twin apply LAB nv:NODE:FILE`).

`twin.change` dispatches to these rooms and registers the kind, and they are built on its
rooms (base, declarative, diff, plan, work): `twin.change` is loaded first, whichever of the
two is imported first, and this face only offers its rooms, so that `twin.change.declarative`
can load `nvue_work` before `nvue_change` exists.
"""
import twin.change  # noqa: F401  (first: see above)

__all__ = ["nv_file", "nvue_change", "nvue_work"]   # offered whole: importing one does not load the others
