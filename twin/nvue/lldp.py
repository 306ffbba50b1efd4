"""NVUE's LLDP as the node's lldpd runs it (every twin node runs lldpd, `images/node/twin-node`, as a
switch does): `service lldp tx-interval` and `tx-hold-multiplier` (the TTL its neighbours hold it for
is their product), and the system name it sends, which is the switch's host name (`system hostname`;
without one, the node's name).

They are set at run time by `lldpcli` in the node, one step of the node's plane (last, a plane extra
`("lldp",)`, shown in interfaces.sh): the system name first, then the hold, then the interval, each
`lldpcli configure` making lldpd send at once, so its neighbours hold what NVUE declares within a second
of an apply. A node whose NVUE sets none of them keeps what its lldpd starts with (twin's 5 s, so a
neighbour is known within seconds of bring-up; NVUE's default is 30 s) and gets no step; a day-2 change
that removes them puts those back (`undo`).

Stored, not run, with the reason docs/nvue.md gives: the 802.1 TLVs (`dot1-tlv`), LLDP-MED inventory,
CDP's `mode` (lldpd's protocols are chosen when it starts) and the DCBX and application-priority TLVs
(Cumulus's own lldpd takes them from switchd's QoS; upstream lldpd has none). Cumulus Linux 5.9's NVUE
has no switch to turn LLDP off (on a port or at all): 5.11 adds `state`; 5.9 refuses it, as twin does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from twin.config.steps import Step
from twin.nvue.tree import get

TX_INTERVAL = 5  # twin's nodes' lldpd (images/node/lldpd.conf): a node NVUE gives no tx-interval
TX_HOLD = 4  # lldpd's own, as NVUE's
DEV = "lldpd"  # the step's device: the node's lldpd, not a link
KEY = ("lldp",)  # its plane extra


@dataclass(frozen=True)
class Lldp:
    """What a node's lldpd runs: its timers and the system name it sends (None: the node's own name)."""

    tx_interval: int = TX_INTERVAL
    tx_hold: int = TX_HOLD
    system_name: str | None = None

    @property
    def ttl(self) -> int:
        """How long its neighbours hold what it sends, in seconds (lldpd: the interval times the hold)."""
        return self.tx_interval * self.tx_hold

    def step(self) -> Step:
        args: dict = {"tx-hold": self.tx_hold, "tx-interval": self.tx_interval}
        return Step("lldp", DEV, "", {"hostname": self.system_name, **args} if self.system_name else args)


DEFAULT = Lldp()


def of(tree: dict, node: str) -> Lldp:
    """The LLDP node `node` runs by its NVUE tree (checked: values in NVUE's ranges, a host name RFC 1123's)."""
    hostname = get(tree, ("system", "hostname"))
    return Lldp(
        get(tree, ("service", "lldp", "tx-interval"), TX_INTERVAL),
        get(tree, ("service", "lldp", "tx-hold-multiplier"), TX_HOLD),
        hostname if isinstance(hostname, str) and hostname != node else None,
    )


def attach(plane: Any, tree: dict) -> None:
    """A node's plane (`twin.nvue.plane.Plane`, which imports this module) with its LLDP step, where its
    NVUE sets one apart from what its lldpd starts with: last, once its ports are there, kept as an extra
    (day 2: `undo` when it goes)."""
    mine = of(tree, plane.node)
    if mine == DEFAULT:
        return
    s = plane.extras[KEY] = mine.step()
    plane.steps.append(s)


def undo() -> Step:
    """What takes a node's LLDP step away: lldpd's timers and system name as it starts with them."""
    return DEFAULT.step()
