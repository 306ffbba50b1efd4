"""twin: a digital twin of an AI-cloud leaf/spine EVPN-VXLAN fabric on one Linux host."""
from twin.errors import CommandError, ConvergenceTimeout, TopologyError, TwinError
from twin.lab import Lab
from twin import verify  # noqa: E402  (twin.verify.run(lab) judges a lab)

__all__ = ["Lab", "verify", "TwinError", "TopologyError", "CommandError", "ConvergenceTimeout"]
