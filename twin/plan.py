"""`twin plan`: what a declarative change (an edited topology file) would do to a lab.

Pure: the lab's recorded intent and the new topology are both rendered, and
the plan lists topology-level changes (nodes, links, MTUs, tenants, segments,
attachments) and, per node, a unified diff of every rendered file: FRR config
and the kernel-side interfaces (`interfaces.sh`, nftables rules).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from twin.render import render_lab
from twin.topology.model import Fabric


@dataclass
class Plan:
    lab: str
    changes: list[str] = field(default_factory=list)            # topology-level, one line each
    diffs: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> file -> unified diff
    kernel: dict[str, list[str]] = field(default_factory=dict)      # node -> commands apply runs (twin.apply)
    frr: dict[str, str] = field(default_factory=dict)               # node -> "reload" or "restart (...)"

    @property
    def empty(self) -> bool:
        return not self.changes and not self.diffs

    def text(self) -> str:
        if self.empty:
            return f"lab {self.lab}: no change"
        lines = [f"lab {self.lab}: {len(self.changes)} change(s), {len(self.diffs)} node(s) with new config"]
        lines += [f"  {c}" for c in self.changes]
        for node, files in self.diffs.items():
            for fname, diff in files.items():
                lines.append(f"--- {node}/{fname}")
                lines += diff.splitlines()[2:]  # the ---/+++ header is replaced by the line above
        if self.frr:
            lines.append("FRR, per node:")
            lines += [f"  {node}: {how}" for node, how in sorted(self.frr.items())]
        for node, cmds in sorted(self.kernel.items()):
            lines.append(f"kernel on {node} (FRR reload between additions and removals):")
            lines += [f"  {c}" for c in cmds]
        return "\n".join(lines) + "\n"

    def as_dict(self) -> dict:
        return {"lab": self.lab, "changes": self.changes, "diffs": self.diffs, "frr": self.frr, "kernel": self.kernel}


def _links(f: Fabric) -> dict[frozenset[str], int]:
    return {frozenset((str(l.a), str(l.b))): l.mtu for l in f.links}


def make_plan(old: Fabric, new: Fabric, backend: str = "netns") -> Plan:
    plan = Plan(old.name)
    c = plan.changes
    for n in sorted(set(new.nodes) - set(old.nodes)):
        c.append(f"add node {n} ({new.nodes[n].kind})")
    for n in sorted(set(old.nodes) - set(new.nodes)):
        c.append(f"remove node {n} ({old.nodes[n].kind})")
    for n in sorted(set(old.nodes) & set(new.nodes)):
        o, w = old.nodes[n], new.nodes[n]
        for attr in ("kind", "asn", "loopback", "image", "drain"):
            if getattr(o, attr) != getattr(w, attr):
                c.append(f"change {n} {attr}: {getattr(o, attr)} -> {getattr(w, attr)}")
    ol, nl = _links(old), _links(new)
    for l in sorted(set(nl) - set(ol), key=sorted):
        c.append(f"add link {' <-> '.join(sorted(l))} (mtu {nl[l]})")
    for l in sorted(set(ol) - set(nl), key=sorted):
        c.append(f"remove link {' <-> '.join(sorted(l))}")
    for l in sorted(set(ol) & set(nl), key=sorted):
        if ol[l] != nl[l]:
            c.append(f"change mtu of {' <-> '.join(sorted(l))}: {ol[l]} -> {nl[l]}")
    for t in sorted(set(new.tenants) - set(old.tenants)):
        c.append(f"add tenant {t} (l3vni {new.tenants[t].l3vni}, VTEPs {', '.join(new.tenants[t].vteps())})")
    for t in sorted(set(old.tenants) - set(new.tenants)):
        c.append(f"remove tenant {t}")
    for t in sorted(set(old.tenants) & set(new.tenants)):
        o, w = old.tenants[t], new.tenants[t]
        for s in sorted(set(w.segments) - set(o.segments)):
            c.append(f"add segment {t}/{s} ({w.segments[s].subnet}, l2vni {w.segments[s].l2vni})")
        for s in sorted(set(o.segments) - set(w.segments)):
            c.append(f"remove segment {t}/{s}")
        for s in sorted(set(o.segments) & set(w.segments)):
            if o.segments[s] != w.segments[s]:
                c.append(f"change segment {t}/{s}")
        oa, wa = {a.host: a for a in o.attachments}, {a.host: a for a in w.attachments}
        for h in sorted(set(wa) - set(oa)):
            c.append(f"attach {h} to {t}/{wa[h].segment} at {wa[h].vtep}:{wa[h].port} ({wa[h].address})")
        for h in sorted(set(oa) - set(wa)):
            c.append(f"detach {h} from {t}/{oa[h].segment}")
        for h in sorted(set(oa) & set(wa)):
            if oa[h] != wa[h]:
                c.append(f"change attachment of {h} in {t}")
    before, after = render_lab(old, backend), render_lab(new, backend)
    for node in sorted(set(before) | set(after)):
        files = {}
        for fname in sorted(set(before.get(node, {})) | set(after.get(node, {}))):
            a, b = before.get(node, {}).get(fname, ""), after.get(node, {}).get(fname, "")
            if a != b:
                files[fname] = "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True),
                                                            f"{node}/{fname}", f"{node}/{fname}"))
        if files:
            plan.diffs[node] = files
    return plan
