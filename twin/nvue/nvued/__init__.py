"""A lab's NVUE service, as `nvued` is on a Cumulus switch: the NVUE REST API (`app`) and the
`nv` command's other end (`nv`) on every FRR node's listeners, the revisions of each node and
their apply through twin's change pipeline (`engine`), the operational state of the subset
(`show`). It runs as a process of its own per lab (`python -m twin.nvue.nvued LAB`, `serve`),
started and stopped by `twin.nvue.service`; what it does with NVUE trees is
`twin.nvue`'s (`api`, `cli`).
"""

import sys

from twin.nvue.nvued.engine import Engine

__all__ = ["Engine", "command"]


def command(lab: str) -> list[str]:
    """The command line of lab `lab`'s NVUE service."""
    return [sys.executable, "-m", "twin.nvue.nvued", lab]
