"""Route targets of every tenant across its VTEPs: does each VTEP import what the others export?

A wrong route target in one VTEP's config shows as routes missing from VRFs; this
check names the cause: for each VNI of a tenant (its L3VNI, and each local L2VNI),
the route targets a VTEP imports and those of the other VTEPs that export it.
FRR derives RTs as ASN:VNI unless the config sets them, and an auto-derived import
RT matches any ASN (FRR compares the VNI alone then), so VTEPs of different ASNs
agree; two RTs whose local part is the VNI are taken to match for that reason.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from twin.base import timeouts
from twin.base.errors import TwinError
from twin.lifecycle.context import LabContext
from twin.verify.result import Check

GROUP = "control"
RTS = "show bgp l2vpn evpn vni json"


def rt_table(doc: dict) -> dict[int, tuple[list[str], list[str]]]:
    """`show bgp l2vpn evpn vni json` -> VNI -> (import RTs, export RTs)."""
    out = {}
    for entry in doc.values() if isinstance(doc, dict) else ():
        if isinstance(entry, dict) and "vni" in entry:
            out[int(entry["vni"])] = (list(entry.get("importRTs", [])), list(entry.get("exportRTs", [])))
    return out


def matches(imported: list[str], exported: list[str], vni: int) -> bool:
    auto = f":{vni}"
    return any(i == e or (i.endswith(auto) and e.endswith(auto)) for i in imported for e in exported)


def problems(vtep: str, vni: int, tables: dict[str, dict], others: list[str]) -> list[str]:
    """What VTEP `vtep` cannot import of VNI `vni` from each of `others` (pure)."""
    mine = tables.get(vtep, {}).get(vni)
    if mine is None:
        return []  # the VNI itself is missing: the vni check says so
    out = []
    for other in others:
        theirs = tables.get(other, {}).get(vni)
        if theirs is not None and not matches(mine[0], theirs[1], vni):
            out.append(
                f"imports route-target {', '.join(mine[0]) or 'none'} for VNI {vni}, but {other} exports "
                f"{', '.join(theirs[1]) or 'none'}: none of {other}'s routes of it are taken"
            )
    return out


def run(ctx: LabContext) -> list[Check]:
    vteps = ctx.intent.vteps()
    if not vteps:
        return []

    def read(node: str) -> dict:
        try:
            (doc,) = ctx.exec(node).vtysh_json(RTS, timeout=timeouts.VTYSH)
            return rt_table(doc)
        except TwinError:
            return {}  # unreadable: the bgp and vni checks of the node say why

    with ThreadPoolExecutor(8) as pool:
        tables = dict(zip(vteps, pool.map(read, vteps)))
    checks = []
    for v in vteps:
        for t in ctx.intent.nodes[v].tenants:
            found = problems(v, t.l3vni, tables, [u for u in t.loopbacks if u != v])
            for seg in t.segments:
                found += problems(v, seg.l2vni, tables, sorted(seg.remote_vteps))
            checks.append(
                Check(
                    GROUP,
                    f"route-targets {v} {t.tenant}",
                    not found,
                    "; ".join(found),
                    {"vnis": {x: tables.get(v, {}).get(x) for x in sorted(t.vnis)}},
                )
            )
    return checks


__all__ = ["run", "rt_table", "matches", "problems"]
