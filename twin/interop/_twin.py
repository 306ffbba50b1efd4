"""Everything `twin.interop` takes from the rest of twin, in one place.

The exporters and importers read the validated Fabric, the kinds, the kernel
plan and the container labels; when those modules move, only the imports
below need re-pointing.
"""
from twin.errors import Problem, TopologyError, TwinError
from twin.kinds import KINDS, Kind
from twin.kinds import get as kind_of
from twin.config.overlay import Backend, bindings, plan, script
from twin.config.steps import NODE_DIR, Step
from twin.runtime.docker import LABEL_KIND, LABEL_LAB, LABEL_NODE
from twin.runtime.links import alias as port_alias
from twin.timeouts import VNIS_UP
from twin.topology.model import Fabric, Node

__all__ = ["KINDS", "Kind", "kind_of", "NODE_DIR", "Backend", "Step", "bindings", "plan", "script",
           "LABEL_KIND", "LABEL_LAB", "LABEL_NODE", "port_alias", "VNIS_UP", "Fabric", "Node",
           "Problem", "TopologyError", "TwinError"]
