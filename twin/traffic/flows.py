"""RoCE flows between the lab's host endpoints: addressing from intent, one run
for any number of flows, results per flow (including where else it was seen)."""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from dataclasses import replace
from typing import Any, Protocol, Sequence

from twin.base import timeouts
from twin.lifecycle.context import LabContext, context_of
from twin.topology.model import Attachment, Fabric
from twin.traffic import dcqcn, roce
from twin.traffic.engine import Session, Tap, new_run_id, roce_keep


class MakesContext(Protocol):
    """A `twin.Lab`: what makes a LabContext (`context_of`)."""

    def context(self) -> LabContext: ...


Target = LabContext | MakesContext  # a Lab or its context


def hosts(fabric: Fabric) -> list[str]:
    """Host endpoints attached to a tenant, in topology order."""
    return [n for n in fabric.nodes if fabric.attachment_of(n)]


def host_taps(ctx: LabContext, names: list[str] | None = None) -> list[Tap]:
    return [Tap(h, ctx.netns(h), ctx.fabric.attachment(h)[1].host_port) for h in (names or hosts(ctx.fabric))]


IB_MTUS = (4096, 2048, 1024, 512, 256)  # RoCE's path MTUs, InfiniBand's: the payload of one packet
ROCE_HEADERS = 60  # IPv4 20 + UDP 8 + BTH 12 + tag 16 + ICRC 4: a frame's payload for a packet of N bytes


def roce_payload(fabric: Fabric, src: str, dst: str, largest: int = IB_MTUS[0]) -> int:
    """The payload a RoCE flow between two hosts carries: the largest InfiniBand MTU (at most `largest`)
    that fits both hosts' port MTUs less RoCE's headers, as the NICs' path MTU is chosen (4096 in a jumbo
    fabric, 1024 on hosts at 1500)."""
    fits = min(host_mtu(fabric, fabric.attachment(h)[1]) for h in (src, dst)) - ROCE_HEADERS
    return next((m for m in IB_MTUS if m <= min(fits, largest)), IB_MTUS[-1])


def host_mtu(fabric: Fabric, a: Attachment) -> int:
    """The MTU of the host's port of attachment `a`: the largest frame it sends."""
    return fabric.nodes[a.host].ports_by_name[a.host_port].mtu


def flow(fabric: Fabric, src: str, dst: str, flow_id: int, **kw: Any) -> roce.Flow:
    """A flow from host `src` to host `dst`'s address, addressed the way `src` would:
    to `dst`'s MAC when the address is on `src`'s own segment, else to its gateway."""
    st, sa = fabric.attachment(src)
    _, da = fabric.attachment(dst)
    seg = st.segments[sa.segment]
    dst_ip = da.ip
    on_link = ipaddress.ip_address(dst_ip) in ipaddress.ip_network(seg.subnet)
    return roce.Flow(
        flow_id=flow_id,
        src=src,
        dst=dst,
        src_mac=sa.mac,
        dst_mac=da.mac if on_link else seg.mac,
        src_ip=sa.ip,
        dst_ip=dst_ip,
        **kw,
    )


def cnp_flow(fabric: Fabric, f: roce.Flow) -> roce.Flow:
    """The CNPs answering flow `f`: from its destination to its sender's QP (`twin.traffic.dcqcn`)."""
    return flow(
        fabric,
        f.dst,
        f.src,
        f.flow_id | dcqcn.CNP_BIT,
        cnp=True,
        dqp=f.sqp,
        dscp=dcqcn.CNP_DSCP,
        ecn=roce.NOT_ECT,
        sport=f.sport,
        count=1,
    )


def flow_to(fabric: Fabric, src: str, to: str, flow_id: int, **kw: Any) -> roce.Flow:
    """A flow from host `src` to host `to`, or to the address `to` as `src` would send to it:
    to the host of its own tenant that has it, else to its gateway (`dst` is then "": no host
    is the destination, every host that sees it is counted in `seen_at`)."""
    if to in fabric.nodes:
        return flow(fabric, src, to, flow_id, **kw)
    st, sa = fabric.attachment(src)
    owner = next((a.host for a in st.attachments if a.ip == to), None)
    if owner is not None:
        return flow(fabric, src, owner, flow_id, **kw)
    return roce.Flow(
        flow_id=flow_id,
        src=src,
        dst="",
        src_mac=sa.mac,
        dst_mac=st.segments[sa.segment].mac,
        src_ip=sa.ip,
        dst_ip=to,
        **kw,
    )


def same_tenant(fabric: Fabric, a: str, b: str) -> bool:
    return fabric.attachment(a)[0].name == fabric.attachment(b)[0].name


def run(
    lab: Target,
    flows: list[roce.Flow],
    expect: dict[int, bool],
    check_icrc: bool = True,
    timeout: float = timeouts.TRAFFIC,
    cnps: bool = False,
    pace: float = 0.0,
) -> dict[int, roce.FlowResult]:
    """Send all flows at once from their sources and capture on every host endpoint of `lab`
    (a Lab or its context).

    `expect[flow_id]` says whether the flow should reach its destination; the run
    ends once all of those have arrived (or at `timeout`). Each result counts the
    flow's arrivals at its destination and, in `seen_at`, at every host. With `cnps`,
    each destination answers CE-marked frames with CNPs (`twin.traffic.dcqcn`), counted
    in the results as sent and as received by the sender, and every frame's arrival time is
    kept (`times`). `pace`: seconds between two frames a host sends (0: back to back)."""
    return run_with_taps(lab, flows, expect, check_icrc, timeout, cnps=cnps, pace=pace)[0]


def run_with_taps(
    lab: Target,
    flows: list[roce.Flow],
    expect: dict[int, bool],
    check_icrc: bool = True,
    timeout: float = timeouts.TRAFFIC,
    taps: Sequence[Tap] = (),
    cnps: bool = False,
    run_id: int | None = None,
    pace: float = 0.0,
) -> tuple[dict[int, roce.FlowResult], dict[str, list[bytes]]]:
    """`run`, also capturing on extra `taps` (fabric ports): the frames each received."""
    ctx = context_of(lab)
    run_id = new_run_id() if run_id is None else run_id
    np = (
        dcqcn.NotificationPoint({f.flow_id: cnp_flow(ctx.fabric, f) for f in flows if not f.cnp}, flows, run_id)
        if cnps
        else None
    )
    by_id = {f.flow_id: f for f in flows}
    sends: dict[str, list[bytes]] = defaultdict(list)
    for f in flows:
        sends[f.src] += roce.frames(f, run_id)

    got: dict[int, int] = defaultdict(int)
    read_upto: dict[str, int] = defaultdict(int)  # frames per host already counted

    def done(captured: dict[str, list[bytes]]) -> list[str]:
        for host, frames in captured.items():
            if host in extra:
                continue
            for frame in frames[read_upto[host] :]:
                a = roce.read(frame, run_id, check_icrc=False)
                if a and by_id.get(a.flow_id) and by_id[a.flow_id].dst == host:
                    got[a.flow_id] += 1
            read_upto[host] = len(frames)
        return [f"flow {i}" for i, f in by_id.items() if expect.get(i) and got[i] < f.count]

    extra = {t.name for t in taps}
    with Session(host_taps(ctx) + list(taps)) as session:
        captured = session.run(sends, roce_keep(run_id), done, timeout, respond=np, pace=pace)
    fabric_frames = {n: captured.pop(n, []) for n in extra}
    answered = np.cnps_at(captured) if np else {}

    arrivals: dict[int, list[roce.Arrival]] = defaultdict(list)
    results = {i: roce.FlowResult(flow=f, sent=f.count) for i, f in by_id.items()}
    for host, frames in captured.items():
        for frame in frames:
            a = roce.read(frame, run_id, check_icrc=False)
            if a is None or a.flow_id not in by_id:
                continue
            if check_icrc and by_id[a.flow_id].dst == host:  # only where it matters
                a = replace(a, icrc_ok=roce.icrc_ok(frame))
            results[a.flow_id].seen_at[host] = results[a.flow_id].seen_at.get(host, 0) + 1
            if by_id[a.flow_id].dst == host:
                arrivals[a.flow_id].append(a)
    for i, f in by_id.items():
        seen = results[i].seen_at
        results[i] = roce.analyse(f, f.count, arrivals[i])
        results[i].seen_at = seen
        if np:
            results[i].cnps_sent, results[i].cnps_received = np.sent.get(i, 0), answered.get(i, 0)
            results[i].ce_times = list(np.marked.get(i, []))
            results[i].times = list(np.arrived.get(i, []))
    return results, fabric_frames
