"""NVUE's RoCE QoS as the node runs it, with what this kernel has: `qos roce` (enable, mode
lossless|lossy: Cumulus's RoCE defaults, RoCE's DSCP 26 to switch priority 3, CNPs' DSCP 48 to 6,
PFC on 3 when lossless, ECN on traffic class 3 at 150000-1500000 bytes, probability 100), with the
overrides of `qos mapping default-global dscp N switch-priority P`, `qos pfc default-global
switch-priority P` and `qos congestion-control default-global traffic-class T` (`ecn`,
`min-threshold`, `max-threshold`, `probability`).

On every cabled port of the node (each in its namespace) a tc batch file (`qos-<port>.tc`, run in
the node), with RoCE QoS on or off: an HTB root (`ROOT`, made once at `twin up`, never replaced) whose
eight classes are the traffic classes (`1:1T`; what no filter sends elsewhere in `1:10`), the higher
the class the higher its priority (CNPs first). With `qos roce` off no filter leads anywhere but
`1:10` (every queue short, nothing shaped: the classes' ceiling is above any veth's rate); on, u32
filters send each DSCP of the mapping to its class, each at a preference of its own (`prio`), the
outer header of VXLAN frames carrying the inner DSCP (`tos inherit`). Turning RoCE QoS on or off, or
changing it, is the same batch run again: classes and queues changed in place, filters made anew,
no root qdisc replaced (which drops what the port sends meanwhile: 1-54 ms measured here).
What cannot be real in software is modelled and said so:

- PFC: no pause frames between veths. A lossless class back-pressures instead of tail-dropping:
  its queue is deep (`LOSSLESS_QUEUE` packets) where a lossy class's is short (`LOSSY_QUEUE`);
- ECN marking at a queue depth needs RED: where the kernel has it and the lab opts in
  (`TWIN_NVUE_RED=on`, probed at `twin up`: `twin.nvue.kernelplane`), each ECN class's queue is a
  RED qdisc with its thresholds and `ecn`; else the thresholds are kept, not run (said at `twin up`);
- the egress scheduler's weights, buffers, cable length, the rest of `qos`: stored.

A port twin's own services shape (a workload's rate limit: a TBF root) keeps its shaping, said, and
gets no HTB root; a port a rate limit comes to later on day 2 has its root replaced by the TBF, which
the QoS step leaves alone (`twin.nvue.routed.undo`: nothing to undo).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from twin.config.steps import Step
from twin.nvue.tree import get

ENV = "TWIN_NVUE_RED"  # on: ECN classes on a RED qdisc, where the kernel has one
PROFILE = "default-global"
ROCE_DSCP, CNP_DSCP = 26, 48
ROCE_SP, CNP_SP = 3, 6
ECN_DEFAULT = (150000, 1500000, 100)  # Cumulus's RoCE ECN: min, max threshold (bytes), probability (%)
LOSSLESS_QUEUE, LOSSY_QUEUE = 10000, 1000  # packets
LINE = "100gbit"  # the HTB's ceiling: a veth has no speed; nothing is held back
# the HTB's buckets: tc's default (a few µs of the rate) throttles a back-to-back burst, whose frames the
# qdisc's timer then sends later, from whichever CPU, so a flow arrived out of order and a CNP's pacing
# misjudged; 1 MB holds any burst of twin's (2,000 RoCE frames at 20,000/s stay within 1gbit), queues none
BURST = "burst 1mb cburst 1mb"
MODES = ("lossless", "lossy")
ROOT = "htb 1: default 10"  # every port's root qdisc (kind, handle, options): the classes' HTB, the rest in 1:10
CLASSES = range(8)  # the traffic classes every port has, as a switch port has its eight queues


@dataclass(frozen=True)
class Qos:
    """A node's RoCE QoS: DSCP -> traffic class, the lossless (PFC) classes and the ECN ones."""

    mode: str
    classes: dict[int, int]  # DSCP -> traffic class (= switch priority)
    lossless: frozenset[int]
    ecn: dict[int, tuple[int, int, int]] = field(default_factory=dict)  # class -> min, max, probability

    @property
    def roce(self) -> int:
        return self.classes.get(ROCE_DSCP, 0)

    @property
    def cnp(self) -> int:
        return self.classes.get(CNP_DSCP, 0)

    def used(self) -> list[int]:
        return sorted({0, *self.classes.values()})


def batch(dev: str, q: Qos | None, red: bool) -> str:
    """The tc batch of one port, on its HTB root (`ROOT`, made first where the port has none): the
    whole of its classes and filters for RoCE QoS `q` (None: off), whatever the port held before, so
    one batch takes a port from any state to this one in place. Every traffic class is there either
    way (`CLASSES`: nothing to delete, whose queue would drop what it holds), its queue lossless
    (deep), lossy or RED; the filters are made anew (none with QoS off: everything in `1:10`). The
    root is never replaced once there: replacing a running port's root qdisc drops what the port sends
    in that instant (the kernel swaps in a queue that drops while it grafts)."""
    lines = [
        f"filter del dev {dev} parent 1:",
        f"class replace dev {dev} parent 1: classid 1:1 htb rate {LINE} ceil {LINE} {BURST} quantum 60000",
    ]
    for tc in CLASSES:
        lines.append(
            f"class replace dev {dev} parent 1:1 classid 1:1{tc} htb rate 1gbit ceil {LINE} {BURST} "
            f"quantum 60000 prio {7 - tc}"
        )
        if q is not None and red and tc in q.ecn:  # a handle of its own: a class's queue changing kind is grafted anew
            lo, hi, p = q.ecn[tc]
            lines.append(
                f"qdisc replace dev {dev} parent 1:1{tc} handle 2{tc}: red limit {4 * hi} min {lo} "
                f"max {hi} avpkt 1500 burst {max(1, (2 * lo + hi) // 4500)} probability {p / 100:g} "
                f"bandwidth {LINE} ecn"
            )
        else:
            n = LOSSLESS_QUEUE if q is not None and tc in q.lossless else LOSSY_QUEUE
            lines.append(f"qdisc replace dev {dev} parent 1:1{tc} handle 1{tc}: pfifo limit {n}")
    for dscp, tc in sorted(q.classes.items()) if q is not None else ():
        lines.append(
            f"filter add dev {dev} parent 1: protocol ip prio {prio(dscp)} u32 match ip dsfield {dscp << 2:#04x} "
            f"0xfc flowid 1:1{tc}"
        )
    return "\n".join(lines) + "\n"


def prio(dscp: int) -> int:
    """The preference of DSCP `dscp`'s filter: one of its own (DSCPs match apart, their order does not
    matter), so one mapping can be told and taken apart (`tc filter del ... prio P`: `--prove`)."""
    return dscp + 1


def class_handle(tc: int) -> int:
    """The HTB class of traffic class `tc` on a port (1:1T), as netlink gives its handle."""
    return 0x10010 + tc


def of(tree: dict) -> Qos | None:
    """The node's RoCE QoS (None: `qos roce` is not enabled)."""
    roce = get(tree, ("qos", "roce"))
    if roce is None or get(roce, ("enable",), True) is False:
        return None
    mode = get(roce, ("mode",), "lossless")
    classes = {ROCE_DSCP: ROCE_SP, CNP_DSCP: CNP_SP}
    classes.update(
        {
            int(d): sp
            for d, m in get(tree, ("qos", "mapping", PROFILE, "dscp"), {}).items()
            if isinstance(sp := get(m, ("switch-priority",)), int)
        }
    )
    pfc = get(tree, ("qos", "pfc", PROFILE, "switch-priority"))
    lossless = frozenset() if mode == "lossy" else frozenset(int(p) for p in pfc) if pfc else frozenset({ROCE_SP})
    ecn = {ROCE_SP: ECN_DEFAULT}
    for t, c in get(tree, ("qos", "congestion-control", PROFILE, "traffic-class"), {}).items():
        if get(c, ("ecn",)) == "disable":
            ecn.pop(int(t), None)
            continue
        lo, hi, p = ecn.get(int(t), ECN_DEFAULT)
        ecn[int(t)] = (get(c, ("min-threshold",), lo), get(c, ("max-threshold",), hi), get(c, ("probability",), p))
    return Qos(mode, classes, lossless, ecn)


def file(dev: str) -> str:
    return f"qos-{dev}.tc"


def attach(plane: Any, tree: dict, red: bool, where: dict[str, tuple[str, str]]) -> dict[str, str]:
    """A node's plane (`twin.nvue.plane.Plane`) with its traffic classes on every cabled port, RoCE QoS on
    or off (`batch`): the steps (last, plane extras `("qos", port)`: a day-2 change of `qos`, on, off or
    another map, runs the port's new batch), the notes; returns its files."""
    q = of(tree)
    plane.qos = q
    node = plane.fabric.nodes[plane.node]
    shaped = {s.dev for s in plane.steps if s.op in ("tbf", "ingress")}
    files: dict[str, str] = {}
    for name, (ns, dev) in sorted(where.items()):
        if dev not in node.ports_by_name or dev not in plane.devices.values():
            continue
        if dev in shaped:
            if q is not None:
                plane.notes.append(f"{plane.node}: {name}: qos roce not applied: a workload's rate limit shapes it")
            continue
        text = files[file(dev)] = batch(dev, q, red)
        sha = hashlib.sha256(text.encode()).hexdigest()[:16]
        step = Step("tc-batch", file(dev), ns, {"sha": sha, "port": dev, "root": ROOT})
        plane.extras[("qos", dev)] = step
        plane.steps.append(step)
    if q is None:
        return files
    if q.ecn and not red:
        plane.notes.append(
            f"{plane.node}: qos ECN thresholds (traffic class {', '.join(map(str, sorted(q.ecn)))}): "
            f"kept, not run: marking CE at a queue depth needs RED ({ENV}=on where the kernel has it)"
        )
    if q.lossless:
        plane.notes.append(
            f"{plane.node}: qos pfc (switch priority {', '.join(map(str, sorted(q.lossless)))}): "
            "modelled: no pause frames in software; a lossless class queues deep instead of dropping"
        )
    return files
