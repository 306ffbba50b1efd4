"""Faults, from Python: `faults.link_down(lab, "dpu1:p0")` and so on, each a registered
change (`twin.change.link_faults`, `twin.change.node_faults`) applied to a lab or its context.

    f = faults.link_down(lab, "dpu1:p0")     # both ends of the link, over netlink
    f.revert()                                # = faults.link_up(lab, "dpu1:p0")
"""

from __future__ import annotations

from typing import Any

from twin.base.errors import TwinError
from twin.change import link_faults, node_faults
from twin.change.base import Result
from twin.change.fault_base import fault_types
from twin.lifecycle.context import context_of
from twin.traffic.flows import Target


def apply_fault(lab: Target, key: str, target: str, *args: Any) -> Result:
    """Apply the registered fault `key` to a lab (a Lab or its context)."""
    ctx = context_of(lab)
    cls = fault_types()[key]
    fault = cls(target, *args)
    fault.resolve(ctx)
    return fault.apply(ctx)


def link_down(lab: Target, port: str) -> Result:
    return apply_fault(lab, "link-down", port)


def link_up(lab: Target, port: str) -> Result:
    return apply_fault(lab, "link-up", port)


def link_loss(lab: Target, port: str, percent: int) -> Result:
    if not 0 < percent <= 100:
        raise TwinError(f"loss must be a percentage in 1..100, not {percent}")
    return apply_fault(lab, "link-loss", port, percent)


def link_loss_clear(lab: Target, port: str) -> Result:
    return apply_fault(lab, "link-loss-clear", port)


def node_stop(lab: Target, node: str) -> Result:
    return apply_fault(lab, "node-stop", node)


def node_kill(lab: Target, node: str) -> Result:
    return apply_fault(lab, "node-kill", node)


def node_start(lab: Target, node: str) -> Result:
    return apply_fault(lab, "node-start", node)


def node_restart(lab: Target, node: str) -> Result:
    return apply_fault(lab, "node-restart", node)


def daemon_kill(lab: Target, node: str, daemon: str = "bgpd") -> Result:
    return apply_fault(lab, "daemon-kill", node, daemon)


def daemon_pid(lab: Target, node: str, daemon: str = "bgpd") -> int | None:
    """PID of FRR daemon `daemon` in `node` (None: not running)."""
    return node_faults.daemon_pid(context_of(lab), node, daemon)


def loss_dropped(lab: Target, port: str) -> int | None:
    """Frames an nftables loss fault on `port` dropped so far (None: no such fault)."""
    return link_faults.loss_dropped(context_of(lab), port)
