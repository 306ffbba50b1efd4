"""twin: a digital twin of an AI-cloud leaf/spine EVPN-VXLAN fabric on one Linux host.

The face is lazy (PEP 562): `import twin.topology` (pure validation) loads neither Docker nor
pyroute2; `twin.Lab` and `twin.verify` load what they need when first used; `twin.stages` (what
a long command says, as events) is twin.base's, given here as part of the face."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from twin.base.errors import CommandError, ConvergenceTimeout, TopologyError, TwinError
from twin.base.version import VERSION as __version__

if TYPE_CHECKING:
    from twin import verify
    from twin.base import stages
    from twin.lab import Lab

__all__ = ["Lab", "verify", "stages", "TwinError", "TopologyError", "CommandError", "ConvergenceTimeout", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Lab":
        return importlib.import_module("twin.lab").Lab
    if name == "verify":  # twin.verify.run(lab) judges a lab
        return importlib.import_module("twin.verify")
    if name == "stages":
        return importlib.import_module("twin.base.stages")
    raise AttributeError(f"module 'twin' has no attribute {name!r}")
