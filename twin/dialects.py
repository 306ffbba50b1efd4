"""The configuration dialects twin speaks, in one table: each registers what it brings
(`twin.config.dialect`), as containerlab's `core/register.go` names every node kind and its core
imports none. This module is the only one that names them: `twin.lab` imports it (so every
command, the server's workers and the pytest plugin speak them), and a process that runs
without `Lab` registers the one it serves itself (the NVUE service: `twin.nvue.nvued.serve`).
"""

from twin import nvue
from twin.config.dialect import Dialect, register

DIALECTS: tuple[Dialect, ...] = (nvue.DIALECT,)

for _dialect in DIALECTS:
    register(_dialect)

__all__ = ["DIALECTS"]
