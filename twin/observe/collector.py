"""The collector: samples a running lab on threads while it runs, and records what happens.

    with Collector(ctx) as c:          # or Collector(ctx).round() for one reading
        c.latest, c.recent, c.drops

Three loops: links (every WATCH_PERIOD; the RoCE tables every WATCH_ROCE; nodes and
routes re-read on slower rounds), control (FRR, every WATCH_CONTROL) and, for the
one collector of a lab that holds `<labdir>/observe/collector.lock` (the leader),
NFLOG: twin's drop rules' packets become events, at most PER_SECOND a second per
node, port and reason (the rest one drop-burst event a second). The leader writes
drop events and the state changes between rounds (`timeline`) to the lab's store;
every collector follows the store (`recent`, `drops`), so twin's own actions, noted
by other processes, show up too.
"""

from __future__ import annotations

import collections
import fcntl
import os
import select
import threading
import time
from typing import IO, Any, Callable

from twin.base import timeouts
from twin.config import droplog
from twin.lifecycle.context import LabContext
from twin.observe import drops as dropmon
from twin.observe import sample, store, timeline
from twin.observe.linkstats import LinkSocket
from twin.observe.nflog import Logged, NflogSocket
from twin.observe.nftnl import NftSocket
from twin.observe.reasons import Place, drop_event
from twin.runtime import NetlinkHandles, namespace_path

RECENT = 500


class Collector:
    def __init__(self, ctx: LabContext, record: bool = True):
        self.ctx, self.record = ctx, record
        self.lock = threading.Condition()
        self.latest: sample.Snapshot | None = None
        self.previous: sample.Snapshot | None = None
        self.recent: collections.deque[dict] = collections.deque(maxlen=RECENT)
        self.drops: collections.Counter = collections.Counter()  # (node, port, tenant, code) -> packets
        self.version = 0  # bumped on every new snapshot or event
        self.leader = False
        self.kernel_drops = dropmon.probe()
        self.errors: collections.deque[str] = collections.deque(maxlen=20)  # the loops' latest failures
        self._handles = NetlinkHandles()
        self._places: dict[tuple[str, str], Place] = {}
        self._sockets: dict[tuple[str, str], NflogSocket] = {}
        self._nft: dict[tuple[str, str], NftSocket] = {}
        self._links: dict[tuple[str, str], LinkSocket] = {}
        self._pids: dict[str, int] = {}
        self._control: dict[str, tuple[dict, dict]] = {}
        self._control_time = 0.0
        self._routes: dict[str, dict[str, list[str]]] = {}
        self._roce: dict[str, dict[str, dict]] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lockfile: IO[str] | None = None
        self._tail: store.Tail | None = None
        self._limiter = dropmon.Limiter()
        self._vnis = sample.vni_tenants(ctx)
        self._rounds = 0
        self._reading = threading.Lock()  # one round at a time: the links loop's and a caller's share sockets

    # --- life ---------------------------------------------------------------------------
    def start(self) -> "Collector":
        if self.record:
            self._lead()
        self._tail = store.Tail(self.ctx.dir, from_start=True)
        self._follow()
        self.round(control=True)
        loops = [self._links_loop, self._control_loop] + ([self._nflog_loop] if self.leader else [])
        self._threads = [
            threading.Thread(target=self._guard, args=(f,), daemon=True, name=f"twin-watch{f.__name__}") for f in loops
        ]
        for t in self._threads:
            t.start()
        return self

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        with self.lock:
            self.lock.notify_all()
        for t in self._threads:
            t.join(timeout=timeouts.WATCH_CONTROL + timeouts.VTYSH)
        socks: list[NflogSocket | NftSocket | LinkSocket] = [*self._sockets.values(), *self._nft.values()]
        socks += self._links.values()
        for s in socks:
            s.close()
        self._handles.close()
        if self._lockfile:
            self._lockfile.close()

    def __enter__(self) -> "Collector":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _lead(self) -> None:
        d = store.where(self.ctx.dir)
        d.mkdir(parents=True, exist_ok=True)
        f = open(d / "collector.lock", "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            return
        self._lockfile, self.leader = f, True

    def _guard(self, loop: Callable[[], None]) -> None:
        """A loop that fails is retried after a pause: the collector outlives a node that is
        restarting, a namespace that went away, an FRR that does not answer."""
        while not self._stop.is_set():
            try:
                loop()
            except Exception as e:  # noqa: BLE001
                self._note_error(f"{loop.__name__}: {e}")
                self._pids.clear()
                self._stop.wait(timeouts.WATCH_PERIOD)

    def _note_error(self, text: str) -> None:
        with self.lock:
            self.errors.append(f"{time.strftime('%H:%M:%S')} {text}")

    # --- loops ----------------------------------------------------------------------------
    def _links_loop(self) -> None:
        while not self._stop.wait(timeouts.WATCH_PERIOD):
            self.round()

    def _control_loop(self) -> None:
        while not self._stop.wait(timeouts.WATCH_CONTROL):
            self.read_control()

    def _nflog_loop(self) -> None:
        while not self._stop.is_set():
            socks = list(self._sockets.items())
            if socks:
                ready = select.select([s for _, s in socks], [], [], 0.5)[0]
            else:
                ready = []
                self._stop.wait(0.5)
            events = []
            for key, s in socks:
                if s in ready:
                    place = self._places[key]
                    events += [e for p in s.read() if (e := self._event(place, p))]
            events = self._limiter.admit(events, time.time())
            if events:
                store.append(self.ctx.dir, events)

    def _event(self, place: Place, p: Logged) -> dict | None:
        return drop_event(self.ctx.fabric, place, p)

    # --- one round ------------------------------------------------------------------------
    def _running(self, refresh: bool) -> dict[str, str]:
        """node -> "running" or its container's state; pids re-read when `refresh`."""
        ctx = self.ctx
        if refresh:
            ctx.refresh()
        out = {}
        for node in ctx.fabric.nodes:
            c = ctx.containers().get(node)
            if c is None:
                out[node] = "no container"
                continue
            out[node] = "running" if c.status == "running" else c.status  # from the one listing call
            if out[node] != "running":
                self._pids.pop(node, None)
            elif refresh and not self._alive(node):  # new, or restarted: its pid (one inspect)
                self._open(node, ctx.pid(node))
        return out

    def _alive(self, node: str) -> bool:
        """The node's namespaces are the ones we hold (its process still exists)."""
        pid = self._pids.get(node)
        return pid is not None and os.path.exists(f"/proc/{pid}/ns/net")

    def _open(self, node: str, pid: int) -> None:
        """A node's namespaces (again, after a restart): netlink handles, places, NFLOG sockets."""
        for socks in (self._sockets, self._nft, self._links):
            for key in [k for k in socks if k[0] == node]:
                socks.pop(key).close()
        self._pids[node] = pid
        for ns in sample.namespaces(self.ctx, node):
            self._places[(node, ns)] = Place(node, ns)
            self._nft[(node, ns)] = NftSocket(namespace_path(pid, ns))
            self._links[(node, ns)] = LinkSocket(namespace_path(pid, ns))
            if self.leader:
                try:
                    self._sockets[(node, ns)] = NflogSocket(namespace_path(pid, ns), droplog.LOG_GROUP)
                except OSError as e:
                    self._note_error(f"{node}{'/' + ns if ns else ''}: NFLOG: {e}")

    def round(self, control: bool = False) -> sample.Snapshot:
        """One reading of every node (and FRR's state too when `control`). Rounds take turns: the
        netlink sockets and handles are shared, and two dumps on one socket read each other's answers."""
        with self._reading:
            return self._round(control)

    def _round(self, control: bool) -> sample.Snapshot:
        self._rounds += 1
        slow = control or not self._pids or self._rounds % int(timeouts.WATCH_NODES / timeouts.WATCH_PERIOD) == 0
        roce_due = slow or self._rounds % max(1, int(timeouts.WATCH_ROCE / timeouts.WATCH_PERIOD)) == 0
        snap = sample.Snapshot(time=sample.now())
        snap.nodes = self._running(refresh=slow) if slow or self.latest is None else dict(self.latest.nodes)
        for node, state in snap.nodes.items():
            if state != "running" or node not in self._pids:
                continue
            try:
                self._read_node(snap, node, slow, roce_due)
            except OSError as e:  # a namespace gone with its node, a dump never answered: read it next round
                self._note_error(f"{node}: {e}")
        if control:
            self.read_control()
        self._publish(snap)
        return snap

    def _read_node(self, snap: sample.Snapshot, node: str, slow: bool, roce_due: bool) -> None:
        pid, wanted = self._pids[node], {p.name for p in self.ctx.fabric.nodes[node].ports}
        ports_in: dict[str, list[str]] = {}
        routes: dict[str, list[str]] = {}
        for ns in sample.namespaces(self.ctx, node):
            ports, names, vrfs = sample.links(self._links[(node, ns)], wanted)
            self._places[(node, ns)].names = names
            ports_in[ns] = sorted(ports)
            snap.ports.setdefault(node, {}).update({p: {**v, "ns": ns} for p, v in ports.items()})
            if slow:
                routes.update(sample.routes(self._handles.get(pid, ns), ns, vrfs))
        if slow:
            self._routes[node] = routes
        if roce_due:
            socks = {ns: self._nft[(node, ns)] for ns in ports_in}
            self._roce[node] = sample.roce_of(self.ctx, self.ctx.exec(node), node, ports_in, socks)
        snap.routes[node] = self._routes.get(node, {})
        snap.roce[node] = self._roce.get(node, {})

    def read_control(self) -> None:
        """FRR's sessions and VNIs on every running FRR node (one vtysh call each)."""
        nodes = (
            [n for n, s in self.latest.nodes.items() if s == "running" and n in self._pids]
            if self.latest
            else list(self._pids)
        )
        got: dict[str, tuple[dict, dict]] = {}
        for node in nodes:
            if not sample.runs_frr(self.ctx, node):
                continue
            try:
                got[node] = sample.control(self.ctx.exec(node), self._pids[node], self._vnis)
            except Exception as e:  # noqa: BLE001  (an FRR that does not answer: no sessions known)
                self._note_error(f"{node}: FRR: {str(e).strip().splitlines()[0] if str(e).strip() else e}")
        with self.lock:
            self._control, self._control_time = got, sample.now()

    def _publish(self, snap: sample.Snapshot) -> None:
        with self.lock:
            snap.sessions = {n: s for n, (s, _) in self._control.items()}
            snap.vnis = {n: v for n, (_, v) in self._control.items()}
            snap.control_time = self._control_time
            old = self.latest
            self.previous, self.latest = old, snap
        changes = timeline.changes(old, snap)
        if changes and self.leader:
            store.append(self.ctx.dir, changes)
        self._follow()

    def _follow(self) -> None:
        """New events of the store (anyone's) into `recent` and the drop totals."""
        new = self._tail.read() if self._tail else []
        with self.lock:
            for e in new:
                self.recent.append(e)
                if e.get("kind") in ("drop", "drop-burst"):
                    self.drops[(e.get("node", ""), e.get("port", ""), e.get("tenant", ""), e.get("code", ""))] += int(
                        e.get("count", 1)
                    )
            self.version += 1
            self.lock.notify_all()

    # --- derived ----------------------------------------------------------------------------
    def rates(self) -> dict[str, dict[str, dict[str, float]]]:
        """node -> port -> per-second rx/tx packets and bytes between the last two rounds."""
        with self.lock:
            a, b = self.previous, self.latest
        if not a or not b or b.time <= a.time:
            return {}
        dt = b.time - a.time
        out: dict[str, dict[str, dict[str, float]]] = {}
        for node, ports in b.ports.items():
            for port, p in ports.items():
                q = a.ports.get(node, {}).get(port)
                if q:
                    out.setdefault(node, {})[port] = {
                        k: max(0.0, (p[k] - q[k]) / dt) for k in ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes")
                    }
        return out

    def state(self) -> dict[str, Any]:
        """Everything a view shows, as JSON-ready data."""
        with self.lock:
            snap = self.latest
            events = list(self.recent)[-200:]
            errors = list(self.errors)
        return {
            "lab": self.ctx.name,
            "snapshot": snap.to_dict() if snap else None,
            "rates": self.rates(),
            "events": events,
            "leader": self.leader,
            "kernel_drops": self.kernel_drops,
            "errors": errors,
        }
