"""`twin status`: what a lab is and how it is doing, compared with its intent.

Typed: `LabStatus` holds the nodes (container state, BGP sessions up/expected),
the tenants (per VTEP: VNIs up and missing, EVPN routes by type, have and
expected), `missing`: the barrier's notion of what the lab lacks of its
intent right now, and the lab's services (a dialect's: NVUE's), each a column of its
own (`twin status --json`'s "nvue"). A lab that drifted from its intent never looks healthy.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from twin.base import timeouts
from twin.base.errors import TwinError
from twin.config import dialect
from twin.config.backend import DEFAULT_BACKEND
from twin.config.services import DEFAULT_SHAPING
from twin.intent import GenericIntent, Intent
from twin.lifecycle import barrier, generic, locks, state
from twin.lifecycle.context import LabContext
from twin.runtime import (
    FRR_ROUTES,
    FRR_SUMMARY,
    FRR_VNIS,
    NodeHandle,
    Runtime,
    route_counts,
    session_states,
    vni_states,
)
from twin.topology.model import Fabric, Tenant

PARALLEL = 8


@dataclass
class NodeStatus:
    node: str
    kind: str
    state: str  # the container's: running, exited, ... or missing
    asn: int | None = None
    loopback: str | None = None
    sessions_expected: int | None = None  # FRR nodes only
    sessions_up: int | None = None
    sessions_down: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def healthy(self) -> bool:
        return self.state == "running" and self.sessions_up == self.sessions_expected

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.sessions_expected is None:
            for k in ("sessions_expected", "sessions_up", "sessions_down"):
                d.pop(k)
        if not self.error:
            d.pop("error")
        return d


@dataclass
class VtepStatus:
    reachable: bool = True
    vnis_up: list[int] = field(default_factory=list)
    vnis_missing: list[int] = field(default_factory=list)
    routes: dict[str, int] = field(default_factory=dict)  # type2/3/5 in its EVPN table
    expected: dict[str, int] = field(default_factory=dict)  # ... as the intent implies

    @property
    def healthy(self) -> bool:
        return (
            self.reachable
            and not self.vnis_missing
            and all(self.routes.get(k, 0) >= v for k, v in self.expected.items())
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "VtepStatus":
        if d.get("reachable") is False:
            return cls(reachable=False)
        routes = {k: v for k, v in d.items() if k not in ("vnis_up", "vnis_missing", "expected")}
        return cls(True, d.get("vnis_up", []), d.get("vnis_missing", []), routes, d.get("expected", {}))

    def to_dict(self) -> dict[str, Any]:
        if not self.reachable:
            return {"reachable": False}
        return {"vnis_up": self.vnis_up, "vnis_missing": self.vnis_missing, **self.routes, "expected": self.expected}


@dataclass
class TenantStatus:
    tenant: str
    vrf: str
    l3vni: int
    segments: list[dict[str, Any]]
    hosts: list[dict[str, Any]]
    vteps: dict[str, VtepStatus]

    def to_dict(self) -> dict[str, Any]:
        return {
            **{k: v for k, v in asdict(self).items() if k != "vteps"},
            "vteps": {v: s.to_dict() for v, s in self.vteps.items()},
        }


@dataclass
class LabStatus:
    lab: str
    status: str  # up, converging, failed, ... orphaned (containers only), absent
    dir: str
    topology: str | None = None
    image: str | None = None
    own_images: dict[str, str] = field(default_factory=dict)  # node -> its own image, which it runs
    vrf_backend: str | None = None
    shaping: str | None = None  # how rate limits are enforced: tc (shaping) or nft (policing)
    timings: dict[str, float] = field(default_factory=dict)
    nodes: list[NodeStatus] = field(default_factory=list)
    tenants: list[TenantStatus] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # of the intent, now (the barrier's rule)
    error: str = ""
    changing: str = ""  # the twin command changing the lab now, if one holds its lock ("twin apply (pid 7)")
    services: dict[str, dict] = field(default_factory=dict)  # dialect -> its service's status (NVUE's: pid,
    #                                                            listeners, whether it answers)

    @property
    def healthy(self) -> bool:
        return (
            self.status == "up"
            and not self.missing
            and not self.error
            and not self._service_problems()
            and all(n.healthy or n.sessions_expected is None and n.state == "running" for n in self.nodes)
            and all(v.healthy for t in self.tenants for v in t.vteps.values())
        )

    def problems(self) -> list[str]:
        """Why the lab is not healthy, one line each."""
        out = [self.error] if self.error else []
        out += {
            "absent": [f"no lab named {self.lab!r} here"],
            "orphaned": [f"lab {self.lab!r} has containers but no recorded intent"],
        }.get(self.status, [])
        out += self._service_problems()
        out += [f"{n.node}: container {n.state}" for n in self.nodes if n.state != "running"]
        out += [
            f"{n.node}: {'BGP sessions' if n.asn else 'adjacencies'} down: {', '.join(n.sessions_down)}"
            for n in self.nodes
            if n.sessions_down
        ]
        for t in self.tenants:
            for v, s in t.vteps.items():
                out += [f"{v}: tenant {t.tenant}: cannot read its state"] if not s.reachable else []
                out += [f"{v}: tenant {t.tenant}: VNI {x} missing" for x in s.vnis_missing]
                out += [
                    f"{v}: tenant {t.tenant}: {s.routes.get(k, 0)} {k} EVPN routes, expected {n}"
                    for k, n in s.expected.items()
                    if s.routes.get(k, 0) < n
                ]
        return out + self.missing

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LabStatus":
        """`to_dict`'s document (`twin status --json`, a server's answer) as the status it was made from."""
        nodes = [NodeStatus(**{k: v for k, v in n.items() if k in NodeStatus.__dataclass_fields__}) for n in d["nodes"]]
        tenants = [
            TenantStatus(
                t["tenant"],
                t["vrf"],
                t["l3vni"],
                t["segments"],
                t["hosts"],
                {v: VtepStatus.from_dict(s) for v, s in t["vteps"].items()},
            )
            for t in d["tenants"]
        ]
        return cls(
            d["lab"],
            d["status"],
            d["dir"],
            topology=d.get("topology"),
            image=d.get("image"),
            own_images=d.get("own_images") or {},
            vrf_backend=d.get("vrf_backend"),
            shaping=d.get("shaping"),
            timings=d.get("timings") or {},
            nodes=nodes,
            tenants=tenants,
            missing=d.get("missing") or [],
            changing=d.get("changing") or "",
            services={x: d[x] for x, _ in _served() if isinstance(d.get(x), dict)},
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "lab": self.lab,
            "status": self.status,
            "healthy": self.healthy,
            "topology": self.topology,
            "image": self.image,
            "own_images": self.own_images,
            "vrf_backend": self.vrf_backend,
            "shaping": self.shaping,
            "dir": self.dir,
            "timings": self.timings,
            "nodes": [n.to_dict() for n in self.nodes],
            "tenants": [t.to_dict() for t in self.tenants],
            "missing": self.missing,
            "problems": self.problems(),
            "changing": self.changing or None,
            **{x: self.services.get(x) for x, _ in _served()},
        }

    def _service_problems(self) -> list[str]:
        return [p for x, s in _served() if x in self.services and (p := s.problem(self.services[x]))]

    def service_lines(self) -> list[str]:
        """Each service's line for `twin status` (where it listens, whether it answers)."""
        return [s.line(self.services[x]) for x, s in _served() if x in self.services]


def _served() -> list[tuple[str, dialect.Service]]:
    """The dialects that bring a service, with it (their columns of `twin status`, in the registry's order)."""
    return [(x.name, x.service) for x in dialect.dialects() if x.service is not None]


def lab_status(name: str, d: Path, runtime: Runtime) -> LabStatus:
    containers = runtime.containers(name)
    try:
        st, fabric = state.load(d)
    except TwinError as e:
        return LabStatus(name, "broken", str(d), error=str(e), nodes=_bare(containers))
    if st is None or fabric is None:
        return LabStatus(name, "orphaned" if containers else "absent", str(d), nodes=_bare(containers))
    out = LabStatus(
        name,
        st.status,
        str(d),
        st.topology,
        st.image,
        st.images,
        st.backend,
        st.shaping,
        st.timings,
        changing=locks.holder(name),
    )
    out.services = {x.name: x.service.status(d) for x in dialect.running(st.user_files) if x.service is not None}
    intent = Intent(fabric, state.running_files(d, fabric))
    docs: dict[str, list] = {}
    with ThreadPoolExecutor(PARALLEL) as pool:
        out.nodes = list(pool.map(lambda n: _node(fabric, intent, n, containers.get(n), docs), fabric.nodes))
    out.tenants = [_tenant(fabric, t, intent, docs) for t in fabric.tenants.values()]
    if containers and all(n.state == "running" for n in out.nodes):
        ctx = LabContext(
            name,
            d,
            fabric,
            st.backend or DEFAULT_BACKEND,
            runtime,
            shaping=st.shaping or DEFAULT_SHAPING,
            _containers=containers,
        )
        out.missing = barrier.missing(ctx)
    return out


def _bare(containers: dict) -> list[NodeStatus]:
    return [NodeStatus(n, c.labels.get("twin.kind", "?"), c.status) for n, c in sorted(containers.items())]


def _node(fabric: Fabric, intent: Intent, n: str, c: NodeHandle | None, docs: dict[str, list]) -> NodeStatus:
    node = fabric.nodes[n]
    row = NodeStatus(n, node.kind, c.status if c else "missing", node.asn, node.loopback)
    want = intent.nodes.get(n)
    if n in intent.generic:
        return _router(row, intent.generic[n], c, fabric.name)
    if want is None:
        return row
    row.sessions_expected = len(want.sessions)
    if c is None or c.status != "running":
        return row
    cmds = [FRR_SUMMARY] + ([FRR_ROUTES, FRR_VNIS] if want.vtep else [])
    try:
        got = c.exec(f"{fabric.name}/{n}").vtysh_json(*cmds, timeout=timeouts.VTYSH)
    except TwinError as e:
        row.error = str(e).splitlines()[0]
        return row
    states = session_states(got[0], [s.port for s in want.sessions])
    row.sessions_up = sum(s == "Established" for s in states.values())
    row.sessions_down = sorted(p for p, s in states.items() if s != "Established")
    if want.vtep:
        docs[n] = got[1:]
    return row


def _router(row: NodeStatus, gi: GenericIntent, c: NodeHandle | None, lab: str) -> NodeStatus:
    """A router of the user's config: its adjacencies up of those its config declares."""
    row.sessions_expected = len(gi.adjacencies)
    if c is None or c.status != "running":
        return row
    try:
        states = generic.states(c.exec(f"{lab}/{row.node}"), gi)
    except TwinError as e:
        row.error = str(e).splitlines()[0]
        return row
    row.sessions_up = sum(generic.is_up(a, s) for a, s in states.items())
    row.sessions_down = [f"{a.protocol} {a.where}" for a, s in states.items() if not generic.is_up(a, s)]
    return row


def _tenant(fabric: Fabric, t: Tenant, intent: Intent, docs: dict[str, list]) -> TenantStatus:
    vteps = {}
    for v in t.vteps():
        ti = intent.nodes[v].tenant(t.name)
        assert ti is not None  # (the intent gives each of the tenant's VTEPs its part)
        if v not in docs:
            vteps[v] = VtepStatus(reachable=False)
            continue
        routes_doc, vni_doc = docs[v]
        have = vni_states(vni_doc)
        vteps[v] = VtepStatus(
            vnis_up=sorted(x for x in ti.vnis if x in have),
            vnis_missing=sorted(x for x in ti.vnis if x not in have),
            routes=route_counts(routes_doc, {t.l3vni} | {s.l2vni for s in t.segments.values()}),
            expected=ti.evpn_counts,
        )
    return TenantStatus(
        t.name,
        t.vrf,
        t.l3vni,
        [
            {
                "segment": s.name,
                "l2vni": s.l2vni,
                "subnet": s.subnet,
                "gateway": s.gateway,
                "vteps": t.segment_vteps(s.name),
            }
            for s in t.segments.values()
        ],
        [
            {"host": a.host, "segment": a.segment, "address": a.address, "vtep": f"{a.vtep}:{a.port}"}
            for a in t.attachments
        ],
        vteps,
    )
