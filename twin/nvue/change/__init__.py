"""NVUE's change kind, built on `twin.change`'s rooms: NVUE files as a declarative change
(`nvue_change`: a directory of startup.yaml files, or a node's revision from the service), the
NVUE nodes' part of any declarative change (`nvue_work`: their files and kernel plane, old intent
to new) and a file of `nv` commands as a change (`nv_file`: `twin apply LAB nv:NODE:FILE`).
`twin.change` never imports them: NVUE registers them as its dialect's (`twin.nvue.dialect`).
"""

__all__ = ["nv_file", "nvue_change", "nvue_work"]  # offered whole: importing one does not load the others
