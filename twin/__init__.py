"""twin: a digital twin of an AI-cloud leaf/spine EVPN-VXLAN fabric on one Linux host.

The face is lazy (PEP 562): `import twin.topology` (pure validation) loads neither Docker nor
pyroute2; `twin.Lab` and `twin.verify` load what they need when first used."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from twin.errors import CommandError, ConvergenceTimeout, TopologyError, TwinError
from twin.version import VERSION as __version__

if TYPE_CHECKING:
    from twin import verify
    from twin.lab import Lab

__all__ = ["Lab", "verify", "TwinError", "TopologyError", "CommandError", "ConvergenceTimeout", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Lab":
        return importlib.import_module("twin.lab").Lab
    if name == "verify":   # twin.verify.run(lab) judges a lab
        return importlib.import_module("twin.verify")
    raise AttributeError(f"module 'twin' has no attribute {name!r}")
