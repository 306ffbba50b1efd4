"""Topology file -> validated, derived Fabric (pure, no Docker or netlink).

`load(path)` returns the Fabric or raises TopologyError with every problem;
`validate(path)` returns a ValidationReport instead of raising. Name rules
(`check_lab_name`, `LAB_NAME_RULE` and the others in `twin.topology.names`)
are shared with the rest of twin.
"""
from twin.topology.build import load, load_document
from twin.topology.model import Endpoint, Fabric, Link, Node, Port, Session
from twin.topology.names import LAB_NAME_RULE, check_lab_name
from twin.topology.report import ValidationReport, validate

__all__ = ["load", "load_document", "validate", "ValidationReport", "check_lab_name", "LAB_NAME_RULE",
           "Fabric", "Node", "Port", "Link", "Endpoint", "Session"]
