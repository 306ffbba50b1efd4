"""Link faults: both ends of a link down or up, random loss on a port and its removal."""

from __future__ import annotations

import json
from typing import Any

from twin.base.errors import TwinError
from twin.change.base import register
from twin.change.fault_base import Fault, Param, in_ns, link_of, port_ref, set_port
from twin.config import droplog
from twin.lifecycle.context import LabContext

LOSS_TABLE = "twin_loss_{port}"  # nftables table of a loss fault, per port (netdev family)
LOSS_PRIORITY = -500  # before anything else on the device


@register
class LinkDown(Fault):
    key, summary, undone_by = "link-down", "set both ends of the link on NODE:PORT down", "link-up"

    def act(self, ctx: LabContext) -> dict[str, Any]:
        a, b = link_of(ctx, self.target)
        for ref in (a, b):
            set_port(ctx, ref, up=False)
        return {"ends": f"{a}, {b}"}


@register
class LinkUp(Fault):
    key, summary, undone_by = "link-up", "set both ends of the link on NODE:PORT up", "link-down"
    breaks_intent = False

    def act(self, ctx: LabContext) -> dict[str, Any]:
        a, b = link_of(ctx, self.target)
        for ref in (a, b):
            set_port(ctx, ref, up=True)
        return {"ends": f"{a}, {b}"}


def loss_ruleset(port: str, percent: int) -> str:
    """nftables: drop `percent`% of the frames entering and leaving `port`, at random, counted."""
    table = LOSS_TABLE.format(port=port)
    match = "" if percent >= 100 else f"numgen random mod 100 < {percent} "  # 100%: a black hole
    rule = f'{match}counter {droplog.log("loss", f"{percent}%")} drop comment "twin fault: {percent}% loss"'
    chains = "\n".join(
        f'\tchain {hook} {{\n\t\ttype filter hook {hook} device "{port}" priority {LOSS_PRIORITY}; policy accept;\n'
        f"\t\t{rule}\n\t}}"
        for hook in ("ingress", "egress")
    )
    return f"table netdev {table}\ndelete table netdev {table}\ntable netdev {table} {{\n{chains}\n}}\n"


@register
class LinkLoss(Fault):
    key, summary, undone_by = (
        "link-loss",
        "drop PERCENT% of the frames crossing NODE:PORT, at random",
        "link-loss-clear",
    )
    params = (Param("percent", int, "1-100", low=1, high=100),)

    def act(self, ctx: LabContext) -> dict[str, Any]:
        """With tc netem (probed by trying it): netem on the egress of both ends of the link.
        Without it: an nftables netdev table on that port, whose ingress and egress hooks
        drop `numgen random mod 100 < percent`."""
        (percent,) = self.args
        a, b = link_of(ctx, self.target)
        held = [
            f"{ref}: {why}"
            for ref in (a, b)
            if (why := owned_root(ctx.exec(ref.node).run(in_ns(ref, ["tc", "qdisc", "show", "dev", ref.port])).stdout))
        ]
        if held:  # netem as the root would replace what twin runs there (and its removal would delete it)
            unused = "the port's root qdisc is twin's: " + "; ".join(held)
        else:
            netem = ["tc", "qdisc", "replace", "dev", "{}", "root", "netem", "loss", f"{percent}%"]
            tried = ctx.exec(a.node).run(in_ns(a, [w.format(a.port) for w in netem]))
            if tried.ok:
                ctx.exec(b.node).check(in_ns(b, [w.format(b.port) for w in netem]))
                return {"mechanism": "netem", "percent": percent, "where": f"egress of {a} and {b}"}
            said = (tried.stderr or tried.stdout).strip().splitlines()
            unused = said[0] if said else f"tc exited {tried.rc}"
        ruleset = loss_ruleset(a.port, percent)
        ctx.exec(a.node).check(in_ns(a, ["sh", "-c", 'printf "%s" "$1" | nft -f -', "nft", ruleset]))
        return {
            "mechanism": "nftables",
            "percent": percent,
            "where": f"netdev ingress+egress of {a}, table {LOSS_TABLE.format(port=a.port)}",
            "netem": unused,
            "ruleset": ruleset,
        }


def owned_root(shown: str) -> str:
    """What twin runs as the root qdisc of a port, from `tc qdisc show dev PORT` ("": nothing of twin's,
    the kernel's default): an HTB root is the port's traffic classes (NVUE's RoCE QoS, `twin.nvue.qos`),
    a TBF a workload's rate limit (`twin.config.services`). A loss fault leaves it in place."""
    for line in shown.splitlines():
        words = line.split()
        if len(words) >= 4 and words[0] == "qdisc" and words[3] == "root":
            kind = words[1]
            if kind == "htb":
                return "htb (traffic classes: RoCE QoS)"
            if kind == "tbf":
                return "tbf (a rate limit)"
    return ""


def loss_dropped(ctx: LabContext, spec: str) -> int | None:
    """Frames an nftables loss fault on `spec` dropped so far (None: no such fault)."""
    ref = port_ref(ctx, spec)
    res = ctx.exec(ref.node).run(in_ns(ref, ["nft", "-j", "list", "table", "netdev", LOSS_TABLE.format(port=ref.port)]))
    if not res.ok:
        return None
    try:
        items = json.loads(res.stdout)["nftables"]
    except (ValueError, KeyError) as e:
        raise TwinError(f"{ctx.name}/{ref}: unreadable nft output ({e})") from None
    return sum(
        x["counter"]["packets"] for item in items if "rule" in item for x in item["rule"]["expr"] if "counter" in x
    )


@register
class LinkLossClear(Fault):
    key, summary = "link-loss-clear", "remove random loss from the link on NODE:PORT"
    breaks_intent = False

    def act(self, ctx: LabContext) -> dict[str, Any]:
        a, b = link_of(ctx, self.target)
        dropped = loss_dropped(ctx, self.target)
        removed = []
        if dropped is not None:
            ctx.exec(a.node).check(in_ns(a, ["nft", "delete", "table", "netdev", LOSS_TABLE.format(port=a.port)]))
            removed.append(f"nftables table on {a}")
        for ref in (a, b):
            ex = ctx.exec(ref.node)
            if " netem " in ex.run(in_ns(ref, ["tc", "qdisc", "show", "dev", ref.port, "root"])).stdout:
                ex.check(in_ns(ref, ["tc", "qdisc", "del", "dev", ref.port, "root"]))
                removed.append(f"netem on {ref}")
        return {
            "removed": "; ".join(removed) or "nothing: no loss fault on this link",
            **({"dropped": dropped} if dropped is not None else {}),
        }
