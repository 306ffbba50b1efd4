"""Elements of the host ports' zero-trust rules: every nftables rule, of every port, separately.

The rules are read from the ruleset twin renders for the VTEP (`twin.config.overlay.nft_rulesets`,
from `templates/nft/ports.nft.j2`): every rule that names a port (`iifname`) and says what it is
(`comment "host: what"`). One is deleted by its handle; the rendered ruleset is loaded again to
restore it (`nft -f`, a kernel step run in the node), and what its absence let a bridge learn
(another host's MAC) is forgotten.
"""

from __future__ import annotations

import re

from twin.config import overlay
from twin.config.backend import NETNS
from twin.config.steps import Step
from twin.lifecycle.context import LabContext
from twin.prove.element import Element, Exempt, Kernel, NftDelete, Unlearn

_RULE = re.compile(r'iifname "(?P<port>[^"]+)".* comment "(?P<comment>[^"]+)"')


def rules(text: str) -> list[tuple[str, str]]:
    """(port, comment) of every port rule of a rendered ruleset, in order."""
    return [(m["port"], m["comment"]) for m in map(_RULE.search, text.splitlines()) if m]


def rule_elements(ctx: LabContext) -> tuple[list[Element], list[Exempt]]:
    f, be, out = ctx.fabric, ctx.backend, []
    for v in f.vteps():
        files = overlay.nft_rulesets(f, v, be)
        spaces = (
            {overlay.nft_file(t.vrf): overlay.tenant_ns(t, be) for t in f.tenants_on(v)}
            if be == NETNS
            else {overlay.nft_file(None): ""}
        )
        for name, text in files.items():
            ns = spaces[name]
            for port, comment in rules(text):
                out.append(
                    Element(
                        f"port-rule {v}:{port} {comment.split(': ', 1)[-1]}",
                        "port rule",
                        v,
                        f'"{comment}" on {v}:{port}',
                        ("zerotrust",),
                        (rf"^zerotrust: {re.escape(comment)}: ",),
                        (NftDelete(v, ns, comment),),
                        (Kernel(v, (Step("nft", name, ns),)), Unlearn(v, ns, port)),
                    )
                )
    return out, []
