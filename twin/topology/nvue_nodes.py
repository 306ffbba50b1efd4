"""What a topology says of its nodes for NVUE: the ports a node's platform has, cabled or not
(`platform_ports`, NVUE's range form), and the nodes that run NVUE with nothing configured yet
(`nvue: blank`, on a node or for every spine, leaf and DPU in `defaults`), as switches after
zero-touch provisioning that the user's automation configures."""

from __future__ import annotations

from twin.kinds.base import Kind
from twin.topology.names import PORT_NAME_RULE, check_port_name, port_range
from twin.topology.problems import Problems, quoted
from twin.topology.schema import Defaults, NodeSpec


def nvue_fields(
    name: str, spec: NodeSpec, defaults: Defaults, kind: Kind, cabled: list[str], problems: Problems
) -> dict:
    """The Node fields `platform_ports` and `nvue` of node `name` (`cabled`: its cabled ports); problems added."""
    out: dict = {}
    blank = spec.nvue or (defaults.nvue if kind.runs_frr and kind.runs_bgp and not kind.user_config else None)
    if blank is not None:
        if not (kind.runs_frr and kind.runs_bgp) or kind.user_config:
            problems.add(
                ("nodes", name, "nvue"), f"a {kind.name} does not run NVUE: nvue is for spines, leafs and DPUs"
            )
        else:
            out["nvue"] = blank
    if spec.platform_ports is None:
        return out
    try:
        ports = port_range(spec.platform_ports)
    except ValueError as e:
        problems.add(("nodes", name, "platform_ports"), str(e))
        return out
    bad = [p for p in ports if check_port_name(p)]
    if bad:
        problems.add(
            ("nodes", name, "platform_ports"),
            f"{quoted(bad[0])} is not a port name ({PORT_NAME_RULE}); give a range like swp1-32 or swp1-48,swp49-52",
        )
        return out
    outside = [p for p in cabled if p not in ports]
    if outside:
        problems.add(
            ("nodes", name, "platform_ports"),
            f"{', '.join(outside)} {'is' if len(outside) == 1 else 'are'}"
            f" cabled but not among the platform's ports "
            f"({spec.platform_ports})",
        )
    out["platform_ports"] = tuple(ports)
    return out
