"""A bring-up's timeline: `twin up` of the bench's Clos (4 x 20 by default), watched from outside, then
`twin down`. Where the wall-clock time of a bring-up goes when it is not CPU (issue 46, docs/performance.md,
"A bring-up's timeline").

Per node, in seconds from the launch of `twin up`:
- its container created and running (Docker's events, with the engine's own clock);
- its ports up and their carrier (rtnetlink events in the node's namespace, from a socket opened as the
  container runs: nothing runs in the node);
- FRR's boot, step by step (/run/twin/frr-boot, which the node's boot writes before each step, read from
  the host every `BOOT_POLL`; each step carries the time it began);
- each BGP session Established, each End-of-RIB received (FRR's own log,
  /var/log/frr/frr.log, millisecond timestamps, read once `twin up` has ended);
- every loopback route it should learn, over every port of the fabric's shortest paths: the barrier's own
  test of the node (`twin.lifecycle.barrier`), on the node's routes as rtnetlink announces them;
- twin's start of the node before its links (where it does) and its configuration ended, the barrier's
  rounds and its verdict (twin's debug log, written
  by the wrapper below: nothing in twin changes).

Then the critical path: the node complete last, and what it waited for, link by link; and the gaps that
are waiting, not work: sessions Established after both ends' FRR was up, routes after the last session,
the barrier after the last node was complete. `--tree LABEL=CHECKOUT` compares checkouts, run
interleaved; each run's figures are one JSON line (`--json`), the medians at the end.

    python bench/timeline.py --runs 3 --tree base=/tmp/base --tree new=.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from run import clos, settle  # noqa: E402  (the bench's own Clos; the machine settled between runs)

from twin.config.naming import LABEL_LAB, LABEL_NODE  # noqa: E402
from twin.intent import Intent  # noqa: E402
from twin.lifecycle.barrier import missing_spread, missing_underlay, spread  # noqa: E402
from twin.runtime import frrboot, netns, nlattr, rtdump  # noqa: E402
from twin.runtime.dockersdk import docker  # noqa: E402
from twin.topology.build import load  # noqa: E402

BOOT_POLL = 0.05  # each node's boot status read this often until FRR is up
CPU_SAMPLE = 0.5  # the machine's busy share sampled this often (/proc/stat)
SETTLE = 15.0  # at most this long for the machine to go idle before a run
RTMGRP_LINK, RTMGRP_IPV4_ROUTE = 0x1, 0x40
RTM_NEWLINK, RTM_DELROUTE = 16, 25
IFF_UP, IFF_LOWER_UP = 0x1, 0x10000
RCVBUF = 4 << 20
# twin's CLI, with the debug lines of bring-up (a node configured) and of the barrier (each round) to a file
WRAPPER = """
import logging, os, sys
h = logging.FileHandler(os.environ["TIMELINE_LOG"])
h.setFormatter(logging.Formatter("%(created).4f %(name)s %(message)s"))
for name in ("twin.lifecycle.barrier", "twin.lifecycle.bringup"):
    lg = logging.getLogger(name)
    lg.setLevel(logging.DEBUG)
    lg.addHandler(h)
    lg.propagate = False
from twin.cli import main
main(sys.argv[1:], prog_name="twin")
"""


@dataclass
class Node:
    """What one node did when, in epoch seconds."""

    name: str
    created: float = 0.0
    running: float = 0.0
    pid: int = 0
    sock: socket.socket | None = None
    names: dict[int, str] = field(default_factory=dict)
    up: dict[str, float] = field(default_factory=dict)  # port -> set up
    carrier: dict[str, float] = field(default_factory=dict)  # port -> carrier (both ends up)
    hops: dict[str, list[int]] = field(default_factory=dict)  # /32 -> output ports' indexes
    complete: float | None = None  # every loopback, over every shortest path (the barrier's test)
    boot: dict[str, float] = field(default_factory=dict)  # "step daemon" -> began
    established: dict[str, float] = field(default_factory=dict)  # port -> first Up
    eor: dict[str, float] = field(default_factory=dict)  # port -> End-of-RIB received
    downs: int = 0
    configured: float | None = None  # twin's configure_node ended
    started: float | None = None  # twin asked for its daemons before its links (start_early ended)


class Watch:
    """Docker's events of one lab, and each node's links, routes and FRR boot once its container runs."""

    def __init__(self, fabric, lab: str):
        self.lab, self.fabric = lab, fabric
        self.intent = Intent(fabric).nodes
        self.spread = spread(fabric)
        self.nodes = {n: Node(n) for n in fabric.nodes}
        self.new: queue.Queue[Node] = queue.Queue()
        self.sel = selectors.DefaultSelector()
        self.client = docker.from_env()
        self.events = self.client.events(decode=True, filters={"type": "container", "label": f"{LABEL_LAB}={lab}"})
        self.thread = threading.Thread(target=self._docker, daemon=True)
        self.thread.start()
        self.overflows = 0
        self.cpu: list[tuple[float, int, int]] = []  # (when, busy ticks, all ticks) of the machine

    def _docker(self) -> None:
        try:
            for ev in self.events:
                node = self.nodes.get(ev.get("Actor", {}).get("Attributes", {}).get(LABEL_NODE, ""))
                if node is None:
                    continue
                t = ev.get("timeNano", 0) / 1e9 or time.time()
                if ev.get("Action") == "create":
                    node.created = t
                elif ev.get("Action") == "start" and not node.running:
                    node.running = t
                    node.pid = self.client.api.inspect_container(ev["id"])["State"]["Pid"]
                    self.new.put(node)
        except Exception:  # the stream closed at the end
            return

    def _open(self, node: Node) -> None:
        def make() -> socket.socket:
            return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)

        s = netns.inside(netns.netns_path(node.pid), make)
        s.setsockopt(socket.SOL_SOCKET, 33, RCVBUF)  # SO_RCVBUFFORCE: a burst of routes is not lost
        s.bind((0, RTMGRP_LINK | RTMGRP_IPV4_ROUTE))
        s.setblocking(False)
        node.sock = s
        self.sel.register(s, selectors.EVENT_READ, node)

    def step(self, timeout: float) -> None:
        """Nodes just running taken in, what their sockets say read."""
        while not self.new.empty():
            self._open(self.new.get())
        for key, _ in self.sel.select(timeout):
            self._read(key.data)

    def _read(self, node: Node) -> None:
        changed = False
        while True:
            try:
                data = node.sock.recv(1 << 16)
            except BlockingIOError:
                break
            except OSError:  # ENOBUFS: events lost; counted (the figures of that node are a lower bound)
                self.overflows += 1
                continue
            t, pos = time.time(), 0
            while pos + rtdump.HEADER.size <= len(data):
                length, kind, _, _, _ = rtdump.HEADER.unpack_from(data, pos)
                if length < rtdump.HEADER.size:
                    break
                body = data[pos + rtdump.HEADER.size : pos + length]
                changed |= self._message(node, kind, body, t)
                pos += (length + 3) & ~3
        if changed:
            self._judge(node)

    def _message(self, node: Node, kind: int, body: bytes, t: float) -> bool:
        if kind == RTM_NEWLINK:
            _, _, index, flags, _ = rtdump.IFINFOMSG.unpack_from(body)
            name = rtdump._text(nlattr.attrs(body[rtdump.IFINFOMSG.size :]).get(rtdump.IFLA_IFNAME, b""))
            node.names[index] = name
            if name.startswith("swp") and flags & IFF_UP:
                node.up.setdefault(name, t)
            if name.startswith("swp") and flags & IFF_LOWER_UP:
                node.carrier.setdefault(name, t)
            return False
        if kind in (rtdump.RTM_NEWROUTE, RTM_DELROUTE):
            for prefix, hops in rtdump.parse_routes([body], 254, True).items():
                if kind == RTM_DELROUTE:
                    node.hops.pop(prefix, None)
                else:
                    node.hops[prefix] = hops
            return True
        return False

    def _judge(self, node: Node) -> None:
        want = self.intent.get(node.name)
        if want is None:
            return
        routes = {p: {node.names.get(h, str(h)) for h in hops if h} for p, hops in node.hops.items()}
        missing = missing_underlay(want, routes) or missing_spread(node.name, self.spread.get(node.name, {}), routes)
        if missing:
            node.complete = None
        elif node.complete is None:
            node.complete = time.time()

    def boots(self) -> None:
        """Every running node's FRR boot step, until it is up."""
        for node in self.nodes.values():
            if not node.pid or "up -" in node.boot:
                continue
            try:
                boot = frrboot.parse(Path(f"/proc/{node.pid}/root{frrboot.STATUS}").read_text())
            except OSError:
                continue
            if boot is not None:
                node.boot.setdefault(f"{boot.step} {boot.daemon}", boot.since)

    def close(self) -> None:
        self.events.close()
        for node in self.nodes.values():
            if node.sock is not None:
                node.sock.close()


def cpu_stat() -> tuple[int, int]:
    v = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return sum(v) - v[3] - v[4], sum(v)  # all but idle and iowait; everything


def busy_trace(cpu: list[tuple[float, int, int]], t0: float) -> list[tuple[float, int]]:
    """The machine's busy share (%, all cores) over each sampling interval, by its end (s from launch)."""
    return [
        (round(b[0] - t0, 1), round(100 * (b[1] - a[1]) / max(1, b[2] - a[2])))
        for a, b in zip(cpu, cpu[1:], strict=False)
    ]


def frr_log(node: Node) -> None:
    """Each session's first Up and its downs, each End-of-RIB, from FRR's log."""
    try:
        text = Path(f"/proc/{node.pid}/root/var/log/frr/frr.log").read_text(errors="replace")
    except OSError:
        return
    for line in text.splitlines():
        try:
            t = datetime.strptime(line[:23], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            continue
        if "%ADJCHANGE: neighbor " in line:
            port = line.split("%ADJCHANGE: neighbor ", 1)[1].split("(")[0].split()[0]
            if line.rstrip().endswith(" Up"):
                node.established.setdefault(port, t)
            else:
                node.downs += 1
        elif "rcvd End-of-RIB for IPv4 Unicast from " in line:
            node.eor.setdefault(line.split(" from ", 1)[1].split()[0], t)


def twin_log(path: Path, nodes: dict[str, Node]) -> list[tuple[float, int, int, float]]:
    """Each node's configuration's end; the barrier's rounds as (when it ended, routers read, unfinished, cost)."""
    rounds = []
    for line in path.read_text().splitlines():
        t, _, msg = line.split(" ", 2)
        if msg.startswith("configured "):
            nodes[msg.split()[1].rstrip(":")].configured = float(t)
        elif msg.startswith("started "):
            nodes[msg.split()[1]].started = float(t)
        elif msg.startswith("round over "):
            w = msg.split()
            rounds.append((float(t), int(w[2]), int(w[4]), float(w[-1].rstrip("s"))))
    return rounds


def run_up(tree: Path, topo: Path, lab: str, watch: Watch, t0: float) -> tuple[int, float, list, list]:
    """`twin up` from `tree` while `watch` looks: (its exit code, its end, its stderr lines as (t, line), rounds)."""
    log = Path(tempfile.mkstemp(prefix="timeline-")[1])
    env = {**os.environ, "PYTHONPATH": str(tree), "TIMELINE_LOG": str(log)}
    p = subprocess.Popen(
        [sys.executable, "-c", WRAPPER, "up", str(topo), "--name", lab],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    said: list[tuple[float, str]] = []

    def hear() -> None:
        assert p.stderr is not None
        for line in p.stderr:
            said.append((time.time(), line.rstrip()))

    reader = threading.Thread(target=hear, daemon=True)
    reader.start()
    polled, sampled = 0.0, 0.0
    while p.poll() is None:
        watch.step(0.02)
        if time.time() - polled >= BOOT_POLL:
            watch.boots()
            polled = time.time()
        if time.time() - sampled >= CPU_SAMPLE:
            watch.cpu.append((time.time(), *cpu_stat()))
            sampled = time.time()
    end = time.time()
    reader.join(5)
    for _ in range(3):
        watch.step(0.05)
    watch.boots()
    for node in watch.nodes.values():
        frr_log(node)
    rounds = twin_log(log, watch.nodes)
    log.unlink()
    return p.returncode, end, said, rounds


def spread_of(values: list[float]) -> dict:
    return {"first": min(values), "median": statistics.median(values), "last": max(values)} if values else {}


def sessions(watch: Watch) -> list[dict]:
    """Each link's session: when both ends held it Established, and when both ends could have (both ends'
    config loaded, both ports with carrier)."""
    out = []
    for link in watch.fabric.links:
        a, b = watch.nodes[link.a.node], watch.nodes[link.b.node]
        ups = [a.established.get(link.a.port), b.established.get(link.b.port)]
        ready = [n.boot.get("start watchfrr", n.boot.get("up -")) for n in (a, b)]
        ready += [a.carrier.get(link.a.port), b.carrier.get(link.b.port)]
        if None in ups or None in ready:
            continue
        out.append(
            {"a": a.name, "b": b.name, "up": max(ups), "ready": max(ready), "later": max((a, b), key=booted).name}
        )
    return out


def booted(n: Node) -> float:
    return n.boot.get("up -", 0.0)


def summary(watch: Watch, t0: float, end: float, said: list, rounds: list) -> dict:
    """The run's phases (first, median, last node), its critical path and its waits, in seconds from launch."""

    def rel(t: float) -> float:
        return round(t - t0, 2)

    nodes = list(watch.nodes.values())

    def per(f) -> dict:
        values = [f(n) for n in nodes]
        return {k: rel(v) for k, v in spread_of([v for v in values if v]).items()}

    def wired(n: Node, seen: dict[str, float]) -> float | None:
        return max(seen.values()) if len(seen) == len(watch.fabric.nodes[n.name].ports) else None

    ss = sessions(watch)
    heard = {k: next((t for t, line in said if k in line), None) for k in ("create:", "converge: the barrier")}
    converged = rounds[-1][0] if rounds else end
    complete = [n.complete for n in nodes if n.complete]
    phases = {
        "container created": per(lambda n: n.created),
        "container running": per(lambda n: n.running),
        "ports up": per(lambda n: wired(n, n.up)),
        "ports' carrier": per(lambda n: wired(n, n.carrier)),
        "twin: FRR asked, before links": per(lambda n: n.started),
        "FRR boot begun": per(lambda n: min(n.boot.values()) if n.boot else None),
        "FRR config loading": per(lambda n: n.boot.get("config vtysh")),
        "FRR up": per(lambda n: n.boot.get("up -")),
        "twin: node configured": per(lambda n: n.configured),
        "sessions Established": {k: rel(v) for k, v in spread_of([s["up"] for s in ss]).items()},
        "node complete": per(lambda n: n.complete),
    }
    setup = [s["up"] - s["ready"] for s in ss]
    after = [n.complete - max(n.established.values()) for n in nodes if n.complete and n.established]
    return {
        "phases": phases,
        "create_stage": rel(heard["create:"]) if heard["create:"] else None,
        "barrier_began": rel(heard["converge: the barrier"]) if heard["converge: the barrier"] else None,
        "barrier_rounds": [(rel(t), routers, round(cost, 3)) for t, routers, _, cost in rounds],
        "converged": rel(converged),
        "exit": rel(end),
        "session_setup": {k: round(v, 2) for k, v in spread_of(setup).items()},
        "routes_after_last_session": {k: round(v, 2) for k, v in spread_of(after).items()},
        "barrier_lag": round(converged - max(complete), 2) if complete else None,
        "complete_nodes": len(complete),
        "sessions_seen": len(ss),
        "downs": sum(n.downs for n in nodes),
        "netlink_overflows": watch.overflows,
        "nodes": {n.name: node_row(n, rel) for n in nodes},
        "cpu_busy": busy_trace(watch.cpu, t0),
    }


def node_row(n: Node, rel) -> dict:
    """One node's own times (s from launch), for --nodes."""
    return {
        "running": rel(n.running) if n.running else None,
        "wired": rel(max(n.up.values())) if n.up else None,
        "boot": {k: rel(v) for k, v in sorted(n.boot.items(), key=lambda kv: kv[1])},
        "started": rel(n.started) if n.started else None,
        "configured": rel(n.configured) if n.configured else None,
        "established": {p: rel(v) for p, v in sorted(n.established.items())},
        "eor": {p: rel(v) for p, v in sorted(n.eor.items())},
        "complete": rel(n.complete) if n.complete else None,
    }


def critical(s: dict) -> str:
    """The last of each phase in order, and what each waited after the one before."""
    p = s["phases"]
    steps = [
        ("launch", 0.0),
        ("create stage", s["create_stage"]),
        ("last container running", p["container running"].get("last")),
        ("last node wired", p["ports up"].get("last")),
        ("last FRR up", p["FRR up"].get("last")),
        ("twin: last node configured", p["twin: node configured"].get("last")),
        ("barrier began", s["barrier_began"]),
        ("last session Established", p["sessions Established"].get("last")),
        ("last node complete", p["node complete"].get("last")),
        ("barrier: converged", s["converged"]),
        ("twin exits", s["exit"]),
    ]
    out, before = [], 0.0
    for name, t in steps:
        if t is None:
            continue
        out.append(f"{name} {t:.2f} (+{t - before:.2f})")
        before = t
    return " -> ".join(out)


def report(label: str, s: dict, nodes: bool = False) -> None:
    print(f"\n{label}: converged {s['converged']:.2f} s, exit {s['exit']:.2f} s (load {s['load_before']} before)")
    print(f"  {'phase (s from launch)':28} {'first':>7} {'median':>7} {'last':>7}")
    for name, v in s["phases"].items():
        if v:
            print(f"  {name:28} {v['first']:7.2f} {v['median']:7.2f} {v['last']:7.2f}")
    print("  critical path: " + critical(s))
    print("  machine busy % (all cores) by half-second: " + " ".join(f"{b}" for _, b in s["cpu_busy"]))
    if nodes:
        for name, row in s["nodes"].items():
            print(f"  {name}: {json.dumps(row)}")
    rounds = ", ".join(f"{t:.2f} ({n} in {c:.2f}s)" for t, n, c in s["barrier_rounds"])
    print(
        f"  waits: session setup (Established after both ends ready) {s['session_setup']}; a node's routes "
        f"after its last session {s['routes_after_last_session']}; barrier after the last node complete "
        f"{s['barrier_lag']} s; barrier rounds at {rounds}; session downs {s['downs']}; "
        f"netlink overflows {s['netlink_overflows']}"
    )


def one(tree: Path, topo: Path, lab: str, fabric) -> dict:
    watch = Watch(fabric, lab)
    load0, t0 = os.getloadavg()[0], time.time()
    try:
        rc, end, said, rounds = run_up(tree, topo, lab, watch, t0)
        s = summary(watch, t0, end, said, rounds)
    finally:
        watch.close()
        down = subprocess.run(
            [sys.executable, "-m", "twin", "down", lab],
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree)},
            capture_output=True,
            text=True,
        )
        if down.returncode != 0:
            print(f"twin down {lab} failed: {down.stderr.strip()}", file=sys.stderr)
    if rc != 0:
        print("\n".join(line for _, line in said[-15:]), file=sys.stderr)
    return {"rc": rc, "load_before": round(load0, 1), **s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spines", type=int, default=4)
    ap.add_argument("--leafs", type=int, default=20)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--name", default="timeline", help="the lab's name")
    ap.add_argument("--tree", action="append", default=[], help="LABEL=CHECKOUT (default: this one), interleaved")
    ap.add_argument("--json", action="store_true", help="each run's figures as a JSON line too")
    ap.add_argument("--nodes", action="store_true", help="each node's own times too")
    args = ap.parse_args()
    trees = [(t.split("=", 1)[0], Path(t.split("=", 1)[1]).resolve()) for t in args.tree] or [("this", ROOT)]
    d = Path(tempfile.mkdtemp(prefix="timeline-"))
    topo = d / f"{args.name}.yml"
    pool = {"defaults": {"loopback_pool": "10.255.0.0/22"}} if args.spines + args.leafs > 250 else {}  # as bench/large
    topo.write_text(yaml.safe_dump({**clos(args.spines, args.leafs), "name": args.name, **pool}))
    fabric = load(topo, args.name)
    results: dict[str, list[dict]] = {label: [] for label, _ in trees}
    for i in range(args.runs):
        for label, tree in trees:
            settle(timeout=SETTLE)  # the last lab's teardown done (other people's work may never settle)
            r = one(tree, topo, args.name, fabric)
            results[label].append(r)
            report(f"{label} #{i + 1}", r, args.nodes)
            if args.json:
                print(
                    json.dumps(
                        {"tree": label, "run": i + 1, **{k: v for k, v in r.items() if k not in ("nodes", "cpu_busy")}}
                    )
                )
    keys = ("converged", "exit", "barrier_lag")
    print(f"\nmedians over {args.runs} run(s), {args.spines} x {args.leafs}:")
    for label, rs in results.items():
        ok = [r for r in rs if r["rc"] == 0]
        med = {k: statistics.median(r[k] for r in ok if r[k] is not None) for k in keys if ok}
        last = {
            p: statistics.median(r["phases"][p]["last"] for r in ok if r["phases"][p])
            for p in ("container running", "ports up", "FRR up", "sessions Established", "node complete")
            if ok
        }
        print(f"  {label}: {json.dumps(med)}; phases' last: {json.dumps(last)}; loads {[r['load_before'] for r in rs]}")


if __name__ == "__main__":
    main()
