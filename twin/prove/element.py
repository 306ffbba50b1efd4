"""One element of a lab's intent, as data: what it is, where, how to break it, how to put it back,
and which verify groups (and checks) must notice it gone.

Breaking and restoring go through twin's own mechanisms only:

- `Kernel`: kernel steps (`twin.config.steps`) applied by `twin.runtime.frr.apply_live` (zebra
  runs: a static MAC on a port put back in its bridge waits until zebra holds the port there), the
  same table `interfaces.sh` is written from; restoring re-applies the node's rendered steps;
- `Vtysh`: lines of FRR configuration typed into the node's vtysh (to one daemon alone, where only it
  may be sent them); `Reload` restores the node's rendered frr.conf with `frr-reload.py`
  (`twin.runtime.frr.take`, which brings ospfd's interface settings back to their file too);
- `NftDelete`: one rule (a host port's, a gateway's, a rate limit's), found by its comment, deleted
  by its handle; `NftRule`: one rule, found so, replaced by another (a rate limit loosened, a
  congestion point's rule without its ECT match or without its rate);
- `Unlearn`: the MACs a bridge port learned while a rule was gone (a spoofer's), deleted;
- `ZebraVni`: a wait until zebra holds a VNI made again (a binding written before is not read);
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Union

from twin.config.steps import Step
from twin.kinds import MGMT_NETNS, MGMT_NS


@dataclass(frozen=True)
class Kernel:
    node: str
    steps: tuple[Step, ...]

    def text(self) -> str:
        return "; ".join(s.command() for s in self.steps)


@dataclass(frozen=True)
class Vtysh:
    node: str
    lines: tuple[str, ...]  # typed after `configure terminal`
    daemon: str | None = None  # sent to this daemon alone (`vtysh -d`: ospfd's interface settings on zebra -n)

    def text(self) -> str:
        return f"vtysh{f' -d {self.daemon}' if self.daemon else ''}: " + " / ".join(self.lines)


@dataclass(frozen=True)
class Reload:
    node: str
    removes: bool = True  # wait until FRR runs nothing its file lacks (a restore that only adds: no)

    def text(self) -> str:
        return f"frr-reload.py of {self.node}'s {'rendered ' if self.removes else ''}frr.conf"


@dataclass(frozen=True)
class NftDelete:
    node: str
    ns: str
    comment: str
    table: str = "bridge twin_ports"  # family and name
    chain: str = "ingress"

    def text(self) -> str:
        where = f"ip netns exec {self.ns} " if self.ns else ""
        return f'{where}nft delete rule {self.table} {self.chain} handle <the rule "{self.comment}">'


@dataclass(frozen=True)
class NftRule:
    node: str
    ns: str
    comment: str
    table: str  # family and name
    chain: str
    rule: str  # what replaces the rule, as nft reads it

    def text(self) -> str:
        where = f"nsenter --net={MGMT_NETNS} " if self.ns == MGMT_NS else f"ip netns exec {self.ns} " if self.ns else ""
        return f'{where}nft replace rule {self.table} {self.chain} handle <the rule "{self.comment}"> {self.rule}'


@dataclass(frozen=True)
class Unlearn:
    node: str
    ns: str
    port: str

    def text(self) -> str:
        return f"bridge fdb del <each MAC learned on {self.port}>"


@dataclass(frozen=True)
class ZebraVni:
    node: str
    vni: int

    def text(self) -> str:
        return f"until zebra holds VNI {self.vni}"


Action = Union[Kernel, Vtysh, Reload, NftDelete, NftRule, Unlearn, ZebraVni]


@dataclass(frozen=True)
class Element:
    """A safeguard or setting twin renders, and the proof that verify notices it gone."""

    id: str  # unique and stable: "<kind> <place>", selected by glob
    kind: str  # e.g. "port rule", "L2VNI device", "route-target import"
    node: str  # where it lives
    what: str  # in words
    groups: tuple[str, ...]  # verify groups that must notice
    expect: tuple[str, ...]  # regexes: a failing "group: name: message" matching one names it
    breaks: tuple[Action, ...]
    restores: tuple[Action, ...]
    note: str = field(default="", compare=False)  # why it carries a guarantee here, when not obvious

    @property
    def how(self) -> str:
        return "; ".join(a.text() for a in self.breaks)

    @property
    def restored_by(self) -> str:
        return "; ".join(a.text() for a in self.restores)

    def names(self, line: str) -> bool:
        """Does a failing check, as "group: name: message", name this element?"""
        return any(re.search(p, line) for p in self.expect)


def alt(names: Iterable[str]) -> str:
    """A regex group matching any of `names`, literally."""
    return "(" + "|".join(re.escape(n) for n in sorted(names)) + ")"


@dataclass(frozen=True)
class Exempt:
    """Something twin renders that carries no guarantee in this lab, and why (not proved)."""

    kind: str
    where: str
    why: str
