"""What every fault shares: targets (a port and its link, or a node), arguments, and the
Result with its undo. The faults themselves are in `link_faults` and `node_faults`.

Faults as registered changes, for rehearsals and tests.

Each fault acts on a running lab and returns a Result saying what was done, how,
and how to revert it (`result.revert()`):

    f = faults.link_down(lab, "dpu1:p0")     # both ends of the link, over netlink
    ...                                       # watch the fabric react
    f.revert()                                # = faults.link_up(lab, "dpu1:p0")

Links: `link-down`/`link-up` (both ends), `link-loss`/`link-loss-clear` (random
loss on a port: tc netem where the kernel has it and the port's root qdisc is not twin's, else
nftables). Nodes:
`node-stop`, `node-kill`, `node-start`, `node-restart` (Docker); a node twin stops
hands its ends of its links to a namespace of the lab's (its peers keep their ports), and
`node-start` takes them back into the container's new network namespace and configures it
as bring-up would. `daemon-kill` kills an FRR daemon (watchfrr
restarts it). The registry key is each fault's only name: `twin fault KEY`,
`fault:KEY:TARGET[:ARG]` in `twin rehearse`, and `kind` in JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from twin.base.errors import NetlinkFailed, TwinError
from twin.change.base import REGISTRY, Change, Result, Say
from twin.config import overlay
from twin.config.naming import link_alias
from twin.lifecycle.context import LabContext
from twin.observe import store
from twin.runtime import set_link


@dataclass(frozen=True)
class Param:
    """An argument of a fault after its target: `fault:KEY:TARGET:ARG`, or `twin fault KEY LAB TARGET ARG`."""

    name: str
    type: type
    help: str
    default: Any = None  # None: required
    low: int | None = None  # allowed range of an int
    high: int | None = None

    def parse(self, raw: str | None, where: str) -> Any:
        if raw is None:
            if self.default is None:
                raise TwinError(f"{where}: {self.name} is missing ({self.help})")
            return self.default
        if self.type is int:
            low, high = self.low if self.low is not None else 0, self.high
            if not raw.isdigit() or not low <= int(raw) or (high is not None and int(raw) > high):
                within = f"in {low}..{high}" if high is not None else f"of at least {low}"
                raise TwinError(f"{where}: {self.name} must be a number {within}, not {raw!r}")
            return int(raw)
        return raw


@dataclass(frozen=True)
class PortRef:
    """A port of a node and the namespace it lives in ("" = the node's own, else a tenant netns)."""

    node: str
    port: str
    ns: str = ""

    def __str__(self) -> str:
        return f"{self.node}:{self.port}" + (f" (tenant namespace {self.ns})" if self.ns else "")


def port_ref(ctx: LabContext, spec: str) -> PortRef:
    """'node:port' -> PortRef, or a TwinError naming the nodes or ports that exist."""
    node, sep, port = spec.partition(":")
    if not sep or not node or not port:
        raise TwinError(f"{spec!r}: a port is given as NODE:PORT, e.g. dpu1:p0")
    node = ctx.node(node)  # as the user typed it: `PC1` is pc1
    ports = ctx.fabric.nodes[node].ports_by_name
    if port not in ports:
        raise TwinError(f"node {node!r} has no port {port!r}; ports: {', '.join(ports) or 'none'}")
    return PortRef(node, port, overlay.port_ns(ctx.fabric, node, port, ctx.backend))


def link_of(ctx: LabContext, spec: str) -> tuple[PortRef, PortRef]:
    """Both ends of the link on port `spec`, that end first."""
    here = port_ref(ctx, spec)
    p = ctx.fabric.nodes[here.node].ports_by_name[here.port]
    return here, PortRef(p.peer_node, p.peer_port, overlay.port_ns(ctx.fabric, p.peer_node, p.peer_port, ctx.backend))


def set_port(ctx: LabContext, ref: PortRef, up: bool, pid: int | None = None) -> None:
    pid = pid or ctx.pid(ref.node)
    p = ctx.fabric.nodes[ref.node].ports_by_name[ref.port]
    alias = link_alias(ctx.name, f"{ref.node}:{ref.port}", f"{p.peer_node}:{p.peer_port}")
    try:
        found = set_link(pid, ref.ns, ref.port, up, alias)
    except (NetlinkFailed, OSError) as e:
        raise TwinError(f"{ctx.name}/{ref}: cannot set it {'up' if up else 'down'}: {e}") from None
    if not found:
        raise TwinError(f"{ctx.name}/{ref}: no such interface in the node; is its link wired?")


def in_ns(ref: PortRef, cmd: list[str]) -> list[str]:
    return (["ip", "netns", "exec", ref.ns] if ref.ns else []) + cmd


class Fault(Change):
    """A fault on a port (NODE:PORT, the link it belongs to) or on a node."""

    fault: ClassVar[bool] = True
    breaks_intent: ClassVar[bool] = True
    on: ClassVar[str] = "port"  # "port" or "node": what TARGET names
    params: ClassVar[tuple[Param, ...]] = ()
    undone_by: ClassVar[str | None] = None  # the fault that reverts this one

    def __init__(self, target: str, *args: Any):
        self.target, self.args = target, args

    @classmethod
    def parse(cls, ctx: LabContext, target: str, raw: list[str], where: str) -> "Fault":
        if len(raw) > len(cls.params):
            raise TwinError(f"{where}: too many arguments; {cls.usage()}")
        args = [p.parse(raw[i] if i < len(raw) else None, where) for i, p in enumerate(cls.params)]
        return cls(cls.resolve_target(ctx, target), *args)  # a bad target is refused before anything happens

    @classmethod
    def usage(cls) -> str:
        tail = "".join(f":{p.name.upper()}" if p.default is None else f"[:{p.name.upper()}]" for p in cls.params)
        return f"fault:{cls.key}:{'NODE:PORT' if cls.on == 'port' else 'NODE'}{tail}"

    def resolve(self, ctx: LabContext) -> None:
        self.resolve_target(ctx, self.target)

    @classmethod
    def resolve_target(cls, ctx: LabContext, target: str) -> str:
        """The target as the lab names it (a node as the user typed it: `PC1` is pc1), or a TwinError."""
        if cls.on == "port":
            ref = port_ref(ctx, target)
            return f"{ref.node}:{ref.port}"
        return ctx.node(target)

    def describe(self) -> str:
        return " ".join([self.key, self.target, *map(str, self.args)])

    def inverse(self, ctx: LabContext) -> Fault | None:
        return fault_types()[self.undone_by](self.target) if self.undone_by else None

    def apply(self, ctx: LabContext, say: Say = lambda _: None, **options: Any) -> Result:
        with ctx.writing(f"twin fault {self.describe()}"):
            details = self.act(ctx)
        store.note(
            ctx.dir,
            "action",
            f"fault {self.describe()}",
            node=self.target.split(":")[0],
            **({"port": self.target.split(":", 1)[1]} if self.on == "port" else {}),
        )
        undo = self.inverse(ctx)
        return Result(
            ctx.name,
            self.key,
            self.target,
            [self.describe()],
            details,
            undo=f"twin fault {undo.key} {ctx.name} {undo.target}" if undo else self.self_revert,
            revert_with=(lambda: undo.apply(ctx)) if undo else None,
        )

    self_revert: ClassVar[str] = ""

    def act(self, ctx: LabContext) -> dict[str, Any]:
        raise NotImplementedError


def fault_types() -> dict[str, type[Fault]]:
    """The registered faults, by name."""
    return {k: c for k, c in REGISTRY.items() if c.fault and issubclass(c, Fault)}
