"""The NVUE nodes' part of a declarative change (an NVUE directory, or an edited topology on a lab
whose nodes run NVUE): each NVUE node's files, and its kernel plane going from the plane its
running startup.yaml makes on the old intent to the one its new (or same) startup.yaml makes on
the new intent (`twin.nvue`), both ways (the undo), with the VNIs zebra knows after each.
"""

from __future__ import annotations

from twin.change.work import Work
from twin.config.reconcile import NodeDelta, node_delta
from twin.config.steps import Step
from twin.lifecycle.context import LabContext
from twin.nvue import kernelplane
from twin.nvue.configs import build, running
from twin.nvue.load import NvueFile
from twin.nvue.plane import Plane, extras_delta
from twin.nvue.tree import diff, leaves, show
from twin.topology.model import Fabric

SHOWN = 40  # NVUE changes listed per node in a plan


def nvue_work(ctx: LabContext, w: Work, old: Fabric, new: Fabric, files: dict[str, NvueFile] | None = None) -> None:
    """The NVUE nodes' part of `w` (intent `old` -> `new`; `files`: their new NVUE files, else the
    ones they run): their files, kernel deltas both ways, VNIs and what the plan says of them. On
    the same intent, only the nodes of `files` (the others' planes are the same)."""
    before = running(ctx.dir, old, ctx.backend, ctx.shaping, nodes=files if files is not None and old is new else None)
    nfs = {n: x.file for n, x in before.items()} | (files or {})
    k = kernelplane.recorded(ctx.dir)
    after, notes = build(nfs, new, ctx.backend, ctx.shaping, k.layout, k.bonds)
    for node, x in after.items():
        b = before[node]
        w.old_files[node], w.files[node] = dict(b.files), dict(x.files)
        w.deltas.pop(node, None)
        if d := _delta(b.plane, x.plane, ctx):
            w.deltas[node] = d
            w.undo[node] = _delta(x.plane, b.plane, ctx)
        w.vnis[node], w.old_vnis[node] = x.plane.vnis, b.plane.vnis
        if w.plan is not None:
            w.plan.changes += _changes(node, b.file.tree, x.file.tree)
            if d:
                w.plan.kernel[node] = d.commands()
    if w.plan is not None:
        w.plan.changes += [f"note: {n}" for n in notes if files is None or any(f.source in n for f in files.values())]


def _delta(a: Plane, b: Plane, ctx: LabContext) -> NodeDelta:
    d = node_delta(a.fabric, b.fabric, a.node, ctx.backend, ctx.shaping)
    # what the new plane makes or takes that the old one lets go only after FRR's reload (a VNI or a
    # port moving to another VRF: an SVI in another VRF) is let go first
    taken = {s.dev for s in d.add if s.op in ("vxlan", "bridge", "move")}
    first = [s for s in d.remove if s.dev in taken]
    d.add, d.remove = first + d.add, [s for s in d.remove if s.dev not in taken]
    add, remove = extras_delta(
        a.extras,
        b.extras,
        {s.dev for s in d.add if s.op in ("bridge", "vxlan")},
        {s.dev for s in d.add + d.remove if s.op == "del"},
    )
    d.add += add
    d.remove = remove + d.remove
    if not a.vnis and b.vnis and not d.bind:
        # EVPN (or VXLAN) on again: zebra (FRR 10.3) takes the workloads' bindings as local only
        # once they are written again, so they are deleted and written again once it knows the VNIs
        d.bind = [Step("unneigh", s.dev, s.ns, {"ip": s.args["ip"]}) for s in b.bindings] + list(b.bindings)
    return d


def _changes(node: str, old: dict, new: dict) -> list[str]:
    """The NVUE edits, as `nv config diff` would list them: set PATH VALUE / unset PATH."""
    out = []
    for doc in diff(old, new):
        verb, body = next(iter(doc.items()))
        for path, value in leaves(body).items():
            out.append(f"{node}: {verb} {show(path)}" + ("" if verb == "unset" or value == {} else f" {value}"))
    return out[:SHOWN] + ([f"{node}: ... and {len(out) - SHOWN} more NVUE changes"] if len(out) > SHOWN else [])
