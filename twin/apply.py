"""`twin apply`: change a running lab, with the least disruption the platform allows.

A change is either an edited topology file (declarative: the difference to the
lab's recorded intent is worked out) or a directory of node configs made by the
user's own tooling (`<dir>/<node>/frr.conf` or `<dir>/<node>.conf`).

    change = load_change(lab, "topologies/aipod-3tenants.yml")
    print(plan(lab, change).text())
    result = apply(lab, change)            # ChangeRefused / ApplyFailed (rolled back)

Stages, as a network engineer would do it by hand:
1. check: the file is valid, names only existing nodes, the change is one apply
   can make, every node is running, FRR accepts every new config (`vtysh
   --dryrun` in the node itself). Any problem refuses the whole change with
   every reason, and nothing in the lab has been touched.
2. links that are new; kernel objects that are new (`twin.reconcile`, add);
3. FRR: `frr-reload.py` (only the difference, no restart) on every node whose
   config changed; a restart only where FRR's daemons file changed;
4. bindings of new workloads, once zebra knows their VNIs;
5. kernel objects FRR no longer uses, then links that are gone;
6. the lab's recorded intent (fabric.json, rendered files) becomes the new one;
7. wait for the new intent to converge (a timeout is reported, not rolled back).
A failure in 2-5 rolls everything back to the previous intent and says so.
"""
from __future__ import annotations

import difflib
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal


from twin import bringup, converge, images, overlay, render, state, timeouts, topology, wait
from twin.errors import ApplyFailed, ChangeRefused, ConvergenceTimeout, Problem, TopologyError, TwinError
from twin.plan import Plan, make_plan
from twin.reconcile import NodeDelta, node_delta
from twin.runtime import kernel
from twin.runtime.exec import NodeExec
from twin.runtime.links import add_link, delete_link
from twin.topology.model import Fabric, Link

if TYPE_CHECKING:
    from twin.lab import Lab

Say = Callable[[str], None]
FRR_CONF = "frr.conf"
RELOAD = ["/usr/lib/frr/frr-reload.py", "--reload", "--stdout", f"/etc/frr/{FRR_CONF}"]
RESTART = ["/usr/lib/frr/frrinit.sh", "restart"]
CANDIDATE = "frr.conf.candidate"   # a new config, checked in the node before anything changes
PARALLEL = 8


@dataclass
class Change:
    """What to apply: a new intent (topology) or new FRR configs per node (configs)."""

    kind: Literal["topology", "configs"]
    source: str
    fabric: Fabric | None = None
    configs: dict[str, str] = field(default_factory=dict)   # node -> frr.conf text

    @classmethod
    def from_fabric(cls, fabric: Fabric) -> "Change":
        return cls("topology", fabric.source, fabric=fabric)


@dataclass
class Result:
    lab: str
    source: str
    kind: str
    changes: list[str]                       # what was done, one line each
    reloaded: list[str] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # applied, converged (s from start)
    missing: list[str] = field(default_factory=list)         # not converged: what is still missing

    @property
    def converged(self) -> bool:
        return not self.missing

    def as_dict(self) -> dict:
        return {"lab": self.lab, "source": self.source, "kind": self.kind, "changes": self.changes,
                "reloaded": self.reloaded, "restarted": self.restarted, "timings": self.timings,
                "converged": self.converged, "missing": self.missing}


# --- reading a change ------------------------------------------------------------
def load_change(lab: "Lab", path: str | Path) -> Change:
    """An edited topology file, or a directory of node configs; TopologyError names every problem."""
    p = Path(path)
    if p.is_dir():
        return _load_configs(lab, p)
    if not p.exists():
        raise TopologyError([Problem(str(p), "", "no such file or directory: a change is a topology file "
                                                 "or a directory of node configs (<dir>/<node>/frr.conf)")])
    return Change.from_fabric(topology.load(p, name=lab.name))


def _load_configs(lab: "Lab", d: Path) -> Change:
    fabric = lab._need_fabric()
    routers = {n.name for n in fabric.routers()}
    configs, problems = {}, []
    for entry in sorted(d.iterdir()):
        if entry.is_dir() and (entry / FRR_CONF).is_file():
            node, f = entry.name, entry / FRR_CONF
        elif entry.is_file() and entry.suffix == ".conf":
            node, f = entry.stem, entry
        else:
            continue
        if node not in routers:
            known = ", ".join(sorted(routers))
            problems.append(Problem(str(f), "", f"no FRR node {node!r} in lab {lab.name!r}; FRR nodes: {known}"))
            continue
        configs[node] = f.read_text()
    if not configs and not problems:
        problems.append(Problem(str(d), "", "no node configs found: expected <dir>/<node>/frr.conf or <dir>/<node>.conf"))
    if problems:
        raise TopologyError(problems)
    return Change("configs", str(d), configs=configs)


# --- planning ----------------------------------------------------------------------
@dataclass
class Work:
    """Everything apply will do, worked out before anything is touched."""

    old: Fabric
    new: Fabric
    files: dict[str, dict[str, str]]          # node -> file -> new text (all nodes)
    old_files: dict[str, dict[str, str]]
    reload: list[str]                         # nodes whose frr.conf changes
    restart: list[str]                        # nodes whose FRR daemons change (restart, not reload)
    deltas: dict[str, NodeDelta]
    links_add: list[Link]
    links_del: list[Link]
    plan: Plan
    hosts_add: list[str] = field(default_factory=list)   # host endpoints: containers made / removed
    hosts_del: list[str] = field(default_factory=list)

    @property
    def summary(self) -> list[str]:
        """The change, one line each."""
        return list(self.plan.changes) or [f"new FRR config on {n}" for n in self.plan.diffs]


def _link_key(l: Link) -> frozenset[str]:
    return frozenset((str(l.a), str(l.b)))


def work_out(lab: "Lab", change: Change) -> Work:
    old = lab._need_fabric()
    backend = lab.backend
    old_files = _current_files(lab, old, backend)
    if change.kind == "configs":
        new = old
        files = {n: dict(f) for n, f in old_files.items()}
        for node, text in change.configs.items():
            files[node][FRR_CONF] = text
        p = Plan(lab.name)
        for node in sorted(change.configs):
            a, b = old_files[node].get(FRR_CONF, ""), change.configs[node]
            if a != b:
                p.diffs[node] = {FRR_CONF: "".join(difflib.unified_diff(
                    a.splitlines(True), b.splitlines(True), f"{node}/{FRR_CONF}", f"{node}/{FRR_CONF}"))}
        deltas, links_add, links_del, hosts_add, hosts_del = {}, [], [], [], []
    else:
        new = change.fabric
        files = render.render_lab(new, backend)
        p = make_plan(old, new, backend)
        deltas = {n: d for n in new.nodes if n in old.nodes and (d := node_delta(old, new, n, backend))}
        ol, nl = {_link_key(l): l for l in old.links}, {_link_key(l): l for l in new.links}
        links_add = [nl[k] for k in nl if k not in ol]
        links_del = [ol[k] for k in ol if k not in nl]
        for node, d in deltas.items():
            p.kernel[node] = d.commands()
        hosts_add = [n for n in new.nodes if n not in old.nodes and new.nodes[n].kind == "host"]
        hosts_del = [n for n in old.nodes if n not in new.nodes and old.nodes[n].kind == "host"]
        for n in hosts_add:
            p.kernel[n] = [s.command() for s in overlay.plan(new, n, backend)]
    reload = sorted(n for n in new.nodes if files.get(n, {}).get(FRR_CONF, "") != old_files.get(n, {}).get(FRR_CONF, ""))
    restart = sorted(n for n in reload if files[n].get("daemons") != old_files.get(n, {}).get("daemons"))
    reload = [n for n in reload if n not in restart]
    p.frr = {**{n: "reload" for n in reload}, **{n: "restart (daemons changed)" for n in restart}}
    return Work(old, new, files, old_files, reload, restart, deltas, links_add, links_del, p, hosts_add, hosts_del)


def _current_files(lab: "Lab", fabric: Fabric, backend: str) -> dict[str, dict[str, str]]:
    """What each node runs now: its files in the lab directory (a user's config included),
    rendered from the recorded intent where a file is missing."""
    rendered = render.render_lab(fabric, backend)
    out = {}
    for node, files in rendered.items():
        out[node] = {}
        for fname, text in files.items():
            f = lab.dir / node / fname
            out[node][fname] = f.read_text() if f.is_file() else text
    return out


def plan(lab: "Lab", change: Change) -> Plan:
    return work_out(lab, change).plan


# --- checking ------------------------------------------------------------------------
NODE_FIXED = ("kind", "asn", "loopback", "image")   # a node changed in these is a new node


def unsupported(old: Fabric, new: Fabric) -> list[str]:
    """Changes a running lab cannot take: routers that come, go, or become another node.
    (Host endpoints come and go: a new tenant brings its workloads.)"""
    out = [f"add node {n} ({new.nodes[n].kind})" for n in new.nodes
           if n not in old.nodes and new.nodes[n].kind != "host"]
    out += [f"remove node {n} ({old.nodes[n].kind})" for n in old.nodes
            if n not in new.nodes and old.nodes[n].kind != "host"]
    for n in set(old.nodes) & set(new.nodes):
        out += [f"change {attr} of {n} ({getattr(old.nodes[n], attr)} -> {getattr(new.nodes[n], attr)})"
                for attr in NODE_FIXED if getattr(old.nodes[n], attr) != getattr(new.nodes[n], attr)]
    return sorted(out)


def check(lab: "Lab", w: Work, execs: dict[str, NodeExec], source: str) -> None:
    """Every reason the change cannot be applied, before anything is touched."""
    reasons = [f"{c}: apply does not re-create nodes in a running lab; `twin down {lab.name}` then "
               f"`twin up` with the new topology makes it" for c in unsupported(w.old, w.new)]
    touched = set(w.reload) | set(w.restart) | set(w.deltas) | {e.node for l in w.links_add + w.links_del
                                                                 for e in (l.a, l.b)}
    touched -= set(w.hosts_add)
    for node in sorted(touched):
        ex = execs.get(node)
        if ex is None:
            reasons.append(f"{node}: not running (`twin status {lab.name}`); nothing can change on it")
            continue
        ex.container.reload()
        if ex.container.status != "running":
            reasons.append(f"{node}: container is {ex.container.status}; start it first "
                           f"(`twin fault node-start {lab.name} {node}`)")
    if reasons:
        raise ChangeRefused(source, reasons)

    def dry_run(node: str) -> str | None:
        (lab.dir / node / CANDIDATE).write_text(w.files[node][FRR_CONF])
        try:
            res = execs[node].run(["vtysh", "--dryrun", "-f", f"/etc/frr/{CANDIDATE}"], timeout=30)
        finally:
            (lab.dir / node / CANDIDATE).unlink(missing_ok=True)
        if res.ok:
            return None
        out = "\n    ".join(l for l in (res.stdout + res.stderr).strip().splitlines()[-12:])
        return f"{node}: FRR rejects the new config (vtysh --dryrun exited {res.rc}):\n    {out}"

    with ThreadPoolExecutor(PARALLEL) as pool:
        reasons = [r for r in pool.map(dry_run, w.reload + w.restart) if r]
    if reasons:
        raise ChangeRefused(source, reasons)


# --- applying --------------------------------------------------------------------------
def apply(lab: "Lab", change: Change, timeout: float | None = None, wait: bool = True,
          say: Say = lambda _: None) -> Result:
    """Apply `change` to the running lab; see the module docstring for the stages."""
    t0 = time.monotonic()
    w = work_out(lab, change)
    execs = lab.execs()
    check(lab, w, execs, change.source)
    result = Result(lab.name, change.source, change.kind, w.summary, reloaded=w.reload, restarted=w.restart)
    if w.plan.empty and not w.reload and not w.restart:
        say("no change")
        return result
    pids = lab.pids()
    backend = lab.backend
    # what the rollback needs to know of how far it got
    files_written, deleted, removed_hosts = False, [], []
    try:
        if w.hosts_add:
            say(f"starting {len(w.hosts_add)} host endpoint(s)")
            image = lab.state.image if lab.state else images.ensure(lab.runtime.client)
            started = lab.runtime.start_nodes(lab.name, [w.new.nodes[n] for n in w.hosts_add], image, lab.dir)
            for n, c in started.items():
                pids[n], execs[n] = lab.runtime.pid(c), NodeExec(c, f"{lab.name}/{n}")
        if w.links_add:
            say(f"adding {len(w.links_add)} link(s)")
            for l in w.links_add:
                add_link(w.new, l, pids)
        for n in w.hosts_add:
            steps = overlay.plan(w.new, n, backend)
            if steps:
                kernel.apply(steps, pids[n], execs[n])
        files_written = True
        _write_files(lab, w.files)
        d = w.deltas
        _each([n for n in d if d[n].add], lambda n: _kernel(d[n].add, pids[n], execs[n]), "kernel (add)")
        _frr(w, execs, say)
        _each([n for n in d if d[n].bind], lambda n: (bringup.wait_vnis(w.new, n, execs[n]),
                                                       kernel.apply(d[n].bind, pids[n], execs[n])), "bindings")
        _each([n for n in d if d[n].remove], lambda n: _kernel(d[n].remove, pids[n], execs[n]),
              "kernel (remove)")
        if w.links_del:
            say(f"removing {len(w.links_del)} link(s)")
            for l in w.links_del:
                if not delete_link(l, pids):
                    raise TwinError(f"link {l.a} <-> {l.b}: neither end found to delete")
                deleted.append(l)
        for n in w.hosts_del:
            say(f"removing host endpoint {n}")
            lab.runtime.remove_node(lab.name, n)
            state.remove_node(lab.dir, n)
            removed_hosts.append(n)
    except BaseException as e:
        say(f"apply failed ({e}); rolling back")
        undone = _rollback(lab, w, execs, pids, files_written, deleted, removed_hosts)
        raise ApplyFailed(f"change {change.source} failed half way and was rolled back to the previous intent:\n"
                          f"  failed: {str(e).strip()}\n  rollback: {undone}") from e
    _record(lab, w, change)
    result.timings["applied"] = round(time.monotonic() - t0, 2)
    say(f"applied in {result.timings['applied']:.1f}s")
    if wait:
        limit = timeout if timeout is not None else timeouts.converge(len(w.new.routers()))
        say(f"waiting for the new intent to converge (deadline {limit:.0f}s)")
        try:
            converge.Barrier(w.new, lab.execs(), lab.pids(), backend).wait(limit, say=say)
            result.timings["converged"] = round(time.monotonic() - t0, 2)
        except ConvergenceTimeout as e:
            result.missing = e.missing
    return result


def _kernel(steps: list, pid: int, ex: NodeExec, tolerant: bool = False) -> None:
    """Kernel steps of a change, in step with zebra -n: a new tenant namespace is filled only
    once zebra has adopted it as a VRF (devices made in between are missed now and then: FRR
    8.4 and 10.3, an L2VNI zebra never knew). A tenant's namespace that is still there (it
    was removed before: the namespace stays, see reconcile.tenant_teardown) is used as is."""
    new_ns = [s for s in steps if s.op == "netns"]
    if new_ns:
        there = set(ex.check(["ls", "/run/netns"]).stdout.split())
        kernel.apply([s for s in new_ns if s.dev not in there], pid, ex, tolerant)
        names = {s.dev for s in new_ns}

        def missing() -> list[str]:
            shown = ex.vtysh("show vrf", timeout=10)
            return [f"{ex.where}: zebra has not adopted namespace {v} as VRF {v}" for v in sorted(names)
                    if f"vrf {v} id " not in shown]

        wait.until(missing, timeouts.VNIS_UP, f"{ex.where}: tenant namespaces in zebra", first=0.05, cap=0.5)
    kernel.apply([s for s in steps if s.op != "netns"], pid, ex, tolerant)


def _each(nodes: list[str], fn: Callable[[str], object], what: str) -> None:
    """`fn(node)` on every node at once; every node's error, not just the first."""
    if not nodes:
        return
    with ThreadPoolExecutor(PARALLEL) as pool:
        futures = {n: pool.submit(fn, n) for n in nodes}
    errors = []
    for n, f in futures.items():
        try:
            f.result()
        except Exception as e:
            errors.append(f"{n}: {e}")
    if errors:
        raise TwinError(f"{what} failed on {len(errors)} node(s):\n" + "\n".join(errors))


def _frr(w: Work, execs: dict[str, NodeExec], say: Say) -> None:
    """frr-reload where the config changed, a restart where the daemons changed: all in parallel."""
    if w.reload or w.restart:
        say(f"FRR: reload on {', '.join(w.reload) or 'none'}" +
            (f"; restart on {', '.join(w.restart)}" if w.restart else ""))
    def one(node: str) -> None:
        ex = execs[node]
        ex.check(RESTART if node in w.restart else RELOAD, timeouts.FRR_RELOAD)

        # Done when FRR holds nothing the file does not have. bgpd may refuse to delete a
        # tenant's `router bgp ASN vrf X` while it still knows the VRF's L3VNI, which zebra
        # tells it a moment later: what is left is reloaded again (only the difference).
        def left() -> list[str]:
            pending = frr_pending(ex)
            if pending:
                ex.run(RELOAD, timeouts.FRR_RELOAD)
            return [f"{ex.where}: FRR still runs, not in {FRR_CONF}: {line}" for line in pending]

        wait.until(left, timeouts.FRR_RELOAD, f"{ex.where}: FRR running {FRR_CONF}", first=0.2, cap=1.0)

    _each(w.reload + w.restart, one, "FRR taking the new config")


def frr_pending(ex: NodeExec) -> list[str]:
    """What FRR runs that its config file no longer has: the "Lines To Delete" of
    `frr-reload.py --test` (its lines to add are not looked at: a file may spell out
    defaults, which FRR does not show)."""
    out = ex.check([RELOAD[0], "--test", "--stdout", RELOAD[-1]], timeouts.FRR_RELOAD).stdout
    section, pending = "", []
    for line in out.splitlines():
        if line.startswith("Lines To "):
            section = line
        elif section == "Lines To Delete" and line.strip() and not line.startswith("===") and " INFO: " not in line:
            pending.append(line.strip())
    return [line for line in pending if line != "exit"]


def _write_files(lab: "Lab", files: dict[str, dict[str, str]]) -> None:
    for node, fs in files.items():
        d = lab.dir / node
        d.mkdir(parents=True, exist_ok=True)
        for fname, text in fs.items():
            f = d / fname
            if not f.is_file() or f.read_text() != text:
                tmp = d / (fname + ".tmp")
                tmp.write_text(text)
                tmp.replace(f)


def _record(lab: "Lab", w: Work, change: Change) -> None:
    """The new intent is the lab's intent now: fabric.json, the topology it came from, a history line."""
    st = lab.state
    if st is not None:
        if change.kind == "topology":
            st.topology = str(Path(change.source).resolve())
        st.history.append({"at": state.now(), "kind": change.kind, "source": str(Path(change.source).resolve()),
                           "changes": w.summary})
        state.save(lab.dir, st, w.new)
    lab.fabric = w.new


def _rollback(lab: "Lab", w: Work, execs: dict[str, NodeExec], pids: dict[str, int], files_written: bool,
              deleted: list[Link], removed_hosts: list[str]) -> str:
    """Back to the previous intent, from wherever the apply stopped: every step tolerates
    what is already as it should be. Returns what was done, or what could not be undone."""
    problems: list[str] = []
    backend = lab.backend

    def attempt(what: str, fn: Callable[[], object]) -> None:
        try:
            fn()
        except Exception as e:
            problems.append(f"{what}: {e}")

    for l in deleted:  # re-create what was deleted (a failure in the middle of deleting)
        attempt(f"re-create link {l.a} <-> {l.b}", lambda l=l: add_link(w.old, l, pids))
    back = {n: node_delta(w.new, w.old, n, backend) for n in w.old.nodes if n in w.new.nodes}
    back = {n: d for n, d in back.items() if d}
    for n, d in back.items():
        attempt(f"{n}: kernel (add)", lambda n=n, d=d: _kernel(d.add, pids[n], execs[n], tolerant=True))
    _write_files(lab, w.old_files)
    for n in (w.restart + w.reload) if files_written else []:
        cmd = RESTART if n in w.restart else RELOAD
        attempt(f"{n}: FRR back to its previous config", lambda n=n, cmd=cmd: execs[n].check(cmd, timeouts.FRR_RELOAD))
    for n, d in back.items():
        attempt(f"{n}: kernel (bindings)", lambda n=n, d=d: kernel.apply(d.bind, pids[n], execs[n], tolerant=True))
        attempt(f"{n}: kernel (remove)", lambda n=n, d=d: _kernel(d.remove, pids[n], execs[n], tolerant=True))
    for l in w.links_add:
        if l.a.node not in w.hosts_add and l.b.node not in w.hosts_add:
            attempt(f"remove link {l.a} <-> {l.b}", lambda l=l: delete_link(l, pids))
    for n in w.hosts_add:
        attempt(f"remove host endpoint {n}", lambda n=n: lab.runtime.remove_node(lab.name, n))
    if removed_hosts:
        problems.append(f"host endpoints {', '.join(removed_hosts)} were removed and are not re-created")
    if problems:
        return "INCOMPLETE, the lab may be half way; `twin down` and `twin up` restore it:\n    " + "\n    ".join(problems)
    return "done: the lab runs its previous intent again"
