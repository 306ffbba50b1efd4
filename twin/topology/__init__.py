"""Topology file -> validated, derived Fabric (pure, no Docker or netlink).

`load(path)` returns the Fabric or raises TopologyError with every problem;
`validate(path)` returns a ValidationReport instead of raising. Name rules
(`check_lab_name`, `LAB_NAME_RULE` and the others in `twin.topology.names`)
are shared with the rest of twin.
"""

from twin.topology import mgmt
from twin.topology.allow import AllowRule, load_allow
from twin.topology.build import load, load_document
from twin.topology.checks import CheckSet, load_checks, merge
from twin.topology.confine import confine
from twin.topology.json_safe import read_json
from twin.topology.model import (
    Attachment,
    BgpTimers,
    Bind,
    Confined,
    CongestionPoint,
    Endpoint,
    Fabric,
    Internet,
    Link,
    Mgmt,
    Node,
    Port,
    Rate,
    RateLimit,
    Segment,
    Session,
    Tenant,
)
from twin.topology.names import (
    LAB_NAME_RULE,
    check_lab_name,
    check_node_name,
    match_node,
    node_key,
    port_range,
    port_ranges,
    resolve_node,
)
from twin.topology.problems import Path_, Problems, dotted, listing, quoted
from twin.topology.read import kind_of
from twin.topology.report import ValidationReport, validate
from twin.topology.schema import (
    BgpPrefixesCheck,
    BgpSessionCheck,
    CheckSpec,
    ExecCheck,
    FrrJsonCheck,
    PingCheck,
    RoceCheck,
    RouteCheck,
)
from twin.topology.tenant_checks import VXLAN_OVERHEAD
from twin.topology.yaml_safe import parse_yaml, read_yaml, read_yaml_bytes

__all__ = [
    "load",
    "load_document",
    "validate",
    "ValidationReport",
    "check_lab_name",
    "LAB_NAME_RULE",
    "Fabric",
    "Node",
    "Port",
    "Link",
    "Endpoint",
    "Session",
    "VXLAN_OVERHEAD",
    "AllowRule",
    "Attachment",
    "BgpPrefixesCheck",
    "BgpSessionCheck",
    "BgpTimers",
    "check_node_name",
    "CheckSet",
    "CheckSpec",
    "CongestionPoint",
    "csv_safe",
    "dotted",
    "ExecCheck",
    "files",
    "FrrJsonCheck",
    "json_safe",
    "kind_of",
    "listing",
    "load_allow",
    "load_checks",
    "merge",
    "parse_yaml",
    "Path_",
    "PingCheck",
    "Problems",
    "quoted",
    "Rate",
    "read_json",
    "read_yaml",
    "read_yaml_bytes",
    "RoceCheck",
    "RouteCheck",
    "Segment",
    "Tenant",
    "match_node",
    "node_key",
    "port_range",
    "port_ranges",
    "resolve_node",
    "Mgmt",
    "mgmt",
    "samples",
    "Bind",
    "Confined",
    "confine",
    "Internet",
    "RateLimit",
]
