"""The readers of config dialects: by file name, what turns one node's file into a `Declared`.

The one hook a dialect uses to bring its reader (`register`); the lint core never imports a
dialect. FRR registers its reader of frr.conf (`twin.config.declared`) where `twin.config` is
imported; a configuration dialect's reader (NVUE's of startup.yaml, `twin.nvue.declared`) is part of
what it registers (`twin.config.dialect.Dialect.declared`), handed here by `twin.config.dialect.register`.

    register("startup.yaml", read)    # read(Source) -> Declared, TopologyError with every problem
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from twin.lint.declared import Declared
from twin.topology.model import Fabric


@dataclass(frozen=True)
class Source:
    """One node's file, as a config directory gave it."""

    node: str
    name: str  # its file name: frr.conf, startup.yaml
    path: str  # where it came from, as messages name it
    text: str
    fabric: Fabric  # the topology it is meant for


Reader = Callable[[Source], Declared]
READERS: dict[str, Reader] = {}
IGNORED = ("daemons",)  # files of a node that declare nothing the comparison reads


def register(name: str, reader: Reader) -> None:
    """`reader` reads the files named `name`; one reader per file name."""
    if READERS.get(name, reader) is not reader:
        raise ValueError(f"a reader of {name} is registered twice")
    READERS[name] = reader
