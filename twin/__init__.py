"""twin: a digital twin of an AI-cloud leaf/spine EVPN-VXLAN fabric on one Linux host."""
from twin.errors import CommandError, ConvergenceTimeout, TopologyError, TwinError
from twin.lab import Lab

__all__ = ["Lab", "TwinError", "TopologyError", "CommandError", "ConvergenceTimeout"]
