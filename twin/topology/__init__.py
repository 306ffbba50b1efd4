"""Topology file -> validated, derived Fabric (pure, no Docker or netlink)."""
from twin.topology.build import load
from twin.topology.model import Endpoint, Fabric, Link, Node, Port, Session

__all__ = ["load", "Fabric", "Node", "Port", "Link", "Endpoint", "Session"]
