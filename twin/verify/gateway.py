"""Internet gateways on the VTEPs, judged from what really happens (`twin verify --only gateway`).

Announcements (read from FRR): every public address a tenant goes out as is in
the internet's BGP table, originated by the VTEP that NATs it; every gateway
VTEP has the internet's default route.

Traffic (probes with a tag of their own, sent and captured at once, see
`gateway_probes`): every host that may go out reaches every test address of the
internet; the internet sees its tenant's public address (never a private one,
never another tenant's), and the reply comes back to that host only; hosts that
may not go out do not get there; the fabric's loopbacks are not reachable
through a gateway; unsolicited inbound reaches no host, a forward only its own;
tenants meet only as the internet would, at public addresses; unsolicited inbound is
dropped without an answer (an ICMP error back to the internet would say it was not,
and name a private address of the tenant).

A failure names the reason it can see: a public prefix a VTEP does not announce
(or that the internet never learned), a NAT rule missing from the gateway's
nftables table.
"""

from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

from twin.base import timeouts
from twin.base.errors import TwinError
from twin.config.backend import NETNS
from twin.config.services import gateway_file, gateway_table
from twin.intent.gateway import DEFAULT, public_name
from twin.lifecycle.context import LabContext
from twin.runtime import FRR_BGP_IPV4, bgp_origins, has_host_route
from twin.topology.model import Attachment, Fabric, Tenant
from twin.traffic import flows as F
from twin.traffic import packets
from twin.traffic.engine import Session, new_run_id
from twin.verify.gateway_probes import Builder, Probe, edge_taps, edges
from twin.verify.result import Check

GROUP = "gateway"


def applies(fabric: Fabric) -> bool:
    return any(t.internet for t in fabric.tenants.values())


def run(ctx: LabContext) -> tuple[list[Check], dict]:
    fabric = ctx.fabric
    if not applies(fabric):
        return [Check(GROUP, "gateway", False, "no tenant of this lab has internet access (tenants.*.internet)")], {}
    if not edges(fabric):
        return [Check(GROUP, "gateway", False, "the lab has no internet node")], {}
    checks, tables = announcements(ctx)
    run_id = new_run_id()
    probes = Builder(ctx, run_id).build()
    seen = _send(ctx, probes, run_id)
    nat = _nat_rules(ctx)
    checks += [_judge(ctx, p, seen.get(p.id, {}), nat) for p in probes]
    return checks, {
        "public": {p: {"tenant": t, "vtep": v} for p, (t, v) in fabric.public().items()},
        "probes": len(probes),
        "bgp": tables,
    }


# --- announcements ------------------------------------------------------------------------
def announcements(ctx: LabContext) -> tuple[list[Check], dict]:
    fabric = ctx.fabric
    gateways = sorted({v for _, v in fabric.public().values()})
    nodes = edges(fabric) + gateways
    with ThreadPoolExecutor(8) as pool:
        docs = dict(zip(nodes, pool.map(lambda n: _bgp(ctx, n), nodes)))
    asn = {n: fabric.nodes[n].asn for n in fabric.nodes}
    checks = []
    for prefix, (tenant, vtep) in sorted(fabric.public().items()):
        for e in edges(fabric):
            doc = docs[e]
            got = doc.get(prefix) if isinstance(doc, dict) else None
            problems = []
            if isinstance(doc, str):
                problems.append(doc)
            elif not got:
                problems.append(
                    f"{e} has no route to {tenant}'s public address {prefix}: " + _why(ctx, docs, vtep, prefix)
                )
            elif got != {asn[vtep]}:
                problems.append(
                    f"{e} learned {prefix} from AS {', '.join(map(str, sorted(got)))}, not from {vtep} "
                    f"(AS {asn[vtep]}), which NATs {tenant} to it"
                )
            checks.append(
                Check(
                    GROUP,
                    f"{prefix} ({tenant}) announced by {vtep}, learned by {e}",
                    not problems,
                    "; ".join(problems),
                    {"origins": sorted(got or [])},
                )
            )
    for v in gateways:
        doc = docs[v]
        ok = isinstance(doc, dict) and DEFAULT in doc
        msg = (
            doc
            if isinstance(doc, str)
            else ""
            if ok
            else (f"{v} has no default route from the internet ({', '.join(edges(fabric))}): its tenants cannot go out")
        )
        checks.append(Check(GROUP, f"{v} has the internet's default route", ok, msg))
    return checks, {n: sorted(d) if isinstance(d, dict) else d for n, d in docs.items()}


def _bgp(ctx: LabContext, node: str) -> dict[str, set[int]] | str:
    try:
        (doc,) = ctx.exec(node).vtysh_json(FRR_BGP_IPV4, timeout=timeouts.VTYSH)
    except TwinError as e:
        return f"cannot read the BGP table of {node}: {str(e).splitlines()[0]}"
    return bgp_origins(doc)


def _why(ctx: LabContext, docs: dict, vtep: str, prefix: str) -> str:
    """Why the internet lacks a public prefix, as far as the gateway VTEP shows."""
    mine = docs.get(vtep)
    if isinstance(mine, dict) and 0 in mine.get(prefix, set()):
        return f"{vtep} announces it, but it never arrived (a filter or a session on the way?)"
    with ctx.ipr(vtep) as ipr:
        routed = has_host_route(ipr, prefix)
    if routed:
        return (
            f"{vtep} does not announce it: `network {prefix}` is missing from its BGP configuration "
            f"(`vtysh -c 'show running-config'` on {vtep})"
        )
    return f"{vtep} has no route to it towards the tenant's gateway, so BGP cannot announce it"


# --- traffic ------------------------------------------------------------------------------
def _send(ctx: LabContext, probes: list[Probe], run_id: int) -> dict[int, dict[str, list[packets.Seen]]]:
    """Send every probe at once; what each tap saw of each probe: probe -> tap -> sightings."""
    sends: dict[str, list[bytes]] = defaultdict(list)
    for p in probes:
        sends[p.tap].append(p.frame)
    taps = F.host_taps(ctx) + edge_taps(ctx)
    out_ids = {p.id: p.host for p in probes if p.kind == "out" and p.host}  # (an out probe has its host)
    fwd_ids = {p.id: p.target for p in probes if p.target}

    def done(captured: dict[str, list[bytes]]) -> list[str]:
        got = _sightings(captured, run_id)
        missing = [
            f"reply to probe {i}"
            for i, host in out_ids.items()
            if not any(s.reply for s in got.get(i, {}).get(host, []))
        ]
        return missing + [f"forward probe {i}" for i, target in fwd_ids.items() if not got.get(i, {}).get(target)]

    with Session(taps) as session:
        captured = session.run(sends, packets.keep(run_id), done, timeouts.TRAFFIC)
    return _sightings(captured, run_id)


def _sightings(captured: dict[str, list[bytes]], run_id: int) -> dict[int, dict[str, list[packets.Seen]]]:
    out: dict[int, dict[str, list[packets.Seen]]] = defaultdict(lambda: defaultdict(list))
    for tap, frames in captured.items():
        for f in frames:
            s = packets.read(f, run_id)
            if s is not None:
                out[s.probe][tap].append(s)
    return out


def _judge(ctx: LabContext, p: Probe, seen: dict[str, list[packets.Seen]], nat: dict) -> Check:
    fabric = ctx.fabric
    tenant = {h: fabric.attachment(h)[0].name for h in F.hosts(fabric)}
    at_edge = [
        s for tap, ss in seen.items() if tap.split(":")[0] in edges(fabric) for s in ss if not s.reply and not s.error
    ]
    answered = sorted(
        {
            f"{s.error} from {s.src}"
            for tap, ss in seen.items()
            if tap.split(":")[0] in edges(fabric)
            for s in ss
            if s.error
        }
    )
    at_hosts = {tap: ss for tap, ss in seen.items() if tap in tenant}
    problems: list[str] = []
    if p.kind == "out":
        problems = _out(ctx, p, at_edge, at_hosts, nat, tenant)
    elif p.kind in ("stay", "fabric"):
        if p.kind == "stay" and at_edge:
            problems.append(f"reached the internet (as {', '.join(sorted({s.src for s in at_edge}))})")
        replies = sorted(h for h, ss in at_hosts.items() if any(s.reply for s in ss))
        if replies:
            problems.append(f"a reply came back to {', '.join(replies)}")
    else:  # inbound, forward, cross: only a forward's host may get it, as that host, from a public address
        if p.kind == "inbound" and answered:
            problems.append(
                f"the internet got an answer ({', '.join(answered)}): unsolicited inbound is not dropped at the gateway"
            )
        for h, ss in sorted(at_hosts.items()):
            if h == p.host:
                continue
            if h != p.target:
                problems.append(
                    f"reached {h} ({tenant[h]}): "
                    + ("a forward of another host let it in" if p.target else "unsolicited inbound is not dropped")
                )
            elif any(s.dst != p.ip or s.dport != p.port for s in ss):
                problems.append(f"reached {h} at {ss[0].dst}:{ss[0].dport}, not {p.ip}:{p.port}")
            elif p.source and any(s.src != p.source for s in ss):
                problems.append(f"reached {h} from {ss[0].src}, not from the sender's public address {p.source}")
        if p.target and p.target not in at_hosts:
            problems.append(f"never reached {p.target} ({p.ip}:{p.port})")
    return Check(
        GROUP,
        p.what,
        not problems,
        "; ".join(problems),
        {
            "kind": p.kind,
            "seen_at": {tap: len(ss) for tap, ss in seen.items()},
            "sources_at_internet": sorted({s.src for s in at_edge}),
            "answers_at_internet": answered,
        },
    )


def _out(ctx: LabContext, p: Probe, at_edge: list, at_hosts: dict, nat: dict, tenant: dict) -> list[str]:
    fabric = ctx.fabric
    assert p.host is not None and p.public is not None  # (an out probe has both: Builder.build)
    t, a = fabric.attachment(p.host)
    owner = {prefix.split("/")[0]: ten for prefix, (ten, _) in fabric.public().items()}
    problems = []
    if not at_edge:
        problems.append("never reached the internet")
    for src in sorted({s.src for s in at_edge} - {p.public}):
        if src == a.ip:
            problems.append(
                f"the internet saw it from {src}, the host's private address, not {t.name}'s public "
                f"{p.public}: " + _nat_reason(ctx, t, a, p.public, nat)
            )
        else:
            whose = f"{owner[src]}'s public address" if src in owner else "an address of no tenant"
            problems.append(f"the internet saw it from {src} ({whose}), not {t.name}'s public {p.public}")
    replies = {h for h, ss in at_hosts.items() if any(s.reply for s in ss)}
    if p.host not in replies and at_edge:
        problems.append(f"no reply came back to {p.host}")
    problems += [f"the reply reached {h} ({tenant[h]}) too" for h in sorted(replies - {p.host})]
    return problems


def _nat_rules(ctx: LabContext) -> dict[tuple[str, str], str]:
    """The postrouting chain of every gateway's NAT table: (VTEP, tenant) -> its rules (or why not)."""
    out = {}
    for tenant, vtep in ctx.fabric.public().values():
        if (vtep, tenant) in out:
            continue
        t = ctx.fabric.tenants[tenant]
        ns = t.vrf if ctx.backend == NETNS else ""
        cmd = (["ip", "netns", "exec", ns] if ns else []) + [
            "nft",
            "list",
            "chain",
            "ip",
            gateway_table(t, ctx.backend),
            "postrouting",
        ]
        res = ctx.exec(vtep).run(cmd)
        out[(vtep, tenant)] = res.stdout if res.ok else f"(cannot list it: {res.stderr.strip()})"
    return out


def _nat_reason(ctx: LabContext, t: Tenant, a: Attachment, public: str, nat: dict) -> str:
    rules = nat.get((a.vtep, t.name), "")
    table = gateway_table(t, ctx.backend)
    if f"snat to {public}" not in rules:
        return (
            f"the NAT rule `snat to {public}` is missing from table ip {table} on {a.vtep} (tenant {t.name}; "
            f"{gateway_file(t)} in the lab directory has it)"
        )
    return f"the NAT on {a.vtep} (table ip {table}, {public_name(t.l3vni)}) did not translate it"
