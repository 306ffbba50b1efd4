"""`twin rehearse`: run a change on the twin with traffic flowing, and report what it broke.

    report = rehearse(lab, "topologies/aipod-drain-spine1.yml", max_loss=0)
    print(report.text()); assert report.passed

1. snapshot the operational state: BGP sessions (with their drop counters),
   every tenant's VRF routes and VXLAN FDB on every VTEP;
2. start background RoCEv2 flows between all same-tenant host pairs
   (`twin.traffic.stream`), and let them run a baseline second;
3. make the change: `twin apply` (a topology file or a directory of node
   configs), or a fault (`fault:link-down:leaf1:swp1`, see FAULTS);
4. wait until the control plane has converged to the intent and the data plane
   is whole again (no flow lost a packet over the last RECOVERED seconds);
5. snapshot again, stop the flows, run `twin verify` (a fault knowingly breaks
   the intent: then only the data-plane groups, traffic and isolation, judge);
6. report: per flow packets lost and the longest outage, sessions that flapped,
   routes added and removed per tenant, time to reconverge, the verification
   result, and pass/fail against the user's thresholds;
7. `rollback`: restore the previous intent (or revert the fault) and verify again.
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from pyroute2 import IPRoute, NetlinkError

from twin import apply as A
from twin import converge, faults, timeouts, verify, wait
from twin.errors import CommandError, ConvergenceTimeout, TwinError
from twin.overlay import tenant_ns, vrf_tables
from twin.runtime.kernel import tenant_netns_path
from twin.runtime.links import netns_path
from twin.traffic import stream as S
from twin.verify.result import Report

if TYPE_CHECKING:
    from twin.lab import Lab

Say = Callable[[str], None]
BASELINE = 1.0        # s of traffic before the change
TAIL = 1.0            # s of traffic after the data plane is whole again
RECOVERED = 1.0       # the data plane is whole when no flow lost a packet for this long
DATA_PLANE_DEADLINE = 60.0
FAULTS: dict[str, Callable] = {
    "link-down": faults.link_down, "link-loss": faults.link_loss, "node-stop": faults.node_stop,
    "node-kill": faults.node_kill, "node-restart": faults.node_restart, "daemon-kill": faults.daemon_kill,
}
DATA_PLANE_GROUPS = ["traffic", "isolation"]


# --- operational state ---------------------------------------------------------------
@dataclass
class Snapshot:
    sessions: dict[str, dict[str, dict]] = field(default_factory=dict)   # node -> port -> {state, dropped}
    routes: dict[str, dict[str, set[str]]] = field(default_factory=dict)  # tenant -> vtep -> prefixes
    fdb: dict[str, dict[str, set[str]]] = field(default_factory=dict)     # tenant -> vtep -> "dev mac dst"


def snapshot(lab: "Lab") -> Snapshot:
    fabric, execs, pids, backend = lab._need_fabric(), lab.execs(), lab.pids(), lab.backend
    snap = Snapshot()
    tables = vrf_tables(fabric)

    def sessions(node: str) -> tuple[str, dict]:
        try:
            (doc,) = execs[node].vtysh_json(converge.SUMMARY, timeout=20)
        except (CommandError, KeyError) as e:
            return node, {"?": {"state": f"unreadable: {str(e).splitlines()[0]}", "dropped": 0}}
        peers = doc.get("peers", {}) if isinstance(doc, dict) else {}
        return node, {p: {"state": v.get("state", "?"), "dropped": v.get("connectionsDropped", 0),
                          "established": v.get("connectionsEstablished", 0)} for p, v in peers.items()}

    def tenant_state(node: str) -> list[tuple[str, str, set[str], set[str]]]:
        out = []
        for t in fabric.tenants_on(node):
            ns = tenant_ns(t, backend)
            path = tenant_netns_path(pids[node], ns) if ns else netns_path(pids[node])
            try:
                with IPRoute(netns=path, flags=0) as ipr:
                    names = converge.link_names(ipr)
                    table = 254 if ns else tables[t.name]
                    routes = converge.kernel_routes(ipr, table, host_only=False, names=names)
                    fdb = converge.kernel_fdb(ipr, names)
            except (NetlinkError, OSError):
                routes, fdb = {}, set()
            out.append((t.name, node, {f"{p} via {','.join(sorted(h))}" for p, h in routes.items()},
                        {" ".join(map(str, e)) for e in fdb}))
        return out

    with ThreadPoolExecutor(8) as pool:
        snap.sessions = dict(pool.map(sessions, [n.name for n in fabric.routers() if n.name in execs]))
        for rows in pool.map(tenant_state, [v for v in fabric.vteps() if v in pids]):
            for tenant, node, routes, fdb in rows:
                snap.routes.setdefault(tenant, {})[node] = routes
                snap.fdb.setdefault(tenant, {})[node] = fdb
    return snap


def flapped(before: Snapshot, after: Snapshot) -> list[str]:
    """Sessions that went down during the change (even if they came back), or are not up now."""
    out = []
    for node, peers in sorted(after.sessions.items()):
        for port, now in sorted(peers.items()):
            was = before.sessions.get(node, {}).get(port)
            if was is None:
                out.append(f"{node} {port}: new session, {now['state']}")
            elif now["dropped"] > was["dropped"] or now["state"] != was["state"]:
                out.append(f"{node} {port}: {was['state']} -> {now['state']}, dropped "
                           f"{now['dropped'] - was['dropped']} time(s)")
    for node, peers in sorted(before.sessions.items()):
        out += [f"{node} {port}: session gone" for port in sorted(peers) if port not in after.sessions.get(node, {})]
    return out


def route_changes(before: Snapshot, after: Snapshot) -> dict[str, dict[str, list[str]]]:
    """Per tenant: routes added and removed, as "vtep prefix via ..."."""
    out = {}
    for t in sorted(set(before.routes) | set(after.routes)):
        b = {f"{v} {r}" for v, rs in before.routes.get(t, {}).items() for r in rs}
        a = {f"{v} {r}" for v, rs in after.routes.get(t, {}).items() for r in rs}
        if a != b:
            out[t] = {"added": sorted(a - b), "removed": sorted(b - a)}
    return out


# --- the change ------------------------------------------------------------------------
@dataclass
class Action:
    """The change being rehearsed, and how to undo it."""

    what: str
    run: Callable[[], Any]
    undo: Callable[[], Any]
    is_fault: bool = False
    hosts_out: frozenset[str] = frozenset()   # hosts it takes away: their flows are not judged


def prepare(lab: "Lab", change: str, say: Say) -> Action:
    if change.startswith("fault:"):
        return _fault_step(lab, change)
    c = A.load_change(lab, change)
    before = lab._need_fabric()
    old_configs = None
    if c.kind == "configs":
        old_configs = A.Change("configs", f"previous configs of {lab.name}",
                               configs={n: (lab.dir / n / A.FRR_CONF).read_text() for n in c.configs})
    undo = A.Change.from_fabric(before) if old_configs is None else old_configs
    return Action(f"apply {change}", lambda: A.apply(lab, c, say=say), lambda: A.apply(lab, undo, say=say))


def _fault_step(lab: "Lab", spec: str) -> Action:
    """fault:KIND:TARGET[:ARG], e.g. fault:link-down:leaf1:swp1, fault:link-loss:leaf1:swp1:100,
    fault:node-restart:spine1, fault:daemon-kill:spine1:bgpd."""
    parts = spec.split(":")[1:]
    kind = parts[0] if parts else ""
    if kind not in FAULTS:
        raise TwinError(f"{spec!r}: unknown fault {kind!r}; faults: {', '.join(FAULTS)} "
                        f"(e.g. fault:link-down:leaf1:swp1, fault:link-loss:leaf1:swp1:100, fault:node-restart:spine1)")
    rest = parts[1:]
    if kind.startswith("link"):
        if len(rest) < 2:
            raise TwinError(f"{spec!r}: a link fault names a port: fault:{kind}:NODE:PORT" +
                            (":PERCENT" if kind == "link-loss" else ""))
        target, args = f"{rest[0]}:{rest[1]}", rest[2:]
        if kind == "link-loss":
            if not args or not args[0].isdigit():
                raise TwinError(f"{spec!r}: fault:link-loss:NODE:PORT:PERCENT, PERCENT 1-100")
            args = [int(args[0])]
        faults.port_ref(lab, target)   # a bad port is refused before anything starts
    else:
        if not rest:
            raise TwinError(f"{spec!r}: a node fault names a node: fault:{kind}:NODE")
        target, args = rest[0], rest[1:]
        faults._node(lab, target)
    holder: dict[str, faults.Fault] = {}

    def run():
        holder["f"] = FAULTS[kind](lab, target, *args)
        return holder["f"]

    def undo():
        f = holder.get("f")
        return f.revert() if f else None

    cut_off = frozenset({target}) if kind.startswith("node") and lab.fabric.nodes[target].kind == "host" else frozenset()
    return Action(f"fault {kind} {target}" + (f" {args[0]}" if args else ""), run, undo, is_fault=True,
                  hosts_out=cut_off)


# --- the report --------------------------------------------------------------------------
@dataclass
class Thresholds:
    max_loss: int | None = 0            # packets any one flow may lose
    max_outage: float | None = None     # s, the longest outage of any flow
    max_reconverge: float | None = None  # s, change to data plane whole again


@dataclass
class Rehearsal:
    lab: str
    change: str
    flows: list[S.StreamResult] = field(default_factory=list)
    rate_pps: float = 0.0
    flapped: list[str] = field(default_factory=list)
    routes: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)   # s after the change started
    apply: dict | None = None
    error: str = ""
    missing: list[str] = field(default_factory=list)          # not converged to the intent
    verify: Report | None = None
    verify_rollback: Report | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    hosts_out: list[str] = field(default_factory=list)         # hosts the change took away

    def is_judged(self, r: S.StreamResult) -> bool:
        """A flow counts unless the change took one of its hosts away."""
        return r.src not in self.hosts_out and r.dst not in self.hosts_out

    @property
    def judged(self) -> list[S.StreamResult]:
        return [r for r in self.flows if self.is_judged(r)]

    def verdicts(self) -> list[tuple[str, bool, str]]:
        """(criterion, passed, detail) for each thing the rehearsal is judged on."""
        out = [("change applied", not self.error, self.error or self.change)]
        if self.missing or "converged" in self.timings:
            out.append(("converged to the intent", not self.missing,
                        f"{len(self.missing)} missing, e.g. {self.missing[0]}" if self.missing else
                        f"after {self.timings['converged']:.1f}s"))
        th = self.thresholds
        worst_loss = max((r.lost for r in self.judged), default=0)
        worst_out = max((r.longest_outage_s for r in self.judged), default=0.0)
        if th.max_loss is not None:
            out.append((f"loss per flow <= {th.max_loss} packets", worst_loss <= th.max_loss,
                        f"worst flow lost {worst_loss}"))
        if th.max_outage is not None:
            out.append((f"longest outage <= {th.max_outage * 1000:.0f} ms", worst_out <= th.max_outage,
                        f"longest {worst_out * 1000:.0f} ms"))
        if th.max_reconverge is not None:
            rc = self.timings.get("data_plane_whole")
            out.append((f"reconverged within {th.max_reconverge:g}s", rc is not None and rc <= th.max_reconverge,
                        "never" if rc is None else f"{rc:.1f}s"))
        if self.verify is not None:
            out.append(("verify after the change", self.verify.passed,
                        f"{len(self.verify.failures())} failed of {len(self.verify.checks)}"))
        if self.verify_rollback is not None:
            out.append(("verify after rollback", self.verify_rollback.passed,
                        f"{len(self.verify_rollback.failures())} failed of {len(self.verify_rollback.checks)}"))
        return out

    @property
    def passed(self) -> bool:
        return all(ok for _, ok, _ in self.verdicts())

    def to_dict(self) -> dict[str, Any]:
        return {
            "lab": self.lab, "change": self.change, "passed": self.passed, "error": self.error,
            "verdicts": [{"criterion": c, "passed": ok, "detail": d} for c, ok, d in self.verdicts()],
            "timings": self.timings, "rate_pps_per_flow": round(self.rate_pps, 1),
            "flows": [{"src": r.src, "dst": r.dst, "tenant": r.tenant, "sent": r.sent, "received": r.received,
                       "lost": r.lost, "longest_outage_ms": round(r.longest_outage_s * 1000, 1),
                       "outages_s": [[round(a, 3), round(b, 3)] for a, b in r.outages],
                       "duplicates": r.duplicates, "reordered": r.reordered,
                       "judged": self.is_judged(r)} for r in self.flows],
            "flapped_sessions": self.flapped, "routes": self.routes, "missing": self.missing,
            "apply": self.apply,
            "verify": self.verify.to_dict() if self.verify else None,
            "verify_rollback": self.verify_rollback.to_dict() if self.verify_rollback else None,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)

    def text(self) -> str:
        lines = [f"rehearsal of {self.change} on lab {self.lab}: {'PASSED' if self.passed else 'FAILED'}"]
        t = self.timings
        lines.append("  timeline (s after the change started): " + ", ".join(f"{k} {v:.2f}" for k, v in t.items()))
        lossy = [r for r in self.flows if r.lost]
        lines.append(f"  flows: {len(self.flows)} at {self.rate_pps:.0f} pps each; {len(lossy)} of them lost packets")
        for r in sorted(self.flows, key=lambda r: (-r.longest_outage_s, r.src, r.dst)):
            mark = "" if self.is_judged(r) else "  (not judged: its host left)"
            lines.append(f"    {r.tenant or '-':8} {r.src:>8} -> {r.dst:<8} sent {r.sent:6} lost {r.lost:5} "
                         f"longest outage {r.longest_outage_s * 1000:7.0f} ms{mark}")
        lines.append(f"  sessions that flapped: {len(self.flapped)}")
        lines += [f"    {f}" for f in self.flapped]
        lines.append("  routes per tenant: " + ("no change" if not self.routes else ""))
        for tenant, ch in self.routes.items():
            lines.append(f"    {tenant}: +{len(ch['added'])} -{len(ch['removed'])}")
            lines += [f"      + {r}" for r in ch["added"][:20]] + [f"      - {r}" for r in ch["removed"][:20]]
        lines.append("  verdicts:")
        lines += [f"    {'ok  ' if ok else 'FAIL'} {c}: {d}" for c, ok, d in self.verdicts()]
        for name, rep in (("verify", self.verify), ("verify after rollback", self.verify_rollback)):
            for c in (rep.failures() if rep else [])[:20]:
                lines.append(f"    {name}: FAIL {c.group}: {c.name}: {c.message}")
        return "\n".join(lines) + "\n"

    def write_junit(self, path: str | Path) -> None:
        """One testsuite per rehearsal: a testcase per verdict and per flow."""
        suites = ET.Element("testsuites", name=f"twin rehearse {self.lab}")
        cases = [(f"verdict: {c}", ok, d) for c, ok, d in self.verdicts()]
        th = self.thresholds.max_loss
        cases += [(f"flow {r.tenant} {r.src} -> {r.dst}",
                   th is None or r.lost <= th or not self.is_judged(r),
                   f"lost {r.lost} of {r.sent}, longest outage {r.longest_outage_s * 1000:.0f} ms")
                  for r in self.flows]
        suite = ET.SubElement(suites, "testsuite", name=f"rehearse {self.change}", tests=str(len(cases)),
                              failures=str(sum(not ok for _, ok, _ in cases)))
        for name, ok, detail in cases:
            case = ET.SubElement(suite, "testcase", classname=f"twin.{self.lab}.rehearse", name=name)
            if not ok:
                ET.SubElement(case, "failure", message=detail).text = detail
            else:
                ET.SubElement(case, "system-out").text = detail
        ET.indent(suites)
        Path(path).write_text(ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")


# --- the rehearsal -------------------------------------------------------------------------
def rehearse(lab: "Lab", change: str, thresholds: Thresholds | None = None, rollback: bool = False,
             budget_pps: float = S.BUDGET_PPS, say: Say = lambda _: None) -> Rehearsal:
    rep = Rehearsal(lab.name, change, thresholds=thresholds or Thresholds())
    action = prepare(lab, change, say)          # an unreadable change or fault is refused before any traffic
    fabric_before = lab._need_fabric()
    say("snapshot of the operational state")
    before = snapshot(lab)
    flows = S.pair_flows(fabric_before)
    if not flows:
        raise TwinError(f"lab {lab.name!r} has no same-tenant host pairs to send traffic between")
    with S.Stream(lab, flows, budget_pps=budget_pps) as s:
        rep.rate_pps = s.rate
        say(f"{len(flows)} RoCE flows at {s.rate:.0f} pps each: baseline")
        s.hold(BASELINE)
        t0 = s.mark("change")
        say(f"{action.what}")
        try:
            out = action.run()
            if isinstance(out, A.Result):
                rep.apply = out.as_dict()
                rep.missing = out.missing
                rep.timings.update(out.timings)   # applied, converged: s after apply started
            else:
                rep.timings["applied"] = round(s.elapsed() - t0, 2)
        except TwinError as e:
            rep.error = str(e)
        rep.timings.setdefault("control_plane_done", round(s.elapsed() - t0, 2))
        say("waiting for the data plane to be whole again")
        rep.hosts_out = sorted(action.hosts_out | (set(fabric_before.nodes) - set(lab._need_fabric().nodes)))
        unjudged = {f.flow_id for f in flows if f.src in rep.hosts_out or f.dst in rep.hosts_out}

        def lossy() -> list[str]:
            since = s.elapsed() - RECOVERED
            return s.lossy_since(since, skip=unjudged) if since >= t0 else ["settling"]

        try:
            wait.until(lossy, DATA_PLANE_DEADLINE, "data plane whole again", first=0.2, cap=0.25)
            whole = True
        except ConvergenceTimeout as e:
            whole = False
            rep.missing = rep.missing + [f"data plane: {m}" for m in e.missing]
        s.hold(TAIL)
    rep.flows = s.results
    summary = S.summarise(rep.judged)
    if summary.first_loss_s is not None:
        rep.timings["first_loss"] = round(summary.first_loss_s - t0, 2)
    if whole:  # the first packet after the last lost one: the data plane's reconvergence time
        rep.timings["data_plane_whole"] = round(max(0.0, summary.last_loss_s - t0 + s.interval), 2) \
            if summary.last_loss_s is not None else 0.0
    if action.is_fault and not rep.error:
        say("fault in place: verifying the data plane (traffic, isolation)")
        rep.verify = verify.run(lab, only=DATA_PLANE_GROUPS)
    elif not rep.error:
        say("verifying the new intent")
        rep.verify = verify.run(lab)
    after = snapshot(lab)
    rep.flapped = flapped(before, after)
    rep.routes = route_changes(before, after)
    if rollback and not (rep.error and not action.is_fault):  # a failed apply was refused or rolled back already
        say("rolling back")
        try:
            action.undo()
            if action.is_fault:
                converge.Barrier(lab._need_fabric(), lab.execs(), lab.pids(), lab.backend).wait(
                    timeouts.converge(len(lab._need_fabric().routers())), say=say)
        except TwinError as e:
            rep.error = (rep.error + "\n" if rep.error else "") + f"rollback failed: {e}"
        say("verifying after rollback")
        rep.verify_rollback = verify.run(lab)
    return rep
